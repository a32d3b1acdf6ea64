#!/usr/bin/env bash
# Writes po/gpudoctor.pot from the sources named in po/POTFILES and the prose columns of the
# catalogues in data/ (run after changing a marked string or a catalogue's text, then merge it into
# every .po: msgmerge -U po/LANG.po po/gpudoctor.pot). tests/e2e/i18n.sh fails when the committed
# .pot is not what this writes.
#   po/update-pot.sh [OUT]   (default po/gpudoctor.pot)
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-po/gpudoctor.pot}
mapfile -t files < <(grep -v '^#' po/POTFILES | grep .)
# The catalogues' columns whose text the rules show people through _() (rules-xid.c): FILE:COLUMNS.
# Their other columns are identifiers (RESET_GPU, nverror names, SXid names) and stay as they are.
tsv_text=(data/xid.tsv:meaning,typical_cause,recommended_action data/xid-nvlink5.tsv:effect
    data/cuda-errors.tsv:meaning)
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
# _() and N_() mark text for people; L_(people, s) is _() for people and the English for --json;
# C_(context, s) is _() with a msgctxt;
# the finding_* helpers format a rule's title, evidence and fix lines, rule_skip what it could not
# check (rules/finding.c); cmd_error translates its message (cmd/cmd-common.c), collector_set and
# collector_note keep a collector's detail and notes in both languages (snapshot/snapshot.c),
# reap's plan keeps each of its lines in both languages (reap/plan.c, reap/safety.c), and so does
# the detail of each result (conclude, reap/signal.c).
xgettext --language=C --from-code=UTF-8 --add-comments=TRANSLATORS: --sort-by-file --add-location=file \
    --package-name=gpudoctor --msgid-bugs-address= --no-wrap \
    --keyword=_ --keyword=N_ --keyword=P_:1,2 --keyword=L_:2 --keyword=C_:1c,2 \
    --keyword=finding_title:2 --flag=finding_title:2:c-format --keyword=TWICE:1 --flag=TWICE:1:c-format --keyword=TWICE_N:1,2 --flag=TWICE_N:1:c-format --flag=TWICE_N:2:c-format \
    --keyword=finding_evidence:2 --flag=finding_evidence:2:c-format \
    --keyword=finding_fix:2 --flag=finding_fix:2:c-format \
    --keyword=rule_skip:4 --flag=rule_skip:4:c-format \
    --keyword=cmd_error:2 --flag=cmd_error:2:c-format \
    --keyword=collector_set:3 --flag=collector_set:3:c-format \
    --keyword=collector_note:2 --flag=collector_note:2:c-format \
    --keyword=NOTE_N:2 --flag=NOTE_N:2:c-format \
    --keyword=confirm:1 --flag=confirm:1:c-format \
    --keyword=tui_message:3 --flag=tui_message:3:c-format \
    --keyword=set_why:2 --flag=set_why:2:c-format --keyword=evidence:2 --flag=evidence:2:c-format \
    --keyword=advice:2 --flag=advice:2:c-format --keyword=note:2 --flag=note:2:c-format \
    --keyword=say:4 --flag=say:4:c-format --keyword=conclude:5 --flag=conclude:5:c-format \
    --flag=xasprintf:1:c-format --flag=L_:2:c-format \
    -o "$out" "${files[@]}"
# The catalogues' entries after the sources' (msgcat keeps xgettext's header and order).
po/tsv2pot.py "$tmp" "${tsv_text[@]}"
msgcat --use-first --no-wrap -o "$out" "$out" "$tmp"
