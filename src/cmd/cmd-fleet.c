/*
 * gpudoctor fleet: which node is the odd one out. Reads many snapshots (files, directories, a
 * stream on standard input) or asks a Prometheus server that scrapes `gpudoctor serve`, and
 * prints one row per node and the outliers, ranked, with the evidence beside the group's. The
 * work is src/fleet/; this file is the command: its options, the inputs, the outputs.
 */
#include "cmd/cmd.h"
#include "fleet/fleet.h"
#include "fleet/http.h"
#include "util/strutil.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_PROM_TIMEOUT_MS  30000
#define DEFAULT_PROM_DEADLINE_MS 120000
#define FLEET_THREADS_ENV        "GPUDOCTOR_FLEET_THREADS"

enum {
    OPT_PROMETHEUS = OPT__COMMON_END,
    OPT_PROFILE,
    OPT_HTML,
    OPT_Z,
    OPT_MIN_GROUP,
    OPT_OUTLIERS,
    OPT_PROM_TIMEOUT,
    OPT_PROM_DEADLINE,
};

static const struct cmd_option options[] = {
    { "prometheus", OPT_PROMETHEUS, required_argument, "URL",
      N_("read the nodes from a Prometheus server that scrapes gpudoctor serve (its HTTP API, "
         "/api/v1/query) instead of snapshots") },
    { "profile", OPT_PROFILE, required_argument, "FILE",
      N_("judge nodes of the GPU model of FILE's [profile] section by it (one without gpu_model "
         "applies to the other nodes; repeatable)") },
    { "html", OPT_HTML, required_argument, "FILE",
      N_("also write a self-contained HTML page (node table, outliers, plots) to FILE; '-': "
         "to standard output instead of the text report") },
    { "outliers", OPT_OUTLIERS, no_argument, NULL, N_("list only the outliers in the node table") },
    { "threshold", OPT_Z, required_argument, "Z",
      N_("the modified z-score beyond which a figure is an outlier (default 3.5)") },
    { "min-group", OPT_MIN_GROUP, required_argument, "N",
      N_("the fewest nodes of one GPU model compared with each other (default 5)") },
    { "timeout", OPT_PROM_TIMEOUT, required_argument, "DUR",
      N_("with --prometheus: how long one query may take (default 30s)") },
    { "deadline", OPT_PROM_DEADLINE, required_argument, "DUR",
      N_("with --prometheus: how long all the queries together may take (default 2m)") },
    { NULL, 0, 0, NULL, NULL },
};

struct opts {
    const char *prometheus, *html;
    const char **profiles;
    size_t n_profiles;
    double z;
    size_t min_group;
    bool outliers;
    int64_t timeout_ms, deadline_ms;
};

static int option(void *ctx, int key, char *arg)
{
    struct opts *o = ctx;
    uint32_t n;

    switch (key) {
    case OPT_PROMETHEUS:
        if (strncmp(arg, "http://", 7) != 0 && strncmp(arg, "https://", 8) != 0) {
            char *shown = fleet_url_shown(arg);

            cmd_error("fleet", "--prometheus: '%s' is not an http:// or https:// URL", shown);
            free(shown);
            return EXIT_USAGE;
        }
        o->prometheus = arg;
        return 0;
    case OPT_PROFILE:
        o->profiles = xreallocarray(o->profiles, o->n_profiles + 1, sizeof(*o->profiles));
        o->profiles[o->n_profiles++] = arg;
        return 0;
    case OPT_HTML:
        o->html = arg;
        return 0;
    case OPT_OUTLIERS:
        o->outliers = true;
        return 0;
    case OPT_Z:
        if (!str_to_double(arg, &o->z) || !isfinite(o->z) || o->z < 1 || o->z > 100) {
            cmd_error("fleet", "--threshold: '%s' is not a number from 1 to 100", arg);
            return EXIT_USAGE;
        }
        return 0;
    case OPT_MIN_GROUP:
        if (!str_to_u32(arg, 10, &n) || n < 3 || n > 1000000) {
            cmd_error("fleet", "--min-group: '%s' is not a number of nodes from 3 to 1000000", arg);
            return EXIT_USAGE;
        }
        o->min_group = n;
        return 0;
    case OPT_PROM_TIMEOUT:
        if (!time_parse_duration_ms(arg, &o->timeout_ms) || o->timeout_ms < 100 ||
            o->timeout_ms > 3600000) {
            cmd_error("fleet", "--timeout: '%s' is not a duration from 100ms to 1h", arg);
            return EXIT_USAGE;
        }
        return 0;
    case OPT_PROM_DEADLINE:
        if (!time_parse_duration_ms(arg, &o->deadline_ms) || o->deadline_ms < 100 ||
            o->deadline_ms > 86400000) {
            cmd_error("fleet", "--deadline: '%s' is not a duration from 100ms to 1d", arg);
            return EXIT_USAGE;
        }
        return 0;
    }
    return EXIT_USAGE;
}

/* The [profile] section of each --profile file. Returns 0, or EXIT_USAGE after saying why. */
static int load_profiles(const struct opts *o, struct fleet_profile **out)
{
    *out = xcalloc(o->n_profiles + 1, sizeof(**out));
    for (size_t i = 0; i < o->n_profiles; i++) {
        struct config c;
        char *cause = NULL;

        config_init(&c);
        if (config_load(&c, o->profiles[i], false, &cause) != 0) {
            cmd_error("fleet", "--profile %s", cause);
            free(cause);
            config_free(&c);
            return EXIT_USAGE;
        }
        if (c.profile == NULL || profile_empty(c.profile)) {
            cmd_error("fleet",
                      "--profile %s: no [profile] section ('gpudoctor profile save' "
                      "writes one)",
                      o->profiles[i]);
            config_free(&c);
            return EXIT_USAGE;
        }
        (*out)[i].path = xstrdup(o->profiles[i]);
        (*out)[i].profile = c.profile;
        c.profile = NULL; /* taken */
        config_free(&c);
    }
    return 0;
}

/*
 * The threads that read snapshots: GPUDOCTOR_FLEET_THREADS when set (for tests: 1 reads them one
 * after the other in this thread), else 0, one per CPU up to FLEET_MAX_THREADS. Returns 0, or
 * EXIT_USAGE after saying why.
 */
static int read_threads(unsigned *threads)
{
    const char *env = getenv(FLEET_THREADS_ENV);
    uint32_t n;

    *threads = 0;
    if (env == NULL || *env == '\0')
        return 0;
    if (!str_to_u32(env, 10, &n) || n < 1 || n > 256) {
        cmd_error("fleet", "%s='%s' is not a number of threads from 1 to 256", FLEET_THREADS_ENV,
                  env);
        return EXIT_USAGE;
    }
    *threads = n;
    return 0;
}

static void print_json(const struct fleet *fl, int status)
{
    json_t *j = fleet_to_json(fl, status);
    char *text = json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(10));

    json_decref(j);
    if (text == NULL)
        fatal("out of memory serialising the fleet");
    puts(text);
    free(text);
}

static int exec(int argc, char **argv)
{
    struct opts o = { .z = FLEET_DEFAULT_Z,
                      .min_group = FLEET_DEFAULT_MIN_GROUP,
                      .timeout_ms = DEFAULT_PROM_TIMEOUT_MS,
                      .deadline_ms = DEFAULT_PROM_DEADLINE_MS };
    struct fleet_profile *profiles = NULL;
    struct fleet_opts fo;
    struct cmd_front f;
    struct fleet fl;
    unsigned threads;
    bool html_stdout;
    int rc;

    memset(&fl, 0, sizeof(fl));
    rc = cmd_front_parse(&f, &cmd_fleet, argc, argv, option, &o);
    if (rc != CMD_GO)
        goto out;
    if (o.prometheus != NULL && f.n_operands > 0) {
        cmd_error("fleet", "give --prometheus URL or snapshots, not both");
        rc = cmd_usage_error(&cmd_fleet);
        goto out;
    }
    if (o.prometheus == NULL && f.n_operands == 0) {
        cmd_error("fleet", "nothing to compare: give snapshot files, directories, '-' (a stream "
                           "on standard input) or --prometheus URL");
        rc = cmd_usage_error(&cmd_fleet);
        goto out;
    }
    /* --html -: the page is what standard output holds, alone; the JSON cannot share it. */
    html_stdout = o.html != NULL && strcmp(o.html, "-") == 0;
    if (html_stdout && f.json) {
        cmd_error("fleet", "--html - and --json both write to standard output: give --html a file");
        rc = cmd_usage_error(&cmd_fleet);
        goto out;
    }
    /* Said before the inputs are read or Prometheus is asked (up to --deadline), not after. */
    rc = cmd_check_output("fleet", o.html);
    if (rc != 0)
        goto out;
    rc = read_threads(&threads);
    if (rc != 0)
        goto out;
    rc = load_profiles(&o, &profiles);
    if (rc != 0)
        goto out;
    fo = (struct fleet_opts){ o.z, o.min_group, &f.config.rules, profiles, o.n_profiles, threads };
    fleet_init(&fl, &fo);
    if (o.prometheus) {
        char *cause = NULL;

        if (fleet_read_prometheus(&fl, o.prometheus, o.timeout_ms, o.deadline_ms, &cause) != 0) {
            cmd_error("fleet", "%s: %s", fl.prometheus, cause); /* without its password */
            free(cause);
            rc = EXIT_UNKNOWN;
            goto out;
        }
    } else {
        fleet_read_all(&fl, f.operands, f.n_operands);
        fleet_dedupe(&fl);
    }
    for (size_t i = 0; i < fl.n_errors; i++)
        cmd_error("fleet", "%s: %s", fl.errors[i].source, fl.errors[i].message);
    fleet_judge(&fl);
    rc = fleet_status(&fl);
    if (o.html) {
        char *page = fleet_html(&fl, rc);

        if (cmd_write_output("fleet", o.html, page) != 0)
            rc = EXIT_UNKNOWN;
        free(page);
    }
    if (f.json) {
        print_json(&fl, rc);
    } else if (html_stdout) {
        /* The page was the report; the errors are on standard error as ever. */
    } else if (fl.n == 0 && fl.n_errors > 0) {
        /* Nothing was read: the errors above are the whole answer, not a report of no nodes. */
    } else {
        struct render_out w;

        fleet_print(render_out_begin(&w, stdout, &f.render), &fl, &f.render, o.outliers);
        render_out_end(&w);
    }
    if (cmd_finish_stdout("fleet") != 0)
        rc = EXIT_UNKNOWN;
out:
    fleet_free(&fl);
    for (size_t i = 0; profiles && i < o.n_profiles; i++) {
        free(profiles[i].path);
        profile_free(profiles[i].profile);
    }
    free(profiles);
    free(o.profiles);
    cmd_front_free(&f);
    return rc;
}

const struct cmd cmd_fleet = {
    .name = "fleet",
    .synopsis = "[options] FILE|DIR|- ...\n[options] --prometheus URL",
    .summary = N_("many nodes: which is the odd one out, and why"),
    .about = N_("Compare many nodes: snapshots ('gpudoctor snapshot', 'check --json', 'watch\n"
                "--record') in files, directories or a stream on standard input ('-'), or what a\n"
                "Prometheus server scraping 'gpudoctor serve' holds. Nodes are grouped by GPU\n"
                "model; a node whose clocks, temperature at equal load, PCIe link, XIDs, ECC,\n"
                "versions or findings differ from most of its group (median and MAD, a modified\n"
                "z-score; the majority for counts and versions), or from the --profile of its\n"
                "model, is an outlier. Prints one row per node, then the outliers, ranked, with\n"
                "their figures beside the group's.\n"),
    .options = options,
    /* No --width: the report's lines are rows (a node, a line of evidence beside the group's),
     * aligned in columns and each whole for grep; wrapped they would be neither. */
    .groups = CMD_G_CONFIG | CMD_G_JSON | CMD_G_COLOR | CMD_G_ASCII,
    .max_operands = UINT_MAX,
    .epilogue =
        N_("Exit status: 0 no outlier, 1 outliers, 2 an outlier with a critical deviation (a\n"
           "GPU missing, a critical finding the group does not share), 3 no node could be\n"
           "read, an input could not be read (unless 2), or the Prometheus server could not\n"
           "be asked (within --deadline), 64 usage error. docs/fleet.md lists every figure,\n"
           "the PromQL queries and the JSON.\n"),
    .exec = exec,
};
