/*
 * gpudoctor profile: the node's expected hardware (rules/profile.h). `profile save` writes what
 * this node (or a snapshot) has as a [profile] section, to put into /etc/gpudoctor.conf or give
 * to `gpudoctor fleet --profile`; `profile show` prints the profile the configuration holds and
 * where each key was set. `gpudoctor check` reports every deviation as a profile.* finding.
 */
#include "cmd/cmd.h"
#include "rules/profile.h"
#include "rules/rules.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_OUTPUT = 'o' };

static const struct cmd_option options[] = {
    { "output", OPT_OUTPUT, required_argument, "FILE",
      N_("save: write the profile to FILE (atomically) instead of standard output") },
    { NULL, 0, 0, NULL, NULL },
};

struct opts {
    const char *output;
};

static int option(void *ctx, int key, char *arg)
{
    struct opts *o = ctx;

    if (key == OPT_OUTPUT) {
        o->output = arg;
        return 0;
    }
    return EXIT_USAGE;
}

static int save(struct cmd_front *f, const struct opts *o)
{
    struct profile_facts facts;
    struct profile *p;
    struct snapshot *s;
    char **notes = NULL, when[40], *header, *text;
    size_t n_notes = 0;
    int rc = EXIT_HEALTHY;

    /* What a profile holds comes from NVML, the PCI bus, the driver, InfiniBand and Fabric
     * Manager (its version: the fabric collector's, which check reads too): no scan of every
     * process's files. */
    if (!cmd_front_given(f, OPT_ONLY))
        f->collect.only = (1u << COLLECTOR_NVML) | (1u << COLLECTOR_PCIE) |
                          (1u << COLLECTOR_DRIVER) | (1u << COLLECTOR_IB) |
                          (1u << COLLECTOR_FABRIC);
    rc = cmd_check_output("profile", o->output);
    if (rc != 0)
        return rc;
    s = cmd_front_snapshot(f);
    if (s == NULL)
        return EXIT_UNKNOWN;
    profile_facts_from_snapshot(&facts, s);
    p = profile_from_facts(&facts, &notes, &n_notes);
    profile_facts_free(&facts);
    if (p == NULL) {
        struct findings none = { 0 };
        char *why = rules_cannot_check(s, &none, true);

        cmd_error("profile", "nothing to save: no GPU could be read%s%s", why ? ": " : "",
                  why ? why : "");
        free(why);
        snapshot_free(s);
        return EXIT_UNKNOWN;
    }
    for (size_t i = 0; i < n_notes; i++) {
        cmd_error("profile", "%s", notes[i]);
        free(notes[i]);
    }
    free(notes);
    time_format_iso(s->time_ms, when, sizeof(when));
    header = xasprintf("# The expected hardware of %s, saved by gpudoctor %s at %s.\n"
                       "# In /etc/gpudoctor.conf (or a file given with --config), 'gpudoctor "
                       "check' reports\n"
                       "# every deviation as a profile.* finding; 'gpudoctor fleet --profile "
                       "FILE' judges\n"
                       "# nodes of this GPU model by it. docs/config.md describes the keys.\n",
                       s->hostname ? s->hostname : "this node", GPUDOCTOR_VERSION, when);
    text = profile_format(p, header);
    if (cmd_write_output("profile", o->output, text) != 0)
        rc = EXIT_UNKNOWN;
    free(text);
    free(header);
    profile_free(p);
    snapshot_free(s);
    return rc;
}

static int show(const struct cmd_front *f)
{
    const struct profile *p = f->config.profile;

    if (p == NULL || profile_empty(p)) {
        if (f->config.path)
            printf(_("No profile: %s has no [profile] section.\n"), f->config.path);
        else
            fputs(_("No profile: no configuration file was read.\n"), stdout);
        fputs(_("'gpudoctor profile save' writes one from a known-good node (docs/config.md).\n"),
              stdout);
        return cmd_finish_stdout("profile") == 0 ? EXIT_HEALTHY : EXIT_UNKNOWN;
    }
    for (int k = 0; k < PK__COUNT; k++) {
        const struct profile_key_def *def = &profile_keys[k];
        char v[300];

        if (!p->set[k]) {
            printf(_("  %-22s (not set)\n"), def->name);
            continue;
        }
        profile_value(p, k, v, sizeof(v));
        printf("  %-22s %s%s%s", def->name, v, *def->unit ? " " : "", def->unit);
        if (p->origin[k])
            printf("   (%s)", p->origin[k]);
        putchar('\n');
    }
    return cmd_finish_stdout("profile") == 0 ? EXIT_HEALTHY : EXIT_UNKNOWN;
}

static int exec(int argc, char **argv)
{
    struct opts o = { NULL };
    struct cmd_front f;
    int rc;

    rc = cmd_front_parse(&f, &cmd_profile, argc, argv, option, &o);
    if (rc != CMD_GO)
        goto out;
    if (f.n_operands != 1 ||
        (strcmp(f.operands[0], "save") != 0 && strcmp(f.operands[0], "show") != 0)) {
        if (f.n_operands)
            cmd_error("profile", "'%s' is not save or show", f.operands[0]);
        else
            cmd_error("profile", "say what to do: save or show");
        rc = cmd_usage_error(&cmd_profile);
        goto out;
    }
    if (strcmp(f.operands[0], "show") == 0) {
        if (o.output || f.from ||
            (f.given & ~((1u << (OPT_CONFIG - OPT_ROOT)) | (1u << (OPT_SET - OPT_ROOT))))) {
            cmd_error("profile", "show takes only --config and --set");
            rc = cmd_usage_error(&cmd_profile);
            goto out;
        }
        rc = show(&f);
    } else {
        rc = save(&f, &o);
    }
out:
    cmd_front_free(&f);
    return rc;
}

const struct cmd cmd_profile = {
    .name = "profile",
    .synopsis = "save [-o FILE] [--from SNAPSHOT] [options]\nshow [--config FILE]",
    .summary = N_("the node's expected hardware: save it from a good node, show it"),
    .about = N_("An expected-hardware profile says what a node must have: GPU count and model,\n"
                "memory per GPU, PCIe generation and width, NVLink links, InfiniBand ports and\n"
                "rate, driver, CUDA and Fabric Manager versions, VBIOS. 'save' writes what this\n"
                "node (or --from a snapshot) has as a [profile] section; 'show' prints the\n"
                "profile of the configuration. With a profile in /etc/gpudoctor.conf,\n"
                "'gpudoctor check' reports every deviation as a profile.* finding (a missing GPU\n"
                "is critical); 'gpudoctor fleet --profile FILE' judges nodes by it.\n"),
    .options = options,
    .groups = CMD_G_COLLECT | CMD_G_ONLY | CMD_G_FROM | CMD_G_CONFIG,
    .window_ms = 0,
    .max_operands = 1,
    .epilogue = N_("Exit status: 0 saved or shown, 3 nothing could be read (or written), 64 usage\n"
                   "error. docs/config.md describes the [profile] keys.\n"),
    .exec = exec,
};
