/* The child-process probe from a program that embeds batchfit: the largest
 * batch a command fits into host memory, with the library's JSON report.
 * Usage: probe_command BUDGET COMMAND ARGS... ({batch} in ARGS), e.g.
 *   probe_command 64MiB build/examples/trainer --batch-size {batch} --steps 2 */
#include <batchfit.h>

#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc < 3)
        return fprintf(stderr, "usage: probe_command BUDGET COMMAND [ARGS...]\n"), 2;
    batchfit_ctx *ctx = NULL;
    batchfit_device *device = NULL;
    batchfit_result *result = NULL;
    batchfit_options opts;
    batchfit_command_options command;
    const char *json = NULL;
    batchfit_options_init(&opts);
    batchfit_command_options_init(&command);
    command.argv = (const char *const *)argv + 2;
    int rc = batchfit_ctx_create(NULL, &ctx);
    if (rc == BATCHFIT_OK)
        rc = batchfit_parse_size(ctx, argv[1], "BUDGET", &opts.memory_budget_bytes);
    if (rc == BATCHFIT_OK)
        rc = batchfit_device_open(ctx, "host", &device);
    if (rc == BATCHFIT_OK)
        rc = batchfit_probe_command(ctx, &opts, device, &command, &result);
    if (result && batchfit_result_json(ctx, result, &json) == BATCHFIT_OK)
        fputs(json, stdout);
    if (rc != BATCHFIT_OK)
        fprintf(stderr, "probe_command: %s\n", ctx ? batchfit_ctx_last_error(ctx) : "no memory");
    else
        fprintf(stderr, "probe_command: batch_size=%llu\n", (unsigned long long)result->batch_size);
    batchfit_result_free(result);
    batchfit_device_free(device);
    batchfit_ctx_free(ctx);
    return batchfit_exit_status(rc);
}
