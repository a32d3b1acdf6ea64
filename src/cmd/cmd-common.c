#include "cmd/cmd.h"
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <errno.h>
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
