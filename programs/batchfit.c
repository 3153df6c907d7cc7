/* batchfit: find the largest batch size that fits, by measuring it.
 * Subcommands: probe, info, estimate, cache, plot. */
/* memfd_create */
#define _GNU_SOURCE
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: batchfit probe [options] -- COMMAND [ARGS...]   find the largest batch size\n"
            "       batchfit probe --device sim:SPEC [options]      probe a simulated device\n"
            "       batchfit info [--json]                          devices and backends\n"
            "       batchfit estimate --params N [options]          predict before measuring\n"
            "       batchfit cache list | show KEY | clear          remembered results\n"
            "       batchfit plot RESULT.json [-o FILE.svg]         draw a probe's JSON as SVG\n"
            "       batchfit --version | --help\n"
            "\n"
            "`batchfit probe --help` lists the probe's options.\n");
}

int cli_stdout_closed;

static void hold_standard_streams(void)
{
    for (int fd = 0; fd < 3; fd++) {
        if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
            continue;
        /* The lowest free number: this one, as those below it are open. A
         * closed stdout is held by a file in memory, so what was written to
         * it can be told at the end (cli_finish_output). */
        int held = fd == 1 ? memfd_create("batchfit-closed-stdout", MFD_CLOEXEC) : -1;
        if (held < 0)
            held = open("/dev/null", fd ? O_WRONLY : O_RDONLY);
        if (held >= 0 && held != fd)
            close(held);
        if (fd == 1)
            cli_stdout_closed = 1;
    }
}

void cli_log_warnings(batchfit_log_level level, const char *message, void *userdata)
{
    (void)userdata;
    if (level == BATCHFIT_LOG_WARN)
        fprintf(stderr, "batchfit: warning: %s\n", message);
}

/* A command that could not write its output to stdout fails with exit 6
 * (probe and plot say so of their answer themselves, and call this for
 * their --help; info, estimate, cache and every --help exited 0
 * with nothing written (>/dev/full, >&-), and a script took that for an
 * answer. A reader that went away (EPIPE, as with | head) chose not to
 * read. Other exit codes stand. */
int cli_finish_output(const char *who, int rc)
{
    if (rc != EXIT_FOUND)
        return rc;
    errno = 0;
    const char *why = NULL;
    struct stat st;
    if (fflush(stdout) != 0) {
        if (errno != EPIPE)
            why = strerror(errno ? errno : EIO);
    } else if (ferror(stdout)) {
        /* An earlier write failed, and its errno is gone: on a pipe or a
         * socket that was its reader going away. */
        if (fstat(1, &st) != 0 || !(S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
            why = strerror(EIO);
    } else if (cli_stdout_closed && lseek(1, 0, SEEK_CUR) > 0) {
        why = "it is closed";
    }
    if (!why)
        return rc;
    fprintf(stderr, "batchfit%s%s: cannot write to stdout: %s\n", who[0] ? " " : "", who, why);
    return EXIT_EXPORT_FAILED;
}

int main(int argc, char **argv)
{
    hold_standard_streams();
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("batchfit %s\n", batchfit_version_string());
        if (batchfit_version_number() != BATCHFIT_VERSION_NUMBER)
            fprintf(stderr, "batchfit: warning: built against libbatchfit %s, running %s\n",
                    BATCHFIT_VERSION_STRING, batchfit_version_string());
        return cli_finish_output("", EXIT_FOUND);
    }
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return cli_finish_output("", EXIT_FOUND);
    }
    if (strcmp(cmd, "probe") == 0)
        return cli_probe(argc - 1, argv + 1);
    if (strcmp(cmd, "info") == 0)
        return cli_finish_output("info", cli_info(argc - 1, argv + 1));
    if (strcmp(cmd, "estimate") == 0)
        return cli_finish_output("estimate", cli_estimate(argc - 1, argv + 1));
    if (strcmp(cmd, "cache") == 0)
        return cli_finish_output("cache", cli_cache(argc - 1, argv + 1));
    if (strcmp(cmd, "plot") == 0)
        return cli_plot(argc - 1, argv + 1);
    fprintf(stderr, "batchfit: unknown command \"%s\"\n", cmd);
    usage(stderr);
    return EXIT_USAGE;
}
