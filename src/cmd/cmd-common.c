#include "cmd/cmd.h"
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void cmd_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "gpudoctor %s: ", cmd);
    va_start(ap, fmt);
    vfprintf(stderr, _(fmt), ap);
    va_end(ap);
    fputc('\n', stderr);
}

int cmd_usage_error(const struct cmd *c)
{
    fprintf(stderr, _("Try 'gpudoctor %s --help'.\n"), c->name);
    return EXIT_USAGE;
}

int cmd_write_output(const char *cmd, const char *path, const char *text)
{
    char *cause = NULL;

    if (path == NULL || strcmp(path, "-") == 0) {
        fputs(text, stdout); /* a failure stays in stdout's error flag, said below */
        return cmd_finish_stdout(cmd);
    }
    /* Snapshots and reports hold every user's command lines: readable by the owner only. */
    if (file_write_atomic(path, text, strlen(text), 0600, &cause) != 0) {
        cmd_error(cmd, "%s", cause);
        free(cause);
        return -1;
    }
    return 0;
}

int cmd_check_output(const char *cmd, const char *path)
{
    struct stat st;
    char *dir;
    const char *slash;
    int err;

    if (path == NULL || strcmp(path, "-") == 0)
        return 0;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        cmd_error(cmd, "%s is a directory: give a file name", path);
        return EXIT_USAGE;
    }
    slash = strrchr(path, '/');
    dir = slash == NULL   ? xstrdup(".")
          : slash == path ? xstrdup("/")
                          : xstrndup(path, (size_t)(slash - path));
    err = stat(dir, &st) != 0 ? errno : !S_ISDIR(st.st_mode) ? ENOTDIR : 0;
    /* A new file, or one to replace, is written beside its name and renamed over it: the
     * directory must take a new name (no permission, a read-only file system). Not a device, a
     * FIFO or a link, which cmd_write_output writes in place or follows (/dev/null, /dev/stdout
     * in /dev, not the user's to write). */
    if (err == 0 && (lstat(path, &st) != 0 || S_ISREG(st.st_mode)) &&
        faccessat(AT_FDCWD, dir, W_OK | X_OK, AT_EACCESS) != 0)
        err = errno;
    free(dir);
    if (err != 0) {
        cmd_error(cmd, "cannot write %s: %s", path, strerror(err));
        return EXIT_UNKNOWN;
    }
    return 0;
}

int cmd_finish_stdout(const char *cmd)
{
    int before = errno, err;
    struct stat st;

    errno = 0;
    if (fflush(stdout) != 0) {
        err = errno;
    } else if (!ferror(stdout)) {
        return 0;
    } else if (write(STDOUT_FILENO, "", 0) < 0) {
        /* An earlier write failed, nothing was left to flush: an empty write still fails on a
         * bad descriptor or a full device. */
        err = errno;
    } else if (fstat(STDOUT_FILENO, &st) == 0 && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
        err = EPIPE; /* the only way a blocking write to a pipe fails, with SIGPIPE ignored */
    } else {
        err = before != 0 ? before : EIO;
    }
    if (err == EPIPE)
        return 0; /* the reader went away (`| head`): a normal end, nothing to say */
    cmd_error(cmd, "cannot write to standard output: %s", strerror(err));
    return -1;
}

int cmd_reported_option(void *ctx, int key, char *arg)
{
    struct cmd_reported *r = ctx;

    (void)key;
    if (arg[0] == '\0') {
        cmd_error(r->cmd, "--error needs the text of the error");
        return EXIT_USAGE;
    }
    if (r->n >= REPORTED_ERRORS_MAX) {
        cmd_error(r->cmd, "at most %d --error texts", REPORTED_ERRORS_MAX);
        return EXIT_USAGE;
    }
    r->texts = xreallocarray(r->texts, r->n + 1, sizeof(*r->texts));
    r->texts[r->n++] = arg;
    return 0;
}

void cmd_reported_apply(const struct cmd_reported *r, struct snapshot *s)
{
    collect_reported_recognise(s);
    for (size_t i = 0; i < r->n; i++) {
        if (collect_reported_add(s, r->texts[i]) != 0)
            break; /* the snapshot already held the most: its own come first */
    }
}

void cmd_reported_free(struct cmd_reported *r)
{
    free(r->texts);
    r->texts = NULL;
    r->n = 0;
}
