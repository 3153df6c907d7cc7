/* Probes a simulated device in-process with the library's synthetic step and
 * prints the decision. Usage: sim_probe [SIM_SPEC [STRATEGY]]
 * e.g. sim_probe "sim:capacity=80GiB,fixed=12GiB,per_sample=150MiB" model */
#include <batchfit.h>

#include <stdio.h>

static void print_log(batchfit_log_level level, const char *message, void *userdata)
{
    (void)userdata;
    static const char *const names[] = {"debug", "info", "warning", "error"};
    fprintf(stderr, "batchfit %s: %s\n", names[level], message);
}

int main(int argc, char **argv)
{
    const char *spec = argc > 1 ? argv[1]
                                : "sim:capacity=80GiB,fixed=12GiB,per_sample=150MiB,"
                                  "granule=2MiB,jump=256:1GiB";
    const char *strategy = argc > 2 ? argv[2] : "model";
    batchfit_ctx *ctx = NULL;
    batchfit_device *device = NULL;
    batchfit_result *result = NULL;
    batchfit_options opts;
    int rc = batchfit_ctx_create(NULL, &ctx);
    if (rc) {
        fprintf(stderr, "sim_probe: %s\n", batchfit_strerror(rc));
        return 1;
    }
    batchfit_ctx_set_log(ctx, print_log, NULL, BATCHFIT_LOG_INFO);
    batchfit_options_init(&opts);
    rc = batchfit_parse_strategy(ctx, strategy, "strategy", &opts.strategy);
    if (rc) {
        fprintf(stderr, "sim_probe: %s\n", batchfit_ctx_last_error(ctx));
        batchfit_ctx_free(ctx);
        return 2;
    }
    rc = batchfit_device_open(ctx, spec, &device);
    if (rc) {
        fprintf(stderr, "sim_probe: %s\n", batchfit_ctx_last_error(ctx));
        batchfit_ctx_free(ctx);
        return 2;
    }
    rc = batchfit_probe(ctx, &opts, device, batchfit_sim_step(), NULL, &result);
    if (rc == BATCHFIT_OK) {
        printf("device      %s\n", spec);
        printf("budget      %llu bytes (margin %llu held back)\n",
               (unsigned long long)result->budget.budget_bytes,
               (unsigned long long)result->budget.margin_bytes);
        printf("trials      %zu (%zu out of memory)\n", result->trial_count, result->oom_trials);
        if (result->fit.valid)
            printf("fit         %.0f bytes + %.0f bytes per sample\n",
                   result->fit.intercept_bytes, result->fit.bytes_per_sample);
        printf("batch_size=%llu\n", (unsigned long long)result->batch_size);
    } else {
        fprintf(stderr, "sim_probe: %s: %s\n", batchfit_strerror(rc),
                batchfit_ctx_last_error(ctx));
    }
    batchfit_result_free(result);
    batchfit_device_free(device);
    batchfit_ctx_free(ctx);
    return rc == BATCHFIT_OK ? 0 : 1;
}
