/* The batchfit command line, driven as a user drives it: the real binary on
 * real child programs, checking exit codes, stdout, stderr and the JSON. */
#include "test.h"

#include "internal.h"
#include "cgroup_helpers.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *bin(void)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/batchfit", test_build_dir());
    return path;
}

static void clear_cache(const char *dir)
{
    batchfit_ctx *ctx = test_ctx(NULL);
    batchfit_cache_clear(ctx, dir, NULL);
    batchfit_ctx_free(ctx);
}

/* A test's own cache directory (/tmp/batchfit-test-PID-cache-NAME), emptied,
 * and the environment entry that points batchfit at it. Returns the
 * directory. */
typedef struct test_cache {
    char dir[256];
    char env[300];
} test_cache;

static const char *test_cache_open(test_cache *c, const char *name)
{
    snprintf(c->dir, sizeof c->dir, "/tmp/batchfit-test-%ld-cache-%s", (long)getpid(), name);
    snprintf(c->env, sizeof c->env, "BATCHFIT_CACHE_DIR=%s", c->dir);
    clear_cache(c->dir);
    return c->dir;
}

/* Removes a test's cache directory: its entries, its lock and itself. */
static void drop_cache_dir(const char *dir)
{
    clear_cache(dir);
    char lock[300];
    snprintf(lock, sizeof lock, "%s/.lock", dir);
    unlink(lock);
    rmdir(dir);
}

static const char *tool(void)
{
    static char path[1024];
    snprintf(path, sizeof path, "%s/tests/childtool", test_build_dir());
    return path;
}

typedef struct run {
    int status; /* exit code, or 128 + signal */
    char out[65536];
    char err[65536];
    pid_t pid;
    char cache_dir[256]; /* a fresh cache per run unless the test names one */
} run;

static unsigned run_counter;

/* Whether pid runs (exists and is not a zombie). */
static int alive_not_zombie(long pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    return p && p[1] && p[2] != 'Z' && p[2] != 'X';
}

/* Writes text as the whole of the file at path; 1 on success. */
static int write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return 0;
    int ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

/* The pid a trial wrote to path, once it has (polled for up to 10 s); 0 if
 * it never did. */
static long wait_for_pid(const char *path)
{
    for (int i = 0; i < 1000; i++) {
        long pid = 0;
        FILE *f = fopen(path, "r");
        if (f) {
            if (fscanf(f, "%ld", &pid) != 1)
                pid = 0;
            fclose(f);
        }
        if (pid > 0)
            return pid;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

/* Waits for a trial to write its pid to pidfile and sends sig to its
 * parent, the batchfit rank that runs it. Returns the trial's pid, or 0
 * when it or its parent could not be found. */
static long signal_rank_of_trial(const char *pidfile, int sig)
{
    long child = wait_for_pid(pidfile);
    char path[64], stat[512] = "";
    snprintf(path, sizeof path, "/proc/%ld/stat", child);
    FILE *f = child > 0 ? fopen(path, "r") : NULL;
    if (f) {
        size_t n = fread(stat, 1, sizeof stat - 1, f);
        stat[n] = '\0';
        fclose(f);
    }
    const char *close_paren = strrchr(stat, ')');
    long parent = 0;
    if (!close_paren || sscanf(close_paren + 2, "%*c %ld", &parent) != 1 || parent <= 1)
        return 0;
    kill((pid_t)parent, sig);
    return child;
}

/* Starts program with argv (NULL-terminated; argv[0] is the program) and
 * envs (NAME=VALUE strings, NULL-terminated; NULL for none). */
static int start_program(run *r, const char *program, const char *const *argv,
                         const char *const *envs, int *out_fd, int *err_fd)
{
    int o[2], e[2];
    if (pipe(o) != 0 || pipe(e) != 0)
        return -1;
    snprintf(r->cache_dir, sizeof r->cache_dir, "/tmp/batchfit-test-%ld-cache-%u", (long)getpid(),
             run_counter++);
    for (size_t i = 0; envs && envs[i]; i++)
        if (strncmp(envs[i], "BATCHFIT_CACHE_DIR=", 19) == 0)
            r->cache_dir[0] = '\0';
    pid_t pid = fork();
    if (pid == 0) {
        if (r->cache_dir[0])
            setenv("BATCHFIT_CACHE_DIR", r->cache_dir, 1);
        dup2(o[1], 1);
        dup2(e[1], 2);
        close(o[0]);
        close(e[0]);
        for (size_t i = 0; envs && envs[i]; i++) {
            /* Not a variable: a limit on the run's open files. */
            if (strncmp(envs[i], "TEST_CHDIR=", 11) == 0) {
                if (chdir(envs[i] + 11) != 0)
                    _exit(126);
            } else if (strncmp(envs[i], "TEST_CGROUP=", 12) == 0) {
                /* Not a variable: the cgroup.procs file of a cgroup to
                 * run in (a container's, a job's). */
                int fd = open(envs[i] + 12, O_WRONLY | O_CLOEXEC);
                if (fd < 0 || write(fd, "0", 1) != 1)
                    _exit(125);
                close(fd);
            } else if (strcmp(envs[i], "TEST_CLOSE_STDOUT=1") == 0) {
                close(1); /* as `batchfit ... >&-` runs it */
            } else if (strcmp(envs[i], "TEST_CLOSE_FDS=1") == 0) {
                /* Only stdin, stdout and stderr stay open (whatever the test
                 * runner held), so a limit on open files is exact. */
                for (int fd = 3; fd < 1024; fd++)
                    close(fd);
            } else {
                putenv((char *)envs[i]);
            }
        }
        execvp(program, (char *const *)argv);
        _exit(127);
    }
    close(o[1]);
    close(e[1]);
    r->pid = pid;
    *out_fd = o[0];
    *err_fd = e[0];
    return 0;
}

/* Starts batchfit with args (NULL-terminated) and envs. */
static int start_env(run *r, const char *const *args, const char *const *envs, int *out_fd,
                     int *err_fd)
{
    const char *argv[64];
    argv[0] = bin();
    int n = 1;
    for (; args[n - 1] && n < 63; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    return start_program(r, bin(), argv, envs, out_fd, err_fd);
}

static int start(run *r, const char *const *args, const char *env, int *out_fd, int *err_fd)
{
    const char *envs[] = {env, NULL};
    return start_env(r, args, envs, out_fd, err_fd);
}

static void finish(run *r, int out_fd, int err_fd)
{
    size_t no = 0, ne = 0;
    struct pollfd p[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
    int open_fds = 2;
    while (open_fds) {
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2; i++) {
            if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP)))
                continue;
            char *buf = i ? r->err : r->out;
            size_t *n = i ? &ne : &no;
            size_t cap = (i ? sizeof r->err : sizeof r->out) - 1;
            char scratch[4096];
            ssize_t got = read(p[i].fd, *n < cap ? buf + *n : scratch,
                               *n < cap ? cap - *n : sizeof scratch);
            if (got <= 0) {
                close(p[i].fd);
                p[i].fd = -1;
                open_fds--;
            } else if (*n < cap) {
                *n += (size_t)got;
            }
        }
    }
    r->out[no] = '\0';
    r->err[ne] = '\0';
    int status;
    waitpid(r->pid, &status, 0);
    r->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    if (r->cache_dir[0])
        drop_cache_dir(r->cache_dir);
}

static int cli_env(run *r, const char *const *args, const char *const *envs)
{
    int o, e;
    if (start_env(r, args, envs, &o, &e) != 0)
        return -1;
    finish(r, o, e);
    return r->status;
}

static int cli(run *r, const char *const *args, const char *env)
{
    int o, e;
    if (start(r, args, env, &o, &e) != 0)
        return -1;
    finish(r, o, e);
    return r->status;
}

static const char *last_line(const char *text)
{
    static char line[256];
    size_t len = strlen(text);
    while (len && text[len - 1] == '\n')
        len--;
    size_t start = len;
    while (start && text[start - 1] != '\n')
        start--;
    snprintf(line, sizeof line, "%.*s", (int)(len - start), text + start);
    return line;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    static char buf[1 << 18];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    return buf;
}

/* Valid JSON, checked by the library's own strict reader. */
static int valid_json(const char *text)
{
    uint64_t v;
    return batchfit__json_requested(text, strlen(text), "export", &v, NULL, NULL, 0) == BATCHFIT_OK;
}

static unsigned long long json_number(const char *json, const char *key)
{
    char pattern[128];
    snprintf(pattern, sizeof pattern, "\"%s\": ", key);
    const char *p = strstr(json, pattern);
    return p ? strtoull(p + strlen(pattern), NULL, 10) : 0;
}

/* A number in the "result" object of an exported JSON document. */
static unsigned long long result_number(const char *json, const char *key)
{
    const char *result = json ? strstr(json, "\"result\": {") : NULL;
    return result ? json_number(result, key) : 0;
}

static unsigned count(const char *text, const char *needle)
{
    unsigned n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

TEST(cli_version_and_help)
{
    run r;
    const char *version[] = {"--version", NULL};
    CHECK_EQ(cli(&r, version, NULL), 0);
    CHECK_STR(r.out, "batchfit " BATCHFIT_VERSION_STRING "\n");
    const char *help[] = {"probe", "--help", NULL};
    CHECK_EQ(cli(&r, help, NULL), 0);
    CHECK_CONTAINS(r.out, "--vram-limit-gb X");
    CHECK_CONTAINS(r.out, "VRAM_LIMIT_GB");
    /* Every command's --help is its output, on stdout (cache's went to stderr). */
    const char *commands[] = {"probe", "estimate", "cache", "plot", "info"};
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
        const char *asked[] = {commands[i], "--help", NULL};
        CHECK_EQ(cli(&r, asked, NULL), 0);
        CHECK_CONTAINS(r.out, "usage: batchfit ");
        CHECK_STR(r.err, "");
    }
    const char *none[] = {NULL};
    CHECK_EQ(cli(&r, none, NULL), 2);
    const char *unknown[] = {"frobnicate", NULL};
    CHECK_EQ(cli(&r, unknown, NULL), 2);
    CHECK_CONTAINS(r.err, "unknown command \"frobnicate\"");
}

/* Every option --help lists is in the man page, and the man page has no other. */
TEST(cli_man_page_matches_help)
{
    run r;
    const char *help[] = {"probe", "--help", NULL};
    CHECK_EQ(cli(&r, help, NULL), 0);
    char path[1024];
    snprintf(path, sizeof path, "%s/doc/batchfit.1", test_source_dir());
    char *man = read_file(path);
    CHECK(man != NULL);
    /* Undo troff's escaped hyphens. */
    char *w = man;
    for (const char *p = man; *p; p++) {
        if (p[0] == '\\' && p[1] == '-')
            continue;
        *w++ = *p;
    }
    *w = '\0';
    unsigned options = 0;
    for (const char *line = r.out; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, "  --", 4) != 0)
            continue;
        char name[64];
        size_t len = strcspn(line + 2, " \n");
        snprintf(name, sizeof name, ".B %.*s", (int)len, line + 2);
        CHECK_CONTAINS(man, name);
        options++;
    }
    CHECK(options >= 26);
    CHECK_EQ(count(man, ".TP\n.B --"), options);
}

TEST(cli_bad_values_exit_2_naming_the_flag_and_run_nothing)
{
    static const struct {
        const char *flag;
        const char *value;
        const char *expect;
    } bad[] = {
        {"--min", "0", "--min"},
        {"--min", "x", "--min"},
        {"--max", "-1", "--max"},
        {"--max", "abc", "\"abc\""},
        {"--samples", "0", "--samples"},
        {"--multiple-of", "0", "--multiple-of"},
        {"--margin", "12XB", "--margin"},
        {"--margin", "100%", "--margin"},
        {"--vram-limit-gb", "-1", "--vram-limit-gb"},
        {"--vram-limit-gb", "nan", "--vram-limit-gb"},
        {"--memory-budget", "0", "--memory-budget"},
        {"--memory-budget", "lots", "--memory-budget"},
        /* A bare number under 1024 is bytes no one means: refused with
         * the units it could have meant. */
        {"--memory-budget", "300", "--memory-budget: \"300\" has no unit and would be 300 bytes; "
                                   "give a unit (300MiB, 300GiB)"},
        {"--margin", "5", "--margin: \"5\" has no unit and would be 5 bytes"},
        {"--margin", "5.", "--margin: \"5.\" has no unit and would be 5 bytes"},
        {"--memory-budget", "300.", "--memory-budget: \"300.\" has no unit and would be 300 bytes"},
        {"--device", "tpu:0", "--device"},
        {"--device", "sim:capacity=1GiB,colour=red", "colour"},
        {"--strategy", "fast", "--strategy"},
        {"--max-trials", "0", "--max-trials"},
        {"--timeout", "-3", "--timeout"},
        {"--timeout", "abc", "--timeout"},
        {"--timeout", "0x10", "--timeout: invalid value \"0x10\""},
        {"--sample-interval", "5 5", "--sample-interval"},
        {"--timeout", " ", "--timeout"},
        {"--sample-interval", "0", "--sample-interval"},
        {"--oom-pattern", "(unclosed", "--oom-pattern"},
        {"--style", "fancy", "--style"},
        {"--peak-spread", "60%", "--peak-spread"},
        {"--hyperparameters", "/nonexistent/hp.json", "--hyperparameters"},
        {"--hyperparameters", "/tmp", "--hyperparameters /tmp: cannot read it: Is a directory"},
        {"--export-json", "/nonexistent/dir/out.json", "--export-json"},
        {"--frobnicate", NULL, "unknown option --frobnicate"},
        /* A word among the options before "--" is no command: it ran a
         * program named 2. */
        {"--parallel", "2", "unexpected \"2\" before --: options come before --, the command "
                            "after it (--parallel takes no value)"},
        {"--min", NULL, "--min needs a value"},
        /* The value left out: the option after it is no value ("--device
         * --max 5" took --max for a device and refused 5 as a stray word). */
        {"--memory-budget", "--no-cache",
         "--memory-budget needs a value (SIZE): the next argument, --no-cache, is an option"},
        /* An option that only an --mpi job reads is not silently ignored. */
        {"--agree", "min", "--agree is how the ranks of an --mpi job agree"},
    };
    char marker[256];
    snprintf(marker, sizeof marker, "/tmp/batchfit-test-%ld-marker", (long)getpid());
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        unlink(marker);
        run r;
        const char *args[12];
        int n = 0;
        args[n++] = "probe";
        args[n++] = "--device";
        args[n++] = "host";
        args[n++] = bad[i].flag;
        if (bad[i].value)
            args[n++] = bad[i].value;
        if (!bad[i].value && strcmp(bad[i].flag, "--min") == 0) {
            args[n] = NULL; /* the flag is the last word */
        } else {
            args[n++] = "--";
            args[n++] = tool();
            args[n++] = "touch";
            args[n++] = marker;
            args[n] = NULL;
        }
        CHECK_EQ(cli(&r, args, NULL), 2);
        CHECK_CONTAINS(r.err, bad[i].expect);
        CHECK(access(marker, F_OK) != 0);
    }
    run r;
    const char *args[] = {"probe", "--device", "host", "--", tool(), "touch", marker, NULL};
    CHECK_EQ(cli(&r, args, "VRAM_LIMIT_GB=plenty"), 2);
    CHECK_CONTAINS(r.err, "environment variable VRAM_LIMIT_GB");
    CHECK(access(marker, F_OK) != 0);
    const char *missing[] = {"probe", "--device", "host", "--", "/nonexistent/train", NULL};
    CHECK_EQ(cli(&r, missing, NULL), 2);
    CHECK_CONTAINS(r.err, "command /nonexistent/train: no such file");
    const char *nocommand[] = {"probe", "--device", "host", NULL};
    CHECK_EQ(cli(&r, nocommand, NULL), 2);
    CHECK_CONTAINS(r.err, "no COMMAND");
    const char *badtemplate[] = {"probe", "--device", "host", "--", tool(), "{bs}", NULL};
    CHECK_EQ(cli(&r, badtemplate, NULL), 2);
    CHECK_CONTAINS(r.err, "{bs}");
}

/* One trial at batch 1 (--min 1 --max 1) ending each way a command can end. */
TEST(cli_outcomes_and_exit_codes)
{
    static const struct {
        const char *mode[4];
        int exit_code;
        const char *stdout_last;
        const char *stderr_has;
    } rows[] = {
        {{"exit", "0", NULL}, 0, "batch_size=1", "batch size 1"},
        /* A GPU's message at the minimum of a host probe, holding next to
         * nothing: not "a smaller model", but the GPU to probe. */
        {{"print", "torch.OutOfMemoryError: CUDA out of memory.", "1", NULL}, 3, "",
         "does not fit in the budget (972.80 MiB): out of memory (PyTorch CUDA allocator): "
         "torch.OutOfMemoryError: CUDA out of memory.; it held "},
        /* The same line from a run that exited 0 having used next to nothing:
         * a recovered OOM or another device, not "a smaller model". */
        {{"print", "torch.OutOfMemoryError: CUDA out of memory.", "stdout", "0"}, 3, "",
         "; it printed an out-of-memory line yet exited 0"},
        {{"print", "RESOURCE_EXHAUSTED: Out of memory while trying", "stdout", "0"}, 3, "",
         "JAX / XLA"},
        {{"signal", "kill", NULL}, 3, "", "SIGKILL"},
        {{"signal", "segv", NULL}, 4, "", "about to die by segv"},
        {{"signal", "abort", NULL}, 4, "", "SIGABRT"},
        {{"print", "KeyError: 'labels'", "3", NULL}, 4, "", "  | KeyError: 'labels'"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const char *args[16] = {"probe", "--device", "host", "--memory-budget", "1GiB", "--min",
                                "1", "--max", "1", "--", tool()};
        int n = 11;
        for (int k = 0; k < 4 && rows[i].mode[k]; k++)
            args[n++] = rows[i].mode[k];
        args[n] = NULL;
        run r;
        CHECK_EQ(cli(&r, args, NULL), rows[i].exit_code);
        CHECK_STR(last_line(r.out), rows[i].stdout_last);
        CHECK_CONTAINS(r.err, rows[i].stderr_has);
        if (rows[i].exit_code == 4)
            CHECK_CONTAINS(r.err, "--show-output");
    }
    run r;
    const char *shown[] = {"probe", "--device", "host", "--max", "1", "--show-output", "--", tool(),
                           "print", "hello from the child", "0", NULL};
    CHECK_EQ(cli(&r, shown, NULL), 0);
    CHECK_CONTAINS(r.err, "some earlier line\nhello from the child\n");
    const char *timeout[] = {"probe", "--device", "host", "--min", "1", "--max", "1", "--timeout",
                             "0.3", "--", tool(), "hang", NULL};
    CHECK_EQ(cli(&r, timeout, NULL), 4);
    CHECK_CONTAINS(r.err, "timed out after 0.3 s");
}

TEST(cli_finds_the_maximum_and_exports_json)
{
    char json_path[256];
    snprintf(json_path, sizeof json_path, "/tmp/batchfit-test-%ld.json", (long)getpid());
    unlink(json_path);
    /* 4 MiB + 1 MiB per sample against 128.5 MiB (122.1 MiB after the 5%
     * margin, so the boundary lies well inside one sample), measured by the
     * kernel. */
    const char *args[] = {"probe",        "--device", "host", "--memory-budget", "128.5MiB",
                          "--peak-spread", "0%",     "--export-json", json_path, "--",
                          tool(),         "grow",     "1024", "4096", NULL};
    run r;
    CHECK_EQ(cli(&r, args, NULL), 0);
    const char *answer = last_line(r.out);
    CHECK(strncmp(answer, "batch_size=", 11) == 0);
    unsigned long long batch = strtoull(answer + 11, NULL, 10);
    /* The program's own baseline is under a few MiB: the answer is just below 118. */
    CHECK(batch >= 110 && batch <= 118);
    CHECK_CONTAINS(r.err, "no {batch} in the command");
    char *json = read_file(json_path);
    CHECK(json != NULL);
    CHECK(valid_json(json));
    CHECK_CONTAINS(json, "\"schema_version\": 1");
    CHECK_CONTAINS(json, "\"kind\": \"host\"");
    CHECK_CONTAINS(json, "\"strategy\": \"model\"");
    CHECK_CONTAINS(json, "\"mechanisms\": \"peak: ");
    CHECK_EQ(result_number(json, "batch_size"), batch);
    unsigned long long usable = (128u << 20) + (1u << 19);
    CHECK_EQ(json_number(json, "budget_bytes"), usable - (unsigned long long)((double)usable * 0.05));
    unsigned trials = (unsigned)result_number(json, "trials");
    CHECK(trials >= 2 && trials <= 6);
    CHECK_EQ(count(json, "\"outcome\": "), trials);
    CHECK_CONTAINS(json, "\"fit\": {");
    CHECK_CONTAINS(json, "\"interrupted\": false");
    CHECK(access(json_path, F_OK) == 0);
    unlink(json_path);

    /* The same size with bisection, in more trials; JSON on stdout. */
    const char *bisect[] = {"probe",  "--device", "host", "--memory-budget", "128.5MiB",
                            "--peak-spread", "0%", "--strategy", "bisect", "--max", "4096",
                            "--quiet", "--export-json", "-", "--", tool(), "grow", "1024", "4096",
                            NULL};
    CHECK_EQ(cli(&r, bisect, NULL), 0);
    CHECK(valid_json(r.out));
    CHECK_EQ(result_number(r.out, "batch_size"), batch);
    CHECK(result_number(r.out, "trials") > trials);
    CHECK_STR(r.err, "");
}

TEST(cli_hyperparameters_and_minimum)
{
    char hp[256];
    snprintf(hp, sizeof hp, "/tmp/batchfit-test-%ld-hp.json", (long)getpid());
    FILE *f = fopen(hp, "w");
    CHECK(f != NULL);
    fputs("{\"max_batch_size\": 5, \"batch_size\": 1000}\n", f);
    fclose(f);
    run r;
    const char *args[] = {"probe", "--device", "host", "--hyperparameters", hp, "--",
                          tool(), "exit", "0", "{batch}", NULL};
    CHECK_EQ(cli(&r, args, NULL), 0);
    CHECK_STR(last_line(r.out), "batch_size=5");
    f = fopen(hp, "w");
    fputs("{\"batch_size\": 1000, \"max_batch_size\": null}\n", f);
    fclose(f);
    const char *bounded[] = {"probe", "--device", "host", "--hyperparameters", hp, "--samples",
                             "300", "--", tool(), "exit", "0", "{batch}", NULL};
    CHECK_EQ(cli(&r, bounded, NULL), 0);
    CHECK_STR(last_line(r.out), "batch_size=300");
    CHECK(strstr(r.err, "has no top-level") == NULL); /* null is said, not missing */
    /* A file without the key (or with it one level down) was read and said
     * nothing, without a word. */
    f = fopen(hp, "w");
    fputs("{\"model\": {\"max_batch_size\": 5}, \"batch_size\": 1000}\n", f);
    fclose(f);
    CHECK_EQ(cli(&r, bounded, NULL), 0);
    CHECK_STR(last_line(r.out), "batch_size=300");
    CHECK_CONTAINS(r.err, "has no top-level \"max_batch_size\" (\"batch_size\" is an output, "
                          "never read): the device decides");
    unlink(hp);

    const char *minimum[] = {"probe", "--device", "host", "--max", "1", "--min", "2", "--",
                             tool(), "exit", "0", "{batch}", NULL};
    CHECK_EQ(cli(&r, minimum, NULL), 0);
    CHECK_CONTAINS(r.err, "requested max_batch_size=1 is below the step's minimum of 2; using 2");
    CHECK_STR(last_line(r.out), "batch_size=2");

    const char *pow2[] = {"probe", "--device", "host", "--power-of-two", "--max", "300", "--quiet",
                          "--", tool(), "exit", "0", "{batch}", NULL};
    CHECK_EQ(cli(&r, pow2, NULL), 0);
    CHECK_STR(r.out, "batch_size=300\n");
}

TEST(cli_devices_and_info)
{
    run r;
    const char *cuda[] = {"probe", "--device", "cuda:0", "--", tool(), "exit", "0", NULL};
    CHECK_EQ(cli(&r, cuda, NULL), 5);
    CHECK_CONTAINS(r.err, "no usable device: cuda:0: "); /* which device: it was not named */
    CHECK_CONTAINS(r.err, "cannot load " TEST_NO_CUDA " (the library BATCHFIT_CUDA_LIBRARY names)");
    const char *autodev[] = {"probe", "--max", "4", "--export-json", "-", "--", tool(), "exit",
                             "0", "{batch}", NULL};
    CHECK_EQ(cli(&r, autodev, NULL), 0);
    CHECK_CONTAINS(r.err, "warning: no usable NVIDIA GPU (cannot load " TEST_NO_CUDA);
    CHECK_CONTAINS(r.err, "auto uses the host's memory");
    /* And the result's warnings say it (a library or Python caller reads them, not stderr). */
    CHECK_CONTAINS(r.out, "device auto uses the host's memory\"");
    const char *sim[] = {"probe", "--device",
                         "sim:capacity=80GiB,fixed=12GiB,per_sample=150MiB,granule=2MiB", NULL};
    CHECK_EQ(cli(&r, sim, NULL), 0);
    CHECK_STR(last_line(r.out), "batch_size=436"); /* (76 - 12) GiB / 150 MiB */
    const char *simcmd[] = {"probe", "--device", "sim:capacity=1GiB", "--", tool(), "exit", "0",
                            NULL};
    CHECK_EQ(cli(&r, simcmd, NULL), 2);
    CHECK_CONTAINS(r.err, "takes no COMMAND");
    const char *info[] = {"info", NULL};
    CHECK_EQ(cli(&r, info, NULL), 0);
    CHECK_CONTAINS(r.out, "host  available");
    CHECK_CONTAINS(r.out, "cuda  unavailable: ");
    CHECK_CONTAINS(r.out, "--device auto picks: host");
    const char *info_json[] = {"info", "--json", NULL};
    CHECK_EQ(cli(&r, info_json, NULL), 0);
    CHECK(valid_json(r.out));
    CHECK_CONTAINS(r.out, "\"auto\": \"host\"");
    CHECK_CONTAINS(r.out, "\"available\": false");
}

/* Starts the CLI, waits for its trial to write pidfile, sends sig and
 * collects what it printed; returns the pid the trial wrote. */
static long signal_in_trial(run *r, const char *const *args, const char *const *envs,
                            const char *pidfile, int sig)
{
    int o, e;
    if (start_env(r, args, envs, &o, &e) != 0)
        return 0;
    long child = wait_for_pid(pidfile);
    kill(r->pid, sig);
    finish(r, o, e);
    return child;
}

/* Every signal that would end batchfit (Ctrl-C, kill, a closed terminal,
 * SIGQUIT, SIGUSR1, an alarm) during a hanging trial: the trial's group is
 * killed, the JSON says interrupted with the signal, and batchfit exits
 * 128 + the signal. */
static void interrupt_with(int sig)
{
    char pidfile[256], json_path[256];
    snprintf(pidfile, sizeof pidfile, "/tmp/batchfit-test-%ld-int.pid", (long)getpid());
    snprintf(json_path, sizeof json_path, "/tmp/batchfit-test-%ld-int.json", (long)getpid());
    unlink(pidfile);
    unlink(json_path);
    const char *args[] = {"probe", "--device", "host", "--export-json", json_path, "--",
                          tool(), "hang", pidfile, NULL};
    run r;
    long child = signal_in_trial(&r, args, NULL, pidfile, sig);
    CHECK(child > 0);
    CHECK_EQ(r.status, 128 + sig);
    CHECK_CONTAINS(r.err, "interrupted");
    /* The hung child is gone (at most a zombie of a reaper). */
    char path[64];
    snprintf(path, sizeof path, "/proc/%ld/stat", child);
    FILE *st = fopen(path, "r");
    if (st) {
        char buf[512];
        size_t n = fread(buf, 1, sizeof buf - 1, st);
        buf[n] = '\0';
        fclose(st);
        char *p = strrchr(buf, ')');
        CHECK(p && (p[2] == 'Z' || p[2] == 'X'));
    }
    char *json = read_file(json_path);
    CHECK(json != NULL);
    CHECK(valid_json(json));
    CHECK_CONTAINS(json, "\"interrupted\": true");
    char expect[64];
    snprintf(expect, sizeof expect, "\"exit_code\": %d", 128 + sig);
    CHECK_CONTAINS(json, expect);
    snprintf(expect, sizeof expect, "\"signal\": %d", sig);
    CHECK_CONTAINS(json, expect);
    unlink(pidfile);
    unlink(json_path);
}

TEST(cli_interrupt_writes_json_and_exits_130)
{
    interrupt_with(SIGINT);
    /* Interrupted after a size fit: the message names the trial it stopped
     * and what had fit, which is no answer (it said only "interrupted"). */
    char pidfile[256], script[1024];
    snprintf(pidfile, sizeof pidfile, "/tmp/batchfit-test-%ld-int2.pid", (long)getpid());
    unlink(pidfile);
    snprintf(script, sizeof script,
             "if [ \"$0\" -gt 1 ]; then echo $$ > %s.tmp; mv %s.tmp %s; exec sleep 1000; fi",
             pidfile, pidfile, pidfile);
    const char *args[] = {"probe", "--device", "host", "--memory-budget", "256MiB", "--",
                          "/bin/sh", "-c", script, "{batch}", NULL};
    run r;
    CHECK(signal_in_trial(&r, args, NULL, pidfile, SIGINT) > 0);
    CHECK_EQ(r.status, 130);
    CHECK_CONTAINS(r.err, "batchfit probe: interrupted: the trial at batch size ");
    CHECK_CONTAINS(r.err, "; batch size 1 had fit (not an answer: the search did not finish)");
    unlink(pidfile);
}

TEST(cli_every_terminating_signal_stops_the_trial)
{
    static const int sigs[] = {SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGALRM};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        interrupt_with(sigs[i]);
}

/* A reader that goes away (batchfit probe ... | head -n 2) does not kill
 * batchfit: it finishes, the trials end normally, the JSON is written. */
TEST(cli_closed_output_pipe_is_harmless)
{
    char json_path[256];
    snprintf(json_path, sizeof json_path, "/tmp/batchfit-test-%ld-pipe.json", (long)getpid());
    unlink(json_path);
    const char *args[] = {"probe",  "--device", "host", "--memory-budget", "256MiB", "--max",
                          "8", "--show-output", "--export-json", json_path, "--", tool(), "flood",
                          "1", NULL};
    run r;
    int o, e;
    CHECK_EQ(start(&r, args, NULL, &o, &e), 0);
    close(o);
    close(e);
    int status;
    CHECK_EQ(waitpid(r.pid, &status, 0), r.pid);
    drop_cache_dir(r.cache_dir); /* finish() is not called: the pipes are gone */
    CHECK(WIFEXITED(status));
    CHECK_EQ(WEXITSTATUS(status), 0);
    char *json = read_file(json_path);
    CHECK(json != NULL);
    CHECK_CONTAINS(json, "\"batch_size\": 8");
    unlink(json_path);
}

/* The example trainer (32 channels: ~1.4 MiB a sample, far above the
 * kernel's accounting noise of ~0.1 MiB) under a host budget whose boundary
 * lies mid-way between two batch sizes: the model strategy finds
 * bisection's answer in few trials (3 as a rule; one CI run of the ASan
 * build, whose trainer's peaks are noisier, took more than 4), bisection in
 * 10 or more. */
TEST(cli_example_trainer_model_matches_bisect)
{
    char trainer[1024], json_path[256];
    snprintf(trainer, sizeof trainer, "%s/examples/trainer", test_build_dir());
    snprintf(json_path, sizeof json_path, "/tmp/batchfit-test-%ld-cal.json", (long)getpid());
    double peak[2];
    const char *sizes[2] = {"20", "80"};
    for (int i = 0; i < 2; i++) {
        const char *args[] = {"probe", "--device", "host", "--memory-budget", "1GiB", "--min",
                              sizes[i], "--max", sizes[i], "--quiet", "--export-json", json_path,
                              "--", trainer, "--batch-size", "{batch}", "--steps", "1",
                              "--channels", "32", NULL};
        run r;
        CHECK_EQ(cli(&r, args, NULL), 0);
        peak[i] = (double)json_number(read_file(json_path), "peak_bytes");
        CHECK(peak[i] > 0);
    }
    unlink(json_path);
    double per_sample = (peak[1] - peak[0]) / 60.0;
    CHECK(per_sample > 1.2e6 && per_sample < 1.8e6); /* ~1.4 MiB a sample */
    double budget = peak[1] + per_sample * 20.5; /* the boundary: 100.5 */
    char budget_text[64];
    snprintf(budget_text, sizeof budget_text, "%.0f", budget / 0.95);
    unsigned long long answers[2], trials[2];
    const char *strategies[2] = {"model", "bisect"};
    for (int i = 0; i < 2; i++) {
        const char *args[] = {"probe", "--device", "host", "--memory-budget", budget_text,
                              "--peak-spread", "0%", "--max", "4096", "--strategy",
                              strategies[i], "--quiet", "--export-json", "-", "--", trainer,
                              "--batch-size", "{batch}", "--steps", "1", "--channels", "32", NULL};
        run r;
        CHECK_EQ(cli(&r, args, NULL), 0);
        answers[i] = result_number(r.out, "batch_size");
        trials[i] = result_number(r.out, "trials");
    }
    CHECK_EQ(answers[0], 100);
    CHECK_EQ(answers[1], answers[0]);
    CHECK(trials[0] <= 6);
    CHECK(trials[1] >= 10);
    printf("    example trainer: model %llu trials, bisect %llu trials, batch %llu\n", trials[0],
           trials[1], answers[0]);
}

/* The GPU path through the fake NVIDIA libraries: the CLI holds the margin
 * (and the VRAM limit) as ballast on the probed GPU, the child sees only
 * that GPU, and its per-process memory is sampled through NVML. */
TEST(cli_gpu_probe_through_fake_libraries)
{
    char state[256], cuda[1024], nvml[1024], json_path[256];
    snprintf(state, sizeof state, "FAKE_STATE=/tmp/batchfit-test-%ld-cligpu", (long)getpid());
    snprintf(cuda, sizeof cuda, "BATCHFIT_CUDA_LIBRARY=%s/fake/libcuda.so.1", test_build_dir());
    snprintf(nvml, sizeof nvml, "BATCHFIT_NVML_LIBRARY=%s/fake/libnvidia-ml.so.1", test_build_dir());
    snprintf(json_path, sizeof json_path, "/tmp/batchfit-test-%ld-gpu.json", (long)getpid());
    unlink(state + 11);
    const char *envs[] = {"FAKE_GPUS=80GiB,16GiB", state, cuda, nvml, NULL};
    run r;
    const char *info[] = {"info", NULL};
    CHECK_EQ(cli_env(&r, info, envs), 0);
    CHECK_CONTAINS(r.out, "cuda  available: 2 visible devices");
    CHECK_CONTAINS(r.out, "cuda:1  Fake GPU 16GB  GPU-20212223");
    CHECK_CONTAINS(r.out, "--device auto picks: cuda:0");

    /* 1 GiB + 100 MiB a sample on 16 GiB: 15.2 GiB after the margin, 145. */
    const char *probe[] = {"probe", "--device", "cuda:1", "--export-json", json_path, "--",
                           tool(), "gpu-grow", "100", "1024", NULL};
    CHECK_EQ(cli_env(&r, probe, envs), 0);
    CHECK_STR(last_line(r.out), "batch_size=145");
    CHECK_CONTAINS(r.err, "holding 819.20 MiB of ballast on cuda:1");
    char *json = read_file(json_path);
    CHECK(json != NULL);
    CHECK(valid_json(json));
    CHECK_CONTAINS(json, "\"uuid\": \"GPU-20212223-2425-2627-2829-2a2b2c2d2e2f\"");
    CHECK_CONTAINS(json, "\"peak_source\": \"nvml per-process sampling\"");
    /* The margin: 5% of 16 GiB, held on the device. */
    CHECK_EQ(json_number(json, "held_bytes"), (unsigned long long)((double)(16ull << 30) * 0.05));
    CHECK(result_number(json, "trials") <= 4);
    /* Nothing is left allocated: the ballast was released, the child freed. */
    char *left = read_file(state + 11);
    CHECK(left == NULL || left[0] == '\0');

    /* The VRAM limit is held too: 4 GiB less 5% on the 80 GiB device. */
    const char *limited[] = {"probe", "--device", "auto", "--vram-limit-gb", "4", "--quiet", "--",
                             tool(), "gpu-grow", "100", "1024", NULL};
    CHECK_EQ(cli_env(&r, limited, envs), 0);
    CHECK_STR(r.out, "batch_size=28\n");

    /* Without NVML the peak comes from the device's free memory. */
    char nvml_missing[1024];
    snprintf(nvml_missing, sizeof nvml_missing,
             "BATCHFIT_NVML_LIBRARY=%s/fake/libnvidia-ml-missing.so", test_build_dir());
    const char *envs_no_nvml[] = {"FAKE_GPUS=80GiB,16GiB", state, cuda, nvml_missing, NULL};
    CHECK_EQ(cli_env(&r, probe, envs_no_nvml), 0);
    CHECK_STR(last_line(r.out), "batch_size=145");
    json = read_file(json_path);
    CHECK_CONTAINS(json, "\"peak_source\": \"device free memory\"");

    /* A ballast that cannot be allocated: no usable device, nothing run. */
    const char *envs_fail[] = {"FAKE_GPUS=80GiB,16GiB", state, cuda, nvml, "FAKE_CUDA_ALLOC_FAIL=1",
                               NULL};
    CHECK_EQ(cli_env(&r, probe, envs_fail), 5);
    CHECK_CONTAINS(r.err, "could not hold");
    unlink(json_path);
    unlink(state + 11);
}

/* Several GPUs at once through the fake NVIDIA libraries: info says what
 * cuda:all means; a probe holds ballast on each GPU, the command sees them
 * in the given order, and each GPU is judged against its own budget. */
TEST(cli_multi_gpu_probe_through_fake_libraries)
{
    char state[256], cuda[1024], nvml[1024], json_path[256];
    snprintf(state, sizeof state, "FAKE_STATE=/tmp/batchfit-test-%ld-climgpu", (long)getpid());
    snprintf(cuda, sizeof cuda, "BATCHFIT_CUDA_LIBRARY=%s/fake/libcuda.so.1", test_build_dir());
    snprintf(nvml, sizeof nvml, "BATCHFIT_NVML_LIBRARY=%s/fake/libnvidia-ml.so.1", test_build_dir());
    snprintf(json_path, sizeof json_path, "/tmp/batchfit-test-%ld-mgpu.json", (long)getpid());
    unlink(state + 11);
    const char *envs[] = {"FAKE_GPUS=16GiB,24GiB", state, cuda, nvml, NULL};
    run r;
    const char *info[] = {"info", NULL};
    CHECK_EQ(cli_env(&r, info, envs), 0);
    CHECK_CONTAINS(r.out, "--device cuda:all means: cuda:0,1 (Fake GPU 16GB + Fake GPU 24GB)");
    const char *info_json[] = {"info", "--json", NULL};
    CHECK_EQ(cli_env(&r, info_json, envs), 0);
    CHECK(valid_json(r.out));
    CHECK_CONTAINS(r.out, "\"cuda_all\": \"cuda:0,1\"");

    /* cuda:1 (24 GiB) gets 100 MiB a sample and binds at 223; cuda:0 (16
     * GiB, the smaller budget) gets 50 MiB and would allow 290. */
    const char *probe[] = {"probe", "--device", "cuda:1,0", "--export-json", json_path, "--",
                           tool(), "gpu-grow-each", "100,50", "1024", NULL};
    CHECK_EQ(cli_env(&r, probe, envs), 0);
    CHECK_STR(last_line(r.out), "batch_size=223");
    CHECK_CONTAINS(r.err, "holding ballast while trials run: 1.20 GiB on cuda:1, 819.20 MiB on "
                          "cuda:0");
    CHECK_CONTAINS(r.err, "on each of 2 GPUs");
    CHECK_CONTAINS(r.err, "on the tightest GPU, cuda:0");
    CHECK_CONTAINS(r.err, "cuda:1 (Fake GPU 24GB): peak at batch 223 22.78 GiB of its budget "
                          "22.80 GiB");
    CHECK_CONTAINS(r.err, "cuda:0 (Fake GPU 16GB): peak at batch 223 11.89 GiB of its budget "
                          "15.20 GiB");
    char *json = read_file(json_path);
    CHECK(json != NULL);
    CHECK(valid_json(json));
    CHECK_CONTAINS(json, "\"spec\": \"cuda:1,0\"");
    CHECK_CONTAINS(json, "\"gpu\": \"cuda:0\"");
    CHECK_CONTAINS(json, "\"uuid\": \"GPU-20212223-2425-2627-2829-2a2b2c2d2e2f\"");
    CHECK_CONTAINS(json, "\"peak_bytes\": 24456986624,\n          \"budget_bytes\": 24481313588");
    char *left = read_file(state + 11);
    CHECK(left == NULL || left[0] == '\0');

    /* Ballast that cannot be held on one GPU: nothing runs, nothing is left. */
    const char *envs_fail[] = {"FAKE_GPUS=16GiB,24GiB", state, cuda, nvml,
                               "FAKE_CUDA_ALLOC_FAIL_ON=0", NULL};
    const char *all[] = {"probe", "--device", "cuda:all", "--quiet", "--",
                         tool(), "gpu-grow-each", "100,50", "1024", NULL};
    CHECK_EQ(cli_env(&r, all, envs_fail), 5);
    CHECK_CONTAINS(r.err, "cuda:0: could not hold");
    left = read_file(state + 11);
    CHECK(left == NULL || left[0] == '\0');
    /* A GPU listed twice is bad input. */
    const char *twice[] = {"probe", "--device", "cuda:1,1", "--", tool(), "exit", "0", NULL};
    CHECK_EQ(cli_env(&r, twice, envs), 2);
    CHECK_CONTAINS(r.err, "GPU 1 is listed twice");
    unlink(json_path);
    unlink(state + 11);
}

/* --parallel on four identical fake GPUs: one trial on each GPU at once
 * (the trials meet: each waits for another's mark before it allocates),
 * the answer of one GPU alone, nothing left on any GPU. */
TEST(cli_parallel_trials_on_identical_fake_gpus)
{
    char state[256], cuda[1024], nvml[1024], dir[256], met[300], json_path[256];
    snprintf(state, sizeof state, "FAKE_STATE=/tmp/batchfit-test-%ld-clipar", (long)getpid());
    snprintf(cuda, sizeof cuda, "BATCHFIT_CUDA_LIBRARY=%s/fake/libcuda.so.1", test_build_dir());
    snprintf(nvml, sizeof nvml, "BATCHFIT_NVML_LIBRARY=%s/fake/libnvidia-ml.so.1", test_build_dir());
    snprintf(dir, sizeof dir, "/tmp/batchfit-test-%ld-meet", (long)getpid());
    snprintf(met, sizeof met, "%s/met", dir);
    snprintf(json_path, sizeof json_path, "/tmp/batchfit-test-%ld-par.json", (long)getpid());
    unlink(state + 11);
    unlink(met);
    rmdir(dir);
    CHECK_EQ(mkdir(dir, 0700), 0);
    const char *envs[] = {"FAKE_GPUS=16GiB,16GiB,16GiB,16GiB", state, cuda, nvml, NULL};
    run r;
    /* One GPU: 1 GiB + 100 MiB a sample in a 15.20 GiB budget. */
    const char *one[] = {"probe", "--device", "cuda:0", "--no-cache", "--", tool(), "gpu-grow",
                         "100", "1024", NULL};
    CHECK_EQ(cli_env(&r, one, envs), 0);
    CHECK_STR(last_line(r.out), "batch_size=145");
    const char *par[] = {"probe", "--device", "cuda:all", "--parallel", "--no-cache",
                         "--export-json", json_path, "--", tool(), "gpu-grow-meet", dir, "100",
                         "1024", NULL};
    CHECK_EQ(cli_env(&r, par, envs), 0);
    CHECK_STR(last_line(r.out), "batch_size=145");
    CHECK_CONTAINS(r.err, "trials in parallel: up to 4 a round, one on each GPU");
    CHECK_CONTAINS(r.err, "rounds of trials at once");
    /* The summary names the GPU the answer ran on, and only that one. */
    CHECK_CONTAINS(r.err, "(Fake GPU 16GB): peak at batch 145 15.16 GiB of its budget 15.20 GiB");
    CHECK(strstr(r.err, "peak at batch 145 unknown") == NULL);
    CHECK_CONTAINS(r.err, "819.20 MiB on cuda:3");
    char *meetings = read_file(met);
    CHECK(meetings != NULL);
    CHECK_CONTAINS(meetings, "met another trial");
    char *json = read_file(json_path);
    CHECK(json != NULL);
    CHECK(valid_json(json));
    CHECK_CONTAINS(json, "\"batch_size\": 145");
    /* Two rounds on a line (the spread, then the boundary and the next
     * size), and a round more where sampling misses a reading. */
    const char *rounds = strstr(json, "\"rounds\": ");
    const char *result = strstr(json, "\"result\": {");
    const char *trials = result ? strstr(result, "\"trials\": ") : NULL;
    CHECK(rounds != NULL && trials != NULL);
    CHECK(atoi(rounds + 10) >= 2 && atoi(rounds + 10) <= 3);
    CHECK(atoi(trials + 10) > atoi(rounds + 10));
    char *left = read_file(state + 11);
    CHECK(left == NULL || left[0] == '\0');

    /* GPUs that differ cannot share the search's rounds. */
    const char *envs_mixed[] = {"FAKE_GPUS=16GiB,24GiB", state, cuda, nvml, NULL};
    const char *mixed[] = {"probe", "--device", "cuda:all", "--parallel", "--no-cache", "--",
                           tool(), "gpu-grow", "100", "1024", NULL};
    CHECK_EQ(cli_env(&r, mixed, envs_mixed), 2);
    CHECK_CONTAINS(r.err, "trials in parallel need identical GPUs");
    left = read_file(state + 11);
    CHECK(left == NULL || left[0] == '\0');
    /* One device has nothing to run in parallel with, a sim device neither. */
    const char *host[] = {"probe", "--device", "cuda:0", "--parallel", "--no-cache", "--",
                          tool(), "gpu-grow", "100", "1024", NULL};
    CHECK_EQ(cli_env(&r, host, envs), 2);
    CHECK_CONTAINS(r.err, "need several identical GPUs");
    const char *sim[] = {"probe", "--device", "sim:capacity=16GiB,fixed=2GiB,per_sample=100MiB",
                         "--parallel", "--no-cache", NULL};
    CHECK_EQ(cli_env(&r, sim, envs), 2);
    CHECK_CONTAINS(r.err, "--parallel runs a trial on each of several identical GPUs (--device "
                          "cuda:all) or --mpi ranks; --device sim:capacity=16GiB");
    CHECK(strstr(r.err, "trial 1") == NULL);
    unlink(met);
    rmdir(dir);
    unlink(json_path);
    unlink(state + 11);
}

/* An interrupt of batchfit (the signal to it alone) during a round of
 * trials at once reaches every GPU's trial: each is stopped, the probe
 * exits 130 with its JSON, no ballast or trial is left. */
TEST(cli_parallel_interrupt_stops_every_trial)
{
    char state[256], cuda[1024], nvml[1024], pidfile[256], json_path[256];
    snprintf(state, sizeof state, "FAKE_STATE=/tmp/batchfit-test-%ld-cliparint", (long)getpid());
    snprintf(cuda, sizeof cuda, "BATCHFIT_CUDA_LIBRARY=%s/fake/libcuda.so.1", test_build_dir());
    snprintf(nvml, sizeof nvml, "BATCHFIT_NVML_LIBRARY=%s/fake/libnvidia-ml.so.1", test_build_dir());
    snprintf(pidfile, sizeof pidfile, "/tmp/batchfit-test-%ld-parint.pid", (long)getpid());
    snprintf(json_path, sizeof json_path, "/tmp/batchfit-test-%ld-parint.json", (long)getpid());
    unlink(state + 11);
    unlink(pidfile);
    unlink(json_path);
    const char *envs[] = {"FAKE_GPUS=16GiB,16GiB,16GiB,16GiB", state, cuda, nvml, NULL};
    const char *args[] = {"probe", "--device", "cuda:all", "--parallel", "--no-cache",
                          "--export-json", json_path, "--", tool(), "hang", pidfile, NULL};
    run r;
    CHECK(signal_in_trial(&r, args, envs, pidfile, SIGINT) > 0);
    CHECK_EQ(r.status, 128 + SIGINT);
    CHECK_CONTAINS(r.err, "interrupted");
    /* Every trial that started is gone (at most a zombie of a reaper). */
    FILE *f = fopen(pidfile, "r");
    CHECK(f != NULL);
    long child;
    int children = 0;
    while (fscanf(f, "%ld", &child) == 1) {
        children++;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%ld/stat", child);
        FILE *st = fopen(path, "r");
        if (!st)
            continue;
        size_t n = fread(buf, 1, sizeof buf - 1, st);
        buf[n] = '\0';
        fclose(st);
        char *p = strrchr(buf, ')');
        CHECK(p && (p[2] == 'Z' || p[2] == 'X'));
    }
    fclose(f);
    CHECK(children >= 1 && children <= 4);
    char *json = read_file(json_path);
    CHECK(json != NULL);
    CHECK(valid_json(json));
    CHECK_CONTAINS(json, "\"interrupted\": true");
    char *left = read_file(state + 11);
    CHECK(left == NULL || left[0] == '\0');
    unlink(pidfile);
    unlink(json_path);
    unlink(state + 11);
}

/* batchfit estimate on the papers' numbers, then a probe that starts from
 * an estimate and says how far it was. */
TEST(cli_estimate_and_a_probe_that_uses_it)
{
    run r;
    const char *zero[] = {"estimate", "--params", "7.5B", "--optimizer", "adam", "--activation-bytes",
                          "2GB", "--device-memory", "141GB", "--json", NULL};
    CHECK_EQ(cli(&r, zero, NULL), 0);
    CHECK(valid_json(r.out));
    CHECK_EQ(json_number(r.out, "model_state_bytes"), 120000000000ull);
    CHECK_EQ(json_number(r.out, "activation_bytes_per_sample"), 2000000000ull);
    CHECK_EQ(json_number(r.out, "max_batch"), (141000000000ull * 95 / 100 - 120000000000ull) / 2000000000ull);
    CHECK_CONTAINS(r.out, "\"predicted_peak_bytes\": ");
    const char *gpt2[] = {"estimate", "--params", "1.5B", "--layers", "48", "--hidden", "1600",
                          "--heads", "25", "--seq", "1024", "--device-memory", "16GiB", NULL};
    CHECK_EQ(cli(&r, gpt2, NULL), 3); /* 24 GB of state does not fit 16 GiB */
    CHECK_STR(last_line(r.out), "max_batch=0");
    const char *bad[] = {"estimate", "--params", "lots", NULL};
    CHECK_EQ(cli(&r, bad, NULL), 2);
    CHECK_CONTAINS(r.err, "--params");
    const char *probe[] = {"probe", "--device", "sim:capacity=80GiB,fixed=12GiB,per_sample=150MiB",
                           "--estimate", "400", "--export-json", "-", NULL};
    CHECK_EQ(cli(&r, probe, NULL), 0);
    CHECK_EQ(result_number(r.out, "batch_size"), 436);
    CHECK_EQ(result_number(r.out, "estimate"), 400);
    CHECK_CONTAINS(r.err, "the estimate of 400 was 92% of the measured 436");
    /* At the bound the answer measured no limit: nothing to compare. */
    const char *capped[] = {"probe", "--device", "sim:capacity=80GiB,fixed=12GiB,per_sample=150MiB",
                            "--estimate", "1000", "--max", "100", NULL};
    CHECK_EQ(cli(&r, capped, NULL), 0);
    CHECK_CONTAINS(r.err, "the estimate of 1000 is not compared: 100 is the bound, not a memory limit");
    CHECK(strstr(r.err, "% of the measured") == NULL);
    /* estimate's own input: a size of no unit or of zero, an unknown
     * option, a missing value, no --params (said once). */
    static const struct {
        const char *flag, *value, *message;
    } refused[] = {
        {"--device-memory", "80", "--device-memory: \"80\" has no unit and would be 80 bytes"},
        {"--device-memory", "0", "--device-memory: \"0\" is zero bytes"},
        {"--activation-bytes", "0", "--activation-bytes: \"0\" is zero bytes"},
        {"--bogus", "1", "unknown option --bogus"},
        {"--vocab", NULL, "--vocab needs a value"},
        {"--layers", "--json", "--layers needs a value: the next argument, --json, is an option"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        const char *args[] = {"estimate", "--params", "1B", refused[i].flag, refused[i].value, NULL};
        CHECK_EQ(cli(&r, args, NULL), 2);
        CHECK_CONTAINS(r.err, refused[i].message);
    }
    /* Activations given and a shape to compute them: one was dropped
     * (the given bytes won, unsaid). */
    const char *both[] = {"estimate", "--params", "124M", "--activation-bytes", "10MiB",
                          "--layers", "12", "--device-memory", "16GiB", NULL};
    CHECK_EQ(cli(&r, both, NULL), 2);
    CHECK_CONTAINS(r.err, "--activation-bytes gives the activations per sample and --layers, "
                          "--hidden, --heads, --seq and --vocab compute them: give one");
    CHECK_STR(r.out, "");
    const char *no_params[] = {"estimate", NULL};
    CHECK_EQ(cli(&r, no_params, NULL), 2);
    CHECK_STR(r.err, "batchfit: estimate: --params is required\n");
}

/* estimate takes the VRAM limit as probe does (it planned against the
 * device's 80 GiB under VRAM_LIMIT_GB=2, and took VRAM_LIMIT_GB=abc): the
 * flag, else the environment, caps the memory to fit into, and alone is
 * that memory; a bad value is exit 2 naming its source. */
TEST(cli_estimate_honours_the_vram_limit)
{
    run r;
    const char *device[] = {"estimate", "--params", "124M", "--activation-bytes", "100MiB",
                            "--device", "sim:capacity=80GiB", "--json", NULL};
    CHECK_EQ(cli(&r, device, "VRAM_LIMIT_GB=4"), 0);
    CHECK_CONTAINS(r.out, "\"vram_limit_bytes\": 4294967296");
    CHECK_CONTAINS(r.out, "\"vram_limit_source\": \"environment variable VRAM_LIMIT_GB\"");
    /* The device's memory stays what it is; what was fitted into is beside it. */
    CHECK_CONTAINS(r.out, "\"device_bytes\": 85899345920");
    CHECK_CONTAINS(r.out, "\"memory_bytes\": 4294967296");
    /* (4 GiB x 0.95 - 124M x 16 B) / 100 MiB */
    CHECK_CONTAINS(r.out, "\"max_batch\": 19");
    CHECK_EQ(cli(&r, device, NULL), 0);
    CHECK_CONTAINS(r.out, "\"vram_limit_bytes\": null");
    CHECK_CONTAINS(r.out, "\"vram_limit_source\": null");
    CHECK_CONTAINS(r.out, "\"device_bytes\": 85899345920");
    CHECK_CONTAINS(r.out, "\"memory_bytes\": 85899345920");
    /* The flag beats the environment; a limit above the memory changes nothing. */
    const char *flag[] = {"estimate", "--params", "124M", "--activation-bytes", "100MiB",
                          "--device-memory", "8GiB", "--vram-limit-gb", "400", NULL};
    CHECK_EQ(cli(&r, flag, "VRAM_LIMIT_GB=2"), 0);
    CHECK_CONTAINS(r.out, "max_batch=58\n");
    CHECK(strstr(r.out, "VRAM limit") == NULL);
    const char *alone[] = {"estimate", "--params", "124M", "--activation-bytes", "100MiB", NULL};
    CHECK_EQ(cli(&r, alone, "VRAM_LIMIT_GB=4"), 0);
    CHECK_CONTAINS(r.out, "memory             4.00 GiB, the VRAM limit (environment variable "
                          "VRAM_LIMIT_GB)\n");
    CHECK_CONTAINS(r.out, "max_batch=19\n");
    CHECK_EQ(cli(&r, device, "VRAM_LIMIT_GB=abc"), 2);
    CHECK_CONTAINS(r.err, "\"abc\" from environment variable VRAM_LIMIT_GB");
    CHECK_STR(r.out, "");
    /* Under a limit batch 1 does not fit: exit 3, and stderr says why. */
    CHECK_EQ(cli(&r, device, "VRAM_LIMIT_GB=2"), 3);
    CHECK_CONTAINS(r.out, "\"max_batch\": 0");
    CHECK_CONTAINS(r.err, "batchfit estimate: batch 1 needs 1.95 GiB, more than the budget of "
                          "1.90 GiB");
    /* --device auto without a usable GPU is the host's memory, said as a
     * probe says it (it was silent: a GPU's estimate quietly host RAM's). */
    const char *auto_device[] = {"estimate", "--params", "124M", "--activation-bytes", "1MiB",
                                 "--device", "auto", NULL};
    CHECK_EQ(cli(&r, auto_device, "BATCHFIT_CUDA_LIBRARY=/nonexistent/libcuda.so.1"), 0);
    CHECK_CONTAINS(r.err, "batchfit: warning: no usable NVIDIA GPU (");
    CHECK_CONTAINS(r.err, "device auto uses the host's memory");
}

/* A program that fails above 90 far under its budget (its own limit: a
 * MiB a sample, "out of memory" from 91): every cached re-run is 90 and
 * 91, and keeps the curve (the first followed it to 340 and ran eight
 * sizes out of memory; each re-run then dropped the curve, the out of
 * memory at 91 read as the program's change). */
TEST(cli_cache_of_a_program_s_own_limit_verifies_in_two_trials_and_keeps_its_curve)
{
    test_cache tc;
    const char *dir = test_cache_open(&tc, "own-limit"), *env_dir = tc.env;
    char script[1400];
    snprintf(script, sizeof script,
             "if [ {batch} -gt 90 ]; then echo 'out of memory'; exit 1; fi; "
             "exec '%s' alloc {batch}",
             tool());
    const char *envs[] = {env_dir, NULL};
    const char *probe[] = {"probe", "--device", "host", "--memory-budget", "400MiB",
                           "--export-json", "-", "--", "/bin/sh", "-c", script, NULL};
    run r;
    CHECK_EQ(cli_env(&r, probe, envs), 0);
    CHECK_EQ(result_number(r.out, "batch_size"), 90);
    for (int again = 0; again < 2; again++) {
        CHECK_EQ(cli_env(&r, probe, envs), 0);
        CHECK_CONTAINS(r.out, "\"hit\": true");
        CHECK_EQ(result_number(r.out, "batch_size"), 90);
        CHECK_EQ(result_number(r.out, "trials"), 2);
        CHECK_CONTAINS(r.err, "trial 2: batch 91 oom");
        CHECK_CONTAINS(r.err, "(the cache's curve; this run's peaks lie on it)");
    }
    drop_cache_dir(dir);
}

/* A cached re-run reports the remembered curve, and where the peaks of the
 * probe that stored it strayed from it, says they were that probe's: "this
 * run's peaks lie on it, a line the measured peaks stray from by up to
 * 26.88 MiB" said both of the same peaks (a reviewer's B x B program).
 * Memory in 32 MiB steps (32 samples of 1 MiB at a time) strays from any
 * line by several MiB. */
TEST(cli_a_remembered_curve_s_stray_is_the_earlier_probe_s)
{
    test_cache tc;
    const char *dir = test_cache_open(&tc, "stray"), *env_dir = tc.env;
    const char *envs[] = {env_dir, NULL};
    const char *probe[] = {"probe", "--device", "host", "--memory-budget", "200MiB", "--",
                           tool(), "grow", "1024", "4096", "32", NULL};
    run r;
    CHECK_EQ(cli_env(&r, probe, envs), 0);
    CHECK_CONTAINS(r.err, "a line the measured peaks stray from by up to");
    CHECK_EQ(cli_env(&r, probe, envs), 0);
    CHECK_CONTAINS(r.err, "(the cache's curve; this run's peaks lie on it), a line the earlier "
                          "probe's peaks stray from by up to");
    CHECK(strstr(r.err, "the measured peaks stray") == NULL);
    drop_cache_dir(dir);
}

/* A program that says "CUDA out of memory" from batch 41 on, probed on
 * the host: the budget did not stop it, and the warning says why (a GPU's
 * message where host memory was measured) and what to do; a host
 * allocator's message keeps the general list of causes. */
TEST(cli_a_gpu_s_out_of_memory_on_a_host_probe_says_to_probe_the_gpu)
{
    const char *messages[] = {"RuntimeError: CUDA out of memory. Tried to allocate 2.00 MiB",
                              "MemoryError"};
    for (int i = 0; i < 2; i++) {
        char script[1400];
        snprintf(script, sizeof script,
                 "if [ {batch} -gt 40 ]; then echo '%s'; exit 1; fi; exec '%s' alloc 1",
                 messages[i], tool());
        const char *probe[] = {"probe", "--device", "host", "--memory-budget", "200MiB",
                               "--no-cache", "--max", "64", "--", "/bin/sh", "-c", script, NULL};
        run r;
        CHECK_EQ(cli(&r, probe, NULL), 0);
        CHECK_CONTAINS(r.out, "batch_size=40\n");
        CHECK_CONTAINS(r.err, "batch 41 ran out of memory holding");
        CHECK_CONTAINS(r.err, "the budget did not stop it");
        if (i == 0) {
            CHECK_CONTAINS(r.err, "its message is a GPU's (PyTorch CUDA allocator), and this probe "
                                  "measured host memory: probe that GPU (--device cuda:N");
        } else {
            CHECK_CONTAINS(r.err, "an address-space limit (ulimit -v)");
            CHECK(strstr(r.err, "a GPU's") == NULL);
        }
    }
    /* A SIGKILL neither the watchdog nor the kernel sent, far under the
     * budget: said as well (it passed as an out of memory at the budget).
     * At the minimum, either says so instead of "try a smaller model" (a
     * GPU's message at 1 got the generic advice; a kill, "does not fit"). */
    for (int at_minimum = 0; at_minimum < 2; at_minimum++)
        for (int i = 0; i < 2; i++) {
            /* The GPU's message above the minimum is the loop's above. */
            if (i && !at_minimum)
                continue;
            char script[2600];
            if (i)
                snprintf(script, sizeof script,
                         "if [ {batch} -gt %d ]; then echo '%s'; exit 1; fi; exec '%s' alloc 1",
                         at_minimum ? 0 : 40, messages[0], tool());
            else
                snprintf(script, sizeof script,
                         "if [ {batch} -gt %d ]; then exec '%s' signal kill; fi; exec '%s' "
                         "alloc 1",
                         at_minimum ? 0 : 40, tool(), tool());
            const char *probe[] = {"probe", "--device", "host", "--memory-budget", "200MiB",
                                   "--no-cache", "--max", "64", "--", "/bin/sh", "-c", script,
                                   NULL};
            run r;
            CHECK_EQ(cli(&r, probe, NULL), at_minimum ? 3 : 0);
            CHECK_CONTAINS(r.err, "the budget did not stop it");
            if (!at_minimum) {
                CHECK_CONTAINS(r.out, "batch_size=40\n");
                CHECK_CONTAINS(r.err, "batch 41 was killed by SIGKILL (not this probe's watchdog) "
                                      "holding");
                CHECK_CONTAINS(r.err, "a container's or a scheduler's memory limit");
                continue;
            }
            CHECK_CONTAINS(r.err, "even the minimum batch size 1 does not fit");
            CHECK(strstr(r.err, "try a smaller model") == NULL);
            CHECK_CONTAINS(r.err, i ? "probe that GPU (--device cuda:N"
                                    : "something else did (see its message)");
        }
}

/* cache list and show print an entry's text with its control characters
 * and the bytes that are no UTF-8 escaped (a key's escape sequence reached
 * the terminal and retitled its window); UTF-8 stays as it is. */
TEST(cli_cache_prints_no_control_characters)
{
    const char *key = "x\033]0;pwned\007\xff \xc3\xa9\xc2\x85";
    const char *probe[] = {"probe", "--device", "sim:capacity=1GiB,fixed=1MiB,per_sample=1MiB",
                           "--cache-key", key, NULL};
    test_cache tc;
    const char *dir = test_cache_open(&tc, "escape"), *env_dir = tc.env;
    const char *envs[] = {env_dir, NULL};
    run r;
    CHECK_EQ(cli_env(&r, probe, envs), 0);
    const char *list[] = {"cache", "list", NULL};
    CHECK_EQ(cli_env(&r, list, envs), 0);
    CHECK_CONTAINS(r.out, "x\\x1b]0;pwned\\x07\\xff \xc3\xa9\\xc2\\x85\n");
    CHECK(strchr(r.out, '\033') == NULL && strchr(r.out, '\007') == NULL);
    char entry_key[33];
    CHECK(sscanf(r.out, "%32s", entry_key) == 1);
    const char *show[] = {"cache", "show", entry_key, NULL};
    CHECK_EQ(cli_env(&r, show, envs), 0);
    CHECK_CONTAINS(r.out, "x\\x1b]0;pwned\\x07\\xff \xc3\xa9\\xc2\\x85\n");
    CHECK(strchr(r.out, '\033') == NULL);
    drop_cache_dir(dir);
}

/* The cache through the CLI: a second run verifies the remembered size
 * instead of searching; a damaged entry is reported, ignored and replaced;
 * concurrent probes lose no entries; list, show and clear; a remembered
 * size that no longer held is reported. */
TEST(cli_cache_remembers_verifies_and_survives_damage)
{
    test_cache tc;
    const char *dir = test_cache_open(&tc, "shared"), *env_dir = tc.env;
    const char *envs[] = {env_dir, NULL};
    const char *probe[] = {"probe", "--device", "host", "--memory-budget", "128.5MiB",
                           "--peak-spread", "0%", "--export-json", "-", "--", tool(), "grow",
                           "1024", "4096", NULL};
    run r;
    CHECK_EQ(cli_env(&r, probe, envs), 0);
    unsigned long long first = result_number(r.out, "batch_size");
    CHECK(first > 100);
    CHECK_CONTAINS(r.out, "\"hit\": false");
    CHECK_EQ(cli_env(&r, probe, envs), 0);
    CHECK_CONTAINS(r.out, "\"hit\": true");
    CHECK_EQ(result_number(r.out, "batch_size"), first);
    CHECK(result_number(r.out, "trials") <= 2);
    CHECK_CONTAINS(r.err, "remembers batch size");
    /* The key is in the JSON; the entry file is private to the user. */
    const char *k = strstr(r.out, "\"key\": \"");
    CHECK(k != NULL);
    char key[40];
    snprintf(key, sizeof key, "%.32s", k + 8);
    char path[400];
    snprintf(path, sizeof path, "%s/%s.entry", dir, key);
    struct stat st;
    CHECK_EQ(stat(dir, &st), 0);
    CHECK_EQ(st.st_mode & 0777, 0700);
    const char *show[] = {"cache", "show", key, NULL};
    CHECK_EQ(cli_env(&r, show, envs), 0);
    CHECK_CONTAINS(r.out, "batch_size   ");
    CHECK_CONTAINS(r.out, "grow 1024 4096");
    /* Damaged: reported, ignored, searched again, replaced. */
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs("batchfit-cache 1\nkey nonsense\n", f);
    fclose(f);
    CHECK_EQ(cli_env(&r, probe, envs), 0);
    CHECK_CONTAINS(r.err, "damaged; ignoring it");
    CHECK_CONTAINS(r.out, "\"hit\": false");
    CHECK_EQ(result_number(r.out, "batch_size"), first);
    CHECK_EQ(cli_env(&r, probe, envs), 0);
    CHECK_CONTAINS(r.out, "\"hit\": true");
    /* --no-cache neither reads nor writes. */
    const char *nocache[] = {"probe", "--no-cache", "--device", "host", "--memory-budget",
                             "128.5MiB", "--peak-spread", "0%", "--export-json", "-", "--", tool(),
                             "grow", "1024", "4096", NULL};
    CHECK_EQ(cli_env(&r, nocache, envs), 0);
    CHECK_CONTAINS(r.out, "\"hit\": false");
    CHECK_CONTAINS(r.out, "\"key\": null");

    /* Eight probes at once, each its own model: all eight entries survive. */
    run runs[8];
    int o[8], e[8];
    char keys[8][32];
    for (int i = 0; i < 8; i++) {
        snprintf(keys[i], sizeof keys[i], "model-%d", i);
        const char *args[] = {"probe", "--device", "sim:capacity=16GiB,fixed=1GiB,per_sample=64MiB",
                              "--cache-key", keys[i], "--quiet", NULL};
        CHECK_EQ(start_env(&runs[i], args, envs, &o[i], &e[i]), 0);
    }
    for (int i = 0; i < 8; i++) {
        finish(&runs[i], o[i], e[i]);
        CHECK_EQ(runs[i].status, 0);
    }
    const char *list[] = {"cache", "list", NULL};
    CHECK_EQ(cli_env(&r, list, envs), 0);
    CHECK_CONTAINS(r.err, "9 entries");
    for (int i = 0; i < 8; i++)
        CHECK_CONTAINS(r.out, keys[i]);
    const char *clear[] = {"cache", "clear", NULL};
    CHECK_EQ(cli_env(&r, clear, envs), 0);
    CHECK_CONTAINS(r.out, "removed 9 entries");
    CHECK_EQ(cli_env(&r, list, envs), 0);
    CHECK_CONTAINS(r.err, "0 entries");

    /* A remembered size that no longer holds (the program behind one
     * --cache-key now needs a quarter more a sample): the summary says so,
     * with the size found in its place. */
    const char *before[] = {"probe", "--device", "host", "--memory-budget", "128.5MiB",
                            "--cache-key", "grower", "--export-json", "-", "--", tool(), "grow",
                            "1024", "4096", NULL};
    CHECK_EQ(cli_env(&r, before, envs), 0);
    first = result_number(r.out, "batch_size");
    CHECK(first > 20);
    CHECK(strstr(r.err, "no longer held") == NULL);
    const char *after[] = {"probe", "--device", "host", "--memory-budget", "128.5MiB",
                           "--cache-key", "grower", "--export-json", "-", "--", tool(), "grow",
                           "1280", "4096", NULL};
    CHECK_EQ(cli_env(&r, after, envs), 0);
    CHECK_CONTAINS(r.out, "\"hit\": true");
    unsigned long long now = result_number(r.out, "batch_size");
    CHECK(now < first);
    char expect[160];
    snprintf(expect, sizeof expect,
             "the remembered batch size %llu no longer held (the budget or the program's memory "
             "changed): %llu now",
             first, now);
    CHECK_CONTAINS(r.err, expect);
    /* And back: the remembered (smaller) size still fits and a larger one
     * does too; that is no failure of the entry. */
    CHECK_EQ(cli_env(&r, before, envs), 0);
    CHECK_CONTAINS(r.out, "\"hit\": true");
    unsigned long long again = result_number(r.out, "batch_size");
    CHECK(again > now);
    CHECK(strstr(r.err, "no longer held") == NULL);
    snprintf(expect, sizeof expect,
             "the remembered batch size %llu still fits, and so does %llu now", now, again);
    CHECK_CONTAINS(r.err, expect);
    drop_cache_dir(dir);
}

/* A trial that could not start is never an answer: with four open files
 * allowed (one beyond stdin, stdout and stderr), /proc can still be read
 * one file at a time but no pipe can be made; the probe says why, exits 4
 * and prints no batch size. */
TEST(cli_trial_that_did_not_run_exits_4)
{
    run r;
    /* The limit is set by a shell just before batchfit starts: a limit set
     * in the test's own fork would not survive a valgrind-run test runner. */
    const char *argv[] = {"sh", "-c", "ulimit -n 4 && exec \"$0\" \"$@\"", bin(), "probe",
                          "--device", "host", "--memory-budget", "1GiB", "--no-cache", "--max",
                          "64", "--", "/bin/false", NULL};
    const char *envs[] = {"TEST_CLOSE_FDS=1", NULL};
    int o, e;
    CHECK_EQ(start_program(&r, "sh", argv, envs, &o, &e), 0);
    finish(&r, o, e);
    CHECK_EQ(r.status, 4);
    CHECK_CONTAINS(r.err, "cannot create pipe");
    CHECK(strstr(r.out, "batch_size=") == NULL);
}

/* An option given twice with different values: the last wins, as it does
 * everywhere, and it is said (it ran without a word); the same value
 * twice, --oom-pattern's repeats and --quiet say nothing. */
TEST(cli_an_option_given_twice_is_said)
{
    const char *twice[] = {"probe", "--device", "sim:capacity=1GiB", "--max", "10", "--style",
                           "none", "--max", "20", NULL};
    run r;
    CHECK_EQ(cli(&r, twice, NULL), 0);
    CHECK_STR(last_line(r.out), "batch_size=20");
    CHECK_CONTAINS(r.err, "batchfit: warning: --max given twice (10, then 20); the last wins");
    const char *same[] = {"probe", "--device", "sim:capacity=1GiB", "--max", "10", "--max", "10",
                          NULL};
    CHECK_EQ(cli(&r, same, NULL), 0);
    CHECK(strstr(r.err, "given twice") == NULL);
    const char *quiet[] = {"probe", "--device", "sim:capacity=1GiB", "--max", "10", "--max", "20",
                           "--quiet", NULL};
    CHECK_EQ(cli(&r, quiet, NULL), 0);
    CHECK_STR(r.err, "");
    const char *patterns[] = {"probe", "--device", "host", "--memory-budget", "64MiB", "--max",
                              "2", "--oom-pattern", "arena full", "--oom-pattern", "pool dry",
                              "--", tool(), "exit", "0", "{batch}", NULL};
    CHECK_EQ(cli(&r, patterns, NULL), 0);
    CHECK(strstr(r.err, "given twice") == NULL);
    /* Two switches that set one setting opposite ways are the same
     * (--cache --no-cache ran without a word); one switch twice is not. */
    const char *opposite[] = {"probe", "--device", "sim:capacity=1GiB", "--max", "10", "--cache",
                              "--no-cache", NULL};
    CHECK_EQ(cli(&r, opposite, NULL), 0);
    CHECK_CONTAINS(r.err, "batchfit: warning: --cache and --no-cache both given; the last, "
                          "--no-cache, wins");
    const char *repeated[] = {"probe", "--device", "sim:capacity=1GiB", "--max", "10",
                              "--no-cache", "--no-cache", NULL};
    CHECK_EQ(cli(&r, repeated, NULL), 0);
    CHECK(strstr(r.err, "both given") == NULL);
}

/* An error trial whose last lines speak of memory in words batchfit does
 * not know names --oom-pattern as the way to teach it; a plain bug does
 * not get that hint. */
TEST(cli_an_unknown_out_of_memory_wording_names_oom_pattern)
{
    static const struct {
        const char *line;
        int hint;
    } cases[] = {
        {"frobnicator: arena full, cannot place the tensor in device memory", 1},
        {"E0001 ALLOC_REFUSED by the pool", 1},
        {"ValueError: shapes (3,4) and (5,6) not aligned", 0},
        {"boom: no room for the zoom level", 0}, /* "oom" inside words is no OOM */
        {"worker 3: OOM", 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *args[] = {"probe", "--device", "host", "--memory-budget", "64MiB",
                              "--no-cache", "--", tool(), "print", cases[i].line, "1", NULL};
        run r;
        CHECK_EQ(cli(&r, args, NULL), 4);
        CHECK_EQ(strstr(r.err, "name them with --oom-pattern REGEX") != NULL, cases[i].hint);
    }
    /* Taught, the same wording is out of memory (exit 3: the minimum). */
    const char *taught[] = {"probe", "--device", "host", "--memory-budget", "64MiB", "--no-cache",
                            "--oom-pattern", "arena full", "--", tool(), "print",
                            cases[0].line, "1", NULL};
    run r;
    CHECK_EQ(cli(&r, taught, NULL), 3);
}

/* --export-json never replaces what is not a regular file: a device node
 * stays a device node (and gets the document written into it), a symbolic
 * link stays a link and the file it names gets the document. */
TEST(cli_export_keeps_special_files_and_follows_links)
{
    char node[256], link_path[256], target[256];
    snprintf(node, sizeof node, "/tmp/batchfit-test-%ld-null", (long)getpid());
    snprintf(link_path, sizeof link_path, "/tmp/batchfit-test-%ld-link.json", (long)getpid());
    snprintf(target, sizeof target, "/tmp/batchfit-test-%ld-target.json", (long)getpid());
    unlink(node);
    unlink(link_path);
    unlink(target);
    /* A device node of its own (not /dev/null itself, which a bug would
     * replace); without the privilege to make one, only the link is. */
    int have_node = mknod(node, S_IFCHR | 0666, makedev(1, 3)) == 0;
    CHECK(have_node || errno == EPERM || errno == EACCES);
    if (!have_node)
        fprintf(stderr, "    skipped: the device node part (no privilege to make one)\n");
    CHECK_EQ(symlink(target, link_path), 0);
    const char *paths[] = {link_path, node};
    for (int i = 0; i < 1 + have_node; i++) {
        const char *args[] = {"probe", "--device", "host", "--memory-budget", "256MiB", "--max",
                              "4", "--export-json", paths[i], "--", tool(), "exit", "0", NULL};
        run r;
        CHECK_EQ(cli(&r, args, NULL), 0);
    }
    struct stat st;
    if (have_node) {
        CHECK_EQ(lstat(node, &st), 0);
        CHECK(S_ISCHR(st.st_mode));
    }
    CHECK_EQ(lstat(link_path, &st), 0);
    CHECK(S_ISLNK(st.st_mode));
    char *json = read_file(target);
    CHECK(json != NULL);
    CHECK(valid_json(json));
    CHECK_CONTAINS(json, "\"batch_size\": 4");
    unlink(node);
    unlink(link_path);
    unlink(target);
}

/* The regular file stdout or stderr is redirected to, named by a path
 * (/dev/stdout, /dev/stderr): written through that stream, where a
 * temporary file renamed over it lost what the shell had written before
 * it and everything after (a log kept only the JSON). */
TEST(cli_export_to_the_file_stdout_or_stderr_goes_to_keeps_it)
{
    char log[256];
    snprintf(log, sizeof log, "/tmp/batchfit-test-%ld-log.txt", (long)getpid());
    for (int to_stderr = 0; to_stderr < 2; to_stderr++) {
        unlink(log);
        char script[1400];
        snprintf(script, sizeof script,
                 "{ echo HEADER; \"$0\" probe --device sim:capacity=16GiB,fixed=2GiB,"
                 "per_sample=50MiB --no-cache --quiet --export-json %s; echo \"rc=$?\"; "
                 "echo FOOTER; } %s '%s'",
                 to_stderr ? "/dev/stderr" : "/dev/stdout", to_stderr ? "2>>" : ">>", log);
        const char *argv[] = {"sh", "-c", script, bin(), NULL};
        run r;
        int o, e;
        CHECK_EQ(start_program(&r, "sh", argv, NULL, &o, &e), 0);
        finish(&r, o, e);
        CHECK_EQ(r.status, 0);
        char *text = read_file(log);
        CHECK(text != NULL);
        if (!text)
            continue;
        if (to_stderr) {
            /* The shell's own lines went to stdout; the log holds the JSON. */
            CHECK_CONTAINS(r.out, "HEADER\nbatch_size=270\nrc=0\nFOOTER\n");
            CHECK_CONTAINS(text, "\"batch_size\": 270");
        } else {
            CHECK(strncmp(text, "HEADER\n{", 8) == 0);
            CHECK_CONTAINS(text, "\"batch_size\": 270");
            CHECK_CONTAINS(text, "}\nrc=0\nFOOTER\n");
        }
    }
    unlink(log);
    /* A path to what stdout is and "-" are one output (refused, exit 2). */
    const char *both[] = {"sh", "-c", "exec \"$0\" probe --device sim:capacity=16GiB "
                          "--export-json /dev/stdout --plot - | cat", bin(), NULL};
    run r;
    int o, e;
    CHECK_EQ(start_program(&r, "sh", both, NULL, &o, &e), 0);
    finish(&r, o, e);
    CHECK_CONTAINS(r.err, "--export-json /dev/stdout and --plot - name the same output (stdout)");
    CHECK(strstr(r.out, "<svg") == NULL);
}

/* Every command whose output is stdout fails with exit 6 where stdout
 * cannot take it (full, or closed): info, estimate, cache and every --help
 * exited 0 with nothing written, and a script took that for an answer. */
TEST(cli_every_command_says_when_stdout_cannot_take_its_output)
{
    static const char *const commands[][4] = {
        {"info", NULL},         {"info", "--json", NULL}, {"estimate", "--params", "1000000", NULL},
        {"cache", "clear", NULL}, {"--help", NULL},       {"--version", NULL},
        {"probe", "--help", NULL}, {"plot", "--help", NULL}};
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        for (int closed = 0; closed < 2; closed++) {
            const char *argv[8] = {"sh", "-c", closed ? "exec \"$0\" \"$@\" >&-"
                                                      : "exec \"$0\" \"$@\" > /dev/full",
                                   bin()};
            for (int k = 0; k < 3 && commands[i][k]; k++)
                argv[4 + k] = commands[i][k];
            run r;
            int o, e;
            CHECK_EQ(start_program(&r, "sh", argv, NULL, &o, &e), 0);
            finish(&r, o, e);
            CHECK_EQ(r.status, 6);
            CHECK_CONTAINS(r.err, closed ? "cannot write to stdout: it is closed"
                                         : "cannot write to stdout: No space left on device");
        }
    /* A reader that went away chose not to read: no error. */
    const char *head[] = {"sh", "-c", "\"$0\" info | head -c 1 > /dev/null; exit \"${PIPESTATUS:-0}\"",
                          bin(), NULL};
    run r;
    int o, e;
    CHECK_EQ(start_program(&r, "sh", head, NULL, &o, &e), 0);
    finish(&r, o, e);
    CHECK(strstr(r.err, "cannot write to stdout") == NULL);
}

/* A FIFO gets the final document once, and batchfit does not block on it
 * before the probe (a reader may come only at the end). */
TEST(cli_export_to_a_fifo_gets_the_final_document)
{
    char fifo[256];
    snprintf(fifo, sizeof fifo, "/tmp/batchfit-test-%ld-fifo", (long)getpid());
    unlink(fifo);
    CHECK_EQ(mkfifo(fifo, 0600), 0);
    const char *args[] = {"probe", "--device", "host", "--memory-budget", "256MiB", "--max", "4",
                          "--export-json", fifo, "--", tool(), "exit", "0", NULL};
    run r;
    int o, e;
    CHECK_EQ(start(&r, args, NULL, &o, &e), 0);
    /* Opening for reading waits for batchfit's writer: the final write. */
    FILE *f = fopen(fifo, "r");
    CHECK(f != NULL);
    static char doc[1 << 16];
    size_t n = f ? fread(doc, 1, sizeof doc - 1, f) : 0;
    doc[n] = '\0';
    if (f)
        fclose(f);
    finish(&r, o, e);
    CHECK_EQ(r.status, 0);
    CHECK(valid_json(doc));
    CHECK_CONTAINS(doc, "\"complete\": true");
    CHECK_CONTAINS(doc, "\"exit_code\": 0");
    unlink(fifo);
}

/* The JSON's exit_code and error say what the process returns: for input
 * refused before any trial, and a final export that cannot be written is
 * its own error (exit 6), not a warning. */
TEST(cli_export_matches_the_exit_status)
{
    char json_path[256];
    snprintf(json_path, sizeof json_path, "/tmp/batchfit-test-%ld-status.json", (long)getpid());
    static const struct {
        const char *flag, *value, *error;
    } bad[] = {
        {"--device", "bogus", "--device"},
        {"--oom-pattern", "(unclosed", "--oom-pattern"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        unlink(json_path);
        const char *args[] = {"probe", "--memory-budget", "256MiB", bad[i].flag, bad[i].value,
                              "--export-json", json_path, "--", tool(), "exit", "0", NULL};
        run r;
        CHECK_EQ(cli(&r, args, NULL), 2);
        char *json = read_file(json_path);
        CHECK(json != NULL);
        CHECK(valid_json(json));
        CHECK_CONTAINS(json, "\"exit_code\": 2");
        CHECK_CONTAINS(json, bad[i].error);
        CHECK_CONTAINS(json, "\"trials\": []");
    }
    unlink(json_path);
    const char *full[] = {"probe", "--device", "host", "--memory-budget", "256MiB", "--max", "4",
                          "--export-json", "/dev/full", "--", tool(), "exit", "0", NULL};
    run r;
    CHECK_EQ(cli(&r, full, NULL), 6);
    CHECK_CONTAINS(r.err, "--export-json /dev/full");
    CHECK_CONTAINS(r.err, "No space left on device");
    /* The answer is still printed: only the file is lost. */
    CHECK_CONTAINS(r.out, "batch_size=4");
    /* A picture, or the answer on stdout, that cannot be written is exit 6
     * in the JSON too (it is written last), with what was lost. */
    const char *plot_full[] = {"probe", "--device", "host", "--memory-budget", "256MiB", "--max",
                               "4", "--plot", "/dev/full", "--export-json", json_path, "--",
                               tool(), "exit", "0", NULL};
    CHECK_EQ(cli(&r, plot_full, NULL), 6);
    char *json = read_file(json_path);
    CHECK(json != NULL && valid_json(json));
    CHECK_CONTAINS(json, "\"exit_code\": 6");
    CHECK_CONTAINS(json, "\"error\": \"the picture could not be written to --plot /dev/full\"");
    CHECK_CONTAINS(json, "\"batch_size\": 4");
    const char *answer[] = {"probe", "--device", "host", "--memory-budget", "256MiB", "--max",
                            "4", "--export-json", json_path, "--", tool(), "exit", "0", NULL};
    const char *closed[] = {"TEST_CLOSE_STDOUT=1", NULL};
    CHECK_EQ(cli_env(&r, answer, closed), 6);
    CHECK_CONTAINS(r.err, "cannot write the result to stdout: it is closed");
    json = read_file(json_path);
    CHECK(json != NULL && valid_json(json));
    CHECK_CONTAINS(json, "\"exit_code\": 6");
    CHECK_CONTAINS(json, "cannot write the result to stdout: it is closed");
    /* Both lost: both said, in the JSON too. */
    CHECK_EQ(cli_env(&r, plot_full, closed), 6);
    CHECK_CONTAINS(r.err, "cannot write the result to stdout: it is closed");
    json = read_file(json_path);
    CHECK(json != NULL && valid_json(json));
    CHECK_CONTAINS(json, "\"error\": \"the picture could not be written to --plot /dev/full; "
                         "cannot write the result to stdout: it is closed\"");
    unlink(json_path);
}

/* --plot's file is checked before any trial, as --export-json's is: one
 * that cannot be written, or one that --export-json names too (stdout, or
 * one file spelled two ways), is refused with exit 2 and nothing run (a
 * reviewer's probe ran every trial and then could not write its picture,
 * exit 6; stdout held the JSON and then the SVG, which parse as neither).
 * A write that fails at the end is exit 6, as the JSON's is. */
TEST(cli_plot_is_checked_before_any_trial)
{
    char json_path[256], svg_path[256], other[256];
    snprintf(json_path, sizeof json_path, "/tmp/batchfit-test-%ld-plot.json", (long)getpid());
    snprintf(svg_path, sizeof svg_path, "/tmp/batchfit-test-%ld-plot.svg", (long)getpid());
    snprintf(other, sizeof other, "/tmp/./batchfit-test-%ld-plot.json", (long)getpid());
    unlink(json_path);
    unlink(svg_path);
    run r;
    const char *missing[] = {"probe", "--device", "host", "--memory-budget", "256MiB", "--max",
                             "4", "--export-json", json_path, "--plot", "/nonexistent/p.svg",
                             "--", tool(), "exit", "0", NULL};
    CHECK_EQ(cli(&r, missing, NULL), 2);
    CHECK_CONTAINS(r.err, "--plot /nonexistent/p.svg: cannot create it");
    char *json = read_file(json_path);
    CHECK(json != NULL && valid_json(json));
    CHECK_CONTAINS(json, "\"trials\": []");
    CHECK_CONTAINS(json, "--plot cannot be written");
    unlink(json_path);
    const char *both_stdout[] = {"probe", "--device", "host", "--memory-budget", "256MiB",
                                 "--max", "4", "--export-json", "-", "--plot", "-",
                                 "--", tool(), "exit", "0", NULL};
    CHECK_EQ(cli(&r, both_stdout, NULL), 2);
    CHECK_CONTAINS(r.err, "name the same output (stdout)");
    CHECK(valid_json(r.out));
    CHECK(strstr(r.out, "<svg") == NULL);
    const char *one_file[] = {"probe", "--device", "host", "--memory-budget", "256MiB", "--max",
                              "4", "--export-json", json_path, "--plot", other,
                              "--", tool(), "exit", "0", NULL};
    CHECK_EQ(cli(&r, one_file, NULL), 2);
    CHECK_CONTAINS(r.err, "name the same file");
    json = read_file(json_path);
    CHECK(json != NULL && valid_json(json));
    CHECK_CONTAINS(json, "\"trials\": []");
    unlink(json_path);
    const char *full[] = {"probe", "--device", "host", "--memory-budget", "256MiB", "--max", "4",
                          "--plot", "/dev/full", "--", tool(), "exit", "0", NULL};
    CHECK_EQ(cli(&r, full, NULL), 6);
    CHECK_CONTAINS(r.err, "--plot /dev/full");
    CHECK_CONTAINS(r.err, "No space left on device");
    CHECK_CONTAINS(r.out, "batch_size=4");
    const char *fine[] = {"probe", "--device", "host", "--memory-budget", "256MiB", "--max", "4",
                          "--export-json", json_path, "--plot", svg_path,
                          "--", tool(), "exit", "0", NULL};
    CHECK_EQ(cli(&r, fine, NULL), 0);
    char *svg = read_file(svg_path);
    CHECK(svg != NULL && strncmp(svg, "<?xml", 5) == 0 && strstr(svg, "</svg>") != NULL);
    json = read_file(json_path);
    CHECK(json != NULL && valid_json(json));
    CHECK_CONTAINS(json, "\"batch_size\": 4");
    unlink(json_path);
    unlink(svg_path);
    /* --plot - : the picture is stdout's document, with no answer line
     * after it (one made the SVG unreadable). */
    const char *to_stdout[] = {"probe", "--device", "host", "--memory-budget", "256MiB", "--max",
                               "4", "--plot", "-", "--", tool(), "exit", "0", NULL};
    CHECK_EQ(cli(&r, to_stdout, NULL), 0);
    CHECK(strncmp(r.out, "<?xml", 5) == 0);
    size_t len = strlen(r.out);
    CHECK(len > 7 && strcmp(r.out + len - 7, "</svg>\n") == 0);
}

/* batchfit plot draws a probe's result and nothing else: never over its
 * own input (a reviewer's plot r.json -o r.json left SVG where the result
 * was, through a link too), and not batchfit info's JSON, which carries
 * schema_version 1 as well and drew as an empty probe (exit 0). */
TEST(cli_plot_draws_results_only_and_never_over_its_input)
{
    char json_path[256], link_path[256], svg_path[256], info_path[256];
    long pid = (long)getpid();
    snprintf(json_path, sizeof json_path, "/tmp/batchfit-test-%ld-drawn.json", pid);
    snprintf(link_path, sizeof link_path, "/tmp/batchfit-test-%ld-drawn-link.json", pid);
    snprintf(svg_path, sizeof svg_path, "/tmp/batchfit-test-%ld-drawn.svg", pid);
    snprintf(info_path, sizeof info_path, "/tmp/batchfit-test-%ld-info.json", pid);
    unlink(link_path);
    run r;
    const char *probe[] = {"probe", "--device", "sim:capacity=8GiB,fixed=1GiB,per_sample=64MiB",
                           "--no-cache", "--quiet", "--export-json", json_path, NULL};
    CHECK_EQ(cli(&r, probe, NULL), 0);
    CHECK_EQ(symlink(json_path, link_path), 0);
    const char *outs[] = {json_path, link_path};
    for (int i = 0; i < 2; i++) {
        const char *over[] = {"plot", json_path, "-o", outs[i], NULL};
        CHECK_EQ(cli(&r, over, NULL), 2);
        CHECK_CONTAINS(r.err, "would overwrite the result it is drawn from");
        char *json = read_file(json_path);
        CHECK(json != NULL && valid_json(json));
    }
    const char *info[] = {"info", "--json", NULL};
    CHECK_EQ(cli(&r, info, NULL), 0);
    FILE *f = fopen(info_path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(r.out, f);
        fclose(f);
    }
    const char *not_result[] = {"plot", info_path, "-o", svg_path, NULL};
    CHECK_EQ(cli(&r, not_result, NULL), 2);
    CHECK_CONTAINS(r.err, "no \"trials\"");
    /* An output that cannot be written is refused before the input is
     * read (a missing input is not even looked at), as probe's --plot is. */
    const char *nowhere[] = {"plot", "/nonexistent-dir/probe.json", "-o",
                             "/nonexistent-dir/probe.svg", NULL};
    CHECK_EQ(cli(&r, nowhere, NULL), 2);
    CHECK_CONTAINS(r.err, "batchfit plot: -o /nonexistent-dir/probe.svg: cannot create it");
    CHECK(strstr(r.err, "probe.json") == NULL);
    const char *fine[] = {"plot", json_path, "-o", svg_path, NULL};
    CHECK_EQ(cli(&r, fine, NULL), 0);
    char *svg = read_file(svg_path);
    CHECK(svg != NULL && strncmp(svg, "<?xml", 5) == 0 && strstr(svg, "batch_size=") != NULL);
    /* A file there is replaced whole, its permissions kept (written as
     * --plot's is: through a temporary file renamed over it). */
    CHECK_EQ(chmod(svg_path, 0600), 0);
    CHECK_EQ(cli(&r, fine, NULL), 0);
    struct stat st;
    CHECK(stat(svg_path, &st) == 0 && (st.st_mode & 0777) == 0600);
    unlink(json_path);
    unlink(link_path);
    unlink(svg_path);
    unlink(info_path);
}

/* batchfit cache show: a path is not a key (exit 2, nothing read), a key
 * with no entry (or a damaged one) has its own outcome (exit 1). */
TEST(cli_cache_show_refuses_paths_and_says_not_found)
{
    char dir[256], env_dir[300];
    snprintf(dir, sizeof dir, "/tmp/batchfit-test-%ld-cache-show", (long)getpid());
    snprintf(env_dir, sizeof env_dir, "BATCHFIT_CACHE_DIR=%s", dir);
    const char *envs[] = {env_dir, NULL};
    run r;
    const char *path[] = {"cache", "show", "../../etc/passwd", NULL};
    CHECK_EQ(cli_env(&r, path, envs), 2);
    CHECK_CONTAINS(r.err, "invalid key");
    CHECK(strstr(r.out, "root:") == NULL);
    const char *missing[] = {"cache", "show", "0123456789abcdef0123456789abcdef", NULL};
    CHECK_EQ(cli_env(&r, missing, envs), 1);
    CHECK_CONTAINS(r.err, "no entry 0123456789abcdef0123456789abcdef");
    /* A damaged entry is no entry for show (exit 1), and list names it and
     * counts it (a reviewer's list said "1 entry" over nine files that
     * clear then removed). */
    CHECK_EQ(mkdir(dir, 0700), 0);
    char damaged[400];
    snprintf(damaged, sizeof damaged, "%s/0123456789abcdef0123456789abcdef.entry", dir);
    FILE *f = fopen(damaged, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("garbage\n", f);
        fclose(f);
    }
    CHECK_EQ(cli_env(&r, missing, envs), 1);
    CHECK_CONTAINS(r.err, "is not a batchfit cache file");
    const char *list[] = {"cache", "list", NULL};
    CHECK_EQ(cli_env(&r, list, envs), 0);
    CHECK_CONTAINS(r.err, "warning: cache entry ");
    CHECK_CONTAINS(r.err, "0 entries in ");
    CHECK_CONTAINS(r.err, "and 1 damaged or foreign file (clear removes them too)");
    const char *clear[] = {"cache", "clear", NULL};
    CHECK_EQ(cli_env(&r, clear, envs), 0);
    CHECK_CONTAINS(r.out, "removed 1 entry");
    char lock[400];
    snprintf(lock, sizeof lock, "%s/.lock", dir);
    unlink(lock);
    rmdir(dir);
}

/* 100 KB of sim spec and of --cache-key go into the cache key whole (no
 * fixed buffer to overflow, nothing cut off): two budgets, two entries; the
 * same run again is a hit. */
TEST(cli_cache_long_spec_and_key)
{
    size_t len = 100 * 1024;
    char *spec = malloc(len + 128), *key = malloc(len + 1);
    CHECK(spec && key);
    /* A key may repeat with the value it has: 100 KB of ",seed=7". */
    size_t n = (size_t)snprintf(spec, len + 128, "sim:capacity=16GiB,fixed=1GiB,per_sample=100MiB");
    while (n + 7 < len)
        n += (size_t)snprintf(spec + n, len + 128 - n, ",seed=7");
    memset(key, 'k', len);
    key[len] = '\0';
    test_cache tc;
    const char *dir = test_cache_open(&tc, "long"), *env_dir = tc.env;
    const char *envs[] = {env_dir, NULL};
    const char *budgets[] = {"8GiB", "4GiB", "8GiB"};
    char json_path[256];
    snprintf(json_path, sizeof json_path, "/tmp/batchfit-test-%ld-long.json", (long)getpid());
    for (int i = 0; i < 3; i++) {
        const char *args[] = {"probe",       "--device", spec,          "--memory-budget",
                              budgets[i],    "--quiet",  "--cache-key", key,
                              "--export-json", json_path, NULL};
        run r;
        CHECK_EQ(cli_env(&r, args, envs), 0);
        char *json = read_file(json_path);
        CHECK(json && strstr(json, i == 2 ? "\"hit\": true" : "\"hit\": false"));
    }
    unlink(json_path);
    const char *list[] = {"cache", "list", NULL};
    run r;
    CHECK_EQ(cli_env(&r, list, envs), 0);
    CHECK_CONTAINS(r.err, "2 entries");
    drop_cache_dir(dir);
    free(spec);
    free(key);
}

/* The command is checked as execvp will look for it: a directory is not a
 * program (exit 2, nothing run), an empty PATH entry is the current
 * directory, and a script's interpreter must exist. */
TEST(cli_command_check_follows_execvp)
{
    /* Under the build folder: /tmp may be mounted noexec. */
    char dir[1024], chdir_env[1100];
    snprintf(dir, sizeof dir, "%s/batchfit-test-%ld-cmddir", test_build_dir(), (long)getpid());
    mkdir(dir, 0755);
    run r;
    const char *directory[] = {"probe", "--device", "host", "--", dir, NULL};
    CHECK_EQ(cli(&r, directory, NULL), 2);
    CHECK_CONTAINS(r.err, "a directory, not a program");
    /* childtool copied into dir, found through the empty entry of PATH. */
    char copy[1100], cmd[2400];
    snprintf(copy, sizeof copy, "%s/ctool", dir);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", tool(), copy);
    CHECK_EQ(system(cmd), 0);
    snprintf(chdir_env, sizeof chdir_env, "TEST_CHDIR=%s", dir);
    const char *envs[] = {chdir_env, "PATH=/nonexistent::/usr/bin", NULL};
    const char *relative[] = {"probe", "--device", "host", "--memory-budget", "64MiB",
                              "--max", "2", "--", "ctool", "exit", "0", NULL};
    CHECK_EQ(cli_env(&r, relative, envs), 0);
    CHECK_CONTAINS(r.out, "batch_size=2");
    unlink(copy);
    /* A script whose #! line names a missing interpreter: execve says "No
     * such file or directory" for a file that exists; the check names the
     * interpreter (exit 2, nothing run), and so does the library's own. */
    char script[1100];
    snprintf(script, sizeof script, "%s/train.sh", dir);
    CHECK(write_text(script, "#!/nonexistent/python9 -u\nprint('hi')\n"));
    chmod(script, 0755);
    const char *bad_interp[] = {"probe", "--device", "host", "--memory-budget", "64MiB", "--",
                                script, "{batch}", NULL};
    CHECK_EQ(cli(&r, bad_interp, NULL), 2);
    CHECK_CONTAINS(r.err, "its interpreter /nonexistent/python9 (its #! line) is not found");
    CHECK(strstr(r.err, "trial 1") == NULL);
    batchfit_ctx *ctx = test_ctx(NULL);
    CHECK_EQ(batchfit_command_check(ctx, script), BATCHFIT_E_INVALID_ARGUMENT);
    CHECK_CONTAINS(batchfit_ctx_last_error(ctx), "/nonexistent/python9");
    /* Windows line endings: the kernel looks for "/bin/sh\r" (execve said
     * "No such file or directory", exit 4, about a file that exists); and
     * through env, whose interpreter exists, "sh\r" is not found. */
    static const char *const crlf[][2] = {
        {"#!/bin/sh\r\nexit 0\r\n", "its #! line \"#!/bin/sh\\r\" ends in a carriage return"},
        {"#!/usr/bin/env sh\r\nexit 0\r\n",
         "its #! line \"#!/usr/bin/env sh\\r\" ends in a carriage return"},
    };
    for (size_t k = 0; k < sizeof crlf / sizeof crlf[0]; k++) {
        CHECK(write_text(script, crlf[k][0]));
        CHECK_EQ(cli(&r, bad_interp, NULL), 2);
        CHECK_CONTAINS(r.err, crlf[k][1]);
        CHECK_CONTAINS(r.err, "Windows line endings");
        CHECK(strstr(r.err, "trial 1") == NULL);
    }
    /* Through env, a name PATH does not have (exit 127 on every trial,
     * read as a bug, exit 4); env's options and a name it finds run. */
    static const char *const through_env[][2] = {
        {"#!/usr/bin/env python9\nprint('hi')\n", "its interpreter python9 (its #! line)"},
        {"#!/usr/bin/env sh\nexit 0\n", NULL},
        {"#!/usr/bin/env -S sh -e\nexit 0\n", NULL},
    };
    const char *run_it[] = {"probe", "--device", "host", "--memory-budget", "64MiB", "--max",
                            "2", "--", script, "{batch}", NULL};
    for (size_t k = 0; k < sizeof through_env / sizeof through_env[0]; k++) {
        CHECK(write_text(script, through_env[k][0]));
        if (through_env[k][1]) {
            CHECK_EQ(cli(&r, run_it, NULL), 2);
            CHECK_CONTAINS(r.err, through_env[k][1]);
            CHECK(strstr(r.err, "trial 1") == NULL);
        } else {
            CHECK_EQ(cli(&r, run_it, NULL), 0);
        }
    }
    CHECK_EQ(batchfit_command_check(ctx, "sh"), BATCHFIT_OK);
    CHECK_EQ(batchfit_command_check(ctx, dir), BATCHFIT_E_INVALID_ARGUMENT);
    CHECK_EQ(batchfit_command_check(ctx, ""), BATCHFIT_E_INVALID_ARGUMENT);
    CHECK_EQ(batchfit_command_check(ctx, NULL), BATCHFIT_E_INVALID_ARGUMENT);
    batchfit_ctx_free(ctx);
    unlink(script);
    rmdir(dir);
}

/* Arguments that are not UTF-8 do not break the JSON: such bytes are
 * written as \u00XX; well-formed UTF-8 passes as it is. */
TEST(cli_json_escapes_bytes_that_are_not_utf8)
{
    const char *args[] = {"probe", "--device", "host", "--memory-budget", "64MiB", "--max", "2",
                          "--quiet", "--export-json", "-", "--", tool(), "args", "\xff\xfe",
                          "caf\xc3\xa9", "\xed\xa0\x80", NULL};
    run r;
    CHECK_EQ(cli(&r, args, NULL), 0);
    CHECK(valid_json(r.out));
    CHECK_CONTAINS(r.out, "\"\\u00ff\\u00fe\"");
    CHECK_CONTAINS(r.out, "\"caf\xc3\xa9\"");
    CHECK_CONTAINS(r.out, "\"\\u00ed\\u00a0\\u0080\"");
    CHECK(strchr(r.out, '\xff') == NULL);
}

/* Small mistakes get small, exact answers: a margin that swallows the
 * budget is bad input (2, like --margin 100%); a device index with a
 * trailing blank names the spec; a long jump= value is quoted whole; the
 * child gets the user's VRAM text, not a rounded copy; a peak that does not
 * grow is not printed as a negative size per sample. */
TEST(cli_small_input_mistakes)
{
    run r;
    const char *margin[] = {"probe", "--device", "host", "--memory-budget", "200MiB", "--margin",
                            "200MiB", "--", tool(), "exit", "0", NULL};
    CHECK_EQ(cli(&r, margin, NULL), 2);
    CHECK_CONTAINS(r.err, "--margin: a margin of 200.00 MiB leaves nothing of the 200.00 MiB usable");
    const char *index[] = {"probe", "--device", "cuda:0 ", "--", tool(), "exit", "0", NULL};
    CHECK_EQ(cli(&r, index, NULL), 2);
    CHECK_CONTAINS(r.err, "\"cuda:0 \": the index must be a whole number");
    const char *jump[] = {"probe", "--device",
                          "sim:capacity=1GiB,jump=123456789012345678901234567890123456789:1GiB",
                          NULL};
    CHECK_EQ(cli(&r, jump, NULL), 2);
    CHECK_CONTAINS(r.err, "\"123456789012345678901234567890123456789:1GiB\"");
    const char *vram[] = {"probe", "--device", "host", "--memory-budget", "64MiB", "--max", "1",
                          "--vram-limit-gb", "0.1", "--show-output", "--", tool(), "env",
                          "VRAM_LIMIT_GB", NULL};
    CHECK_EQ(cli(&r, vram, NULL), 0);
    CHECK_CONTAINS(r.err, "VRAM_LIMIT_GB=0.1\n");
    const char *flat[] = {"probe", "--device", "host", "--memory-budget", "256MiB", "--max", "64",
                          "--", tool(), "alloc", "8", NULL};
    CHECK_EQ(cli(&r, flat, NULL), 0);
    CHECK(strstr(r.err, "+ -") == NULL);
}

/* Every trial is named in the summary: a trial that finished over the
 * budget is "over budget" (not a crash), one too close to the budget to
 * count is counted as such. */
TEST(cli_summary_names_every_kind_of_trial)
{
    run r;
    const char *over[] = {"probe", "--device", "host", "--memory-budget", "32MiB", "--max", "1",
                          "--no-watchdog", "--export-json", "-", "--", tool(), "alloc", "64", NULL};
    CHECK_EQ(cli(&r, over, NULL), 3);
    CHECK_CONTAINS(r.err, "batch 1 over budget, peak ");
    CHECK_CONTAINS(r.out, "\"over_budget\": true");
    const char *close[] = {"probe", "--device", "sim:capacity=16GiB,fixed=1GiB,per_sample=100MiB",
                           "--peak-spread", "5%", "--strategy", "bisect", NULL};
    CHECK_EQ(cli(&r, close, NULL), 0);
    size_t lines = 0;
    for (const char *p = strstr(r.err, " too close, "); p; p = strstr(p + 1, " too close, "))
        lines++;
    CHECK(lines >= 1);
    char expect[64];
    snprintf(expect, sizeof expect, ", %zu too close to the budget)", lines);
    CHECK_CONTAINS(r.err, expect);
}

/* mpirun with one batchfit rank per device spec (an MPMD job: each rank
 * its own --device; specs NULL: each rank's default), plus extra arguments
 * for every rank and, where last is given, last[i] (NULL-terminated) after
 * them for rank i; envs (NULL-terminated, may be NULL) reach every rank. */
static int mpirun_each(run *r, const char *const *specs, size_t ranks, const char *const *extra,
                       const char *const *const *last, const char *const *envs, int *out_fd,
                       int *err_fd)
{
    const char *argv[256];
    size_t n = 0;
    argv[n++] = "mpirun";
    argv[n++] = "--oversubscribe";
    argv[n++] = "--allow-run-as-root";
    for (size_t i = 0; i < ranks; i++) {
        if (i)
            argv[n++] = ":";
        argv[n++] = "-n";
        argv[n++] = "1";
        argv[n++] = bin();
        argv[n++] = "probe";
        argv[n++] = "--mpi";
        if (specs) {
            argv[n++] = "--device";
            argv[n++] = specs[i];
        }
        for (size_t k = 0; extra && extra[k] && n < 240; k++)
            argv[n++] = extra[k];
        for (size_t k = 0; last && last[i][k] && n < 240; k++)
            argv[n++] = last[i][k];
    }
    argv[n] = NULL;
    /* Under the sanitizers, leaks inside libmpi are not batchfit's. */
    const char *all_envs[16] = {"OMPI_MCA_rmaps_base_oversubscribe=1",
                                "ASAN_OPTIONS=detect_leaks=0"};
    for (size_t i = 0, k = 2; envs && envs[i] && k < 15; i++)
        all_envs[k++] = envs[i];
    return start_program(r, "mpirun", argv, all_envs, out_fd, err_fd);
}

static int mpirun(run *r, const char *const *specs, size_t ranks, const char *const *extra,
                  int *out_fd, int *err_fd)
{
    return mpirun_each(r, specs, ranks, extra, NULL, NULL, out_fd, err_fd);
}

static uint64_t solo_answer(const char *spec)
{
    run r;
    const char *args[] = {"probe", "--device", spec, "--quiet", NULL};
    if (cli(&r, args, NULL) != 0)
        return 0;
    const char *p = strstr(r.out, "batch_size=");
    return p ? strtoull(p + 11, NULL, 10) : 0;
}

/* BATCHFIT_MPI_LIBRARY, when set, is the only plugin tried: a wrong one is
 * an error naming the variable and the loader's reason (exit 2, no trial),
 * not a quiet fall back to the plugin beside the program. */
TEST(cli_mpi_library_variable_is_the_only_one_tried)
{
    char lib[1100];
    snprintf(lib, sizeof lib, "BATCHFIT_MPI_LIBRARY=%s/libbatchfit.so.0", test_build_dir());
    const char *const cases[][2] = {
        {"BATCHFIT_MPI_LIBRARY=/nonexistent/libbatchfit-mpi.so",
         "variable BATCHFIT_MPI_LIBRARY names: /nonexistent/libbatchfit-mpi.so: cannot open"},
        {lib, "the library BATCHFIT_MPI_LIBRARY names lacks batchfit_mpi_start"}};
    for (size_t i = 0; i < 2; i++) {
        const char *envs[] = {cases[i][0], NULL};
        const char *args[] = {"probe", "--mpi", "--device", "host", "--memory-budget", "64MiB",
                              "--", tool(), "exit", "0", NULL};
        run r;
        CHECK_EQ(cli_env(&r, args, envs), 2);
        CHECK_CONTAINS(r.err, cases[i][1]);
        CHECK(strstr(r.err, "trial 1") == NULL);
        CHECK_STR(r.out, "");
    }
}

/* Real mpirun, four ranks on sim devices of different sizes: rank 0
 * prints the smallest rank's answer and a JSON with every rank's device
 * and answer, each equal to that device's solo probe; --agree per-rank
 * reports each rank's own. */
TEST(cli_mpi_ranks_agree)
{
    const char *specs[] = {"sim:capacity=16GiB,fixed=1GiB,per_sample=100MiB",
                           "sim:capacity=12GiB,fixed=1GiB,per_sample=100MiB",
                           "sim:capacity=8GiB,fixed=1GiB,per_sample=100MiB",
                           "sim:capacity=10GiB,fixed=2GiB,per_sample=50MiB"};
    uint64_t solo[4];
    for (int i = 0; i < 4; i++) {
        solo[i] = solo_answer(specs[i]);
        CHECK(solo[i] > 0);
    }
    CHECK(solo[2] < solo[1] && solo[1] < solo[0] && solo[2] < solo[3]);
    char json_path[256], svg_path[256];
    snprintf(json_path, sizeof json_path, "/tmp/batchfit-test-%ld-mpi.json", (long)getpid());
    snprintf(svg_path, sizeof svg_path, "/tmp/batchfit-test-%ld-mpi.svg", (long)getpid());
    unlink(json_path);
    unlink(svg_path);
    const char *extra[] = {"--export-json", json_path, "--plot", svg_path, NULL};
    run r;
    int o, e;
    CHECK_EQ(mpirun(&r, specs, 4, extra, &o, &e), 0);
    finish(&r, o, e);
    CHECK_EQ(r.status, 0);
    char expect[64];
    snprintf(expect, sizeof expect, "batch_size=%llu\n", (unsigned long long)solo[2]);
    CHECK_STR(r.out, expect);
    char *json = read_file(json_path);
    CHECK(json && valid_json(json));
    CHECK_CONTAINS(json, "\"mode\": \"min\"");
    for (int i = 0; i < 4; i++) {
        snprintf(expect, sizeof expect, "\"rank\": %d,", i);
        CHECK_CONTAINS(json, expect);
        snprintf(expect, sizeof expect, "\"batch_size\": %llu,", (unsigned long long)solo[i]);
        CHECK_CONTAINS(json, expect);
    }
    /* The picture is rank 0's search, and says the size the job trains with. */
    char *svg = read_file(svg_path);
    CHECK(svg != NULL);
    snprintf(expect, sizeof expect, "batchfit: batch size %llu (", (unsigned long long)solo[0]);
    CHECK_CONTAINS(svg, expect);
    snprintf(expect, sizeof expect, "; the job trains with %llu</text>",
             (unsigned long long)solo[2]);
    CHECK_CONTAINS(svg, expect);
    unlink(svg_path);
    unlink(json_path);
    const char *per_rank[] = {"--agree", "per-rank", "--quiet", NULL};
    CHECK_EQ(mpirun(&r, specs, 4, per_rank, &o, &e), 0);
    finish(&r, o, e);
    CHECK_EQ(r.status, 0);
    for (int i = 0; i < 4; i++) {
        snprintf(expect, sizeof expect, "rank=%d batch_size=%llu\n", i,
                 (unsigned long long)solo[i]);
        CHECK_CONTAINS(r.out, expect);
    }
}

/* Two ranks on one node probing the host share its memory: each takes
 * half of what is free (here under a 300 MiB container limit), where each
 * took all of it and the job's trainers, run together, were killed by the
 * kernel. */
TEST(cli_mpi_ranks_on_one_host_share_its_memory)
{
    test_cgroups *c = test_cgroups_open(UINT64_C(300) << 20, UINT64_C(1) << 30);
    if (!c)
        return;
    int made = c->made, o = -1, e = -1, started = -1;
    char join[BATCHFIT__CGROUP_PATH_MAX + 16];
    snprintf(join, sizeof join, "TEST_CGROUP=%s", c->procs);
    const char *envs[] = {join, NULL};
    const char *extra[] = {"--device", "host", "--no-cache", "--", tool(), "grow", "1024", "4096",
                           NULL};
    static run r;
    if (made == 0) {
        started = mpirun_each(&r, NULL, 2, extra, NULL, envs, &o, &e);
        if (started == 0)
            finish(&r, o, e);
    }
    test_cgroups_close(c);
    CHECK_EQ(made, 0);
    CHECK_EQ(started, 0);
    CHECK_EQ(r.status, 0);
    CHECK_CONTAINS(r.err, "batchfit: host memory: 2 ranks of this job probe this node's host "
                          "memory: each takes 1/2 of the ");
    /* 1 MiB a sample: about 120 in half of the 300 MiB (all of it: about
     * 250). */
    const char *line = strstr(r.out, "batch_size=");
    CHECK(line != NULL);
    unsigned long long batch = line ? strtoull(line + 11, NULL, 10) : 0;
    CHECK(batch >= 60 && batch <= 145);
}

/* A rank that fails at its first trial ends every rank with the same exit
 * status (3) and a message naming it; a rank killed outright ends the job
 * too (mpirun tears it down): never a hang. */
TEST(cli_mpi_a_failing_rank_ends_every_rank)
{
    const char *specs[] = {"sim:capacity=16GiB,fixed=1GiB,per_sample=100MiB",
                           "sim:capacity=1GiB,fixed=2GiB,per_sample=100MiB",
                           "sim:capacity=8GiB,fixed=1GiB,per_sample=100MiB"};
    run r;
    int o, e;
    CHECK_EQ(mpirun(&r, specs, 3, NULL, &o, &e), 0);
    finish(&r, o, e);
    CHECK_EQ(r.status, 3);
    for (int i = 0; i < 3; i++) {
        char expect[128];
        snprintf(expect, sizeof expect, "rank %d: the job failed at rank 1 (sim:capacity=1GiB", i);
        CHECK_CONTAINS(r.err, expect);
    }
    CHECK(strstr(r.out, "batch_size=") == NULL);

    /* Rank 1 hangs in a trial; it is killed with SIGKILL. */
    char pidfile[256];
    snprintf(pidfile, sizeof pidfile, "/tmp/batchfit-test-%ld-mpikill.pid", (long)getpid());
    unlink(pidfile);
    const char *host[] = {"host", "host"};
    const char *hang[] = {"--memory-budget", "256MiB", "--", tool(), "hang", pidfile, NULL};
    CHECK_EQ(mpirun(&r, host, 2, hang, &o, &e), 0);
    long child = signal_rank_of_trial(pidfile, SIGKILL);
    CHECK(child > 0);
    finish(&r, o, e);
    CHECK(r.status != 0);
    /* The killed rank's trial died with it (parent-death signal): gone, or
     * a zombie its new parent has yet to reap. */
    int gone = 0;
    for (int i = 0; i < 500 && !gone; i++) {
        gone = !alive_not_zombie(child);
        if (!gone) {
            struct timespec ts = {0, 10 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    CHECK(gone);
    unlink(pidfile);
}

/* A rank that refuses an option among its own (a per-node --margin of 300,
 * no unit) still joins the job: it had exited before MPI started, rank 0
 * waited at the agreement for ever where the launcher let it, else was
 * killed without a word. Now every rank ends with exit 2 naming rank 1 and
 * its refusal, with --parallel (the first exchange) and without. */
TEST(cli_mpi_a_rank_refusing_its_options_ends_every_rank)
{
    const char *specs[] = {"sim:capacity=16GiB,fixed=2GiB,per_sample=100MiB",
                           "sim:capacity=16GiB,fixed=2GiB,per_sample=100MiB"};
    const char *fine[] = {"--margin", "5%", NULL};
    const char *refused[] = {"--margin", "300", NULL};
    const char *const *last[] = {fine, refused};
    for (int parallel = 0; parallel < 2; parallel++) {
        const char *extra[] = {"--no-cache", "--quiet", "--export-json", "-",
                               parallel ? "--parallel" : NULL, NULL};
        run r;
        int o, e;
        CHECK_EQ(mpirun_each(&r, specs, 2, extra, last, NULL, &o, &e), 0);
        finish(&r, o, e);
        CHECK_EQ(r.status, 2);
        for (int i = 0; i < 2; i++) {
            char expect[160];
            snprintf(expect, sizeof expect,
                     "rank %d: the job failed at rank 1 (no device): --margin: \"300\" has no unit",
                     i);
            CHECK_CONTAINS(r.err, expect);
        }
        CHECK(strstr(r.out, "batch_size=") == NULL);
        /* Rank 0 alone writes the JSON, after the agreement (the refusing
         * rank wrote one too, before it knew its rank: two documents on
         * one stdout). */
        CHECK_EQ(count(r.out, "\"schema_version\""), 1);
        CHECK(valid_json(r.out));
        CHECK_CONTAINS(r.out, "\"error\": \"rank 1 (no device): --margin: ");
    }
    /* Rank 0 refusing: its JSON is written after the agreement too. */
    const char *const *first_refuses[] = {refused, fine};
    const char *extra[] = {"--no-cache", "--quiet", "--export-json", "-", NULL};
    run r;
    int o, e;
    CHECK_EQ(mpirun_each(&r, specs, 2, extra, first_refuses, NULL, &o, &e), 0);
    finish(&r, o, e);
    CHECK_EQ(r.status, 2);
    CHECK_EQ(count(r.out, "\"schema_version\""), 1);
    CHECK(valid_json(r.out));
    CHECK_CONTAINS(r.out, "\"error\": \"rank 0 (no device): --margin: ");
}

/* A rank that fails tells the others at once: they stop after their
 * current trial. Rank 1's command is a bug at its first trial; rank 0's
 * first trial takes two seconds. A reviewer's rank 0 ran a whole second
 * trial first: one MPI_Iprobe after a trial had not taken the notice in
 * (the first message between two ranks sets up their connection). */
TEST(cli_mpi_a_failing_rank_stops_the_others_after_their_current_trial)
{
    const char *host[] = {"host", "host"};
    const char *slow[] = {"--memory-budget", "256MiB", "--max", "64", "--", tool(), "quiet",
                          "2000", NULL};
    const char *bug[] = {"--memory-budget", "256MiB", "--max", "64", "--", tool(), "exit", "3",
                         NULL};
    const char *const *last[] = {slow, bug};
    run r;
    int o, e;
    CHECK_EQ(mpirun_each(&r, host, 2, NULL, last, NULL, &o, &e), 0);
    finish(&r, o, e);
    CHECK_EQ(r.status, 4);
    CHECK_CONTAINS(r.err, "rank 0: the job failed at rank 1");
    CHECK_CONTAINS(r.err, "trial 1: batch 1 fits");
    CHECK(strstr(r.err, "trial 2:") == NULL);
}

/* The first rank of 0..ranks-1 whose "rank R: " line in err does not go
 * on with text, or -1 when every rank says it. */
static int rank_not_saying(const char *err, int ranks, const char *text)
{
    for (int i = 0; i < ranks; i++) {
        char expect[512];
        snprintf(expect, sizeof expect, "rank %d: %s", i, text);
        if (!strstr(err, expect))
            return i;
    }
    return -1;
}

/* --mpi --parallel on four identical sim ranks: each round every rank
 * runs one of the search's sizes; the answer is the one-device probe's, in
 * fewer rounds than trials, and the JSON says which rank ran each trial. */
TEST(cli_mpi_parallel_trials_one_on_each_rank)
{
    const char *spec = "sim:capacity=16GiB,fixed=1GiB,per_sample=100MiB";
    const char *specs[] = {spec, spec, spec, spec};
    uint64_t solo = solo_answer(spec);
    CHECK_EQ(solo, 145);
    char json_path[256];
    snprintf(json_path, sizeof json_path, "/tmp/batchfit-test-%ld-mpipar.json", (long)getpid());
    unlink(json_path);
    const char *extra[] = {"--parallel", "--no-cache", "--export-json", json_path, NULL};
    run r;
    int o, e;
    CHECK_EQ(mpirun(&r, specs, 4, extra, &o, &e), 0);
    finish(&r, o, e);
    CHECK_EQ(r.status, 0);
    CHECK_STR(r.out, "batch_size=145\n");
    CHECK_CONTAINS(r.err, "rounds of trials at once");
    char *json = read_file(json_path);
    CHECK(json && valid_json(json));
    const char *p = json ? strstr(json, "\"rounds\": ") : NULL;
    size_t rounds = p ? (size_t)strtoull(p + 10, NULL, 10) : 0;
    size_t trials = 0;
    for (const char *t = json ? strstr(json, "\"outcome\": ") : NULL; t;
         t = strstr(t + 1, "\"outcome\": "))
        trials++;
    CHECK(rounds >= 1 && rounds < trials);
    for (int i = 0; i < 4; i++) {
        char expect[128];
        snprintf(expect, sizeof expect, "\"rank\": %d,\n      \"device\": \"%s\"", i, spec);
        CHECK_CONTAINS(json, expect);
    }
    unlink(json_path);
}

/* --mpi --parallel on four identical fake GPUs, each rank on its
 * default cuda:LOCAL_RANK: one GPU's answer, each rank running its share,
 * nothing left on any GPU. */
TEST(cli_mpi_parallel_on_identical_fake_gpus)
{
    char state[256], cuda[1024], nvml[1024];
    snprintf(state, sizeof state, "FAKE_STATE=/tmp/batchfit-test-%ld-mpigpu", (long)getpid());
    snprintf(cuda, sizeof cuda, "BATCHFIT_CUDA_LIBRARY=%s/fake/libcuda.so.1", test_build_dir());
    snprintf(nvml, sizeof nvml, "BATCHFIT_NVML_LIBRARY=%s/fake/libnvidia-ml.so.1", test_build_dir());
    unlink(state + 11);
    const char *envs[] = {"FAKE_GPUS=16GiB,16GiB,16GiB,16GiB", state, cuda, nvml, NULL};
    const char *extra[] = {"--parallel", "--no-cache", "--", tool(), "gpu-grow", "100", "1024",
                           NULL};
    run r;
    int o, e;
    CHECK_EQ(mpirun_each(&r, NULL, 4, extra, NULL, envs, &o, &e), 0);
    finish(&r, o, e);
    CHECK_EQ(r.status, 0);
    /* One GPU alone: 1 GiB + 100 MiB a sample in a 15.20 GiB budget. */
    CHECK_STR(r.out, "batch_size=145\n");
    for (int i = 0; i < 4; i++) {
        char expect[128];
        snprintf(expect, sizeof expect, "rank %d  cuda:%d     Fake GPU 16GB", i, i);
        CHECK_CONTAINS(r.err, expect);
    }
    CHECK_CONTAINS(r.err, "rounds of trials at once");
    char *left = read_file(state + 11);
    CHECK(left == NULL || left[0] == '\0');
    unlink(state + 11);
}

/* Ranks whose devices differ are bad input on every rank (exit 2), the
 * message naming the rank and its device; nothing is run. */
TEST(cli_mpi_parallel_refuses_devices_that_differ)
{
    const char *spec = "sim:capacity=16GiB,fixed=1GiB,per_sample=100MiB";
    const char *specs[] = {spec, spec, "sim:capacity=12GiB,fixed=1GiB,per_sample=100MiB", spec};
    const char *extra[] = {"--parallel", "--no-cache", NULL};
    run r;
    int o, e;
    CHECK_EQ(mpirun(&r, specs, 4, extra, &o, &e), 0);
    finish(&r, o, e);
    CHECK_EQ(r.status, 2);
    char expect[256];
    snprintf(expect, sizeof expect,
             "the job failed at rank 0 (%s): trials in parallel across ranks need identical "
             "devices",
             spec);
    CHECK_EQ(rank_not_saying(r.err, 4, expect), -1);
    CHECK_CONTAINS(r.err, "rank 2 (sim:capacity=12GiB,fixed=1GiB,per_sample=100MiB) is sim with "
                          "12884901888 bytes");
    CHECK(strstr(r.err, "trial 1:") == NULL);
    CHECK(strstr(r.out, "batch_size=") == NULL);
}

/* Rank 0's search answers for every rank of --mpi --parallel: a rank that
 * asks for other sizes (its own --max, --multiple-of) is refused by every
 * rank, exit 2, where rank 0's 135 was its answer too (not a multiple of
 * 8, above its maximum of 50). */
TEST(cli_mpi_parallel_refuses_ranks_that_search_other_sizes)
{
    const char *spec = "sim:capacity=16GiB,fixed=1GiB,per_sample=100MiB";
    const char *specs[] = {spec, spec};
    const char *plain[] = {NULL};
    const char *capped[] = {"--max", "50", NULL};
    const char *eights[] = {"--multiple-of", "8", NULL};
    const char *const *last[][2] = {{plain, capped}, {plain, eights}};
    const char *said[] = {"rank 1 1 to 50, with model", "rank 1 8 to 1048576, multiples of 8"};
    const char *extra[] = {"--parallel", "--no-cache", NULL};
    for (int k = 0; k < 2; k++) {
        run r;
        int o, e;
        CHECK_EQ(mpirun_each(&r, specs, 2, extra, last[k], NULL, &o, &e), 0);
        finish(&r, o, e);
        CHECK_EQ(r.status, 2);
        CHECK_EQ(rank_not_saying(r.err, 2, "the job failed at rank 0"), -1);
        CHECK_CONTAINS(r.err, "trials in parallel across ranks search one set of sizes for all: "
                              "rank 0 searches 1 to ");
        CHECK_CONTAINS(r.err, said[k]);
        CHECK(strstr(r.out, "batch_size=") == NULL);
    }
}

/* Rank 2's command fails with an error that is not out of memory in the
 * first round: every rank ends with exit 4 and a message naming rank 2;
 * rank 2 interrupted in its trial ends every rank with 130. */
TEST(cli_mpi_parallel_a_failing_trial_ends_every_rank)
{
    const char *specs[] = {"host", "host", "host", "host"};
    const char *extra[] = {"--parallel", "--no-cache", "--memory-budget", "256MiB", "--max", "64",
                           "--", NULL};
    const char *grow[] = {tool(), "grow", "64", NULL};
    const char *bug[] = {tool(), "print", "a bug in rank 2", "1", NULL};
    const char *const *last[] = {grow, grow, bug, grow};
    run r;
    int o, e;
    CHECK_EQ(mpirun_each(&r, specs, 4, extra, last, NULL, &o, &e), 0);
    finish(&r, o, e);
    CHECK_EQ(r.status, 4);
    CHECK_EQ(rank_not_saying(r.err, 4,
                             "the job failed at rank 2 (host): the trial at batch size "),
             -1);
    CHECK_CONTAINS(r.err, "failed with an error that is not out-of-memory: exited with status 1");
    /* Rank 2 shows what its command said. */
    CHECK_CONTAINS(r.err, "  | a bug in rank 2\n");
    CHECK(strstr(r.out, "batch_size=") == NULL);

    /* Rank 2 alone is interrupted in its trial: every rank ends with 130,
     * naming rank 2. */
    char pidfile[256];
    snprintf(pidfile, sizeof pidfile, "/tmp/batchfit-test-%ld-mpiint.pid", (long)getpid());
    unlink(pidfile);
    const char *hang[] = {tool(), "hang", pidfile, NULL};
    const char *const *last_hang[] = {grow, grow, hang, grow};
    CHECK_EQ(mpirun_each(&r, specs, 4, extra, last_hang, NULL, &o, &e), 0);
    CHECK(signal_rank_of_trial(pidfile, SIGINT) > 0);
    finish(&r, o, e);
    CHECK_EQ(r.status, 130);
    CHECK_EQ(rank_not_saying(r.err, 4,
                             "the job failed at rank 2 (host): interrupted during the trial"),
             -1);
    unlink(pidfile);
}

/* What a hostile review found, each a regression test: a refused option is
 * in the JSON (an old file never keeps saying success); an export target
 * that can never be written is refused before anything runs; a chain of
 * links is followed to its end; a result that cannot reach stdout is an
 * error; a signal while batchfit waits on a FIFO ends it as that signal. */
TEST(cli_review_export_and_signal_edges)
{
    char dir[256], path[400], l1[400], l2[400], end[400];
    snprintf(dir, sizeof dir, "/tmp/batchfit-test-%ld-edges", (long)getpid());
    mkdir(dir, 0700);
    snprintf(path, sizeof path, "%s/st.json", dir);
    run r;
    const char *ok[] = {"probe", "--device", "host", "--memory-budget", "64MiB", "--max", "2",
                        "--export-json", path, "--", tool(), "exit", "0", NULL};
    CHECK_EQ(cli(&r, ok, NULL), 0);
    const char *bad[] = {"probe", "--device", "host", "--export-json", path, "--min", "0", "--",
                         tool(), "exit", "0", NULL};
    CHECK_EQ(cli(&r, bad, NULL), 2);
    char *json = read_file(path);
    CHECK(json && valid_json(json));
    CHECK_CONTAINS(json, "\"exit_code\": 2");
    CHECK_CONTAINS(json, "--min: invalid value");
    /* A directory, and an empty path: refused first, nothing run. */
    char marker[400];
    snprintf(marker, sizeof marker, "%s/ran", dir);
    const char *targets[] = {dir, ""};
    for (int i = 0; i < 2; i++) {
        const char *never[] = {"probe", "--device", "host", "--export-json", targets[i], "--",
                               tool(), "touch", marker, NULL};
        CHECK_EQ(cli(&r, never, NULL), 2);
        CHECK(access(marker, F_OK) != 0);
    }
    /* l1 -> l2 -> end.json (missing): end.json is written, both links stay. */
    snprintf(l1, sizeof l1, "%s/l1", dir);
    snprintf(l2, sizeof l2, "%s/l2", dir);
    snprintf(end, sizeof end, "%s/end.json", dir);
    CHECK_EQ(symlink("l2", l1), 0);
    CHECK_EQ(symlink("end.json", l2), 0);
    const char *chain[] = {"probe", "--device", "host", "--memory-budget", "64MiB", "--max", "2",
                           "--export-json", l1, "--", tool(), "exit", "0", NULL};
    CHECK_EQ(cli(&r, chain, NULL), 0);
    struct stat st;
    CHECK(lstat(l2, &st) == 0 && S_ISLNK(st.st_mode));
    CHECK(stat(end, &st) == 0 && S_ISREG(st.st_mode));
    /* stdout that cannot take the answer. */
    const char *full[] = {"sh", "-c", "exec \"$0\" \"$@\" > /dev/full", bin(), "probe",
                          "--device", "host", "--memory-budget", "64MiB", "--max", "2", "--",
                          tool(), "exit", "0", NULL};
    int o, e;
    CHECK_EQ(start_program(&r, "sh", full, NULL, &o, &e), 0);
    finish(&r, o, e);
    CHECK_EQ(r.status, 6);
    CHECK_CONTAINS(r.err, "cannot write the result to stdout");
    /* A FIFO nobody reads: batchfit waits at the end; SIGTERM ends it
     * with 143, not as a failed export. */
    char fifo[400];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    CHECK_EQ(mkfifo(fifo, 0600), 0);
    const char *wait[] = {"probe", "--device", "host", "--memory-budget", "64MiB", "--max", "2",
                          "--export-json", fifo, "--", tool(), "hang", marker, NULL};
    CHECK_EQ(start(&r, wait, NULL, &o, &e), 0);
    /* Stopped during the trial: the FIFO has no reader, and batchfit does
     * not wait for one once it has been told to stop. */
    long child = wait_for_pid(marker);
    CHECK(child > 0);
    kill(r.pid, SIGTERM);
    finish(&r, o, e);
    CHECK_EQ(r.status, 128 + SIGTERM);
    unlink(fifo);
    unlink(marker);
    unlink(end);
    unlink(l1);
    unlink(l2);
    unlink(path);
    rmdir(dir);
}

/* --enforce-address-space caps virtual memory by name (RLIMIT_AS): a child
 * asking for more than the budget gets its allocation refused, which reads
 * as out of memory; the mechanisms line says what is capped. */
TEST(cli_enforce_address_space_is_asked_for_by_name)
{
    run r;
    const char *args[] = {"probe", "--device", "host", "--memory-budget", "40MiB", "--margin", "0",
                          "--min", "64", "--max", "64", "--no-watchdog", "--enforce-address-space",
                          "--", tool(), "grow", "1024", NULL};
    CHECK_EQ(cli(&r, args, NULL), 3);
    CHECK_CONTAINS(r.err, "virtual-memory cap: RLIMIT_AS");
    CHECK_CONTAINS(r.err, "out of memory (generic out-of-memory message): childtool: out of memory");
    /* A program that reserves four times what it touches meets the cap
     * far under the threshold in resident memory: the warning names the
     * cap asked for, not "something else" (an address-space limit, a
     * container's: it blamed the user's own flag on others). */
    const char *reserving[] = {"probe", "--device", "host", "--memory-budget", "200MiB",
                               "--margin", "0", "--no-cache", "--enforce-address-space", "--",
                               "/bin/sh", "-c", "exec \"$0\" reserve $(($1 * 4)) $1", tool(),
                               "{batch}", NULL};
    CHECK_EQ(cli(&r, reserving, NULL), 0);
    CHECK_CONTAINS(r.err, "under the acceptance threshold of ");
    CHECK_CONTAINS(r.err, "the address-space cap of 200.00 MiB that --enforce-address-space puts "
                          "on each trial stopped it");
    CHECK(strstr(r.err, "Something else limits") == NULL);
    unsigned long long batch = strtoull(last_line(r.out) + strlen("batch_size="), NULL, 10);
    CHECK(batch >= 30 && batch < 50);
}

/* A container with NVIDIA's utilities but no CUDA driver library: batchfit
 * info still lists every GPU NVML sees, and says it cannot probe them or
 * hold a margin there; auto picks the host. */
TEST(cli_info_lists_gpus_nvml_sees_without_cuda)
{
    char state[256], nvml[1024];
    snprintf(state, sizeof state, "FAKE_STATE=/tmp/batchfit-test-%ld-nvmlonly", (long)getpid());
    snprintf(nvml, sizeof nvml, "BATCHFIT_NVML_LIBRARY=%s/fake/libnvidia-ml.so.1", test_build_dir());
    unlink(state + 11);
    const char *envs[] = {"FAKE_GPUS=80GiB,16GiB", state,
                          "BATCHFIT_CUDA_LIBRARY=/nonexistent/libcuda.so.1", nvml, NULL};
    run r;
    const char *info[] = {"info", NULL};
    CHECK_EQ(cli_env(&r, info, envs), 0);
    CHECK_CONTAINS(r.out, "cuda  unavailable: cannot load /nonexistent/libcuda.so.1");
    CHECK_CONTAINS(r.out, "Fake GPU 80GB");
    CHECK_CONTAINS(r.out, "Fake GPU 16GB");
    CHECK_CONTAINS(r.out, "80.00 GiB total");
    CHECK_CONTAINS(r.out, "cannot be probed or hold a margin here");
    CHECK_CONTAINS(r.out, "--device auto picks: host");
    const char *json[] = {"info", "--json", NULL};
    CHECK_EQ(cli_env(&r, json, envs), 0);
    CHECK(valid_json(r.out));
    CHECK_CONTAINS(r.out, "\"nvml_only\": [");
    CHECK_CONTAINS(r.out, "\"can_probe\": false");
    unlink(state + 11);
}

/* The summary's fitted line is a summary: where the measured peaks stray
 * from it by more than 1% of what it puts at the answer (a workspace of 20
 * GiB from batch 280 on), it says so and by how much; on a line it is just
 * the line (a reviewer's flat-then-growing program read "109.89 MiB +
 * 102.59 KiB per sample", 17 MiB under the peak at the answer, beside a
 * stop reason about the threshold). */
TEST(cli_summary_says_when_the_fitted_line_is_not_the_curve)
{
    /* Bisection runs sizes on both sides of the workspace. */
    const char *jump[] = {"probe", "--device",
                          "sim:capacity=80GiB,fixed=12GiB,per_sample=150MiB,jump=280:20GiB",
                          "--strategy", "bisect", "--no-cache", NULL};
    run r;
    CHECK_EQ(cli(&r, jump, NULL), 0);
    CHECK_CONTAINS(r.err, "  fitted memory: -"); /* across the jump, below 0 at batch 0 */
    CHECK_CONTAINS(r.err, "a line the measured peaks stray from by up to");
    CHECK_CONTAINS(r.err, "(memory does not grow linearly with the batch here, or its peaks vary "
                          "between runs)");
    const char *line[] = {"probe", "--device", "sim:capacity=80GiB,fixed=12GiB,per_sample=150MiB",
                          "--no-cache", NULL};
    CHECK_EQ(cli(&r, line, NULL), 0);
    CHECK_CONTAINS(r.err, "  fitted memory: ");
    CHECK(strstr(r.err, "stray from") == NULL);
    /* Memory as B x B / 64 MiB: bisection's points, all near the answer,
     * put the line's intercept far below 0, and it was printed as "0 B +
     * 2.65 MiB per sample", a line 120 MiB over what the answer read. */
    char script[1200];
    snprintf(script, sizeof script, "exec '%s' alloc $(( {batch} * {batch} / 64 ))", tool());
    const char *square[] = {"probe", "--device", "host", "--memory-budget", "200MiB", "--no-cache",
                            "--strategy", "bisect", "--max", "128", "--", "/bin/sh", "-c", script,
                            NULL};
    CHECK_EQ(cli(&r, square, NULL), 0);
    CHECK_CONTAINS(r.err, "  fitted memory: -");
    CHECK_CONTAINS(r.err, "memory does not grow linearly with the batch here");
    CHECK(strstr(r.err, "fitted memory: 0 B") == NULL);
    /* Between 80 and 120 the points lie on their line, far below 0 at 0. */
    const char *narrow[] = {"probe", "--device", "host", "--memory-budget", "200MiB", "--no-cache",
                            "--strategy", "bisect", "--min", "80", "--max", "120", "--",
                            "/bin/sh", "-c", script, NULL};
    CHECK_EQ(cli(&r, narrow, NULL), 0);
    CHECK_CONTAINS(r.err, " per sample (below 0 at batch 0: memory grows faster than a line here, "
                          "and the line holds only near the sizes measured)");
}

/* Options that only a COMMAND's trials read are refused with the sim
 * device's in-process step (exit 2), not silently ignored; --sample-interval
 * and --enforce-address-space had been. */
TEST(cli_command_options_are_refused_with_the_sim_step)
{
    static const char *const flags[][2] = {{"--timeout", "5"},
                                           {"--sample-interval", "10"},
                                           {"--enforce-address-space", NULL},
                                           {"--show-output", NULL},
                                           {"--no-cgroup", NULL}};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        const char *args[8] = {"probe", "--device", "sim:capacity=16GiB", flags[i][0]};
        args[4] = flags[i][1];
        run r;
        CHECK_EQ(cli(&r, args, NULL), 2);
        CHECK_CONTAINS(r.err, flags[i][0]);
        CHECK_CONTAINS(r.err, "apply to a COMMAND; --device sim:capacity=16GiB runs the sim "
                              "device's synthetic step in-process");
        CHECK_STR(r.out, "");
    }
}

/* Input a hostile review found accepted or reported vaguely: each is
 * refused before anything runs (exit 2) with a message naming the input,
 * or, for a cache entry clear cannot remove, warned of with exit 6. */
TEST(cli_refuses_what_would_mislead)
{
    run r;
    static const struct {
        const char *args[16];
        const char *message;
    } refused[] = {
        {{"probe", "--device", "host", "--memory-budget", "64MiB", "--oom-pattern", "", "--",
          "true", NULL},
         "--oom-pattern: \"\" matches an empty line (so every blank line, or every line"},
        {{"probe", "--device", "host", "--memory-budget", "64MiB", "--oom-pattern", "x*", "--",
          "true", NULL},
         "--oom-pattern: \"x*\" matches an empty line"},
        {{"probe", "--device", "host", "--memory-budget", "64MiB", "--crash-is-oom", "--", "true",
          NULL},
         "--crash-is-oom counts a crash near the cap --enforce or --enforce-address-space sets"},
        {{"probe", "--device", "sim:capacity=16GiB,capacity=8GiB,per_sample=1GiB", NULL},
         "sim device: key \"capacity\" given twice, as \"16GiB\" and as \"8GiB\""},
        {{"probe", "--device", "sim:capacity=16GiB,per_sample=1GiB", "--margin", "17GiB", NULL},
         "--margin: a margin of 17.00 GiB leaves nothing of the 16.00 GiB usable"},
        {{"probe", "--device", "host", "--memory-budget", "64MiB", "--", "/", NULL},
         "command /: a directory, not a program"},
        {{"probe", "--device", "host", "--memory-budget", "64MiB", "--", "/nonexistent/prog",
          NULL},
         "command /nonexistent/prog: no such file"},
        {{"estimate", "--params", "124M", "--device", "host", "--device-memory", "8GiB", NULL},
         "--device-memory and --device both say what to fit into: give one"},
        {{"estimate", "--params", "124M", "--layers", "2", "--hidden", "10", "--heads", "3",
          "--seq", "64", "--device-memory", "8GiB", NULL},
         "--hidden 10 is not a multiple of --heads 3"},
        {{"cache", "bogus", NULL}, "unknown cache command 'bogus'"},
        {{"plot", "/", NULL}, "cannot read /: Is a directory"},
    };
    for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        CHECK_EQ(cli(&r, refused[i].args, NULL), 2);
        CHECK_CONTAINS(r.err, refused[i].message);
    }
    /* estimate's --margin takes a size as probe's does: the memory less that size to the
     * byte (through a fraction, 10174104003469 less 2964259079502 came out a byte over). */
    const char *sized[] = {"estimate", "--params", "124M", "--activation-bytes", "100MiB",
                           "--device-memory", "8GiB", "--margin", "2GiB", "--json", NULL};
    CHECK_EQ(cli(&r, sized, NULL), 0);
    CHECK_CONTAINS(r.out, "\"budget_bytes\": 6442450944");
    const char *odd[] = {"estimate", "--params", "1M", "--activation-bytes", "1MiB",
                         "--device-memory", "10174104003469B", "--margin", "2964259079502B",
                         "--json", NULL};
    CHECK_EQ(cli(&r, odd, NULL), 0);
    CHECK_CONTAINS(r.out, "\"budget_bytes\": 7209844923967");
    const char *swallowed[] = {"estimate", "--params", "124M", "--device-memory", "8GiB",
                               "--margin", "8589934593B", NULL};
    CHECK_EQ(cli(&r, swallowed, NULL), 2);
    CHECK_CONTAINS(r.err, "--margin: a margin of 8589934593 bytes leaves nothing of the "
                          "8589934592 bytes usable");
    /* --crash-is-oom with a cap is taken. */
    const char *capped[] = {"probe", "--device", "host", "--memory-budget", "64MiB", "--no-cache",
                            "--max", "2", "--crash-is-oom", "--enforce-address-space", "--",
                            "true", NULL};
    CHECK_EQ(cli(&r, capped, NULL), 0);
    CHECK_CONTAINS(r.out, "batch_size=2");
    /* A jump may repeat. */
    const char *jumps[] = {"probe", "--device", "sim:capacity=16GiB,per_sample=1GiB,jump=3:1GiB,jump=5:1GiB",
                           "--no-cache", NULL};
    CHECK_EQ(cli(&r, jumps, NULL), 0);
    CHECK_CONTAINS(r.out, "batch_size=13");

    /* clear warns of what it cannot remove and says so in its status. */
    char dir[256], env_dir[300], entry[400];
    snprintf(dir, sizeof dir, "/tmp/batchfit-test-%ld-cache-clear", (long)getpid());
    snprintf(env_dir, sizeof env_dir, "BATCHFIT_CACHE_DIR=%s", dir);
    drop_cache_dir(dir);
    mkdir(dir, 0700);
    snprintf(entry, sizeof entry, "%s/0123456789abcdef0123456789abcdef.entry", dir);
    CHECK_EQ(mkdir(entry, 0700), 0);
    const char *envs[] = {env_dir, NULL};
    const char *clear[] = {"cache", "clear", NULL};
    CHECK_EQ(cli_env(&r, clear, envs), 6);
    CHECK_CONTAINS(r.err, "cannot remove");
    CHECK_CONTAINS(r.out, "1 could not be removed");
    rmdir(entry);
    drop_cache_dir(dir);
}

/* A cgroup's memory limit under the machine's (a container's, a Slurm
 * job's, a systemd slice's) is the host's memory: the kernel kills past it
 * with the machine's memory still free, and /proc/meminfo does not know of
 * it. Run in a cgroup of 1 GiB inside one of 200 MiB, batchfit info shows
 * 200 MiB and names the outer cgroup, and a probe with no --memory-budget
 * takes its budget from it. Before, the budget was the machine's: a
 * program of 300 KiB a sample under a 300 MiB limit ran 11 trials, two of
 * them killed by the kernel, and kept 947, whose peak was 298 of the 300
 * MiB (no margin left); now 807 in 4, under a 5% margin. A program
 * whose batch 1 does not fit is told to raise that limit, not to find "a
 * larger device". */
TEST(cli_host_memory_follows_a_cgroup_limit)
{
    test_cgroups *c = test_cgroups_open(UINT64_C(200) << 20, UINT64_C(1) << 30);
    if (!c)
        return;
    int made = c->made, info_status = -1, probe_status = -1;
    char join[BATCHFIT__CGROUP_PATH_MAX + 16], note[BATCHFIT__CGROUP_PATH_MAX + 128];
    snprintf(join, sizeof join, "TEST_CGROUP=%s", c->procs);
    snprintf(note, sizeof note, "a cgroup limits this process's memory to 200.00 MiB (%s), ",
             c->outer.path);
    const char *envs[] = {join, NULL};
    static run info_run, probe_run;
    const char *info[] = {"info", "--json", NULL};
    const char *probe[] = {"probe", "--device", "host", "--no-cache", "--export-json", "-", "--",
                           tool(), "grow", "1024", "4096", NULL};
    /* 192 MiB at batch 1: over the budget, under the limit. */
    const char *too_big[] = {"probe", "--device", "host", "--no-cache", "--", tool(), "grow",
                             "196000", "1024", NULL};
    static run too_big_run;
    int too_big_status = -1;
    if (made == 0) {
        info_status = cli_env(&info_run, info, envs);
        probe_status = cli_env(&probe_run, probe, envs);
        too_big_status = cli_env(&too_big_run, too_big, envs);
    }
    /* Removed before anything is checked: a failed check leaves no cgroup. */
    test_cgroups_close(c);
    CHECK_EQ(made, 0);
    CHECK_EQ(info_status, 0);
    const char *host = strstr(info_run.out, "\"spec\": \"host\"");
    CHECK(host != NULL);
    CHECK_EQ(json_number(host, "total_bytes"), UINT64_C(200) << 20);
    CHECK(json_number(host, "free_bytes") <= UINT64_C(200) << 20);
    CHECK(json_number(host, "free_bytes") > UINT64_C(190) << 20);
    CHECK_CONTAINS(host, "\"memory_note\": \"");
    CHECK_CONTAINS(host, note);
    CHECK_EQ(probe_status, 0);
    CHECK_CONTAINS(probe_run.err, "batchfit: host memory: ");
    CHECK_CONTAINS(probe_run.err, note);
    CHECK_CONTAINS(probe_run.out, "\"memory_note\": \"");
    CHECK_CONTAINS(probe_run.out, note);
    CHECK(result_number(probe_run.out, "usable_bytes") <= UINT64_C(200) << 20);
    /* 1 MiB a sample and 4 MiB on top, under 200 MiB less the 5% margin
     * and the 5% spread's band: about 165; the machine's memory would have
     * let it run to the limit. */
    unsigned long long batch = result_number(probe_run.out, "batch_size");
    CHECK(batch >= 140 && batch <= 180);
    /* Where even batch 1 does not fit, the larger device is a higher
     * limit for the container or job. */
    CHECK_EQ(too_big_status, 3);
    CHECK_CONTAINS(too_big_run.err, "even the minimum batch size 1 does not fit");
    CHECK_CONTAINS(too_big_run.err, "or a higher memory limit for this container or job (a "
                                    "cgroup limits this process's memory to 200.00 MiB (");
}

/* A shell script for a trial under c's cgroups: it prints "CAP <bytes>",
 * its own cgroup's memory limit ($0 the hierarchy's mount point, its path
 * read from /proc/self/cgroup), on stderr, then runs then. */
static void cap_then(const test_cgroups *c, const char *then, char *out, size_t len)
{
    snprintf(out, len,
             c->outer.version == 2
                 ? "rel=$(sed -n 's/^0:://p' /proc/self/cgroup); "
                   "echo \"CAP $(cat \"$0$rel/memory.max\")\" >&2; %s"
                 : "rel=$(sed -n 's/^[0-9]*:[^:]*memory[^:]*://p' /proc/self/cgroup); "
                   "echo \"CAP $(cat \"$0$rel/memory.limit_in_bytes\")\" >&2; %s",
             then);
}

/* A trial's cap under a container's limit is never under its budget. The
 * first trial writes 150 MiB to a file in dir; every trial prints its
 * cgroup's limit. */
static void cap_never_under_budget(const char *dir)
{
    test_cgroups *c = test_cgroups_open(UINT64_C(600) << 20, UINT64_C(1) << 30);
    if (!c)
        return;
    int made = c->made, status = -1;
    char mount[BATCHFIT__CGROUP_PATH_MAX] = "";
    test_cgroup_mount(c, mount, sizeof mount);
    char join[BATCHFIT__CGROUP_PATH_MAX + 16], file[256];
    snprintf(join, sizeof join, "TEST_CGROUP=%s", c->procs);
    snprintf(file, sizeof file, "%s/batchfit-test-%ld-file", dir, (long)getpid());
    const char *envs[] = {join, NULL};
    char script[512];
    cap_then(c, "[ -e \"$1\" ] || head -c 150M /dev/zero > \"$1\"", script, sizeof script);
    const char *args[] = {"probe", "--device", "host", "--no-cache", "--max", "4", "--strategy",
                          "bisect", "--show-output", "--export-json", "-", "--", "/bin/sh", "-c",
                          script, mount, file, "{batch}", NULL};
    static run r;
    if (made == 0 && mount[0])
        status = cli_env(&r, args, envs);
    test_cgroups_close(c);
    unlink(file);
    CHECK_EQ(made, 0);
    CHECK_EQ(status, 0);
    if (!strstr(r.err, "peak: cgroup-v")) {
        fprintf(stderr, "    skipped: no trial cgroups here\n");
        return;
    }
    const char *b = strstr(r.out, "\"budget\": {");
    unsigned long long budget = b ? json_number(b, "budget_bytes") : 0;
    CHECK(budget > (UINT64_C(400) << 20));
    unsigned caps = 0;
    for (const char *p = strstr(r.err, "CAP "); p; p = strstr(p + 4, "CAP ")) {
        caps++;
        unsigned long long cap = strtoull(p + 4, NULL, 10);
        if (cap < budget) {
            test_fail(__FILE__, __LINE__, "a trial's cap %llu is under the budget %llu (file in %s)",
                      cap, budget, dir);
            return;
        }
    }
    CHECK(caps >= 2);
}

/* Dirty pages a trial left charged to the container (a checkpoint, a log)
 * are written back before anything is killed, and a cap placed by the room
 * less them killed the next trials far under the budget (386-392 answered
 * where 512 fits). Shared memory (a file in /dev/shm, or in a /var/tmp
 * that is tmpfs) is held: the room falls under the budget, and the cap is
 * the budget itself, which the kernel keeps in whole pages (a CI machine
 * read it back a page under). */
TEST(cli_a_trial_s_cap_under_a_container_is_never_under_its_budget)
{
    /* Each where 150 MiB can be written (Docker gives /dev/shm 64 MiB). */
    static const char *const dirs[] = {"/var/tmp", "/dev/shm"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0] && !test_failed(); i++) {
        struct statvfs fs;
        if (access(dirs[i], W_OK) != 0 || statvfs(dirs[i], &fs) != 0 ||
            (uint64_t)fs.f_bavail * fs.f_frsize < (UINT64_C(200) << 20)) {
            fprintf(stderr, "    skipped in %s: no room for 150 MiB there\n", dirs[i]);
            continue;
        }
        cap_never_under_budget(dirs[i]);
    }
}

/* Under a container's limit, each trial's cgroup is capped under the room
 * that limit leaves, so a trial too large for it runs out of memory in its
 * own cgroup, where the kernel chooses among the trial's processes only
 * (it killed batchfit in about one probe of five, exit 137). The trial
 * prints its own cgroup's limit (the mount point given, its path read from
 * /proc/self/cgroup), then grows past the container's limit. */
TEST(cli_trials_run_out_of_memory_inside_a_container_s_limit)
{
    test_cgroups *c = test_cgroups_open(UINT64_C(100) << 20, UINT64_C(1) << 30);
    if (!c)
        return;
    int made = c->made, status[3] = {-1, -1, -1};
    char mount[BATCHFIT__CGROUP_PATH_MAX] = "";
    test_cgroup_mount(c, mount, sizeof mount);
    char join[BATCHFIT__CGROUP_PATH_MAX + 16];
    snprintf(join, sizeof join, "TEST_CGROUP=%s", c->procs);
    const char *envs[] = {join, NULL};
    char script[512];
    cap_then(c, "exec \"$1\" grow 300000 1024", script, sizeof script);
    /* 293 MiB at batch 1, three times the limit; without the watchdog,
     * which would otherwise stop it past the budget first on some runs. */
    const char *too_big[] = {"probe", "--device", "host", "--no-cache", "--no-watchdog",
                             "--show-output", "--", "/bin/sh", "-c", script, mount, tool(),
                             "{batch}", NULL};
    static run runs[3];
    if (made == 0 && mount[0])
        for (int i = 0; i < 3; i++)
            status[i] = cli_env(&runs[i], too_big, envs);
    test_cgroups_close(c);
    CHECK_EQ(made, 0);
    CHECK(mount[0] != '\0');
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(status[i], 3);
        CHECK_CONTAINS(runs[i].err, "even the minimum batch size 1 does not fit");
    }
    /* Where batchfit could make trial cgroups (v2 allows none under a
     * cgroup that holds processes), the trial's is capped: under the
     * container's 100 MiB, above the budget. */
    if (!strstr(runs[0].err, "peak: cgroup-v")) {
        fprintf(stderr, "    skipped the cap: no trial cgroups here\n");
        return;
    }
    const char *cap = strstr(runs[0].err, "CAP ");
    CHECK(cap != NULL);
    unsigned long long bytes = cap ? strtoull(cap + 4, NULL, 10) : 0;
    CHECK(bytes < (UINT64_C(100) << 20));
    CHECK(bytes > (UINT64_C(60) << 20));
}
