/*
 * The action log: every signal reap sends, and every target it does not signal at the last
 * moment, one line each to syslog (facility authpriv, as other tools that act for root do) and to
 * stderr. Key=value pairs, so that a log search finds them: who ran it, the target's pid and start
 * time (its identity), its user and command, the signal and what came of it.
 */
#include "reap/reap.h"
#include "util/strutil.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

static const char *signal_name(int sig)
{
    switch (sig) {
    case 0:
        return "none";
    case SIGTERM:
        return "SIGTERM";
    case SIGKILL:
        return "SIGKILL";
    case SIGCONT:
        return "SIGCONT";
    default:
        return "other";
    }
}

/* Text made safe for one log line inside double quotes: printable, quotes and backslashes escaped.
 */
static char *quoted(const char *s)
{
    char *safe = str_printable(s ? s : ""), *out = xmalloc(strlen(safe) * 2 + 1), *o = out;

    for (const char *p = safe; *p; p++) {
        if (*p == '"' || *p == '\\')
            *o++ = '\\';
        *o++ = *p;
    }
    *o = '\0';
    free(safe);
    return out;
}

void reap_log(const struct reap_target *t, int signal, const char *result, bool failed,
              bool to_stderr)
{
    char by[64], started[40];
    struct passwd pw, *found = NULL;
    char pwbuf[4096];
    char *cmd = quoted(t->command), *res = quoted(result), *user = quoted(t->user), *line;

    if (getpwuid_r(getuid(), &pw, pwbuf, sizeof(pwbuf), &found) == 0 && found)
        snprintf(by, sizeof(by), "%s", found->pw_name);
    else
        snprintf(by, sizeof(by), "uid %u", (unsigned)getuid());
    if (t->start_time_ms >= 0)
        time_format_iso(t->start_time_ms, started, sizeof(started));
    else
        snprintf(started, sizeof(started), "?");
    line = xasprintf("by=%s pid=%d start_ticks=%" PRIu64 " started=%s user=\"%s\" command=\"%s\" "
                     "signal=%s result=\"%s\"",
                     by, (int)t->pid, t->start_ticks, started, user, cmd, signal_name(signal), res);
    /* openlog is cheap and idempotent: no state of our own to keep. */
    openlog("gpudoctor", LOG_PID, LOG_AUTHPRIV);
    syslog(LOG_AUTHPRIV | (failed ? LOG_WARNING : LOG_NOTICE), "reap: %s", line);
    if (to_stderr)
        fprintf(stderr, "gpudoctor reap: %s\n", line);
    free(line);
    free(cmd);
    free(res);
    free(user);
}
