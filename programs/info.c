/* batchfit info: every backend, whether it is usable here and why not, the
 * devices it sees, and which one --device auto would pick. */
#include "cli.h"

#include <string.h>

typedef struct backend_row {
    const char *name;
    const char *spec;
    const char *what;
} backend_row;

static const backend_row backends[] = {
    {"cuda", "cuda:0", "NVIDIA GPUs through NVML and the CUDA driver (loaded at run time)"},
    {"host", "host", "system RAM, for CPU training"},
    {"sim", "sim:capacity=16GiB", "a simulated device for tests, demos and benchmarks"},
};

#define BACKEND_COUNT (sizeof backends / sizeof backends[0])

int cli_info(int argc, char **argv)
{
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: batchfit info [--json]\n");
            return EXIT_FOUND;
        } else {
            fprintf(stderr, "batchfit info: unknown option %s\n", argv[i]);
            return EXIT_USAGE;
        }
    }
    batchfit_ctx *ctx = NULL;
    if (batchfit_ctx_create(NULL, &ctx) != BATCHFIT_OK)
        return EXIT_INTERNAL;
    batchfit_device *devices[BACKEND_COUNT] = {NULL};
    const char *auto_pick = "host";
    for (size_t i = 0; i < BACKEND_COUNT; i++) {
        if (batchfit_device_open(ctx, backends[i].spec, &devices[i]) != BATCHFIT_OK)
            devices[i] = NULL;
        if (i == 0 && devices[i] && batchfit_device_available(devices[i], NULL))
            auto_pick = "cuda:0";
    }
    json_writer w;
    if (json) {
        jw_begin(&w, stdout);
        jw_object(&w, NULL);
        jw_u64(&w, "schema_version", 1);
        jw_string(&w, "batchfit_version", batchfit_version_string());
        jw_array(&w, "backends");
    } else {
        printf("batchfit %s\n\nbackends:\n", batchfit_version_string());
    }
    for (size_t i = 0; i < BACKEND_COUNT; i++) {
        const char *why = "";
        int ok = devices[i] && batchfit_device_available(devices[i], &why);
        uint64_t total = 0, free_bytes = 0;
        int mem = ok && strcmp(backends[i].name, "sim") != 0 &&
                  batchfit_device_memory(devices[i], &total, &free_bytes) == BATCHFIT_OK;
        if (json) {
            jw_object(&w, NULL);
            jw_string(&w, "name", backends[i].name);
            jw_string(&w, "description", backends[i].what);
            jw_bool(&w, "available", ok);
            jw_string(&w, "reason", ok ? NULL : why);
            jw_array(&w, "devices");
            if (mem) {
                jw_object(&w, NULL);
                jw_u64(&w, "index", 0);
                jw_string(&w, "spec", backends[i].spec);
                jw_u64(&w, "total_bytes", total);
                jw_u64(&w, "free_bytes", free_bytes);
                jw_end_object(&w);
            }
            jw_end_array(&w);
            jw_end_object(&w);
        } else {
            printf("  %-5s %s: %s%s\n", backends[i].name, ok ? "available" : "unavailable",
                   ok ? backends[i].what : why, "");
            if (mem) {
                char t[32], f[32];
                cli_format_bytes((double)total, t, sizeof t);
                cli_format_bytes((double)free_bytes, f, sizeof f);
                printf("        device %s: %s total, %s free\n", backends[i].spec, t, f);
            }
            if (strcmp(backends[i].name, "sim") == 0)
                printf("        use --device sim:capacity=SIZE,fixed=SIZE,per_sample=SIZE,...\n");
        }
    }
    if (json) {
        jw_end_array(&w);
        jw_string(&w, "auto", auto_pick);
        jw_end_object(&w);
    } else {
        printf("\n--device auto picks: %s\n", auto_pick);
    }
    for (size_t i = 0; i < BACKEND_COUNT; i++)
        batchfit_device_free(devices[i]);
    batchfit_ctx_free(ctx);
    return EXIT_FOUND;
}
