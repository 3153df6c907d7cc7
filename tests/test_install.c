#include "test.h"

#include <stdlib.h>

/* make install into a DESTDIR, then a program built with pkg-config against
 * that copy probes a sim device: 1 GiB + 100 MiB * b <= 9.5 GiB gives 87. */
TEST(install_pkg_config_program_probes_a_sim_device)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "sh '%s/tests/install_check.sh'", test_source_dir());
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    char line[256] = "";
    char last[256] = "";
    while (fgets(line, sizeof line, p))
        snprintf(last, sizeof last, "%s", line);
    int status = pclose(p);
    CHECK_EQ(status, 0);
    CHECK_STR(last, "batch_size=87\n");
}
