#!/usr/bin/env bash
# Alerts of watch against simulated episodes: each episode fires its command exactly once and
# clears exactly once; two episodes fire twice; a condition shorter than its `for` never fires;
# a finding alert follows its finding; the command gets the alert in GPUDOCTOR_ALERT_* and its
# arguments as written (no shell); a command that hangs is killed and never holds watch up.
. "$(dirname "$0")/watch-lib.sh"

spawn_job
# One GPU, 61 °C but 95 °C from 2 s to 5 s (past both its slowdown, 89 °C, and its shutdown
# temperature, 92 °C: clock.thermal-slowdown is critical); 600 W but 700 W from 2 s to 4 s and from
# 6 s to 8 s (two episodes). No clock event reasons in the episode: read at another instant than
# the temperature, they could raise the finding at 61 °C, as a warning, one sample early.
leak_scenario "$TMP/base.json" "$JOB" 0
jq '.gpus[0].power_mw = 600000
    | .timeline = [
      { gpu: 0, field: "temp_c", from_s: 2, to_s: 5, value: 95 },
      { gpu: 0, field: "power_mw", from_s: 2, to_s: 4, value: 700000 },
      { gpu: 0, field: "power_mw", from_s: 6, to_s: 8, value: 700000 } ]' \
    "$TMP/base.json" >"$TMP/s.json"
export NVML_SIM_SCENARIO=$TMP/s.json

cat >"$TMP/hook" <<EOF
#!/bin/sh
echo "\$1|\$GPUDOCTOR_ALERT_STATE|\$GPUDOCTOR_ALERT_ID|\$GPUDOCTOR_ALERT_GPU|\$GPUDOCTOR_ALERT_PID|\$GPUDOCTOR_ALERT_SEVERITY|\$GPUDOCTOR_ALERT_VALUE|\$GPUDOCTOR_ALERT_SPEC|\$GPUDOCTOR_ALERT_TITLE|\$2" >>"$TMP/alerts"
EOF
chmod +x "$TMP/hook"

start=$SECONDS
"$GPUDOCTOR" watch --plain -n 0.2 -c 60 --window 1s \
    --alert "temp_c>90:$TMP/hook temp \$HOME;*" \
    --alert "power_w>650:$TMP/hook power" \
    --alert "clock.thermal-slowdown:$TMP/hook finding" \
    --alert "temp_c>90 for 10s:$TMP/hook long" \
    --alert "temp_c>90 for 1s:/bin/sleep 37" --alert-timeout 1s \
    >"$TMP/out" 2>"$TMP/err"
rc=$?
took=$((SECONDS - start))
[ "$rc" -eq 0 ] || fail "exit status $rc: $(head -c 300 "$TMP/err")"
touch "$TMP/alerts"

count() { grep -c "^$1|$2|" "$TMP/alerts"; }
# One temperature episode: one firing, one clear, in that order.
[ "$(count temp firing)" -eq 1 ] || fail "temp: $(count temp firing) firings: $(cat "$TMP/alerts")"
[ "$(count temp cleared)" -eq 1 ] || fail "temp: $(count temp cleared) clears"
grep "^temp|" "$TMP/alerts" | sed -n 1p | grep '^temp|firing|' >/dev/null || fail "temp cleared first"
# What the command was told.
fire=$(grep '^temp|firing|' "$TMP/alerts")
IFS='|' read -r _ state id gpu pid sev value spec title arg <<<"$fire"
[ "$id" = temp_c ] || fail "ID $id"
[ "$gpu" = 0 ] || fail "GPU $gpu"
[ -z "$pid" ] || fail "PID $pid"
[ "$sev" = warning ] || fail "SEVERITY $sev"
[ "$value" = 95 ] || fail "VALUE $value"
[ "$spec" = 'temp_c>90' ] || fail "SPEC $spec"
[ "$title" = 'GPU 0 temp_c 95 °C > 90' ] || fail "TITLE $title"
[ "$arg" = '$HOME;*' ] || fail "the argument went through a shell: $arg"
IFS='|' read -r _ _ _ _ _ _ value _ title _ <<<"$(grep '^temp|cleared|' "$TMP/alerts")"
[ "$value" = 61 ] || fail "clear VALUE $value"
[ "$title" = 'GPU 0 temp_c back to 61 °C' ] || fail "clear TITLE $title"

# Two power episodes: two firings, two clears.
[ "$(count power firing)" -eq 2 ] || fail "power: $(count power firing) firings"
[ "$(count power cleared)" -eq 2 ] || fail "power: $(count power cleared) clears"

# A finding alert: the rule's episode, about GPU 0.
[ "$(count finding firing)" -eq 1 ] || fail "finding: $(count finding firing) firings"
[ "$(count finding cleared)" -eq 1 ] || fail "finding: $(count finding cleared) clears"
grep '^finding|firing|' "$TMP/alerts" | grep '|clock.thermal-slowdown|0||critical|' >/dev/null ||
    fail "finding alert: $(grep '^finding|firing|' "$TMP/alerts")"

# Three seconds is shorter than "for 10s": never.
[ "$(grep -c '^long|' "$TMP/alerts")" -eq 0 ] || fail "the 'for 10s' alert fired"

# The hanging command was killed after its timeout, and watch kept its pace.
[ "$took" -le 25 ] || fail "60 readings at 0.2 s took $took s"
pgrep -f '^/bin/sleep 37$' >/dev/null && fail "the hanging alert command is still running"
grep -q '^# .* alert command: alert temp_c (firing) /bin/sleep ran too long and was killed by signal 15' \
    "$TMP/out" || fail "the kill was not reported: $(grep '^#' "$TMP/out" | tail -3)"
# --plain says when alerts fire and clear.
grep -q '^# .* alert firing temp_c gpu=0: GPU 0 temp_c 95 °C > 90' "$TMP/out" ||
    fail "no '# alert firing' line: $(grep alert "$TMP/out" | head -3)"
grep -q '^# .* alert cleared temp_c gpu=0' "$TMP/out" || fail "no '# alert cleared' line"
finish
