/* Where batchfit writes a document it produces (probe's --export-json and
 * --plot, plot's -o), and how.
 *
 * Where it goes decides how it is written. A regular file (or a missing
 * one) is rewritten whole through a temporary file renamed over it, so a
 * crash keeps the last complete state; a symbolic link is followed, and
 * the file it names is replaced, never the link. Anything else - a FIFO, a
 * pipe such as >(jq .), a terminal, a device node - is written in place:
 * renaming over it would replace the node, and a stream cannot be
 * rewritten. "-" is stdout, and so is the regular file stdout is redirected
 * to, named by any path (/dev/stdout, /proc/self/fd/1, its own name):
 * renamed over, it lost what the shell had written there before and the
 * answer written after (the file stderr goes to is written through
 * stderr, for the same reason). */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether st is the file descriptor fd's open file. */
static int is_fd(const struct stat *st, int fd)
{
    struct stat of;
    return fstat(fd, &of) == 0 && of.st_dev == st->st_dev && of.st_ino == st->st_ino;
}

static int fail(const export_target *t, const char *what, int err)
{
    fprintf(stderr, "%s: %s %s: %s%s%s\n", t->who, t->flag, t->path, what, err ? ": " : "",
            err ? strerror(err) : "");
    return -1;
}

/* The file to create for path: path itself, or what a chain of symbolic
 * links ending in a missing file names (each relative to its link's
 * directory), followed as the kernel would, at most 40 links deep. */
static int new_file_path(const char *path, char *out, size_t len)
{
    char current[PATH_MAX];
    if ((size_t)snprintf(current, sizeof current, "%s", path) >= sizeof current)
        return -1;
    for (int depth = 0; depth < 40; depth++) {
        struct stat st;
        char target[PATH_MAX];
        ssize_t n;
        if (lstat(current, &st) != 0 || !S_ISLNK(st.st_mode) ||
            (n = readlink(current, target, sizeof target - 1)) <= 0)
            return (size_t)snprintf(out, len, "%s", current) < len ? 0 : -1;
        target[n] = '\0';
        char next[PATH_MAX];
        if (target[0] == '/') {
            if ((size_t)snprintf(next, sizeof next, "%s", target) >= sizeof next)
                return -1;
        } else {
            char copy[PATH_MAX];
            strcpy(copy, current);
            if ((size_t)snprintf(next, sizeof next, "%s/%s", dirname(copy), target) >=
                sizeof next)
                return -1;
        }
        strcpy(current, next);
    }
    return -1;
}

/* Opens the temporary file replace() writes beside resolved (its name in
 * tmp), a leftover of that name (a pid reused) removed first. The file
 * descriptor; -1 with errno set; -2 where the name does not fit tmp. */
static int open_temp(const char *resolved, mode_t mode, char *tmp, size_t len)
{
    if ((size_t)snprintf(tmp, len, "%s.tmp.%ld", resolved, (long)getpid()) >= len)
        return -2;
    unlink(tmp);
    return open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
}

/* Whether that temporary file can be made (created and removed at once):
 * access() answers for the permissions only, and as root not even those (a
 * file under /proc passed it, and the write failed after the whole
 * search). 0, or -1 with errno set. */
static int try_create_beside(const char *resolved)
{
    char tmp[PATH_MAX + 32];
    int fd = open_temp(resolved, 0600, tmp, sizeof tmp);
    if (fd == -2)
        errno = ENAMETOOLONG;
    if (fd < 0)
        return -1;
    close(fd);
    unlink(tmp);
    return 0;
}

int cli_output_prepare(export_target *t, const char *who, const char *flag, const char *path)
{
    memset(t, 0, sizeof *t);
    t->who = who;
    t->flag = flag;
    t->path = path;
    if (strcmp(path, "-") == 0) {
        t->kind = EXPORT_STDOUT;
        return 0;
    }
    if (!path[0])
        return fail(t, "an empty path names no file", 0);
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno != ENOENT)
            return fail(t, "cannot use it", errno);
        /* A new file, or the file a dangling link names: its directory
         * must take a new entry. */
        if (new_file_path(path, t->resolved, sizeof t->resolved) != 0)
            return fail(t, "the path is too long", 0);
        char copy[PATH_MAX];
        strcpy(copy, t->resolved);
        if (access(dirname(copy), W_OK | X_OK) != 0 || try_create_beside(t->resolved) != 0)
            return fail(t, "cannot create it", errno);
        t->kind = EXPORT_REPLACE;
        t->mode = 0644;
        return 0;
    }
    if (S_ISDIR(st.st_mode))
        return fail(t, "cannot write it", EISDIR);
    if (S_ISREG(st.st_mode) && !cli_stdout_closed && is_fd(&st, 1)) {
        t->kind = EXPORT_STDOUT;
        return 0;
    }
    if (S_ISREG(st.st_mode) && is_fd(&st, 2)) {
        t->kind = EXPORT_STDERR;
        return 0;
    }
    if (access(path, W_OK) != 0)
        return fail(t, "cannot write it", errno);
    if (!S_ISREG(st.st_mode)) {
        t->kind = EXPORT_IN_PLACE;
        return 0;
    }
    /* Replace the file a link names, not the link. */
    if (!realpath(path, t->resolved))
        return fail(t, "cannot resolve it", errno);
    char copy[PATH_MAX];
    strcpy(copy, t->resolved);
    if (access(dirname(copy), W_OK | X_OK) != 0 || try_create_beside(t->resolved) != 0)
        return fail(t, "cannot replace it (its directory is not writable)", errno);
    t->kind = EXPORT_REPLACE;
    t->mode = st.st_mode & 07777;
    return 0;
}

static int write_all(int fd, const char *text)
{
    size_t len = strlen(text);
    while (len > 0) {
        ssize_t n = write(fd, text, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        text += n;
        len -= (size_t)n;
    }
    return 0;
}

static int replace(const export_target *t, const char *text)
{
    char tmp[PATH_MAX + 32];
    int fd = open_temp(t->resolved, t->mode, tmp, sizeof tmp);
    if (fd == -2)
        return fail(t, "the path is too long", 0);
    if (fd < 0)
        return fail(t, "cannot write it", errno);
    int err = 0;
    if (write_all(fd, text) != 0 || fsync(fd) != 0)
        err = errno ? errno : EIO;
    if (close(fd) != 0 && !err)
        err = errno;
    if (!err && rename(tmp, t->resolved) != 0)
        err = errno;
    if (err) {
        unlink(tmp);
        return fail(t, "cannot write it", err);
    }
    return 0;
}

static int in_place(const export_target *t, const char *text, int interrupted)
{
    /* A FIFO waits for its reader, as a shell's redirection would; but once
     * batchfit has been told to stop, only a reader already there gets the
     * document, so a signal never leaves batchfit waiting. */
    int fd = open(t->path, O_WRONLY | O_NOCTTY | O_CLOEXEC | (interrupted ? O_NONBLOCK : 0));
    if (fd < 0)
        return fail(t, errno == ENXIO ? "no reader (not written)" : "cannot write it",
                    errno == ENXIO ? 0 : errno);
    if (interrupted)
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    int err = write_all(fd, text) != 0 ? errno : 0;
    if (close(fd) != 0 && !err)
        err = errno;
    return err ? fail(t, "cannot write it", err) : 0;
}

/* Where a target's file is: its directory's device and inode and its
 * name there (the file need not exist yet). 0, or -1 where it cannot be
 * told. */
static int place_of(const export_target *t, struct stat *dir, char *name, size_t len)
{
    char copy[PATH_MAX], copy2[PATH_MAX];
    const char *file = t->resolved[0] ? t->resolved : t->path;
    if ((size_t)snprintf(copy, sizeof copy, "%s", file) >= sizeof copy)
        return -1;
    strcpy(copy2, copy);
    if ((size_t)snprintf(name, len, "%s", basename(copy2)) >= len)
        return -1;
    return stat(dirname(copy), dir);
}

int cli_output_same(const export_target *a, const export_target *b)
{
    if (!a->path || !b->path)
        return 0;
    struct stat sa, sb;
    if (a->kind == EXPORT_STDOUT || b->kind == EXPORT_STDOUT) {
        /* "-" and a path to what stdout is (a pipe, a terminal:
         * /dev/stdout) are one output. */
        const export_target *other = a->kind == EXPORT_STDOUT ? b : a;
        return other->kind == EXPORT_STDOUT ||
               (!cli_stdout_closed && stat(other->path, &sa) == 0 && is_fd(&sa, 1));
    }
    if (stat(a->path, &sa) == 0 && stat(b->path, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char na[PATH_MAX], nb[PATH_MAX];
    return place_of(a, &sa, na, sizeof na) == 0 && place_of(b, &sb, nb, sizeof nb) == 0 &&
           sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino && strcmp(na, nb) == 0;
}

int cli_output_write(const export_target *t, const char *text, int interrupted)
{
    switch (t->kind) {
    case EXPORT_STDOUT:
        if (cli_stdout_closed)
            return fail(t, "cannot write to stdout", EBADF);
        if (fputs(text, stdout) == EOF || fflush(stdout) != 0)
            return fail(t, "cannot write to stdout", errno);
        return 0;
    case EXPORT_REPLACE:
        return replace(t, text);
    case EXPORT_IN_PLACE:
        return in_place(t, text, interrupted);
    case EXPORT_STDERR:
        if (fputs(text, stderr) == EOF || fflush(stderr) != 0)
            return fail(t, "cannot write to stderr", errno);
        return 0;
    }
    return -1;
}
