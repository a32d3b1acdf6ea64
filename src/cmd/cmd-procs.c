/*
 * gpudoctor procs: every process using a GPU, with who runs it, where, what it holds, what it
 * does, and the process rules' verdict on it. Rows, the table, the tree and the JSON are in
 * src/render/procs.c; this file is the command line and the collection.
 */
#include "cmd/cmd.h"
#include "reap/reap.h"
#include "render/procs.h"
#include "rules/config.h"
#include "util/strutil.h"
#include "util/xalloc.h"
#include "watch/recording.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define DEFAULT_WINDOW_MS 1000 /* enough for CPU % and idleness, short enough to wait for */
#define HELP_SHOWN        (-1)

enum {
    OPT_TREE = OPT__COMMON_END,
    OPT_USER,
    OPT_GPU,
    OPT_CONTAINER,
    OPT_SORT,
    OPT_SET,
};

static void usage(FILE *out)
{
    fputs("Usage: gpudoctor procs [options]\n"
          "\n"
          "Every process using a GPU: pid, user, container or job, GPUs, GPU memory, SM %,\n"
          "CPU %, state, age, and a verdict (active, idle, idle-holder, stopped, defunct,\n"
          "orphaned, not-visible, unknown) from the same tests as 'gpudoctor check'.\n"
          "\n"
          "Options:\n"
          "  --tree            each GPU process under what started it (launcher, shell,\n"
          "                    sshd: rows marked '(no GPU)') and above its workers\n"
          "  --user NAME       only processes of NAME (or uid)\n"
          "  --gpu N[,N]       only processes using GPU N (NVML index; repeatable)\n"
          "  --container ID    only this container (id prefix), pod (UID prefix) or Slurm\n"
          "                    job (id); 'host' for processes in none\n"
          "  --sort KEY        mem (default), sm, cpu, age or pid\n"
          "  --json            the rows as JSON (docs/procs.md)\n"
          "  -w, --wide        do not cut command lines to the terminal's width\n"
          "  --no-color        do not colour the output (also: NO_COLOR=1)\n"
          "  --from FILE       read a snapshot (gpudoctor snapshot) or a recording\n"
          "                    (gpudoctor watch --record): idleness over all of it\n"
          "  --window DUR      sample CPU use over DUR (default 1s; 0 = one reading, no\n"
          "                    CPU % and no idleness)\n"
          "  --config FILE     thresholds file (default /etc/gpudoctor.conf if it exists)\n"
          "  --set KEY=VALUE   override one threshold (repeatable)\n"
          "  --root DIR        read /proc, /sys and /dev under DIR (default /)\n"
          "  --timeout DUR     finish within DUR whatever hangs (default: the window + 10s)\n"
          "  --nvml-lib PATH   NVML library to load\n"
          "  -h, --help        show this help\n"
          "\n"
          "Exit status: 0 listed (even when nothing uses a GPU), 3 could not collect or\n"
          "write, 64 usage error. 'gpudoctor reap' ends stale processes safely.\n",
          out);
}

struct opts {
    struct collect_opts collect;
    struct procs_filter filter;
    int32_t *gpus;
    size_t n_gpus;
    enum procs_sort sort;
    bool tree, json, wide, no_color, have_timeout;
    const char *from, *config;
    char **sets;
    size_t n_sets;
};

static int parse(int argc, char **argv, struct opts *o)
{
    static const struct option longopts[] = {
        { "tree", no_argument, NULL, OPT_TREE },
        { "user", required_argument, NULL, OPT_USER },
        { "gpu", required_argument, NULL, OPT_GPU },
        { "container", required_argument, NULL, OPT_CONTAINER },
        { "sort", required_argument, NULL, OPT_SORT },
        { "json", no_argument, NULL, OPT_JSON },
        { "wide", no_argument, NULL, 'w' },
        { "no-color", no_argument, NULL, OPT_NO_COLOR },
        { "from", required_argument, NULL, OPT_FROM },
        { "config", required_argument, NULL, OPT_CONFIG },
        { "set", required_argument, NULL, OPT_SET },
        { "root", required_argument, NULL, OPT_ROOT },
        { "timeout", required_argument, NULL, OPT_TIMEOUT },
        { "window", required_argument, NULL, OPT_WINDOW },
        { "nvml-lib", required_argument, NULL, OPT_NVML_LIB },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    int opt, rc;
    size_t k;

    while ((opt = getopt_long(argc, argv, "hw", longopts, NULL)) != -1) {
        switch (opt) {
        case OPT_TREE:
            o->tree = true;
            break;
        case OPT_USER:
            o->filter.user = optarg;
            break;
        case OPT_GPU:
            if (!reap_parse_ints(optarg, 0, &o->gpus, &o->n_gpus)) {
                cmd_error("procs", "--gpu: '%s' is not a GPU index or a list of them (0,3)",
                          optarg);
                return cmd_usage_error(&cmd_procs);
            }
            break;
        case OPT_CONTAINER:
            o->filter.container = optarg;
            break;
        case OPT_SORT:
            for (k = 0; procs_sort_names[k] && strcmp(procs_sort_names[k], optarg) != 0; k++)
                ;
            if (procs_sort_names[k] == NULL) {
                cmd_error("procs", "--sort: '%s' is not one of mem, sm, cpu, age, pid", optarg);
                return cmd_usage_error(&cmd_procs);
            }
            o->sort = (enum procs_sort)k;
            break;
        case OPT_JSON:
            o->json = true;
            break;
        case 'w':
            o->wide = true;
            break;
        case OPT_NO_COLOR:
            o->no_color = true;
            break;
        case OPT_FROM:
            o->from = optarg;
            break;
        case OPT_CONFIG:
            o->config = optarg;
            break;
        case OPT_SET:
            o->sets = xreallocarray(o->sets, o->n_sets + 1, sizeof(char *));
            o->sets[o->n_sets++] = optarg;
            break;
        case 'h':
            usage(stdout);
            return HELP_SHOWN;
        default:
            o->have_timeout |= opt == OPT_TIMEOUT;
            rc = opt == '?' ? 0 : cmd_collect_option("procs", &o->collect, opt, optarg);
            if (rc == 0)
                return cmd_usage_error(&cmd_procs);
            if (rc < 0)
                return EXIT_USAGE;
        }
    }
    if (optind < argc) {
        cmd_error("procs", "unexpected argument '%s'", argv[optind]);
        return cmd_usage_error(&cmd_procs);
    }
    o->filter.gpus = o->gpus;
    o->filter.n_gpus = o->n_gpus;
    if (!o->have_timeout)
        o->collect.timeout_ms = o->collect.window_ms + DEFAULT_TIMEOUT_MS;
    return 0;
}

/* The terminal's width; $COLUMNS or 80 when stdout is not one. */
static unsigned out_width(void)
{
    struct winsize ws;
    const char *cols = getenv("COLUMNS");
    uint32_t n;

    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 40)
        return ws.ws_col;
    if (cols && str_to_u32(cols, 10, &n) && n >= 40 && n <= 10000)
        return n;
    return 80;
}

static int exec(int argc, char **argv)
{
    struct opts o;
    struct config cfg;
    struct snapshot *s = NULL;
    struct proc_judgement *j = NULL;
    struct procs_view v;
    struct render_opts ro;
    char *cause = NULL;
    size_t n_j;
    int rc;

    memset(&o, 0, sizeof(o));
    memset(&v, 0, sizeof(v));
    config_init(&cfg);
    cmd_collect_defaults(&o.collect, DEFAULT_WINDOW_MS);
    rc = parse(argc, argv, &o);
    if (rc != 0) {
        rc = rc == HELP_SHOWN ? EXIT_HEALTHY : rc;
        goto out;
    }
    rc = EXIT_USAGE;
    if (cmd_load_config("procs", &cfg, o.config, o.sets, o.n_sets) != 0)
        goto out;
    rc = EXIT_UNKNOWN;
    o.collect.only = (1u << COLLECTOR_NVML) | (1u << COLLECTOR_PROCS);
    o.collect.progress = !o.json && isatty(STDERR_FILENO);
    s = o.from ? recording_load(o.from, &cause) : collect_snapshot(&o.collect, &cause);
    if (s == NULL) {
        cmd_error("procs", "%s", cause);
        free(cause);
        goto out;
    }
    if (!o.from && s->collectors[COLLECTOR_PROCS].state != CS_OK &&
        s->collectors[COLLECTOR_PROCS].state != CS_PARTIAL &&
        s->collectors[COLLECTOR_NVML].state != CS_OK) {
        const struct collector_status *c = &s->collectors[COLLECTOR_PROCS];

        cmd_error("procs", "could not read the processes (%s%s%s) nor NVML",
                  collector_state_names[c->state], c->detail ? ": " : "",
                  c->detail ? c->detail : "");
        goto out;
    }
    n_j = rules_judge_procs(s, NULL, &cfg.rules.th, &j);
    procs_view_build(&v, s, j, n_j, &o.filter, o.sort, o.tree);
    rc = EXIT_HEALTHY;
    if (o.json) {
        json_t *doc = procs_render_json(&v, s);
        char *text = json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(10));

        json_decref(doc);
        if (text == NULL)
            fatal("out of memory serialising the process list");
        if (puts(text) == EOF) {
            cmd_error("procs", "cannot write to standard output: %s", strerror(errno));
            rc = EXIT_UNKNOWN;
        }
        free(text);
    } else {
        render_opts_init(&ro, stdout, o.no_color ? RENDER_NEVER : RENDER_AUTO, 0, RENDER_NEVER);
        procs_render_table(stdout, &v, s, &ro, o.wide ? 100000 : out_width());
    }
    if (rc == EXIT_HEALTHY && cmd_finish_stdout("procs") != 0)
        rc = EXIT_UNKNOWN;
out:
    procs_view_free(&v);
    free(j);
    snapshot_free(s);
    config_free(&cfg);
    free(o.gpus);
    free(o.sets);
    return rc;
}

const struct cmd cmd_procs = {
    "procs", "[options]", "every GPU process: who, where, how much, what it does, a verdict",
    exec,    usage,
};
