/* A child program for the tests: each mode ends the way a real training
 * command can end, so the runner and the CLI are tested on real processes.
 *
 *   exit N                       exit with status N
 *   print TEXT [stdout] [N]      print TEXT (to stderr, or stdout) and exit N (default 1)
 *   signal segv|abort|kill|term  die by that signal
 *   hang [PIDFILE] [ignore-term] write our pid, then sleep until killed
 *   grandchildren N PIDFILE      fork N sleeping grandchildren (half in new sessions),
 *                                write their pids, exit 0
 *   flood MIB                    write MIB MiB of text to stdout, exit 0
 *   orphan-zombie                fork a child that forks a grandchild and exits; the
 *                                grandchild exits at once (orphaned: a zombie until its
 *                                new parent reaps it); exit 0 once /proc shows it a zombie
 *   leave N                      fork N children named "left-worker" that sleep until
 *                                killed, wait until each has its name, print the last
 *                                one's pid and exit 0 (work left to processes that run on)
 *   alloc MIB [kill]             allocate and touch MIB MiB, hold it 100 ms, exit 0 (or
 *                                hold it 1 s and die by SIGKILL: a killed process leaves
 *                                no high-water mark to read, only the samples taken
 *                                while it held the memory, which a loaded machine can
 *                                delay past 100 ms)
 *   grow PER_SAMPLE_KIB [FIXED_KIB [CHUNK [POOL [WANDER_PCT]]]]  allocate FIXED + batch *
 *                                PER_SAMPLE (batch from BATCHFIT_BATCH_SIZE, rounded up to a
 *                                multiple of CHUNK samples: per-sample memory allocated CHUNK
 *                                samples at a time, memory in steps; and at least POOL
 *                                samples' worth: a pool, flat up to POOL), times 1 plus up to
 *                                WANDER_PCT% drawn anew each run; print "out of memory" if
 *                                malloc fails
 *   unchecked MIB                allocate 1 MiB blocks without checking, writing each
 *   touch FILE                   create FILE, exit 0
 *   env NAME                     print NAME=value of an environment variable, exit 0
 *   args ...                     print each argument on its own line, exit 0
 *   sleepers N                   fork N children that wait, print "ready", read stdin
 *                                to its end, then kill and reap them and exit 0
 *   share MIB N                  allocate and touch MIB MiB, fork N children that share it
 *                                (as a DataLoader's workers share their parent's heap),
 *                                hold it 500 ms with all of them alive, reap them, exit 0
 *   reserve MIB TOUCH_MIB        map MIB MiB of address space, touch TOUCH_MIB MiB of it,
 *                                hold it 100 ms, exit 0 ("out of memory" if the map fails)
 *   stream FILE MIB              write MIB MiB to FILE, sync it, drop it from the page cache,
 *                                read it back and remove it, exit 0 (page cache, tiny RSS)
 *   tmpfs DIR MIB                write MIB MiB to a file in DIR (a tmpfs such as /dev/shm),
 *                                removed at once and kept open, hold it 300 ms, exit 0
 *                                (shared memory that no process maps)
 *   orphan-notify FD             fork a grandchild in a new session, write "PID GRANDCHILD"
 *                                to FD, then sleep until killed (the grandchild too)
 *   mixed N                      print N progress lines to stdout (flushed at exit, as a
 *                                pipe's buffer is), then the cause of failure on stderr;
 *                                exit 1
 *   quiet MS                     close stdin, stdout and stderr, sleep MS ms, exit 0
 *   long COUNT TEXT [N]          print COUNT 'x' then TEXT on one line to stderr, exit N
 *                                (default 1)
 *   gpu-grow PER_SAMPLE_MIB [FIXED_MIB]  allocate FIXED + batch * PER_SAMPLE on CUDA device 0
 *                                through the driver API (BATCHFIT_CUDA_LIBRARY or
 *                                libcuda.so.1), hold it 150 ms, free it; a failed
 *                                allocation prints PyTorch's raw-CUDA OOM message
 *   gpu-grow-each PER_SAMPLE_MIB,... [FIXED_MIB]  the same on every visible CUDA device at
 *                                once, device i with its own PER_SAMPLE; exits 3 unless
 *                                the driver shows exactly as many devices as are listed
 *   gpu-grow-meet DIR PER_SAMPLE_MIB [FIXED_MIB]  gpu-grow, marking DIR/PID while it runs;
 *                                before allocating it waits (up to 3 s) for another trial's
 *                                mark and, when one appears, appends a line to DIR/met: two
 *                                trials ran at once */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void write_pid(const char *path)
{
    FILE *f = fopen(path, "a");
    if (!f)
        return;
    fprintf(f, "%ld\n", (long)getpid());
    fclose(f);
}

/* Writes go through a volatile pointer so no compiler may drop the
 * allocation: the memory must really be resident. */
static char *touch_alloc(size_t bytes)
{
    char *p = malloc(bytes);
    if (!p)
        return NULL;
    volatile char *v = p;
    for (size_t i = 0; i < bytes; i += 4096)
        v[i] = (char)i;
    if (bytes)
        v[bytes - 1] = 1;
    return p;
}

/* Allocates on GPU 0 the way a framework does, through the driver API. */
static int gpu_grow(long per_sample_mib, long fixed_mib)
{
    const char *path = getenv("BATCHFIT_CUDA_LIBRARY");
    void *lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "childtool: cannot load the CUDA driver: %s\n", dlerror());
        return 3;
    }
    int (*init)(unsigned) = (int (*)(unsigned))dlsym(lib, "cuInit");
    int (*get)(int *, int) = (int (*)(int *, int))dlsym(lib, "cuDeviceGet");
    int (*retain)(void **, int) = (int (*)(void **, int))dlsym(lib, "cuDevicePrimaryCtxRetain");
    int (*set)(void *) = (int (*)(void *))dlsym(lib, "cuCtxSetCurrent");
    int (*alloc)(unsigned long long *, size_t) =
        (int (*)(unsigned long long *, size_t))dlsym(lib, "cuMemAlloc_v2");
    int (*release)(unsigned long long) = (int (*)(unsigned long long))dlsym(lib, "cuMemFree_v2");
    int dev = 0;
    void *ctx = NULL;
    if (!init || !get || !retain || !set || !alloc || !release || init(0) != 0 ||
        get(&dev, 0) != 0 || retain(&ctx, dev) != 0 || set(ctx) != 0) {
        fprintf(stderr, "childtool: no usable CUDA device\n");
        return 3;
    }
    const char *b = getenv("BATCHFIT_BATCH_SIZE");
    long batch = b ? atol(b) : 1;
    unsigned long long fixed = 0, act = 0;
    if (alloc(&fixed, (size_t)fixed_mib << 20) != 0 ||
        alloc(&act, (size_t)(per_sample_mib * batch) << 20) != 0) {
        fprintf(stderr, "RuntimeError: CUDA error: out of memory\n");
        return 1;
    }
    sleep_ms(150);
    release(act);
    release(fixed);
    return 0;
}

/* Whether DIR holds the mark of a trial other than ours. */
static int other_mark(const char *dir, const char *self)
{
    DIR *d = opendir(dir);
    int found = 0;
    struct dirent *e;
    while (d && !found && (e = readdir(d)) != NULL)
        found = e->d_name[0] >= '0' && e->d_name[0] <= '9' && strcmp(e->d_name, self) != 0;
    if (d)
        closedir(d);
    return found;
}

static int gpu_grow_meet(const char *dir, long per_sample_mib, long fixed_mib)
{
    char self[32], mark[4096], met[4096];
    snprintf(self, sizeof self, "%ld", (long)getpid());
    snprintf(mark, sizeof mark, "%s/%s", dir, self);
    snprintf(met, sizeof met, "%s/met", dir);
    FILE *f = fopen(mark, "w");
    if (f)
        fclose(f);
    for (int i = 0; i < 300; i++) {
        if (other_mark(dir, self)) {
            FILE *m = fopen(met, "a");
            if (m) {
                fprintf(m, "%s met another trial\n", self);
                fclose(m);
            }
            break;
        }
        sleep_ms(10);
    }
    int rc = gpu_grow(per_sample_mib, fixed_mib);
    unlink(mark);
    return rc;
}

/* gpu-grow on every visible device, each with its own per-sample size, as
 * the ranks of torchrun --nproc_per_node N would. */
static int gpu_grow_each(const char *per_sample_list, long fixed_mib)
{
    const char *path = getenv("BATCHFIT_CUDA_LIBRARY");
    void *lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "childtool: cannot load the CUDA driver: %s\n", dlerror());
        return 3;
    }
    int (*init)(unsigned) = (int (*)(unsigned))dlsym(lib, "cuInit");
    int (*count)(int *) = (int (*)(int *))dlsym(lib, "cuDeviceGetCount");
    int (*get)(int *, int) = (int (*)(int *, int))dlsym(lib, "cuDeviceGet");
    int (*retain)(void **, int) = (int (*)(void **, int))dlsym(lib, "cuDevicePrimaryCtxRetain");
    int (*set)(void *) = (int (*)(void *))dlsym(lib, "cuCtxSetCurrent");
    int (*alloc)(unsigned long long *, size_t) =
        (int (*)(unsigned long long *, size_t))dlsym(lib, "cuMemAlloc_v2");
    int (*release)(unsigned long long) = (int (*)(unsigned long long))dlsym(lib, "cuMemFree_v2");
    long per_sample[16];
    int listed = 0, visible = 0;
    for (const char *p = per_sample_list; *p && listed < 16; listed++) {
        char *end;
        per_sample[listed] = strtol(p, &end, 10);
        p = *end == ',' ? end + 1 : end;
    }
    if (!init || !count || !get || !retain || !set || !alloc || !release || init(0) != 0 ||
        count(&visible) != 0 || visible != listed) {
        fprintf(stderr, "childtool: %d visible CUDA devices, %d listed\n", visible, listed);
        return 3;
    }
    const char *b = getenv("BATCHFIT_BATCH_SIZE");
    long batch = b ? atol(b) : 1;
    void *ctx[16];
    unsigned long long fixed[16] = {0}, act[16] = {0};
    for (int i = 0; i < listed; i++) {
        int dev = 0;
        if (get(&dev, i) != 0 || retain(&ctx[i], dev) != 0 || set(ctx[i]) != 0) {
            fprintf(stderr, "childtool: cannot use CUDA device %d\n", i);
            return 3;
        }
        if (alloc(&fixed[i], (size_t)fixed_mib << 20) != 0 ||
            alloc(&act[i], (size_t)(per_sample[i] * batch) << 20) != 0) {
            fprintf(stderr, "RuntimeError: CUDA error: out of memory (device %d)\n", i);
            return 1;
        }
    }
    /* Held long enough for a loaded sampler to read every device (150 ms
     * went unread once under AddressSanitizer: a peak of 0 on one GPU). */
    sleep_ms(300);
    for (int i = 0; i < listed; i++) {
        set(ctx[i]);
        release(act[i]);
        release(fixed[i]);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "childtool: no mode\n");
        return 2;
    }
    const char *mode = argv[1];
    if (strcmp(mode, "exit") == 0 && argc > 2)
        return atoi(argv[2]);
    if (strcmp(mode, "print") == 0 && argc > 2) {
        int to_stdout = argc > 3 && strcmp(argv[3], "stdout") == 0;
        int code = argc > 3 + to_stdout ? atoi(argv[3 + to_stdout]) : 1;
        fprintf(to_stdout ? stdout : stderr, "some earlier line\n%s\n", argv[2]);
        return code;
    }
    if (strcmp(mode, "signal") == 0 && argc > 2) {
        fprintf(stderr, "about to die by %s\n", argv[2]);
        fflush(stderr);
        if (strcmp(argv[2], "segv") == 0)
            raise(SIGSEGV);
        if (strcmp(argv[2], "abort") == 0)
            abort();
        if (strcmp(argv[2], "kill") == 0)
            raise(SIGKILL);
        if (strcmp(argv[2], "term") == 0)
            raise(SIGTERM);
        if (strcmp(argv[2], "usr1") == 0)
            raise(SIGUSR1);
        if (strcmp(argv[2], "rt3") == 0)
            raise(SIGRTMIN + 3);
        return 3;
    }
    if (strcmp(mode, "hang") == 0) {
        if (argc > 3 && strcmp(argv[3], "ignore-term") == 0)
            signal(SIGTERM, SIG_IGN);
        if (argc > 2)
            write_pid(argv[2]);
        for (;;)
            pause();
    }
    if (strcmp(mode, "grandchildren") == 0 && argc > 3) {
        int n = atoi(argv[2]);
        for (int i = 0; i < n; i++) {
            pid_t pid = fork();
            if (pid == 0) {
                if (i % 2)
                    setsid();
                write_pid(argv[3]);
                for (;;)
                    pause();
            }
        }
        sleep_ms(200);
        return 0;
    }
    if (strcmp(mode, "setsid-grow") == 0 && argc > 3) {
        /* A worker in its own session, deaf to SIGTERM, grows by 1 MiB
         * every 10 ms up to argv[2] MiB and writes how far it got to
         * argv[3]; the main process waits for it. */
        pid_t worker = fork();
        if (worker == 0) {
            setsid();
            signal(SIGTERM, SIG_IGN);
            long limit = atol(argv[2]);
            /* One fixed-width write in place a step: a kill between two
             * leaves the last count whole (fopen's truncation did not). */
            int progress = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0600);
            for (long mib = 1; mib <= limit; mib++) {
                if (!touch_alloc((size_t)1 << 20))
                    _exit(1);
                char count[16];
                int len = snprintf(count, sizeof count, "%10ld\n", mib);
                if (progress >= 0 && pwrite(progress, count, (size_t)len, 0) != len)
                    _exit(1);
                sleep_ms(10);
            }
            for (;;)
                pause();
        }
        int status = 0;
        waitpid(worker, &status, 0);
        return 0;
    }
    if (strcmp(mode, "orphan-spike") == 0 && argc > 2) {
        /* A child forks a grandchild and exits; the grandchild, orphaned,
         * touches argv[2] MiB and exits at once (a spike no sampling sees);
         * the main process waits for the child, then lives on a while. */
        pid_t child = fork();
        if (child == 0) {
            if (fork() == 0)
                _exit(touch_alloc((size_t)atol(argv[2]) << 20) ? 0 : 1);
            _exit(0);
        }
        waitpid(child, NULL, 0);
        sleep_ms(300);
        return 0;
    }
    if (strcmp(mode, "orphan-zombie") == 0) {
        int p[2];
        if (pipe(p) != 0)
            return 1;
        pid_t child = fork();
        if (child < 0)
            return 1;
        if (child == 0) {
            pid_t grandchild = fork();
            if (grandchild == 0)
                _exit(0);
            if (write(p[1], &grandchild, sizeof grandchild) != (ssize_t)sizeof grandchild)
                _exit(1);
            _exit(0);
        }
        pid_t grandchild = 0;
        if (read(p[0], &grandchild, sizeof grandchild) != (ssize_t)sizeof grandchild)
            return 1;
        waitpid(child, NULL, 0);
        /* Its new parent (a subreaper, or init, which reaps at once) has
         * it: wait until it is a zombie or gone. */
        char path[64], stat[256];
        snprintf(path, sizeof path, "/proc/%ld/stat", (long)grandchild);
        for (;;) {
            FILE *f = fopen(path, "r");
            if (!f)
                break;
            size_t n = fread(stat, 1, sizeof stat - 1, f);
            fclose(f);
            stat[n] = '\0';
            const char *end = strrchr(stat, ')');
            if (end && end[1] == ' ' && end[2] == 'Z')
                break;
            sleep_ms(1);
        }
        printf("%ld\n", (long)grandchild);
        return 0;
    }
    if (strcmp(mode, "leave") == 0 && argc > 2) {
        long n = atol(argv[2]);
        pid_t last = 0;
        for (long i = 0; i < n; i++) {
            int ready[2];
            if (pipe(ready) != 0)
                return 1;
            last = fork();
            if (last < 0)
                return 1;
            if (last == 0) {
                close(ready[0]);
                prctl(PR_SET_NAME, "left-worker", 0, 0, 0);
                if (write(ready[1], "1", 1) != 1)
                    _exit(1);
                close(ready[1]);
                for (;;)
                    pause();
            }
            close(ready[1]);
            char byte;
            if (read(ready[0], &byte, 1) != 1)
                return 1;
            close(ready[0]);
        }
        printf("%ld\n", (long)last);
        return 0;
    }
    if (strcmp(mode, "flood") == 0 && argc > 2) {
        long mib = atol(argv[2]);
        char line[128];
        memset(line, 'x', sizeof line - 1);
        line[sizeof line - 1] = '\n';
        for (long i = 0; i < mib * 8192; i++)
            fwrite(line, 1, sizeof line, stdout);
        printf("done\n");
        return 0;
    }
    if (strcmp(mode, "alloc") == 0 && argc > 2) {
        char *p = touch_alloc((size_t)atol(argv[2]) << 20);
        if (!p) {
            fprintf(stderr, "childtool: out of memory\n");
            return 1;
        }
        int killed = argc > 3 && strcmp(argv[3], "kill") == 0;
        sleep_ms(killed ? 1000 : 100);
        if (killed)
            raise(SIGKILL);
        free(p);
        return 0;
    }
    if (strcmp(mode, "grow") == 0 && argc > 2) {
        const char *b = getenv("BATCHFIT_BATCH_SIZE");
        long batch = b ? atol(b) : 1;
        long chunk = argc > 4 ? atol(argv[4]) : 1;
        if (chunk > 1)
            batch = (batch + chunk - 1) / chunk * chunk;
        long pool = argc > 5 ? atol(argv[5]) : 0;
        if (batch < pool)
            batch = pool;
        size_t bytes = ((size_t)atol(argv[2]) * (size_t)batch + (argc > 3 ? (size_t)atol(argv[3]) : 0)) << 10;
        double wander = argc > 6 ? atof(argv[6]) : 0.0;
        if (wander > 0.0) {
            /* A draw per run, as a program whose allocations depend on
             * timing and addresses reads differently each time. */
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            srand((unsigned)ts.tv_nsec ^ (unsigned)getpid() * 2654435761u);
            bytes = (size_t)((double)bytes * (1.0 + wander / 100.0 * ((double)rand() / RAND_MAX)));
        }
        char *p = touch_alloc(bytes);
        if (!p) {
            fprintf(stderr, "childtool: out of memory allocating %zu bytes\n", bytes);
            return 1;
        }
        sleep_ms(60);
        free(p);
        return 0;
    }
    if (strcmp(mode, "unchecked") == 0 && argc > 2) {
        long mib = atol(argv[2]);
        for (long i = 0; i < mib; i++) {
            volatile char *p = malloc(1 << 20);
            /* Crashes when malloc fails, as unchecked code does. */
            for (size_t k = 0; k < (1 << 20); k += 4096)
                p[k] = 1;
        }
        return 0;
    }
    if (strcmp(mode, "touch") == 0 && argc > 2) {
        FILE *f = fopen(argv[2], "w");
        if (f)
            fclose(f);
        return 0;
    }
    if (strcmp(mode, "env") == 0 && argc > 2) {
        const char *v = getenv(argv[2]);
        printf("%s=%s\n", argv[2], v ? v : "(unset)");
        return 0;
    }
    if (strcmp(mode, "gpu-grow-each") == 0 && argc > 2)
        return gpu_grow_each(argv[2], argc > 3 ? atol(argv[3]) : 0);
    if (strcmp(mode, "gpu-grow-meet") == 0 && argc > 3)
        return gpu_grow_meet(argv[2], atol(argv[3]), argc > 4 ? atol(argv[4]) : 0);
    if (strcmp(mode, "gpu-grow") == 0 && argc > 2)
        return gpu_grow(atol(argv[2]), argc > 3 ? atol(argv[3]) : 0);
    if (strcmp(mode, "sleepers") == 0 && argc > 2) {
        long n = atol(argv[2]);
        pid_t *pids = calloc((size_t)n, sizeof *pids);
        long made = 0;
        while (pids && made < n) {
            pid_t pid = fork();
            if (pid == 0) {
                for (;;)
                    pause();
            }
            if (pid < 0)
                break;
            pids[made++] = pid;
        }
        printf("%s %ld\n", made == n ? "ready" : "short", made);
        fflush(stdout);
        char buf[64];
        while (read(0, buf, sizeof buf) > 0)
            ;
        for (long i = 0; i < made; i++)
            kill(pids[i], SIGKILL);
        for (long i = 0; i < made; i++)
            waitpid(pids[i], NULL, 0);
        free(pids);
        return made == n ? 0 : 1;
    }
    if (strcmp(mode, "share") == 0 && argc > 3) {
        char *p = touch_alloc((size_t)atol(argv[2]) << 20);
        long n = atol(argv[3]);
        int gate[2];
        if (!p || pipe(gate) != 0)
            return 1;
        long made = 0;
        for (; made < n; made++) {
            pid_t pid = fork();
            if (pid == 0) {
                /* Hold the shared pages until the parent closes the gate. */
                char c;
                close(gate[1]);
                while (read(gate[0], &c, 1) > 0)
                    ;
                _exit(0);
            }
            if (pid < 0)
                break;
        }
        close(gate[0]);
        sleep_ms(500);
        close(gate[1]);
        while (wait(NULL) > 0)
            ;
        free(p);
        return made == n ? 0 : 1;
    }
    if (strcmp(mode, "reserve") == 0 && argc > 3) {
        size_t bytes = (size_t)atol(argv[2]) << 20, touch = (size_t)atol(argv[3]) << 20;
        char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                       -1, 0);
        if (p == MAP_FAILED) {
            fprintf(stderr, "childtool: out of memory reserving %zu bytes\n", bytes);
            return 1;
        }
        volatile char *v = p;
        for (size_t i = 0; i < touch && i < bytes; i += 4096)
            v[i] = 1;
        sleep_ms(100);
        munmap(p, bytes);
        return 0;
    }
    if (strcmp(mode, "stream") == 0 && argc > 3) {
        static char block[1 << 16];
        long blocks = atol(argv[3]) * 16;
        int fd = open(argv[2], O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (fd < 0)
            return 3;
        memset(block, 'x', sizeof block);
        for (long i = 0; i < blocks; i++)
            if (write(fd, block, sizeof block) != (ssize_t)sizeof block)
                return 3;
        /* Clean pages can be dropped: reading them back charges the cold
         * cache to this process again, as a first import does. */
        fdatasync(fd);
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        lseek(fd, 0, SEEK_SET);
        while (read(fd, block, sizeof block) > 0)
            ;
        close(fd);
        unlink(argv[2]);
        return 0;
    }
    if (strcmp(mode, "tmpfs") == 0 && argc > 3) {
        static char block[1 << 16];
        char path[4096];
        snprintf(path, sizeof path, "%s/childtool-tmpfs-%ld", argv[2], (long)getpid());
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (fd < 0)
            return 3;
        unlink(path);
        memset(block, 'x', sizeof block);
        for (long i = 0, blocks = atol(argv[3]) * 16; i < blocks; i++)
            if (write(fd, block, sizeof block) != (ssize_t)sizeof block)
                return 3;
        sleep_ms(300);
        close(fd);
        return 0;
    }
    if (strcmp(mode, "join-group") == 0 && argc > 3) {
        /* A child that moves itself into process group argv[2] (the
         * caller's), writes its pid to argv[3] and waits; we exit once it
         * has tried. */
        int ready[2];
        if (pipe(ready) != 0)
            return 1;
        pid_t child = fork();
        if (child == 0) {
            close(ready[0]);
            setpgid(0, (pid_t)atol(argv[2]));
            write_pid(argv[3]);
            close(ready[1]);
            for (;;)
                pause();
        }
        close(ready[1]);
        char c;
        while (read(ready[0], &c, 1) < 0 && errno == EINTR)
            ;
        return 0;
    }
    if (strcmp(mode, "orphan-notify") == 0 && argc > 2) {
        int fd = atoi(argv[2]);
        pid_t grandchild = fork();
        if (grandchild == 0) {
            close(fd);
            setsid();
            for (;;)
                pause();
        }
        dprintf(fd, "%ld %ld\n", (long)getpid(), (long)grandchild);
        close(fd);
        for (;;)
            pause();
    }
    if (strcmp(mode, "mixed") == 0 && argc > 2) {
        for (long i = 0; i < atol(argv[2]); i++)
            printf("progress line %ld: loss 0.%08ld, with enough words to make a long line of "
                   "output\n", i, i);
        fprintf(stderr, "Traceback (most recent call last):\nValueError: the real cause\n");
        return 1;
    }
    if (strcmp(mode, "quiet") == 0 && argc > 2) {
        close(0);
        close(1);
        close(2);
        sleep_ms(atol(argv[2]));
        return 0;
    }
    if (strcmp(mode, "long") == 0 && argc > 3) {
        for (long i = atol(argv[2]); i > 0; i--)
            fputc('x', stderr);
        fprintf(stderr, "%s\n", argv[3]);
        return argc > 4 ? atoi(argv[4]) : 1;
    }
    if (strcmp(mode, "args") == 0) {
        for (int i = 2; i < argc; i++)
            printf("arg: %s\n", argv[i]);
        return 0;
    }
    fprintf(stderr, "childtool: unknown mode %s\n", mode);
    return 2;
}
