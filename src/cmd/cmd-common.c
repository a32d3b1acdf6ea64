#include "cmd/cmd.h"
#include "rules/config.h"
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/timeutil.h"
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
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

int cmd_usage_error(const struct cmd *c)
{
    fprintf(stderr, "Try 'gpudoctor %s --help'.\n", c->name);
    return EXIT_USAGE;
}

void cmd_collect_defaults(struct collect_opts *o, int64_t window_ms)
{
    memset(o, 0, sizeof(*o));
    o->root = "/";
    o->window_ms = window_ms;
    o->timeout_ms = DEFAULT_TIMEOUT_MS;
    o->nvml_lib = NULL;
}

static int duration(const char *cmd, const char *name, const char *arg, int64_t *out)
{
    if (!time_parse_duration_ms(arg, out)) {
        cmd_error(cmd, "--%s: '%s' is not a duration (examples: 2s, 500ms, 1.5, 1h30m, 7d)", name,
                  arg);
        return -1;
    }
    return 1;
}

static int parse_only(const char *cmd, struct collect_opts *o, const char *arg)
{
    char *list = xstrdup(arg), *save = NULL;

    o->only = 0;
    for (char *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
        size_t i;

        for (i = 0; i < COLLECTOR__COUNT; i++) {
            if (strcmp(collector_names[i], name) == 0)
                break;
        }
        if (i == COLLECTOR__COUNT) {
            char known[256];
            size_t len = 0;

            known[0] = '\0';
            for (i = 0; i < COLLECTOR__COUNT && len < sizeof(known); i++)
                len += (size_t)snprintf(known + len, sizeof(known) - len, "%s%s", i ? ", " : "",
                                        collector_names[i]);
            cmd_error(cmd, "--only: unknown collector '%s' (known: %s)", name, known);
            free(list);
            return -1;
        }
        o->only |= 1u << i;
    }
    free(list);
    if (o->only == 0) {
        cmd_error(cmd, "--only: no collector named");
        return -1;
    }
    return 1;
}

int cmd_collect_option(const char *cmd, struct collect_opts *o, int opt, const char *arg)
{
    switch (opt) {
    case OPT_ROOT:
        o->root = arg;
        return 1;
    case OPT_TIMEOUT:
        if (duration(cmd, "timeout", arg, &o->timeout_ms) < 0)
            return -1;
        if (o->timeout_ms < 100) {
            cmd_error(cmd, "--timeout: %s is too short (at least 100ms)", arg);
            return -1;
        }
        return 1;
    case OPT_WINDOW:
        if (duration(cmd, "window", arg, &o->window_ms) < 0)
            return -1;
        if (o->window_ms > 3600000) {
            cmd_error(cmd, "--window: %s is longer than an hour", arg);
            return -1;
        }
        return 1;
    case OPT_NVML_LIB:
        o->nvml_lib = arg;
        return 1;
    case OPT_ONLY:
        return parse_only(cmd, o, arg);
    }
    return 0;
}

int cmd_write_output(const char *cmd, const char *path, const char *text)
{
    char *cause = NULL;

    if (path == NULL || strcmp(path, "-") == 0) {
        if (fputs(text, stdout) == EOF) {
            cmd_error(cmd, "cannot write to standard output: %s", strerror(errno));
            return -1;
        }
        return cmd_finish_stdout(cmd);
    }
    if (file_write_atomic(path, text, strlen(text), &cause) != 0) {
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
    cmd_error(cmd, "cannot write to standard output: %s", strerror(err));
    return -1;
}

int cmd_load_config(const char *cmd, struct config *cfg, const char *path, char **sets,
                    size_t n_sets)
{
    char *cause = NULL;

    if (config_load(cfg, path ? path : config_default_path(), path == NULL, &cause) != 0)
        goto bad;
    for (size_t i = 0; i < n_sets; i++) {
        if (config_set(cfg, sets[i], &cause) != 0)
            goto bad;
    }
    return 0;
bad:
    cmd_error(cmd, "%s", cause);
    free(cause);
    return -1;
}
