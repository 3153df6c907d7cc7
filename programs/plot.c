/* batchfit plot RESULT.json [-o FILE.svg]: draws a probe's --export-json
 * file as the library's SVG picture, written as probe --plot writes it
 * (output.c). */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_JSON (64u << 20)

/* The whole file (or stdin for "-"), NUL-terminated; NULL with the message
 * printed. */
static char *read_all(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "batchfit plot: cannot read %s: %s\n", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (f != stdin && fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "batchfit plot: cannot read %s: %s\n", path, strerror(EISDIR));
        fclose(f);
        return NULL;
    }
    size_t cap = 65536, n = 0;
    int read_errno = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n - 1, f);
        if (ferror(f)) {
            read_errno = errno ? errno : EIO;
            break;
        }
        if (feof(f))
            break;
        if (cap >= MAX_JSON) {
            fprintf(stderr, "batchfit plot: %s: larger than %u MiB\n", path, MAX_JSON >> 20);
            free(buf);
            buf = NULL;
            break;
        }
        char *bigger = realloc(buf, cap * 2);
        if (!bigger) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    int failed = buf && ferror(f);
    if (f != stdin)
        fclose(f);
    if (!buf || failed) {
        if (failed)
            fprintf(stderr, "batchfit plot: cannot read %s: %s\n", path, strerror(read_errno));
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: batchfit plot RESULT.json [-o FILE.svg]\n"
               "Draws a probe's --export-json file (- = stdin) as an SVG picture: peak memory\n"
               "against batch size, every trial, the fit, the budget and the answer. Without\n"
               "-o the SVG goes to stdout.\n");
}

int cli_plot(int argc, char **argv)
{
    const char *input = NULL, *output = "-";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return cli_finish_output("plot", EXIT_FOUND);
        }
        if (strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) {
            if (++i >= argc) {
                fprintf(stderr, "batchfit plot: %s needs a file name\n", argv[i - 1]);
                return EXIT_USAGE;
            }
            output = argv[i];
        } else if (!input && (argv[i][0] != '-' || strcmp(argv[i], "-") == 0)) {
            input = argv[i];
        } else {
            fprintf(stderr, "batchfit plot: unexpected argument \"%s\"\n", argv[i]);
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    if (!input) {
        usage(stderr);
        return EXIT_USAGE;
    }
    /* The picture must not replace the result it is drawn from (a link to
     * it, or the same file named another way, included). */
    struct stat in_st, out_st;
    if (strcmp(input, "-") != 0 && strcmp(output, "-") != 0 && stat(input, &in_st) == 0 &&
        stat(output, &out_st) == 0 && in_st.st_dev == out_st.st_dev &&
        in_st.st_ino == out_st.st_ino) {
        fprintf(stderr, "batchfit plot: -o %s is the input %s: the SVG would overwrite the "
                        "result it is drawn from\n",
                output, input);
        return EXIT_USAGE;
    }
    /* The output is checked before anything is read or drawn (exit 2, as
     * probe's --plot); a write that fails at the end is exit 6. */
    export_target out;
    if (cli_output_prepare(&out, "batchfit plot", "-o", output) != 0)
        return EXIT_USAGE;
    size_t len = 0;
    char *json = read_all(input, &len);
    if (!json)
        return EXIT_USAGE;
    batchfit_ctx *ctx = NULL;
    batchfit_result *result = NULL;
    const char *svg = NULL;
    int exit_code = EXIT_FOUND;
    if (batchfit_ctx_create(NULL, &ctx) != BATCHFIT_OK) {
        exit_code = EXIT_INTERNAL;
    } else if (batchfit_result_from_json(ctx, json, len, &result) != BATCHFIT_OK) {
        fprintf(stderr, "batchfit plot: %s: %s\n", input, batchfit_ctx_last_error(ctx));
        exit_code = EXIT_USAGE;
    } else if (batchfit_result_svg(ctx, result, &svg) != BATCHFIT_OK) {
        fprintf(stderr, "batchfit plot: cannot draw the result: %s\n",
                batchfit_ctx_last_error(ctx));
        exit_code = EXIT_EXPORT_FAILED;
    } else if (cli_output_write(&out, svg, 0) != 0) {
        exit_code = EXIT_EXPORT_FAILED;
    }
    batchfit_result_free(result);
    batchfit_ctx_free(ctx);
    free(json);
    return exit_code;
}
