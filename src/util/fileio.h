/* Bounded, descriptor-relative file reading, and atomic writes. */
#ifndef GPUDOCTOR_FILEIO_H
#define GPUDOCTOR_FILEIO_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Reads the whole of path, relative to dirfd, into buf and NUL-terminates it.
 * Returns the length, -EFBIG when the file does not fit in size - 1 bytes, or -errno.
 * Works on /proc and /sys files, whose st_size is meaningless.
 */
ssize_t file_read_at(int dirfd, const char *path, char *buf, size_t size);

/*
 * Opens the directory path, relative to dirfd, for readdir(); NULL with errno set when it cannot
 * (ENOENT: there is none). The caller closes it with closedir().
 */
DIR *dir_open_at(int dirfd, const char *path);

/* Like file_read_at, but allocates: at most max bytes; *out is the caller's to free. */
ssize_t file_slurp_at(int dirfd, const char *path, size_t max, char **out);

/*
 * Like file_slurp_at, for a file that must be text (a configuration, a snapshot): at most max
 * bytes, NUL bytes counted, and the reading stops at the first NUL byte, so that /dev/zero ends at
 * once. Returns the length, -EFBIG, -errno, or -EILSEQ for a NUL: then *out holds the text before
 * it (NUL-terminated, the caller frees it) and the NUL's offset is its length.
 */
ssize_t file_slurp_text_at(int dirfd, const char *path, size_t max, char **out);

/* file_slurp_text_at of a descriptor the caller opened (and judged with fstat); closes it. */
ssize_t file_slurp_text_fd(int fd, size_t max, char **out);

/* How file_open_regular_at judges what it opened, beyond "a regular file". */
enum file_open_flags {
    /* A symbolic link at the name is refused (-ELOOP), never followed: in a directory that only
     * its owner can write (the state directory), a link's planter would choose what is read. */
    FILE_OPEN_NOFOLLOW = 1u << 0,
    /* Only the caller's (effective uid) or root's file; another user's is refused (-EPERM). */
    FILE_OPEN_OWN = 1u << 1,
};

/*
 * Opens path, relative to dirfd, to read a file that must be a regular file (a snapshot in a
 * directory others can write to, a log, the state file): non-blocking, so that a FIFO put in its
 * place, even after the caller looked at the name, cannot stall the open until someone writes to
 * it; then judged by what was opened (fstat on the descriptor, not the name), as flags (enum
 * file_open_flags, or 0) say. Returns a blocking, close-on-exec descriptor, or -errno: -EISDIR for
 * a directory, -EINVAL for anything else that is not a regular file (a FIFO, a device, a socket),
 * -ELOOP and -EPERM as the flags say, or the open's own error (-ENOENT: there is none).
 */
int file_open_regular_at(int dirfd, const char *path, unsigned flags);

/* What a file_open_regular_at error (or a reader's built on it) means, in words, without the
 * path: "a symbolic link, not followed", "not a regular file", ...; the caller frees it. */
char *file_open_regular_why(int err);

/*
 * Like file_slurp_text_at, for a file in a directory that only its owner can write (the state
 * directory): opened by file_open_regular_at with FILE_OPEN_NOFOLLOW | FILE_OPEN_OWN, so never
 * through a symbolic link (-ELOOP), only a regular file (-EINVAL; -EISDIR for a directory; a FIFO
 * is refused, never waited on), and only the caller's or root's (-EPERM).
 */
ssize_t file_slurp_own_text_at(int dirfd, const char *name, size_t max, char **out);

/*
 * The end of a regular file (a log): its last max bytes, NUL-terminated, from the start of a line
 * (a first line cut by the bound is dropped). Opened by file_open_regular_at (links followed), so
 * that a FIFO or a device in a log's place cannot stall the reader. Returns the length kept, or
 * its -errno; *out is the caller's to free.
 */
ssize_t file_tail_at(int dirfd, const char *path, size_t max, char **out);

/* Reads a symbolic link relative to dirfd into buf, NUL-terminated. Returns length or -errno. */
ssize_t file_readlink_at(int dirfd, const char *path, char *buf, size_t size);

/*
 * Writes len bytes to name in the directory dirfd (opened O_RDONLY, so that it can be synced)
 * atomically: a new temporary file beside it (O_EXCL, never through a link, mode 0600), fsync,
 * then mode, renameat over whatever name is there (a link or a FIFO is replaced itself, nothing
 * it names is opened), and the directory synced. A failed write leaves the old file intact and
 * no temporary file. shown names the file in messages. Returns 0, or -1 with *cause set (caller
 * frees).
 */
int file_write_atomic_at(int dirfd, const char *name, const char *shown, const char *data,
                         size_t len, mode_t mode, char **cause);

/*
 * Removes the temporary files file_write_atomic_at made for name in the directory dirfd and left
 * behind (it was killed, or the power failed, between the create and the rename):
 * NAME.tmp.XXXXXX, regular files of the caller's (effective uid) not modified for max_age_ms or
 * more; a younger one may be another writer's, mid-write. Nothing else is touched, nothing is
 * followed. Returns how many went.
 */
int file_remove_stale_temps_at(int dirfd, const char *name, int64_t max_age_ms);

/*
 * Writes len bytes to path atomically (a temporary file in the same directory, fsync, rename),
 * so a reader never sees a partial file, and a failed write leaves no file and the old one
 * intact; the new file has mode mode. A symbolic link is followed (the file it names is replaced)
 * only when the caller or root owns it; another user's link is refused. What is at path is judged
 * once, relative to its directory, and a followed link's target is read from the link judged: a
 * link swapped in after the look is replaced by the rename, never followed. A device, FIFO or
 * socket
 * (/dev/stdout, /dev/full) is written in place: it cannot be replaced. Returns 0, or -1 with
 * *cause set (caller frees).
 */
int file_write_atomic(const char *path, const char *data, size_t len, mode_t mode, char **cause);
/*
 * The same, for a file that must be a regular file at path itself (a metrics file others read, in
 * a directory such as node_exporter's textfile one): whatever is at path, a symbolic link, a
 * FIFO or a device, is replaced by the rename, never opened or followed (opening a FIFO blocks
 * until someone reads it; following a link would have root replace, and make 0644, the file it
 * names). The directory part of path is the caller's, and is followed.
 */
int file_replace_atomic(const char *path, const char *data, size_t len, mode_t mode, char **cause);

/*
 * Opens path to write a file that may hold what other users must not read (a watch recording
 * holds every user's command lines), without being turned against the one who runs it (root):
 *  - a new file is created (never through a symbolic link) with mode 0600, or the umask's
 *    stricter value;
 *  - an existing regular file is truncated only when it is the caller's (effective uid) and has
 *    one link, and its mode is narrowed to at most 0600;
 *  - a character device (/dev/null, /dev/full: only root makes them) is written in place, and
 *    so is a FIFO of the caller's that a reader has open;
 *  - anything else is refused: a symbolic link (it could point anywhere), another user's file
 *    or FIFO, a file with other names (hard links), a FIFO nobody reads, a directory, a block
 *    device, a socket.
 * Returns a descriptor (blocking, close-on-exec), or -1 with *why set to the reason, without the
 * path (the caller frees it).
 */
int file_open_private(const char *path, char **why);

/*
 * Fills standard input, output and error with /dev/null (read-only) where they are closed, so
 * that the next file opened does not become one of them: output meant for a closed standard
 * output would go into it. Writes to a filled one fail with EBADF, as they would have.
 */
void file_reserve_std_fds(void);

/* The root of the tree collectors read: "/" on a live system, a fixture directory in tests. */
struct sysroot {
    int fd;     /* O_PATH directory descriptor */
    char *path; /* as given, for messages */
};

int sysroot_open(struct sysroot *root, const char *path, char **cause);
void sysroot_close(struct sysroot *root);
/* Returns path without its leading slashes, for use with the *at() calls on root->fd. */
const char *sysroot_rel(const char *path);

#endif
