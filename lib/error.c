/* Error codes, names and the runtime version. */
#include "internal.h"

unsigned batchfit_version_number(void)
{
    return BATCHFIT_VERSION_NUMBER;
}

const char *batchfit_version_string(void)
{
    return BATCHFIT_VERSION_STRING;
}

const char *batchfit_strerror(int code)
{
    switch (code) {
#define BATCHFIT_X_STR(name, value, text) \
    case value:                          \
        return "BATCHFIT_E_" #name ": " text;
        BATCHFIT_ERROR_MAP(BATCHFIT_X_STR)
#undef BATCHFIT_X_STR
    }
    return "BATCHFIT_E_UNKNOWN: unknown error";
}

const char *batchfit_error_name(int code)
{
    switch (code) {
#define BATCHFIT_X_NAME(name, value, text) \
    case value:                           \
        return #name;
        BATCHFIT_ERROR_MAP(BATCHFIT_X_NAME)
#undef BATCHFIT_X_NAME
    }
    return "UNKNOWN";
}

const char *batchfit_outcome_name(batchfit_outcome outcome)
{
    switch (outcome) {
    case BATCHFIT_FITS:
        return "fits";
    case BATCHFIT_OOM:
        return "oom";
    case BATCHFIT_ERROR:
        return "error";
    }
    return "unknown";
}

int batchfit_exit_status(int code)
{
    switch (code) {
    case BATCHFIT_OK:
        return 0;
    case BATCHFIT_E_INVALID_ARGUMENT:
    case BATCHFIT_E_PARSE:
    case BATCHFIT_E_NOT_FOUND:
        return 2;
    case BATCHFIT_E_MIN_DOES_NOT_FIT:
    case BATCHFIT_E_TRIAL_LIMIT:
        return 3;
    case BATCHFIT_E_TRIAL_ERROR:
        return 4;
    case BATCHFIT_E_NO_DEVICE:
    case BATCHFIT_E_DEVICE:
        return 5;
    case BATCHFIT_E_OUTPUT:
        return 6;
    case BATCHFIT_E_ABORTED:
        return 130;
    }
    return 1;
}
