/*
 * pcie.demo-always: the example rule of docs/architecture.md ("How to add a rule"); it reports
 * one info finding on every snapshot. tests/e2e/howto.sh adds it to a copy of the tree.
 */
#include "rules/rule-impl.h"

static void check_always(const struct rule_ctx *ctx, struct findings *out)
{
    struct finding *f = finding_new(ctx, out, -1, -1);

    finding_title(f, "The example rule ran");
    finding_evidence(f, "pcie.demo-always reports on every snapshot");
}

const struct rule rule_pcie_demo_always = {
    .id = "pcie.demo-always",
    .severity = SEV_INFO,
    .category = CAT_PCIE,
    .title = "The example rule ran",
    .explanation = "The example rule of docs/architecture.md, added by its recipe to a copy of "
                   "the tree to prove the recipe: it says nothing about this machine, and "
                   "exists nowhere else.",
    .detection = "Always: one finding on every snapshot, whatever it holds.",
    .fix = "Nothing to fix: remove the rule from the copy of the tree.",
    .thresholds = NO_THRESHOLDS,
    .check = check_always,
};
