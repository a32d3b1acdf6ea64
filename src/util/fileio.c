#include "util/fileio.h"
#include "util/i18n.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <linux/magic.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

static ssize_t read_fd_into(int fd, char *buf, size_t size)
{
    size_t len = 0;

    for (;;) {
        ssize_t n;

        if (len + 1 >= size) {
            char probe;

            /* Full: one more byte tells "exactly fits" from "too big". */
            n = read(fd, &probe, 1);
            if (n == 0)
                break;
            if (n < 0 && errno == EINTR)
                continue;
            return n < 0 ? -errno : -EFBIG;
        }
        n = read(fd, buf + len, size - 1 - len);
        if (n == 0)
            break;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        len += (size_t)n;
    }
    buf[len] = '\0';
    return (ssize_t)len;
}

DIR *dir_open_at(int dirfd, const char *path)
{
    int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d;

    if (fd < 0)
        return NULL;
    d = fdopendir(fd);
    if (d == NULL) {
        int e = errno;

        close(fd);
        errno = e;
    }
    return d;
}

ssize_t file_read_at(int dirfd, const char *path, char *buf, size_t size)
{
    ssize_t r;
    int fd;

    if (size == 0)
        return -EINVAL;
    fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return -errno;
    r = read_fd_into(fd, buf, size);
    close(fd);
    return r;
}

/* The reader of file_slurp_at and file_slurp_text_at, from an open fd (closed here); text: stop
 * at a NUL (-EILSEQ). */
static ssize_t slurp_fd(int fd, size_t max, bool text, char **out)
{
    size_t cap = 4096;
    size_t len = 0;
    ssize_t rc = 0;
    char *buf;

    buf = xmalloc(cap);
    for (;;) {
        ssize_t n;

        if (len + 1 >= cap) {
            if (cap > max) {
                rc = -EFBIG;
                goto fail;
            }
            cap *= 2;
            buf = xrealloc(buf, cap);
        }
        n = read(fd, buf + len, cap - 1 - len);
        if (n == 0)
            break;
        if (n < 0) {
            if (errno == EINTR)
                continue;
            rc = -errno;
            goto fail;
        }
        if (text) {
            const char *nul = memchr(buf + len, '\0', (size_t)n);

            if (nul != NULL) {
                len = (size_t)(nul - buf);
                rc = -EILSEQ;
                break;
            }
        }
        len += (size_t)n;
        if (len > max) {
            rc = -EFBIG;
            goto fail;
        }
    }
    close(fd);
    buf[len] = '\0';
    *out = buf;
    return rc == -EILSEQ ? rc : (ssize_t)len;
fail:
    free(buf);
    close(fd);
    return rc;
}

static ssize_t slurp(int dirfd, const char *path, size_t max, bool text, char **out)
{
    int fd;

    *out = NULL;
    fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return -errno;
    return slurp_fd(fd, max, text, out);
}

ssize_t file_slurp_at(int dirfd, const char *path, size_t max, char **out)
{
    return slurp(dirfd, path, max, false, out);
}

ssize_t file_slurp_text_at(int dirfd, const char *path, size_t max, char **out)
{
    return slurp(dirfd, path, max, true, out);
}

int file_open_regular_at(int dirfd, const char *path, unsigned flags)
{
    int oflags = O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
    struct stat st;
    int fd, rc;

    /* Judged by what was opened, not by a name that could change between a look and the open;
     * non-blocking, so that a FIFO is refused at once instead of waited on. */
    if (flags & FILE_OPEN_NOFOLLOW)
        oflags |= O_NOFOLLOW;
    fd = openat(dirfd, path, oflags);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) != 0) {
        rc = -errno;
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
        goto fail;
    }
    if ((flags & FILE_OPEN_OWN) && st.st_uid != geteuid() && st.st_uid != 0) {
        rc = -EPERM;
        goto fail;
    }
    /* A regular file never blocks; blocking is what a reader of any descriptor expects. */
    if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
        rc = -errno;
        goto fail;
    }
    return fd;
fail:
    close(fd);
    return rc;
}

char *file_open_regular_why(int err)
{
    switch (err) {
    case -ELOOP:
        return xstrdup("a symbolic link, not followed");
    case -EINVAL:
    case -EISDIR:
        return xstrdup("not a regular file");
    case -EPERM:
        return xasprintf("not the file of uid %u who runs this, nor root's", (unsigned)geteuid());
    default:
        return xstrdup(strerror(-err));
    }
}

ssize_t file_slurp_text_fd(int fd, size_t max, char **out)
{
    *out = NULL;
    return slurp_fd(fd, max, true, out);
}

ssize_t file_slurp_own_text_at(int dirfd, const char *name, size_t max, char **out)
{
    int fd = file_open_regular_at(dirfd, name, FILE_OPEN_NOFOLLOW | FILE_OPEN_OWN);

    *out = NULL;
    if (fd < 0)
        return fd;
    return slurp_fd(fd, max, true, out);
}

ssize_t file_tail_at(int dirfd, const char *path, size_t max, char **out)
{
    struct stat st;
    char *buf = NULL;
    size_t want, len = 0;
    ssize_t rc;
    off_t off;
    int fd;

    *out = NULL;
    fd = file_open_regular_at(dirfd, path, 0);
    if (fd < 0)
        return fd;
    if (fstat(fd, &st) != 0) {
        rc = -errno;
        goto out;
    }
    off = st.st_size > (off_t)max ? st.st_size - (off_t)max : 0;
    want = (size_t)(st.st_size - off);
    buf = xmalloc(want + 1);
    while (len < want) {
        ssize_t n = pread(fd, buf + len, want - len, off + (off_t)len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            free(buf);
            buf = NULL;
            goto out;
        }
        if (n == 0)
            break; /* shrunk since fstat (rotated): keep what was read */
        len += (size_t)n;
    }
    buf[len] = '\0';
    if (off > 0) {
        /* Started mid-line: the first line is a fragment. */
        char *nl = memchr(buf, '\n', len);
        size_t skip = nl ? (size_t)(nl + 1 - buf) : len;

        memmove(buf, buf + skip, len - skip + 1);
        len -= skip;
    }
    *out = buf;
    rc = (ssize_t)len;
out:
    close(fd);
    return rc;
}

ssize_t file_readlink_at(int dirfd, const char *path, char *buf, size_t size)
{
    ssize_t n;

    if (size == 0)
        return -EINVAL;
    n = readlinkat(dirfd, path, buf, size - 1);
    if (n < 0)
        return -errno;
    buf[n] = '\0';
    return n;
}

/* Writes all of data to fd; returns 0 or -errno. */
static int write_all(int fd, const char *data, size_t len)
{
    size_t off = 0;

    while (off < len) {
        ssize_t n = write(fd, data + off, len - off);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        off += (size_t)n;
    }
    return 0;
}

static int write_fd(int fd, const char *shown, const char *data, size_t len, char **cause);

/* A device, FIFO or socket cannot be replaced by a rename (as root, /dev/full would become a
 * regular file): it is written in place. name in dirfd is opened without following a link, and
 * used only when it is still what was seen (seen): not another file swapped in. */
static int write_special_at(int dirfd, const char *name, const struct stat *seen, const char *shown,
                            const char *data, size_t len, char **cause)
{
    int fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
    struct stat st;

    if (fd < 0) {
        *cause = xasprintf(_("cannot open %s: %s"), shown, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0 || st.st_dev != seen->st_dev || st.st_ino != seen->st_ino) {
        *cause = xasprintf(_("cannot open %s: %s"), shown, strerror(ESTALE));
        close(fd);
        return -1;
    }
    return write_fd(fd, shown, data, len, cause);
}

/* Writes all of data to fd and closes it; 0, or -1 with *cause naming shown. */
static int write_fd(int fd, const char *shown, const char *data, size_t len, char **cause)
{
    int err = write_all(fd, data, len);

    if (close(fd) != 0 && err == 0)
        err = -errno;
    if (err != 0) {
        *cause = xasprintf(_("cannot write %s: %s"), shown, strerror(-err));
        return -1;
    }
    return 0;
}

/* Blocks the signals that end the program (Ctrl-C, a service stop) until *old is restored: a
 * temporary file is then always renamed or removed, never left as a partial file beside the
 * output. */
static void block_stops(sigset_t *old)
{
    sigset_t stop;

    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGHUP);
    sigaddset(&stop, SIGQUIT);
    pthread_sigmask(SIG_BLOCK, &stop, old);
}

/* The temporary files' suffix: NAME.tmp. and TEMP_RANDOM of these. */
static const char temp_chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
#define TEMP_RANDOM 6

/* Creates a new temporary file NAME.tmp.XXXXXX in dirfd (never through a link, never an
 * existing file), mode 0600; its name into tmp. A descriptor, or -errno. */
static int create_temp_at(int dirfd, const char *name, char **tmp)
{
    const char *chars = temp_chars;
    static unsigned counter;
    int err = EEXIST;

    for (int tries = 0; tries < 100 && err == EEXIST; tries++) {
        unsigned char rnd[TEMP_RANDOM];
        char suffix[sizeof(rnd) + 1];
        int fd;

        if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd)) {
            /* No entropy yet (early boot): unpredictable enough, O_EXCL keeps it safe. */
            uint64_t v = (uint64_t)time_real_ms() ^ ((uint64_t)getpid() << 20) ^ counter++;

            for (size_t i = 0; i < sizeof(rnd); i++, v >>= 8)
                rnd[i] = (unsigned char)v;
        }
        for (size_t i = 0; i < sizeof(rnd); i++)
            suffix[i] = chars[rnd[i] % (sizeof(temp_chars) - 1)];
        suffix[sizeof(rnd)] = '\0';
        *tmp = xasprintf("%s.tmp.%s", name, suffix);
        fd = openat(dirfd, *tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY,
                    0600);
        if (fd >= 0)
            return fd;
        err = errno;
        free(*tmp);
        *tmp = NULL;
    }
    return -err;
}

int file_write_atomic_at(int dirfd, const char *name, const char *shown, const char *data,
                         size_t len, mode_t mode, char **cause)
{
    char *tmp = NULL;
    sigset_t old;
    int fd, err, rc = -1;

    block_stops(&old);
    fd = create_temp_at(dirfd, name, &tmp);
    if (fd < 0) {
        *cause = xasprintf(_("cannot create a file beside %s: %s"), shown, strerror(-fd));
        goto out;
    }
    err = write_all(fd, data, len);
    if (err == 0 && (fchmod(fd, mode) != 0 || fsync(fd) != 0))
        err = -errno;
    if (close(fd) != 0 && err == 0)
        err = -errno;
    if (err != 0) {
        *cause = xasprintf(_("cannot write %s: %s"), shown, strerror(-err));
        unlinkat(dirfd, tmp, 0);
        goto out;
    }
    /* Whatever name is there (a link, a FIFO) is replaced; nothing it names is touched. */
    if (renameat(dirfd, tmp, dirfd, name) != 0) {
        *cause = xasprintf(_("cannot rename %s to %s: %s"), tmp, shown, strerror(errno));
        unlinkat(dirfd, tmp, 0);
        goto out;
    }
    /* The new name survives a power failure; a directory that cannot be synced (some file
     * systems say EINVAL) still holds the file. */
    (void)fsync(dirfd);
    rc = 0;
out:
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    free(tmp);
    return rc;
}

/* Whether entry is a temporary file create_temp_at makes for name. */
static bool is_temp_of(const char *entry, const char *name)
{
    size_t n = strlen(name);

    if (strncmp(entry, name, n) != 0 || strncmp(entry + n, ".tmp.", 5) != 0)
        return false;
    entry += n + 5;
    return strlen(entry) == TEMP_RANDOM && strspn(entry, temp_chars) == TEMP_RANDOM;
}

int file_remove_stale_temps_at(int dirfd, const char *name, int64_t max_age_ms)
{
    int fd = dup(dirfd), removed = 0;
    int64_t now_ms = time_real_ms();
    struct dirent *e;
    DIR *d;

    if (fd < 0)
        return 0;
    d = fdopendir(fd);
    if (d == NULL) {
        close(fd);
        return 0;
    }
    rewinddir(d); /* the descriptor's offset is shared with dirfd's */
    while ((e = readdir(d)) != NULL) {
        struct stat st;
        int64_t mtime_ms;

        if (!is_temp_of(e->d_name, name) ||
            fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
            st.st_uid != geteuid())
            continue;
        mtime_ms = (int64_t)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
        if (now_ms - mtime_ms >= max_age_ms && unlinkat(dirfd, e->d_name, 0) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}

#define WRITE_MAX_LINKS 8 /* links followed one after another, as a path lookup would */

static int write_atomic(const char *path, const char *data, size_t len, mode_t mode, int links,
                        char **cause);

/*
 * The link name in dirfd (in directory dir), met at path: followed only when it is the caller's
 * or root's (/dev/stdout is root's): one that another user planted in a shared directory such as
 * /tmp must not make root replace or write into what it names (/etc/shadow, a disk). What it
 * names is read from the link that was judged (its descriptor), not from the name again, which
 * another link could have taken by then. A link to a file: the file is replaced, the link kept;
 * a link to a device or a FIFO: written there; a link to nothing is replaced itself.
 */
static int write_link_at(int dirfd, const char *dir, const char *name, const char *path,
                         const char *data, size_t len, mode_t mode, int links, char **cause)
{
    char target[4096], *next = NULL;
    struct statfs fs;
    struct stat st;
    ssize_t n;
    int lfd, rc;

    lfd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (lfd < 0 || fstat(lfd, &st) != 0) {
        *cause = xasprintf(_("cannot open %s: %s"), path, strerror(errno));
        if (lfd >= 0)
            close(lfd);
        return -1;
    }
    if (!S_ISLNK(st.st_mode)) { /* a link no more: whatever is there is replaced */
        close(lfd);
        return file_write_atomic_at(dirfd, name, path, data, len, mode, cause);
    }
    if (st.st_uid != geteuid() && st.st_uid != 0) {
        *cause = xasprintf(_("%s is a symbolic link of uid %u, not of uid %u who runs this: not "
                             "followed (give the file itself, or remove the link)"),
                           path, (unsigned)st.st_uid, (unsigned)geteuid());
        close(lfd);
        return -1;
    }
    n = readlinkat(lfd, "", target, sizeof(target) - 1);
    close(lfd);
    if (n < 0 || links >= WRITE_MAX_LINKS) {
        *cause = xasprintf(_("cannot open %s: %s"), path, strerror(n < 0 ? errno : ELOOP));
        return -1;
    }
    target[n] = '\0';
    /* /proc/self/fd/N (the end of /dev/stdout) is this process's own descriptor, which nobody
     * else can change; a pipe's or a socket's names no file ("pipe:[12]"): written through. */
    if (target[0] != '/' && fstatfs(dirfd, &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC) {
        int fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
            *cause = xasprintf(_("cannot open %s: %s"), path, strerror(errno));
            return -1;
        }
        return write_fd(fd, path, data, len, cause);
    }
    next = target[0] == '/' ? xstrdup(target) : xasprintf("%s/%s", dir, target);
    if (stat(next, &st) != 0)
        rc = file_write_atomic_at(dirfd, name, path, data, len, mode, cause);
    else
        rc = write_atomic(next, data, len, mode, links + 1, cause);
    free(next);
    return rc;
}

/* path's directory (caller frees) and, in *name, its last component (within path). */
static char *dir_of(const char *path, const char **name)
{
    const char *slash = strrchr(path, '/');

    *name = slash ? slash + 1 : path;
    return slash == NULL   ? xstrdup(".")
           : slash == path ? xstrdup("/")
                           : xstrndup(path, (size_t)(slash - path));
}

/*
 * The directory of path, opened (its name in *dir, freed by the caller; the last part of path in
 * *name), or -1 with *cause set when it cannot be opened or path names no file in it.
 */
static int dir_fd_of(const char *path, char **dir, const char **name, char **cause)
{
    int dfd;

    *dir = dir_of(path, name);
    dfd = open(*dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || **name == '\0') {
        *cause = xasprintf(_("cannot create a file beside %s: %s"), path,
                           strerror(dfd < 0 ? errno : EISDIR));
        if (dfd >= 0)
            close(dfd);
        return -1;
    }
    return dfd;
}

/*
 * Writes path as file_write_atomic says, judging what is at path once,
 * relative to its directory: a name that changes after the look (a link swapped in) is replaced
 * by the rename, never followed.
 */
static int write_atomic(const char *path, const char *data, size_t len, mode_t mode, int links,
                        char **cause)
{
    const char *name;
    char *dir;
    struct stat st;
    int dfd = dir_fd_of(path, &dir, &name, cause), rc;

    if (dfd < 0) {
        rc = -1;
    } else if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
        rc = file_write_atomic_at(dfd, name, path, data, len, mode, cause);
    } else if (S_ISLNK(st.st_mode)) {
        rc = write_link_at(dfd, dir, name, path, data, len, mode, links, cause);
    } else if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        rc = write_special_at(dfd, name, &st, path, data, len, cause);
    } else {
        rc = file_write_atomic_at(dfd, name, path, data, len, mode, cause);
    }
    if (dfd >= 0)
        close(dfd);
    free(dir);
    return rc;
}

int file_write_atomic(const char *path, const char *data, size_t len, mode_t mode, char **cause)
{
    return write_atomic(path, data, len, mode, 0, cause);
}

int file_replace_atomic(const char *path, const char *data, size_t len, mode_t mode, char **cause)
{
    const char *name;
    char *dir;
    int dfd = dir_fd_of(path, &dir, &name, cause), rc;

    rc = dfd < 0 ? -1 : file_write_atomic_at(dfd, name, path, data, len, mode, cause);
    if (dfd >= 0)
        close(dfd);
    free(dir);
    return rc;
}

/* Why an existing file of this kind, with this owner, is refused; NULL when it is not. */
static char *refusal(const struct stat *st)
{
    if (S_ISCHR(st->st_mode))
        return NULL;
    if (!S_ISREG(st->st_mode) && !S_ISFIFO(st->st_mode))
        return xstrdup(S_ISDIR(st->st_mode)   ? _("is a directory")
                       : S_ISBLK(st->st_mode) ? _("is a block device, not a file")
                                              : _("is not a regular file"));
    if (st->st_uid != geteuid())
        return xasprintf(_("belongs to uid %u, not to uid %u who runs this: remove it first, or "
                           "give a new file"),
                         (unsigned)st->st_uid, (unsigned)geteuid());
    if (S_ISREG(st->st_mode) && st->st_nlink != 1)
        return xasprintf(_("has %ju names (hard links): one could be a file that must not be "
                           "overwritten; give a new file"),
                         (uintmax_t)st->st_nlink);
    return NULL;
}

int file_open_private(const char *path, char **why)
{
    const int flags = O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW;
    struct stat st;
    int fd;

    fd = open(path, flags | O_CREAT | O_EXCL, 0600);
    if (fd >= 0)
        return fd;
    if (errno != EEXIST) {
        *why = xstrdup(strerror(errno));
        return -1;
    }
    /* It exists: open what is there without following a link or waiting for a FIFO's reader,
     * then judge what was opened (not a name that could change in between). */
    fd = open(path, flags | O_NONBLOCK);
    if (fd < 0) {
        int e = errno;

        if (e == ELOOP)
            *why = xstrdup(_("is a symbolic link: give the file itself (a link could point "
                             "anywhere)"));
        else if (e == ENXIO)
            *why = xstrdup(_("is a FIFO that nobody reads"));
        else
            *why = xstrdup(strerror(e));
        return -1;
    }
    if (fstat(fd, &st) != 0) {
        *why = xstrdup(strerror(errno));
        close(fd);
        return -1;
    }
    *why = refusal(&st);
    if (*why == NULL && S_ISREG(st.st_mode) &&
        (ftruncate(fd, 0) != 0 || ((st.st_mode & 077) != 0 && fchmod(fd, st.st_mode & 0600) != 0)))
        *why = xstrdup(strerror(errno));
    if (*why == NULL && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
        *why = xstrdup(strerror(errno));
    if (*why != NULL) {
        close(fd);
        return -1;
    }
    return fd;
}

void file_reserve_std_fds(void)
{
    /* In order: each open takes the lowest free descriptor, the one found closed. */
    for (int fd = 0; fd <= 2; fd++) {
        /* Read-only: a write to it still fails (EBADF), as it would on the closed descriptor. */
        if (fcntl(fd, F_GETFD) < 0 && errno == EBADF && open("/dev/null", O_RDONLY) < 0)
            return; /* nothing to fill them with: carry on as before */
    }
}

int sysroot_open(struct sysroot *root, const char *path, char **cause)
{
    root->fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root->fd < 0) {
        *cause = xasprintf(_("cannot open root directory %s: %s"), path, strerror(errno));
        root->path = NULL;
        return -1;
    }
    root->path = xstrdup(path);
    return 0;
}

void sysroot_close(struct sysroot *root)
{
    if (root->fd >= 0)
        close(root->fd);
    root->fd = -1;
    free(root->path);
    root->path = NULL;
}

const char *sysroot_rel(const char *path)
{
    while (*path == '/')
        path++;
    return *path ? path : ".";
}
