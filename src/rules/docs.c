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
          "worse, the text says so. Findings are ranked by severity, then by impact.\n\n"
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
        if (d->max >= 1e9)
            fprintf(out, "| `%s` | %s | %g or more | ", d->name, v, d->min);
        else
            fprintf(out, "| `%s` | %s | %g to %g | ", d->name, v, d->min, d->max);
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
