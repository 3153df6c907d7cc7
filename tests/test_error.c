#include "test.h"

TEST(error_strerror_names_every_code)
{
    CHECK_STR(batchfit_strerror(BATCHFIT_OK), "BATCHFIT_E_OK: success");
    CHECK_STR(batchfit_strerror(BATCHFIT_E_NO_MEMORY),
              "BATCHFIT_E_NO_MEMORY: the library could not allocate host memory");
    CHECK_STR(batchfit_strerror(BATCHFIT_E_MIN_DOES_NOT_FIT),
              "BATCHFIT_E_MIN_DOES_NOT_FIT: even the minimum batch size does not fit");
    CHECK_STR(batchfit_strerror(12345), "BATCHFIT_E_UNKNOWN: unknown error");
    CHECK_STR(batchfit_strerror(-1), "BATCHFIT_E_UNKNOWN: unknown error");
    CHECK_STR(batchfit_error_name(BATCHFIT_E_TRIAL_ERROR), "TRIAL_ERROR");
    CHECK_STR(batchfit_error_name(999), "UNKNOWN");
}

TEST(error_codes_keep_their_values)
{
    /* Codes are part of the ABI: appended, never renumbered. */
    CHECK_EQ(BATCHFIT_E_INVALID_ARGUMENT, 1);
    CHECK_EQ(BATCHFIT_E_NO_MEMORY, 2);
    CHECK_EQ(BATCHFIT_E_NO_DEVICE, 3);
    CHECK_EQ(BATCHFIT_E_MIN_DOES_NOT_FIT, 4);
    CHECK_EQ(BATCHFIT_E_TRIAL_ERROR, 5);
    CHECK_EQ(BATCHFIT_E_ABORTED, 6);
    CHECK_EQ(BATCHFIT_E_DEVICE, 7);
    CHECK_EQ(BATCHFIT_E_TRIAL_LIMIT, 8);
    CHECK_EQ(BATCHFIT_E_PARSE, 9);
    CHECK_EQ(BATCHFIT_E_NOT_FOUND, 10);
    CHECK_EQ(BATCHFIT_E_OUTPUT, 11);
    /* An output lost is exit 6, as the CLI has it. */
    CHECK_EQ(batchfit_exit_status(BATCHFIT_E_OUTPUT), 6);
    CHECK_STR(batchfit_strerror(BATCHFIT_E_OUTPUT),
              "BATCHFIT_E_OUTPUT: an output of the answer could not be written");
}

TEST(error_version_matches_header)
{
    CHECK_EQ(batchfit_version_number(), BATCHFIT_VERSION_NUMBER);
    CHECK_STR(batchfit_version_string(), BATCHFIT_VERSION_STRING);
    char expect[32];
    snprintf(expect, sizeof expect, "%d.%d.%d", BATCHFIT_VERSION_MAJOR, BATCHFIT_VERSION_MINOR,
             BATCHFIT_VERSION_PATCH);
    CHECK_STR(batchfit_version_string(), expect);
}

TEST(error_outcome_names)
{
    CHECK_STR(batchfit_outcome_name(BATCHFIT_FITS), "fits");
    CHECK_STR(batchfit_outcome_name(BATCHFIT_OOM), "oom");
    CHECK_STR(batchfit_outcome_name(BATCHFIT_ERROR), "error");
}
