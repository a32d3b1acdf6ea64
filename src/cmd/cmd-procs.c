/*
 * gpudoctor procs: every process using a GPU, with who runs it, where, what it holds, what it
 * does, and the process rules' verdict on it. Rows, the table, the tree and the JSON are in
 * src/render/procs.c; this file is the command line and the collection.
 */
#include "cmd/cmd.h"
#include "reap/reap.h"
#include "render/procs.h"
#include "util/xalloc.h"

#include <getopt.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

enum {
    OPT_TREE = OPT__COMMON_END,
    OPT_USER,
    OPT_GPU,
    OPT_CONTAINER,
    OPT_SORT,
};

static const struct cmd_option options[] = {
    { "tree", OPT_TREE, no_argument, NULL,
      N_("each GPU process under what started it (launcher, shell, sshd: rows marked "
         "'(no GPU)') and above its workers") },
    { "user", OPT_USER, required_argument, "NAME", N_("only processes of NAME (or uid)") },
    { "gpu", OPT_GPU, required_argument, "N[,N]",
      N_("only processes using GPU N (NVML index; repeatable)") },
    { "container", OPT_CONTAINER, required_argument, "ID",
      N_("only this container (id prefix), pod (UID prefix) or Slurm job (id); 'host' for "
         "processes in none") },
    { "sort", OPT_SORT, required_argument, "KEY", N_("mem (default), sm, cpu, age or pid") },
    { "wide", 'w', no_argument, NULL, N_("do not cut command lines to the width") },
    { NULL, 0, 0, NULL, NULL },
};

struct opts {
    struct procs_filter filter;
    int32_t *gpus;
    size_t n_gpus;
    enum procs_sort sort;
    bool tree, wide;
};

static int option(void *ctx, int key, char *arg)
{
    struct opts *o = ctx;
    size_t k;

    switch (key) {
    case OPT_TREE:
        o->tree = true;
        return 0;
    case OPT_USER:
        o->filter.user = arg;
        return 0;
    case OPT_GPU:
        if (!reap_parse_ints(arg, 0, &o->gpus, &o->n_gpus)) {
            cmd_error("procs", "--gpu: '%s' is not a GPU index or a list of them (0,3)", arg);
            return cmd_usage_error(&cmd_procs);
        }
        return 0;
    case OPT_CONTAINER:
        o->filter.container = arg;
        return 0;
    case OPT_SORT:
        for (k = 0; procs_sort_names[k] && strcmp(procs_sort_names[k], arg) != 0; k++)
            ;
        if (procs_sort_names[k] == NULL) {
            cmd_error("procs", "--sort: '%s' is not one of mem, sm, cpu, age, pid", arg);
            return cmd_usage_error(&cmd_procs);
        }
        o->sort = (enum procs_sort)k;
        return 0;
    case 'w':
        o->wide = true;
        return 0;
    }
    return EXIT_USAGE;
}

static int exec(int argc, char **argv)
{
    struct opts o;
    struct cmd_front f;
    struct snapshot *s = NULL;
    struct facts_judgement *j = NULL;
    struct procs_view v;
    size_t n_j;
    int rc;

    memset(&o, 0, sizeof(o));
    memset(&v, 0, sizeof(v));
    rc = cmd_front_parse(&f, &cmd_procs, argc, argv, option, &o);
    if (rc != CMD_GO)
        goto out;
    o.filter.gpus = o.gpus;
    o.filter.n_gpus = o.n_gpus;
    rc = EXIT_UNKNOWN;
    f.collect.only = (1u << COLLECTOR_NVML) | (1u << COLLECTOR_PROCS);
    s = cmd_front_snapshot(&f);
    if (s == NULL)
        goto out;
    if (!f.from && s->collectors[COLLECTOR_PROCS].state != CS_OK &&
        s->collectors[COLLECTOR_PROCS].state != CS_PARTIAL &&
        s->collectors[COLLECTOR_NVML].state != CS_OK) {
        const struct collector_status *c = &s->collectors[COLLECTOR_PROCS];

        cmd_error("procs", "could not read the processes (%s%s%s) nor NVML",
                  _(collector_state_words[c->state]), c->detail ? ": " : "",
                  c->detail ? collector_detail_text(c) : "");
        goto out;
    }
    n_j = facts_judge_snapshot(s, NULL, &f.config.rules.th, &j);
    procs_view_build(&v, s, j, n_j, &o.filter, o.sort, o.tree);
    rc = EXIT_HEALTHY;
    if (f.json) {
        json_t *doc = procs_render_json(&v, s);
        char *text = json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(10));

        json_decref(doc);
        if (text == NULL)
            fatal("out of memory serialising the process list");
        puts(text); /* a failure is in stdout's error flag: cmd_finish_stdout says it */
        free(text);
    } else {
        struct render_out w;

        procs_render_table(render_out_begin(&w, stdout, &f.render), &v, s, &f.render,
                           o.wide ? 100000 : f.render.width);
        render_out_end(&w);
    }
    if (cmd_finish_stdout("procs") != 0)
        rc = EXIT_UNKNOWN;
out:
    procs_view_free(&v);
    free(j);
    snapshot_free(s);
    cmd_front_free(&f);
    free(o.gpus);
    return rc;
}

const struct cmd cmd_procs = {
    .name = "procs",
    .synopsis = "[options]",
    .summary = N_("every GPU process: who, where, how much, what it does, a verdict"),
    .about = N_("Every process using a GPU: pid, user, container or job, GPUs, GPU memory, SM %,\n"
                "CPU %, state, age, and a verdict (active, idle, idle-holder, stopped, defunct,\n"
                "orphaned, not-visible, unknown) from the same tests as 'gpudoctor check'.\n"
                "--window is what CPU % and idleness are measured over (0: neither).\n"),
    .options = options,
    .groups = CMD_G_COLLECT | CMD_G_FROM | CMD_G_CONFIG | CMD_G_JSON | CMD_G_COLOR | CMD_G_WIDTH |
              CMD_G_ASCII,
    .window_ms = 1000, /* enough for CPU % and idleness, short enough to wait for */
    .epilogue = N_("Exit status: 0 listed (even when nothing uses a GPU), 3 could not collect or\n"
                   "write, 64 usage error. 'gpudoctor reap' ends stale processes safely.\n"),
    .exec = exec,
};
