#include "rules/docs.h"
#include "rules/rules.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>

static FILE *open_buffer(char **buf, size_t *len)
{
    FILE *f = open_memstream(buf, len);

    if (f == NULL)
        fatal("out of memory opening a string stream");
    return f;
}

static char *close_buffer(FILE *f, char **buf)
{
    if (fclose(f) != 0)
        fatal("out of memory writing documentation");
    return *buf;
}

static void threshold_list(FILE *out, const struct rule *r)
{
    if (r->thresholds[0] == TH__COUNT)
        return;
    fputs("**Thresholds:** ", out);
    for (size_t k = 0; r->thresholds[k] != TH__COUNT; k++) {
        char v[48];

        threshold_format(v, sizeof(v), r->thresholds[k], threshold_defs[r->thresholds[k]].def);
        fprintf(out, "%s`%s` (default %s)", k ? ", " : "", threshold_defs[r->thresholds[k]].name,
                v);
    }
    fputs(" — see [config.md](config.md).\n\n", out);
}

static void link_line(FILE *out, const struct rule *cause, const struct rule_link *l)
{
    fprintf(out, "| [`%s`](#%s) | [`%s`](#%s) | %s | %s | %s | %s |\n", cause->id, cause->id,
            l->rule_id, l->rule_id, link_scope_names[l->scope], l->when ? l->when : "always",
            l->how, l->fix == LINK_FIX_IN_CAUSE ? "the cause's" : "its own, after the cause's");
}

/* Every link of the table: the chains a report can show. */
static void known_chains(FILE *out)
{
    fputs("## Known chains: causes and consequences\n\n"
          "Some findings are consequences of another: an uncorrectable memory error wedges the "
          "driver, so NVML hangs; a GPU lost from the bus is missing from NVML's list. When both "
          "are found, the report puts the cause first, followed by what it explains; each "
          "consequence says `caused by #N` (text) or carries `caused_by` (JSON, where every "
          "finding has a `number` and the list of numbers it `explains`), and the verdict line "
          "names the cause. A group of cause and consequences ranks by the worst severity and "
          "impact in it. A consequence has one cause (the first in ranking order that explains "
          "it); links never form a circle. Where a link depends on the evidence, the cause's "
          "finding declares it.\n\n"
          "This is not *gives way to* (`yields_to`): a finding that gives way says the same thing "
          "again as a more specific one and is dropped; a consequence is true on its own, with its "
          "own fixes, and stays in the report.\n\n"
          "A consequence's fixes come after a line pointing at its cause's fix, which may clear "
          "it. Where the cause's fix is the consequence's too, and its own would only repeat it or "
          "cannot work before it (restarting Fabric Manager while an NVSwitch is not probed), the "
          "consequence shows only that pointer (the *fix* column says \"the cause's\"; JSON "
          "marks it `fix_in_cause` and keeps its fixes in `fix`).\n\n"
          "| cause | explains | scope | when | how | fix |\n|---|---|---|---|---|---|\n",
          out);
    for (size_t i = 0; i < n_rules; i++) {
        for (size_t k = 0; rule_table[i]->explains && rule_table[i]->explains[k].rule_id; k++)
            link_line(out, rule_table[i], &rule_table[i]->explains[k]);
    }
    fputs("\n", out);
}

/* A rule's own links, both ways. */
static void link_list(FILE *out, const struct rule *r)
{
    bool first = true;

    for (size_t k = 0; r->explains && r->explains[k].rule_id; k++) {
        const struct rule_link *l = &r->explains[k];

        fprintf(out, "%s[`%s`](#%s) (%s%s%s)", first ? "**Explains:** " : "; ", l->rule_id,
                l->rule_id, link_scope_names[l->scope], l->when ? ", when " : "",
                l->when ? l->when : "");
        first = false;
    }
    if (!first)
        fputs(" — ranked after this finding, marked as caused by it.\n\n", out);
    first = true;
    for (size_t i = 0; i < n_rules; i++) {
        const struct rule_link *l = rule_link_find(rule_table[i], r);

        if (l == NULL)
            continue;
        fprintf(out, "%s[`%s`](#%s) (%s)", first ? "**Can be caused by:** " : ", ",
                rule_table[i]->id, rule_table[i]->id, link_scope_names[l->scope]);
        first = false;
    }
    if (!first)
        fputs(".\n\n", out);
}

char *rules_markdown(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_buffer(&buf, &len);

    fputs("# The rule catalogue\n\n"
          "Every diagnosis `gpudoctor check` makes, generated from the rule table in `src/rules/` "
          "by `gpudoctor explain --markdown` (a unit test fails when this file and the table "
          "disagree: regenerate it, do not edit it by hand). `gpudoctor explain ID` prints one "
          "entry with the thresholds in force.\n\n"
          "A rule's severity is the usual one; where the evidence makes a finding milder or "
          "worse, the text says so. Findings are ranked by severity, then by impact, except "
          "that a cause comes first, followed by what it explains (below).\n\n",
          out);
    known_chains(out);
    fputs("## The rules\n\n"
          "| id | severity | category | what it finds |\n"
          "|---|---|---|---|\n",
          out);
    for (size_t i = 0; i < n_rules; i++)
        fprintf(out, "| [`%s`](#%s) | %s | %s | %s |\n", rule_table[i]->id, rule_table[i]->id,
                severity_names[rule_table[i]->severity], category_names[rule_table[i]->category],
                rule_table[i]->title);
    for (size_t i = 0; i < n_rules; i++) {
        const struct rule *r = rule_table[i];

        fprintf(out, "\n<a id=\"%s\"></a>\n## %s\n\n", r->id, r->id);
        fprintf(out, "**%s** · %s · %s\n\n", severity_names[r->severity],
                category_names[r->category], r->title);
        fprintf(out, "%s\n\n", r->explanation);
        fprintf(out, "**How it is detected.** %s\n\n", r->detection);
        threshold_list(out, r);
        if (r->yields_to) {
            fputs("**Gives way to:** ", out);
            for (size_t k = 0; r->yields_to[k]; k++)
                fprintf(out, "%s[`%s`](#%s)", k ? ", " : "", r->yields_to[k], r->yields_to[k]);
            fputs(" — a finding of one of those about the same GPU replaces this one.\n\n", out);
        }
        link_list(out, r);
        fprintf(out, "**How to fix it.** %s\n", r->fix);
    }
    return close_buffer(out, &buf);
}

char *thresholds_markdown(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_buffer(&buf, &len);

    fprintf(out, "%s\n\n| key | default | range | used by | meaning |\n|---|---|---|---|---|\n",
            THRESHOLDS_BEGIN);
    for (int id = 0; id < TH__COUNT; id++) {
        const struct threshold_def *d = &threshold_defs[id];
        char v[48];
        bool first = true;

        threshold_format(v, sizeof(v), id, d->def);
        fprintf(out, "| `%s` | %s | ", d->name, v);
        if (d->least > 0)
            fprintf(out, "%g, or ", d->min);
        if (d->max >= 1e9)
            fprintf(out, "%g or more | ", d->least > 0 ? d->least : d->min);
        else
            fprintf(out, "%g to %g | ", d->least > 0 ? d->least : d->min, d->max);
        for (size_t i = 0; i < n_rules; i++) {
            for (size_t k = 0; rule_table[i]->thresholds[k] != TH__COUNT; k++) {
                if ((int)rule_table[i]->thresholds[k] == id) {
                    fprintf(out, "%s`%s`", first ? "" : ", ", rule_table[i]->id);
                    first = false;
                }
            }
        }
        fprintf(out, " | %s |\n", d->help);
    }
    fprintf(out, "\n%s\n", THRESHOLDS_END);
    return close_buffer(out, &buf);
}
