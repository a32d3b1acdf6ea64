#include "rules/config.h"
#include "rules/suggest.h"
#include "util/fileio.h"
#include "util/i18n.h"
#include "util/strutil.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DISABLE_KEY     "disable"
#define SLURM_DRAIN_KEY "slurm_drain"
#define PROFILE_SECTION "profile"
#define STATE_DIR_KEY   "state_dir"
#define SLURM_BENCH_KEY "slurm_bench"
#define SLURM_BENCH_AGE "slurm_bench_max_age"
/* What an error message quotes of a line at most: a key, a value, a whole line. */
#define QUOTE_MAX 60
/* A UTF-8 byte-order mark, which some editors put at the start of a file. */
#define UTF8_BOM "\xef\xbb\xbf"

void config_init(struct config *c)
{
    memset(c, 0, sizeof(*c));
    thresholds_init(&c->rules.th);
    c->slurm_bench_max_age_ms = CONFIG_SLURM_BENCH_MAX_AGE_MS;
}

void config_free(struct config *c)
{
    free(c->rules.disabled);
    free(c->slurm_drain.rules);
    profile_free(c->profile);
    free(c->path);
    free(c->state_dir);
    for (size_t i = 0; i < c->n_origins; i++)
        free(c->origins[i]);
    free(c->origins);
    memset(c, 0, sizeof(*c));
}

const char *config_default_path(void)
{
    const char *env = getenv(CONFIG_ENV);

    return env && *env ? env : CONFIG_DEFAULT_PATH;
}

static const char *keep_origin(struct config *c, char *origin)
{
    xgrow(&c->origins, &c->cap_origins, c->n_origins + 1, sizeof(*c->origins));
    c->origins[c->n_origins++] = origin;
    return origin;
}

size_t config_suggest(const char *key, const char **out, size_t max)
{
    const char *names[TH__COUNT + 5];

    for (size_t i = 0; i < TH__COUNT; i++)
        names[i] = threshold_defs[i].name;
    names[TH__COUNT] = DISABLE_KEY;
    names[TH__COUNT + 1] = SLURM_DRAIN_KEY;
    names[TH__COUNT + 2] = STATE_DIR_KEY;
    names[TH__COUNT + 3] = SLURM_BENCH_KEY;
    names[TH__COUNT + 4] = SLURM_BENCH_AGE;
    return suggest_pick(key, names, TH__COUNT + 5, out, max);
}

static char *unknown_key(const char *key)
{
    const char *near[3];
    size_t n = config_suggest(key, near, 3);
    char *shown = str_excerpt(key, QUOTE_MAX), *msg;

    if (profile_key_find(key) >= 0)
        msg = xasprintf(_("'%s' is a key of the [profile] section: put it after a [profile] line "
                          "(or --set profile.%s=VALUE)"),
                        shown, shown);
    else if (n == 0)
        msg = xasprintf(_("unknown key '%s' (gpudoctor explain --thresholds lists them)"), shown);
    else
        msg = xasprintf(_("unknown key '%s' (did you mean '%s'%s%s%s%s?)"), shown, near[0],
                        n > 1 ? ", '" : "", n > 1 ? near[1] : "", n > 1 ? "'" : "",
                        n > 2 ? _(" or another") : "");
    free(shown);
    return msg;
}

static int disable_rules(struct config *c, const char *value, char **cause)
{
    char *list = xstrdup(value), *save = NULL;
    int rc = 0;

    if (c->rules.disabled == NULL)
        c->rules.disabled = xcalloc(n_rules, sizeof(*c->rules.disabled));
    for (char *id = strtok_r(list, ", \t", &save); id; id = strtok_r(NULL, ", \t", &save)) {
        const struct rule *r = rule_find(id);

        if (r == NULL) {
            const char *ids[64], *near[2];
            size_t n = 0, k;
            char *shown = str_excerpt(id, QUOTE_MAX);

            for (size_t i = 0; i < n_rules && n < ARRAY_SIZE(ids); i++)
                ids[n++] = rule_table[i]->id;
            k = suggest_pick(id, ids, n, near, 2);
            *cause =
                k ? xasprintf(_("disable: unknown rule '%s' (did you mean '%s'?)"), shown, near[0])
                  : xasprintf(_("disable: unknown rule '%s' (gpudoctor explain --list lists "
                                "them)"),
                              shown);
            free(shown);
            rc = -1;
            break;
        }
        c->rules.disabled[rule_position(r)] = true;
    }
    free(list);
    return rc;
}

/* slurm_drain = node-faults | critical [, RULE-ID | -RULE-ID ...]; each assignment replaces it. */
static int slurm_drain(struct config *c, const char *value, char **cause)
{
    struct slurm_drain_policy p = { false, xcalloc(n_rules, sizeof(*p.rules)) };
    char *list = xstrdup(value), *save = NULL;
    bool base = false;

    *cause = NULL;
    for (char *t = strtok_r(list, ", \t", &save); t && !*cause; t = strtok_r(NULL, ", \t", &save)) {
        const struct rule *r = rule_find(t[0] == '-' ? t + 1 : t);

        if (strcmp(t, "node-faults") == 0 || strcmp(t, "critical") == 0) {
            if (base)
                *cause = xasprintf(_("%s: give node-faults or critical once"), SLURM_DRAIN_KEY);
            p.every_critical = strcmp(t, "critical") == 0;
            base = true;
        } else if (r != NULL) {
            p.rules[rule_position(r)] = t[0] == '-' ? -1 : 1;
        } else {
            *cause = xasprintf(
                _("%s: '%s' is not node-faults, critical, a rule id or -RULE-ID (gpudoctor "
                  "explain --list lists the rules)"),
                SLURM_DRAIN_KEY, t);
        }
    }
    free(list);
    if (*cause == NULL && !base)
        *cause = xasprintf(_("%s: name node-faults or critical, then any RULE-ID or -RULE-ID"),
                           SLURM_DRAIN_KEY);
    if (*cause != NULL) {
        free(p.rules);
        return -1;
    }
    free(c->slurm_drain.rules);
    c->slurm_drain = p;
    return 0;
}

/* A key of the [profile] section; value as written (quotes allowed). origin is taken. */
static int apply_profile(struct config *c, const char *key, const char *value, char *origin,
                         char **cause)
{
    int id = profile_key_find(key);
    char *plain;
    int rc;

    if (id < 0) {
        const char *names[PK__COUNT], *near[2];
        size_t k;
        char *shown = str_excerpt(key, QUOTE_MAX);

        for (int i = 0; i < PK__COUNT; i++)
            names[i] = profile_keys[i].name;
        k = suggest_pick(key, names, PK__COUNT, near, 2);
        *cause = k ? xasprintf(_("unknown profile key '%s' (did you mean '%s'?)"), shown, near[0])
                   : xasprintf(_("unknown profile key '%s' (docs/config.md lists them)"), shown);
        free(shown);
        free(origin);
        return -1;
    }
    plain = profile_unquote(value, cause);
    if (plain == NULL) {
        char *why = *cause;

        *cause = xasprintf("%s: %s", key, why);
        free(why);
        free(origin);
        return -1;
    }
    if (c->profile == NULL)
        c->profile = profile_new();
    rc = profile_set(c->profile, id, plain, origin, cause);
    free(plain);
    free(origin);
    if (rc == 0)
        c->rules.th.profile = c->profile;
    return rc;
}

/* Applies key = value; origin is kept for `explain`. */
static int apply(struct config *c, const char *key, const char *value, char *origin, char **cause)
{
    int id;

    if (strncmp(key, PROFILE_SECTION ".", strlen(PROFILE_SECTION ".")) == 0)
        return apply_profile(c, key + strlen(PROFILE_SECTION "."), value, origin, cause);
    if (strcmp(key, DISABLE_KEY) == 0) {
        free(origin);
        return disable_rules(c, value, cause);
    }
    if (strcmp(key, SLURM_DRAIN_KEY) == 0) {
        free(origin);
        return slurm_drain(c, value, cause);
    }
    if (strcmp(key, SLURM_BENCH_KEY) == 0) {
        free(origin);
        if (strcmp(value, "off") != 0 && strcmp(value, "quick") != 0) {
            *cause = xasprintf(_("%s: '%s' is not 'off' or 'quick'"), key, value);
            return -1;
        }
        c->slurm_bench = strcmp(value, "quick") == 0;
        return 0;
    }
    if (strcmp(key, SLURM_BENCH_AGE) == 0) {
        int64_t ms;

        free(origin);
        if (!time_parse_duration_ms(value, &ms) || ms <= 0) {
            *cause =
                xasprintf(_("%s: '%s' is not a duration (\"24h\", \"90m\", \"3600\")"), key, value);
            return -1;
        }
        c->slurm_bench_max_age_ms = ms;
        return 0;
    }
    if (strcmp(key, STATE_DIR_KEY) == 0) {
        free(origin);
        /* an absolute directory, or "off": a relative one would depend on where it runs */
        if (value[0] != '/' && strcmp(value, "off") != 0) {
            *cause = xasprintf(_("%s: '%s' is not an absolute directory or 'off'"), key, value);
            return -1;
        }
        free(c->state_dir);
        c->state_dir = xstrdup(value);
        return 0;
    }
    id = threshold_find(key);
    if (id < 0) {
        free(origin);
        *cause = unknown_key(key);
        return -1;
    }
    if (*value == '\0') {
        free(origin);
        *cause = xasprintf(_("%s: no value"), key);
        return -1;
    }
    if (thresholds_set(&c->rules.th, id, value, origin, cause) != 0) {
        free(origin);
        return -1;
    }
    keep_origin(c, origin);
    return 0;
}

/*
 * The message of a failed apply: what it says of the value (thresholds_set quotes it) shown
 * escaped and cut, as every quote of the file is.
 */
static char *apply_error(const char *where, char *why)
{
    char *shown = str_excerpt(why, 2 * QUOTE_MAX + 80), *msg = xasprintf("%s: %s", where, shown);

    free(shown);
    free(why);
    return msg;
}

/* Where a line's comment starts: the first '#' outside double quotes (a profile value). */
static char *comment_start(char *line)
{
    bool quoted = false;

    for (char *p = line; *p; p++) {
        if (quoted && *p == '\\' && p[1] != '\0')
            p++;
        else if (*p == '"')
            quoted = !quoted;
        else if (*p == '#' && !quoted)
            return p;
    }
    return NULL;
}

/*
 * A "[section]" line: the name of a known section into *section. Returns 0, or -1 with *cause
 * set.
 */
static int section_line(const char *line, const char **section, char **cause)
{
    size_t len = strlen(line);
    char *name;

    if (line[len - 1] != ']') {
        char *shown = str_excerpt(line, QUOTE_MAX);

        *cause = xasprintf(_("expected '[section]', got '%s'"), shown);
        free(shown);
        return -1;
    }
    name = xstrndup(line + 1, len - 2);
    str_rtrim(name);
    if (strcmp(str_ltrim(name), PROFILE_SECTION) != 0) {
        char *shown = str_excerpt(str_ltrim(name), QUOTE_MAX);

        *cause = xasprintf(_("unknown section '[%s]' (the only section is [profile])"), shown);
        free(shown);
        free(name);
        return -1;
    }
    free(name);
    *section = PROFILE_SECTION;
    return 0;
}

int config_parse(struct config *c, const char *text, const char *name, char **cause)
{
    const char *p = text;
    const char *section = NULL; /* NULL: the top, before any [section] line */
    int lineno = 0;

    /* Editors that write a byte-order mark write it first: it is not part of the first key. */
    if (strncmp(p, UTF8_BOM, strlen(UTF8_BOM)) == 0)
        p += strlen(UTF8_BOM);
    while (*p) {
        const char *end = strchr(p, '\n');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char *line = xstrndup(p, len), *hash, *eq, *key, *value, *why = NULL;

        lineno++;
        p += len + (end ? 1 : 0);
        if ((hash = comment_start(line)) != NULL)
            *hash = '\0';
        key = (char *)str_ltrim(str_rtrim(line));
        if (*key == '\0') {
            free(line);
            continue;
        }
        if (*key == '[') {
            if (section_line(key, &section, &why) != 0) {
                *cause = xasprintf("%s:%d: %s", name, lineno, why);
                free(why);
                free(line);
                return -1;
            }
            free(line);
            continue;
        }
        eq = strchr(key, '=');
        if (eq == NULL) {
            char *shown = str_excerpt(key, QUOTE_MAX);

            *cause = xasprintf(_("%s:%d: expected 'key = value', got '%s'"), name, lineno, shown);
            free(shown);
            free(line);
            return -1;
        }
        *eq = '\0';
        value = (char *)str_ltrim(eq + 1);
        str_rtrim(key);
        if (*key == '\0') {
            *cause = xasprintf(_("%s:%d: no key before '='"), name, lineno);
            free(line);
            return -1;
        }
        if ((section != NULL ? apply_profile(c, key, value, xasprintf("%s:%d", name, lineno), &why)
                             : apply(c, key, value, xasprintf("%s:%d", name, lineno), &why)) != 0) {
            char *where = xasprintf("%s:%d", name, lineno);

            *cause = apply_error(where, why);
            free(where);
            free(line);
            return -1;
        }
        free(line);
    }
    return 0;
}

/* "path:line:column" of the end of text, where a NUL byte was read. */
static char *nul_error(const char *path, const char *text)
{
    const char *line = text, *nl;
    int lineno = 1;

    while ((nl = strchr(line, '\n')) != NULL) {
        lineno++;
        line = nl + 1;
    }
    return xasprintf(_("%s:%d:%zu: a NUL byte: not a text file"), path, lineno, strlen(line) + 1);
}

/*
 * Why root must not use the opened configuration file st: whoever can write it chooses the
 * rules that are disabled, the thresholds and the state directory of a root process. NULL when
 * it may be used (always, for a user other than root: the file can do no more than that user).
 * A device (/dev/null, 0666) only root makes.
 */
static char *config_distrust(const char *path, const struct stat *st)
{
    if (geteuid() != 0 || S_ISCHR(st->st_mode))
        return NULL;
    if (st->st_uid != 0)
        return xasprintf(_("%s: owned by uid %u, not by root: not used, since gpudoctor runs as "
                           "root (chown root it)"),
                         path, (unsigned)st->st_uid);
    if ((st->st_mode & 022) != 0)
        return xasprintf(_("%s: writable by its group or by every user (mode %04o): not used, "
                           "since gpudoctor runs as root (chmod go-w it)"),
                         path, (unsigned)(st->st_mode & 07777));
    return NULL;
}

int config_load(struct config *c, const char *path, bool optional, char **cause)
{
    char *text = NULL;
    struct stat st;
    ssize_t n;
    int rc, fd;

    /* Judged by what was opened, not by a name that could change in between; non-blocking, so
     * that a FIFO without a writer does not hang. */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        n = -errno;
    } else if (fstat(fd, &st) != 0) {
        n = -errno;
        close(fd);
    } else if ((*cause = config_distrust(path, &st)) != NULL) {
        close(fd);
        return -1;
    } else {
        n = file_slurp_text_fd(fd, CONFIG_MAX_BYTES, &text);
    }
    if (n == -EILSEQ) {
        /* Stopped at the first NUL (nothing after it would be read): /dev/zero ends at once. */
        *cause = nul_error(path, text);
        free(text);
        return -1;
    }
    if (n < 0) {
        if (optional && n == -ENOENT)
            return 0;
        *cause = xasprintf("%s: %s", path,
                           n == -EFBIG ? _("larger than 1 MiB, the most a config file may hold")
                                       : strerror((int)-n));
        return -1;
    }
    rc = config_parse(c, text, path, cause);
    free(text);
    if (rc == 0) {
        free(c->path);
        c->path = xstrdup(path);
    }
    return rc;
}

int config_set(struct config *c, const char *assignment, char **cause)
{
    char *copy = xstrdup(assignment), *eq = strchr(copy, '='), *key, *why = NULL;
    int rc;

    if (eq == NULL) {
        char *shown = str_excerpt(assignment, QUOTE_MAX);

        *cause = xasprintf(_("--set: expected key=value, got '%s'"), shown);
        free(shown);
        free(copy);
        return -1;
    }
    *eq = '\0';
    key = (char *)str_ltrim(str_rtrim(copy));
    rc = apply(c, key, str_ltrim(eq + 1), xstrdup("--set"), &why);
    if (rc != 0)
        *cause = apply_error("--set", why);
    free(copy);
    return rc;
}
