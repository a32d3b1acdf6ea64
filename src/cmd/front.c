/*
 * The shared command front: the options several commands take (collection, --from, the
 * configuration, JSON, colour, width, ASCII) are rows of one table, parsed here and described
 * here, so a cmd-*.c file holds only its own options and its work, and every command's --help is
 * printed from its description (struct cmd) and this table.
 */
#include "cmd/cmd.h"
#include "import/import.h"
#include "render/format.h"
#include "state/state.h"
#include "util/strutil.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HELP_COLUMN 20 /* where an option's help starts */
#define HELP_WIDTH  80

/*
 * The shared options, in the order their help is printed. Help texts are whole sentences,
 * wrapped when printed (so that they can be translated); %s in --window's is its default, in
 * --json's the command's name.
 */
static const struct shared_option {
    unsigned group;
    struct cmd_option o;
} shared[] = {
    { CMD_G_FROM,
      { "from", OPT_FROM, required_argument, "FILE",
        N_("read FILE instead of this machine: a snapshot ('gpudoctor snapshot'), a recording "
           "('gpudoctor watch --record'), a report ('gpudoctor check --json'), or evidence from "
           "elsewhere: nvidia-smi output (its table, -L, -q, -q -x, topo -m, nvlink -s/-e), lspci "
           "-vvv, a kernel log (dmesg, journalctl -k, kern.log), an nvidia-bug-report.log(.gz) "
           "or the BMC's event log (ipmitool sel elist) (docs/import.md); repeat it to merge "
           "several files into one snapshot; '-' reads standard input") } },
    { CMD_G_FROM,
      { "format", OPT_FORMAT, required_argument, "FORMAT",
        N_("read the --from files as FORMAT instead of recognising each by its content: %s") } },
    { CMD_G_JSON,
      { "json", OPT_JSON, no_argument, NULL, N_("write JSON instead of text (docs/%s.md)") } },
    { CMD_G_COLOR,
      { "color", OPT_COLOR, optional_argument, "[=WHEN]",
        N_("colour the output: auto (the default: on a terminal, unless NO_COLOR is set), always "
           "(for 'less -R') or never") } },
    { CMD_G_COLOR,
      { "no-color", OPT_NO_COLOR, no_argument, NULL, N_("the same as --color=never") } },
    { CMD_G_WIDTH,
      { "width", OPT_WIDTH, required_argument, "N",
        N_("wrap text at N columns (default: the terminal's width; else $COLUMNS; else 80)") } },
    { CMD_G_ASCII,
      { "ascii", OPT_ASCII, no_argument, NULL,
        N_("ASCII characters only (the default when the locale's character set is not UTF-8)") } },
    { CMD_G_CONFIG,
      { "config", OPT_CONFIG, required_argument, "FILE",
        N_("read thresholds and settings from FILE (default $GPUDOCTOR_CONFIG, else "
           "/etc/gpudoctor.conf, when it exists)") } },
    { CMD_G_CONFIG,
      { "set", OPT_SET, required_argument, "KEY=VALUE",
        N_("override one key of the config file, e.g. a threshold or disable=RULE-ID "
           "(repeatable)") } },
    { CMD_G_COLLECT,
      { "window", OPT_WINDOW, required_argument, "DUR",
        N_("sample over DUR (default %s; 0 = one reading)") } },
    { CMD_G_COLLECT,
      { "timeout", OPT_TIMEOUT, required_argument, "DUR",
        N_("finish within DUR whatever hangs (default: the window + 10s)") } },
    { CMD_G_COLLECT,
      { "root", OPT_ROOT, required_argument, "DIR",
        N_("read /proc, /sys, /dev and logs under DIR (default /)") } },
    { CMD_G_COLLECT,
      { "nvml-lib", OPT_NVML_LIB, required_argument, "PATH",
        N_("NVML library to load (default $GPUDOCTOR_NVML_LIB, else libnvidia-ml.so.1)") } },
    { CMD_G_STATE,
      { "state-dir", OPT_STATE_DIR, required_argument, "DIR",
        N_("remember XIDs, ECC and row-remap events and acknowledgements in DIR/state.json "
           "(default $GPUDOCTOR_STATE_DIR, else the config key state_dir, else /var/lib/gpudoctor "
           "for root and ~/.local/state/gpudoctor for others; 'off': nowhere)") } },
    { CMD_G_STATE,
      { "no-state", OPT_NO_STATE, no_argument, NULL,
        N_("neither read nor write the state file: judge this run alone") } },
    { CMD_G_ONLY,
      { "only", OPT_ONLY, required_argument, "LIST",
        N_("run only these collectors (comma-separated: nvml, processes, host, pcie, driver, "
           "kernel_log, stack, ib, fabric)") } },
};

static const struct cmd_option help_option = { "help", 'h', no_argument, NULL,
                                               N_("show this help") };

static bool is_end(const struct cmd_option *o)
{
    return o->name == NULL && o->help == NULL;
}

/* The command's own option of this name, or NULL. */
static const struct cmd_option *own_named(const struct cmd *c, const char *name)
{
    for (const struct cmd_option *o = c->options; o && !is_end(o); o++) {
        if (o->name && strcmp(o->name, name) == 0)
            return o;
    }
    return NULL;
}

/* Whether the shared option row applies to c: its group is taken and no own option replaces it. */
static bool takes(const struct cmd *c, const struct shared_option *so)
{
    return (c->groups & so->group) && own_named(c, so->o.name) == NULL;
}

static bool is_short(int key)
{
    return key > 0 && key < 128 && isalnum(key);
}

/* ---- help ---- */

/* Words of text from column col on, continuation lines at indent, within HELP_WIDTH. */
static void wrap(FILE *out, size_t col, size_t indent, const char *text)
{
    const char *p = text;

    while (*p) {
        size_t lead = 0, at = col;
        bool empty = true;

        /* One forced line ('\n'): its leading blanks are kept, the rest is words. */
        while (p[lead] == ' ')
            lead++;
        fprintf(out, "%*s", (int)lead, "");
        at += lead;
        p += lead;
        while (*p && *p != '\n') {
            const char *w = p;
            bool spaced = w > text && w[-1] == ' ';
            size_t cols, len = render_piece(w, &cols), gap = !empty && spaced ? 1 : 0;

            /* display columns: a Chinese character takes two, and may start a line */
            p += len;
            if (!empty && at + gap + cols > HELP_WIDTH) {
                fprintf(out, "\n%*s", (int)indent, "");
                at = indent;
                empty = true;
                gap = 0;
            }
            if (gap) {
                fputc(' ', out);
                at++;
            }
            fwrite(w, 1, len, out);
            at += cols;
            empty = false;
            while (*p == ' ')
                p++;
        }
        fputc('\n', out);
        if (*p == '\n') {
            p++;
            if (*p)
                fprintf(out, "%*s", (int)indent, "");
        }
        col = indent;
    }
}

/* help with its "%s" replaced by value (help texts are data, not printf formats). */
static char *fill(const char *help, const char *value)
{
    const char *at = strstr(help, "%s");

    if (at == NULL)
        return xstrdup(help);
    return xasprintf("%.*s%s%s", (int)(at - help), help, value, at + 2);
}

static void option_help(FILE *out, const struct cmd *c, const struct cmd_option *o)
{
    const char *sep = o->arg == NULL ? "" : o->arg[0] == '[' ? "" : " ";
    char window[16], *head, *text = NULL;
    size_t n;

    if (o->name == NULL) {
        fprintf(out, "%s\n", _(o->help));
        return;
    }
    /* "  -n, --interval DUR", "  --color[=WHEN]" */
    if (is_short(o->key))
        head = xasprintf("  -%c, --%s%s%s", o->key, o->name, sep, o->arg ? o->arg : "");
    else
        head = xasprintf("  --%s%s%s", o->name, sep, o->arg ? o->arg : "");
    n = strlen(head);
    fputs(head, out);
    free(head);
    if (n + 2 > HELP_COLUMN)
        fprintf(out, "\n%*s", HELP_COLUMN, "");
    else
        fprintf(out, "%*s", (int)(HELP_COLUMN - n), "");
    if (o->key == OPT_WINDOW) {
        if (c->window_ms == 0)
            snprintf(window, sizeof(window), "0");
        else
            render_duration(window, sizeof(window), (double)c->window_ms / 1000.0);
        text = fill(_(o->help), window);
    } else if (o->key == OPT_JSON) {
        text = fill(_(o->help), c->name);
    } else if (o->key == OPT_FORMAT) {
        text = fill(_(o->help), import_format_names());
    }
    wrap(out, HELP_COLUMN, HELP_COLUMN, text ? text : _(o->help));
    free(text);
}

void cmd_usage(const struct cmd *c, FILE *out)
{
    const char *syn = c->synopsis, *head = _("Usage:");
    int indent = (int)render_width(head, strlen(head));
    bool first = true;

    /* "Usage: gpudoctor NAME SYNOPSIS", one line per line of the synopsis */
    while (*syn || first) {
        size_t len = strcspn(syn, "\n");

        fprintf(out, "%*s gpudoctor %s %.*s\n", first ? 0 : indent, first ? head : "", c->name,
                (int)len, syn);
        syn += len + (syn[len] == '\n');
        first = false;
    }
    fprintf(out, "\n%s", _(c->about));
    if (c->options == NULL || c->options[0].name != NULL)
        fputs(_("\nOptions:\n"), out);
    else
        fputc('\n', out);
    for (const struct cmd_option *o = c->options; o && !is_end(o); o++)
        option_help(out, c, o);
    for (size_t i = 0; i < ARRAY_SIZE(shared); i++) {
        if (takes(c, &shared[i]))
            option_help(out, c, &shared[i].o);
    }
    option_help(out, c, &help_option);
    if (c->epilogue)
        fprintf(out, "\n%s", _(c->epilogue));
}

/* ---- parsing ---- */

void cmd_collect_defaults(struct collect_opts *o, int64_t window_ms)
{
    memset(o, 0, sizeof(*o));
    o->root = "/";
    o->window_ms = window_ms;
    o->timeout_ms = window_ms + DEFAULT_TIMEOUT_MS;
    o->nvml_lib = NULL;
}

bool cmd_front_given(const struct cmd_front *f, int key)
{
    return key >= OPT_ROOT && key < OPT__COMMON_END && (f->given & (1u << (key - OPT_ROOT)));
}

static int duration(const char *cmd, const char *name, const char *arg, int64_t *out)
{
    if (!time_parse_duration_ms(arg, out)) {
        cmd_error(cmd, "--%s: '%s' is not a duration (examples: 2s, 500ms, 1.5, 1h30m, 7d)", name,
                  arg);
        return EXIT_USAGE;
    }
    return 0;
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
            return EXIT_USAGE;
        }
        o->only |= 1u << i;
    }
    free(list);
    if (o->only == 0) {
        cmd_error(cmd, "--only: no collector named");
        return EXIT_USAGE;
    }
    return 0;
}

/* One shared option. Returns 0, or EXIT_USAGE after saying what is wrong. */
static int shared_option(struct cmd_front *f, int key, char *arg)
{
    const char *cmd = f->cmd->name;
    uint32_t n;

    switch (key) {
    case OPT_ROOT:
        f->collect.root = arg;
        return 0;
    case OPT_TIMEOUT:
        if (duration(cmd, "timeout", arg, &f->collect.timeout_ms) != 0)
            return EXIT_USAGE;
        if (f->collect.timeout_ms < 100) {
            cmd_error(cmd, "--timeout: %s is too short (at least 100ms)", arg);
            return EXIT_USAGE;
        }
        return 0;
    case OPT_WINDOW:
        if (duration(cmd, "window", arg, &f->collect.window_ms) != 0)
            return EXIT_USAGE;
        if (f->collect.window_ms > MAX_WINDOW_MS) {
            cmd_error(cmd, "--window: %s is longer than an hour", arg);
            return EXIT_USAGE;
        }
        return 0;
    case OPT_NVML_LIB:
        f->collect.nvml_lib = arg;
        return 0;
    case OPT_ONLY:
        return parse_only(cmd, &f->collect, arg);
    case OPT_FROM:
        if (*arg == '\0') {
            cmd_error(cmd, "--from: an empty file name (a variable that was not set?)");
            return EXIT_USAGE;
        }
        f->froms = xreallocarray(f->froms, f->n_froms + 1, sizeof(*f->froms));
        f->froms[f->n_froms++] = arg;
        f->from = f->froms[0];
        return 0;
    case OPT_FORMAT:
        if (!import_format_known(arg)) {
            cmd_error(cmd, "--format: '%s' is not a format gpudoctor reads (%s)", arg,
                      import_format_names());
            return EXIT_USAGE;
        }
        f->format = arg;
        return 0;
    case OPT_CONFIG:
        f->config_path = arg;
        return 0;
    case OPT_SET:
        f->sets = xreallocarray(f->sets, f->n_sets + 1, sizeof(*f->sets));
        f->sets[f->n_sets++] = arg;
        return 0;
    case OPT_JSON:
        f->json = true;
        return 0;
    case OPT_COLOR:
        if (arg == NULL || strcmp(arg, "always") == 0) {
            f->color = RENDER_ALWAYS;
        } else if (strcmp(arg, "auto") == 0) {
            f->color = RENDER_AUTO;
        } else if (strcmp(arg, "never") == 0) {
            f->color = RENDER_NEVER;
        } else {
            cmd_error(cmd, "--color: '%s' is not one of always, auto, never", arg);
            return EXIT_USAGE;
        }
        return 0;
    case OPT_NO_COLOR:
        f->color = RENDER_NEVER;
        return 0;
    case OPT_WIDTH:
        if (!str_to_u32(arg, 10, &n) || n < RENDER_MIN_WIDTH || n > RENDER_MAX_WIDTH) {
            cmd_error(cmd, "--width: '%s' is not a number of columns from %d to %d", arg,
                      RENDER_MIN_WIDTH, RENDER_MAX_WIDTH);
            return EXIT_USAGE;
        }
        f->width = n;
        return 0;
    case OPT_ASCII:
        f->ascii = RENDER_ALWAYS;
        return 0;
    case OPT_STATE_DIR:
        if (*arg == '\0') {
            cmd_error(cmd, "--state-dir: an empty directory name");
            return EXIT_USAGE;
        }
        f->state_dir_opt = arg;
        return 0;
    case OPT_NO_STATE:
        f->no_state = true;
        return 0;
    }
    return EXIT_USAGE; /* not reached: getopt only returns keys of the table */
}

/* getopt_long's table and short options for c: its own, the shared ones it takes, --help. */
static struct option *longopts_for(const struct cmd *c, char **shortopts)
{
    size_t n = 1, k = 0, s = 0;
    struct option *lo;
    char *so;

    for (const struct cmd_option *o = c->options; o && !is_end(o); o++)
        n++;
    lo = xcalloc(n + ARRAY_SIZE(shared) + 1, sizeof(*lo));
    so = xcalloc(2 * n + 2, 1);
    for (const struct cmd_option *o = c->options; o && !is_end(o); o++) {
        if (o->name == NULL)
            continue;
        lo[k++] = (struct option){ o->name, o->has_arg, NULL, o->key };
        if (is_short(o->key)) {
            so[s++] = (char)o->key;
            if (o->has_arg == required_argument)
                so[s++] = ':';
        }
    }
    for (size_t i = 0; i < ARRAY_SIZE(shared); i++) {
        if (takes(c, &shared[i]))
            lo[k++] =
                (struct option){ shared[i].o.name, shared[i].o.has_arg, NULL, shared[i].o.key };
    }
    lo[k++] = (struct option){ "help", no_argument, NULL, 'h' };
    so[s++] = 'h';
    *shortopts = so;
    return lo;
}

/* The collection options that do nothing with --from, said in one line. */
static void warn_ignored(const struct cmd_front *f)
{
    static const int keys[] = { OPT_WINDOW, OPT_TIMEOUT, OPT_ROOT, OPT_NVML_LIB, OPT_ONLY };
    char list[128];
    size_t len = 0, n = 0;

    list[0] = '\0';
    for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
        const char *name = NULL;

        if (!cmd_front_given(f, keys[i]))
            continue;
        for (size_t k = 0; k < ARRAY_SIZE(shared); k++) {
            if (shared[k].o.key == keys[i])
                name = shared[k].o.name;
        }
        len += (size_t)snprintf(list + len, sizeof(list) - len, "%s--%s", n ? ", " : "", name);
        n++;
    }
    if (n > 0)
        cmd_error(f->cmd->name,
                  "%s %s no effect with --from: the file is judged as it was collected", list,
                  n == 1 ? "has" : "have");
}

static int load_config(struct cmd_front *f)
{
    struct config *cfg = &f->config;
    char *cause = NULL;

    if (config_load(cfg, f->config_path ? f->config_path : config_default_path(),
                    f->config_path == NULL, &cause) != 0)
        goto bad;
    for (size_t i = 0; i < f->n_sets; i++) {
        if (config_set(cfg, f->sets[i], &cause) != 0)
            goto bad;
    }
    return 0;
bad:
    cmd_error(f->cmd->name, "%s", cause);
    free(cause);
    return EXIT_USAGE;
}

int cmd_front_parse(struct cmd_front *f, const struct cmd *c, int argc, char **argv,
                    cmd_option_fn *fn, void *ctx)
{
    char *shortopts = NULL;
    struct option *lo;
    int key, rc = CMD_GO;

    memset(f, 0, sizeof(*f));
    f->cmd = c;
    config_init(&f->config);
    cmd_collect_defaults(&f->collect, c->window_ms);
    lo = longopts_for(c, &shortopts);
    optind = 0; /* a fresh scan, also when called again (tests) */
    while (rc == CMD_GO && (key = getopt_long(argc, argv, shortopts, lo, NULL)) != -1) {
        int r;

        if (key == 'h') {
            cmd_usage(c, stdout);
            rc = fflush(stdout) == 0 ? EXIT_HEALTHY : EXIT_UNKNOWN;
        } else if (key == '?') {
            rc = cmd_usage_error(c); /* getopt said what */
        } else if (key >= OPT_ROOT && key < OPT__COMMON_END) {
            f->given |= 1u << (key - OPT_ROOT);
            r = shared_option(f, key, optarg);
            if (r != 0)
                rc = r;
        } else {
            r = fn ? fn(ctx, key, optarg) : EXIT_USAGE;
            if (r != 0)
                rc = r;
        }
    }
    free(lo);
    free(shortopts);
    if (rc != CMD_GO)
        return rc;
    for (int i = optind; i < argc; i++) {
        if (f->n_operands == c->max_operands) {
            cmd_error(c->name, "unexpected argument '%s'", argv[i]);
            return cmd_usage_error(c);
        }
        f->operands = xreallocarray(f->operands, f->n_operands + 1, sizeof(*f->operands));
        f->operands[f->n_operands++] = argv[i];
    }
    if (!cmd_front_given(f, OPT_TIMEOUT))
        f->collect.timeout_ms = f->collect.window_ms + DEFAULT_TIMEOUT_MS;
    if (f->from != NULL)
        warn_ignored(f);
    if (f->format != NULL && f->from == NULL) {
        cmd_error(c->name, "--format says how to read --from files: give one with --from");
        return cmd_usage_error(c);
    }
    if ((c->groups & CMD_G_CONFIG) && load_config(f) != 0)
        return EXIT_USAGE;
    if ((c->groups & CMD_G_STATE) && !f->no_state) {
        char *cause = NULL;

        f->state_dir = state_dir_resolve(f->state_dir_opt, f->config.state_dir, &cause);
        if (cause != NULL) {
            cmd_error(c->name, "%s", cause);
            free(cause);
            return EXIT_USAGE;
        }
    }
    render_opts_init(&f->render, stdout, f->color, f->width, f->ascii);
    return CMD_GO;
}

void cmd_front_free(struct cmd_front *f)
{
    config_free(&f->config);
    free(f->froms);
    free(f->state_dir);
    free(f->sets);
    free(f->operands);
    memset(f, 0, sizeof(*f));
}

/* ---- the snapshot ---- */

struct snapshot *cmd_front_snapshot(struct cmd_front *f)
{
    struct snapshot *s;
    char *cause = NULL;

    if (f->from != NULL) {
        /*
         * a snapshot, a recording of watch --record (its samples are the history), a report, or
         * evidence from elsewhere, imported (several files merged)
         */
        s = import_load(f->froms, f->n_froms, f->format, &cause);
    } else {
        f->collect.progress = !f->json && !f->no_progress && isatty(STDERR_FILENO);
        s = collect_snapshot(&f->collect, &cause);
    }
    if (s == NULL) {
        cmd_error(f->cmd->name, "%s", cause);
        free(cause);
        return NULL;
    }
    /* The past as remembered: read after the collection, which gave the boot id (--from
     * judges with the past the file was captured with). */
    if (f->from == NULL && f->state_dir != NULL)
        collect_state(s, f->state_dir);
    if (f->from == NULL && s->window_ms < f->collect.window_ms)
        cmd_error(f->cmd->name,
                  "sampled for %gs, not the %gs --window asked: --timeout %gs ended it first",
                  (double)s->window_ms / 1000.0, (double)f->collect.window_ms / 1000.0,
                  (double)f->collect.timeout_ms / 1000.0);
    return s;
}

int cmd_front_record_state(const struct cmd_front *f, const struct snapshot *s)
{
    char *cause = NULL, *kept = NULL;

    if (f->from != NULL || f->state_dir == NULL || !(f->cmd->groups & CMD_G_STATE))
        return 0;
    if (state_record(f->state_dir, s, time_real_ms(), &kept, &cause) == 0) {
        if (kept != NULL)
            cmd_error(f->cmd->name, "note: %s", kept);
        free(kept);
        return 0;
    }
    cmd_error(f->cmd->name, "note: the state file was not updated: %s", cause);
    free(cause);
    return -1;
}
