/* batchfit info: every backend, whether it is usable here and why not, the
 * devices it sees, and which one --device auto would pick. */
#include "cli.h"

#include <string.h>

#define MAX_GPUS 64
#define NVML_ONLY_REASON                                                                      \
    "seen by NVML only: without the CUDA driver (libcuda.so.1) it cannot be probed or hold a " \
    "margin here"

static void print_memory(const char *label, uint64_t total, uint64_t free_bytes)
{
    char t[32], f[32];
    batchfit_format_bytes((double)total, t, sizeof t);
    batchfit_format_bytes((double)free_bytes, f, sizeof f);
    printf("%s%s total, %s free\n", label, t, f);
}

/* What --device cuda:all opens here: the list it resolves to and the names
 * of its GPUs; spec is "" when no GPU is usable. */
static void cuda_all(batchfit_ctx *ctx, char *spec, size_t spec_len, char *names, size_t names_len)
{
    batchfit_device *all = NULL;
    batchfit_device_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    spec[0] = names[0] = '\0';
    if (batchfit_device_open(ctx, "cuda:all", &all) == BATCHFIT_OK &&
        batchfit_device_available(all, NULL) && batchfit_device_describe(all, &info) == BATCHFIT_OK) {
        snprintf(spec, spec_len, "%s", batchfit_device_spec(all));
        snprintf(names, names_len, "%s", info.name);
    }
    batchfit_device_free(all);
}

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
    batchfit_device_list *list = NULL;
    if (batchfit_ctx_create(NULL, &ctx) != BATCHFIT_OK)
        return EXIT_INTERNAL;
    if (batchfit_device_list_create(ctx, &list) != BATCHFIT_OK) {
        fprintf(stderr, "batchfit info: %s\n", batchfit_ctx_last_error(ctx));
        batchfit_ctx_free(ctx);
        return EXIT_INTERNAL;
    }
    size_t gpus = 0;
    while (gpus < list->device_count && gpus < MAX_GPUS &&
           strncmp(list->specs[gpus], "cuda:", 5) == 0)
        gpus++;
    batchfit_device *gpu[MAX_GPUS] = {NULL};
    for (size_t i = 0; i < gpus; i++)
        if (batchfit_device_open(ctx, list->specs[i], &gpu[i]) != BATCHFIT_OK)
            gpu[i] = NULL;
    const batchfit_backend_status *cuda = &list->backends[0], *host_backend = &list->backends[2];
    batchfit_device *host = NULL;
    uint64_t host_total = 0, host_free = 0;
    int host_ok = host_backend->available &&
                  batchfit_device_open(ctx, "host", &host) == BATCHFIT_OK &&
                  batchfit_device_memory(host, &host_total, &host_free) == BATCHFIT_OK;
    const char *host_note = host_ok ? batchfit_device_memory_note(host) : "";
    char all_spec[128], all_names[128];
    cuda_all(ctx, all_spec, sizeof all_spec, all_names, sizeof all_names);
    if (json) {
        json_writer w;
        jw_begin(&w, stdout);
        jw_object(&w, NULL);
        jw_u64(&w, "schema_version", 1);
        jw_string(&w, "batchfit_version", batchfit_version_string());
        jw_array(&w, "backends");
        for (size_t i = 0; i < list->backend_count; i++) {
            const batchfit_backend_status *row = &list->backends[i];
            jw_object(&w, NULL);
            jw_string(&w, "name", row->name);
            jw_bool(&w, "available", row->available);
            jw_string(&w, "reason", row->available ? NULL : row->reason);
            jw_end_object(&w);
        }
        jw_end_array(&w);
        jw_array(&w, "devices");
        for (size_t i = 0; i < gpus; i++) {
            batchfit_device_info info;
            memset(&info, 0, sizeof info);
            info.struct_size = sizeof info;
            if (!gpu[i] || batchfit_device_describe(gpu[i], &info) != BATCHFIT_OK)
                continue;
            uint64_t total = 0, free_bytes = 0;
            int mem = info.available &&
                      batchfit_device_memory(gpu[i], &total, &free_bytes) == BATCHFIT_OK;
            jw_object(&w, NULL);
            jw_string(&w, "spec", list->specs[i]);
            jw_u64(&w, "index", i);
            jw_string(&w, "name", info.name);
            jw_string(&w, "uuid", info.uuid[0] ? info.uuid : NULL);
            jw_string(&w, "pci_bus_id", info.pci_bus_id[0] ? info.pci_bus_id : NULL);
            jw_bool(&w, "available", info.available);
            jw_string(&w, "reason", info.available ? NULL : info.reason);
            if (mem) {
                jw_u64(&w, "total_bytes", total);
                jw_u64(&w, "free_bytes", free_bytes);
            } else {
                jw_null(&w, "total_bytes");
                jw_null(&w, "free_bytes");
            }
            jw_bool(&w, "per_process_memory", info.per_process_memory);
            jw_end_object(&w);
        }
        if (host_ok) {
            jw_object(&w, NULL);
            jw_string(&w, "spec", "host");
            jw_string(&w, "name", "host RAM");
            jw_bool(&w, "available", 1);
            jw_u64(&w, "total_bytes", host_total);
            jw_u64(&w, "free_bytes", host_free);
            if (host_note[0])
                jw_string(&w, "memory_note", host_note);
            else
                jw_null(&w, "memory_note");
            jw_end_object(&w);
        }
        jw_end_array(&w);
        jw_array(&w, "nvml_only");
        for (size_t i = 0; i < list->nvml_only_count; i++) {
            const batchfit_nvml_gpu *g = &list->nvml_only[i];
            jw_object(&w, NULL);
            jw_u64(&w, "nvml_index", g->index);
            jw_string(&w, "name", g->name);
            jw_string(&w, "uuid", g->uuid[0] ? g->uuid : NULL);
            if (g->memory_known) {
                jw_u64(&w, "total_bytes", g->total_bytes);
                jw_u64(&w, "free_bytes", g->free_bytes);
            } else {
                jw_null(&w, "total_bytes");
                jw_null(&w, "free_bytes");
            }
            jw_bool(&w, "can_probe", 0);
            jw_string(&w, "reason", NVML_ONLY_REASON);
            jw_end_object(&w);
        }
        jw_end_array(&w);
        jw_string(&w, "auto", list->auto_spec);
        jw_string(&w, "cuda_all", all_spec[0] ? all_spec : NULL);
        jw_end_object(&w);
    } else {
        printf("batchfit %s\n\nbackends:\n", batchfit_version_string());
        if (cuda->available)
            printf("  cuda  available: %zu visible device%s\n", gpus, gpus == 1 ? "" : "s");
        else
            printf("  cuda  unavailable: %s\n", cuda->reason);
        if (list->backends[1].available)
            printf("  nvml  available: per-process GPU memory\n");
        else
            printf("  nvml  unavailable: %s\n", list->backends[1].reason);
        if (host_ok)
            printf("  host  available: system RAM, for CPU training\n");
        else
            printf("  host  unavailable: %s\n", host_backend->reason[0] ? host_backend->reason
                                                                      : "cannot read its memory");
        printf("  sim   available: a simulated device for tests, demos and benchmarks\n"
               "        use --device sim:capacity=SIZE,fixed=SIZE,per_sample=SIZE,...\n");
        printf("\ndevices:\n");
        for (size_t i = 0; i < gpus; i++) {
            batchfit_device_info info;
            memset(&info, 0, sizeof info);
            info.struct_size = sizeof info;
            if (!gpu[i] || batchfit_device_describe(gpu[i], &info) != BATCHFIT_OK)
                continue;
            printf("  %s  %s  %s  %s\n", list->specs[i], info.name, info.uuid[0] ? info.uuid : "-",
                   info.pci_bus_id[0] ? info.pci_bus_id : "-");
            uint64_t total = 0, free_bytes = 0;
            if (!info.available)
                printf("          unavailable: %s\n", info.reason);
            else if (batchfit_device_memory(gpu[i], &total, &free_bytes) == BATCHFIT_OK)
                print_memory("          ", total, free_bytes);
            if (info.available && !info.per_process_memory)
                printf("          no per-process memory: %s\n", info.per_process_note);
        }
        if (host_ok)
            print_memory("  host    ", host_total, host_free);
        if (host_ok && host_note[0])
            printf("          %s\n", host_note);
        for (size_t i = 0; i < list->nvml_only_count; i++) {
            const batchfit_nvml_gpu *g = &list->nvml_only[i];
            printf("  nvml %u  %s  %s\n", g->index, g->name, g->uuid[0] ? g->uuid : "-");
            if (g->memory_known)
                print_memory("          ", g->total_bytes, g->free_bytes);
            printf("          %s\n", NVML_ONLY_REASON);
        }
        printf("\n--device auto picks: %s\n", list->auto_spec);
        if (all_spec[0])
            printf("--device cuda:all means: %s (%s)\n", all_spec, all_names);
    }
    for (size_t i = 0; i < gpus; i++)
        batchfit_device_free(gpu[i]);
    batchfit_device_free(host);
    batchfit_device_list_free(list);
    batchfit_ctx_free(ctx);
    return EXIT_FOUND;
}
