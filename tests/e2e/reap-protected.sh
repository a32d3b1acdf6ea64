#!/usr/bin/env bash
# Protected programs are never touched by a policy, only when named by pid: a copy of sleep
# named nvidia-persistenced (its command name is cut to "nvidia-persiste" by the kernel), and a
# sleep started as "Xorg" (argv[0] only), both stopped so that --stopped selects them.
. "$SRC/tests/e2e/reap-lib.bash"

cp "$(command -v sleep)" "$TMP/nvidia-persistenced"
"$HELPERS/reap-target" holder "$TMP/nvidia-persistenced" 300 &
persistenced=$!
PIDS+=("$persistenced")
became "$persistenced" nvidia-persiste
"$HELPERS/reap-target" holder bash -c 'exec -a Xorg sleep 300' &
xorg=$!
PIDS+=("$xorg")
became "$xorg" sleep
kill -STOP "$persistenced" "$xorg"
start_sleep
plain=$SPAWNED
kill -STOP "$plain"
scenario "$persistenced:0:1" "$xorg:1:1" "$plain:1:2"
sleep 0.1

run policy reap --stopped --kill --yes --window 0.3 --json
status 2 "protected processes selected by a policy: refused for safety"
check "[.targets[] | select(.pid == $persistenced) | [.disposition, .refusal]]" \
    '[["refused", "protected"]]' "$TMP/policy.out"
check "[.targets[] | select(.pid == $xorg) | [.disposition, .refusal]]" \
    '[["refused", "protected"]]' "$TMP/policy.out"
check "[.targets[] | select(.pid == $persistenced) | .advice[0] | test(\"^protected: nvidia-persistenced \\\\(keeps the driver initialised\")]" \
    '[true]' "$TMP/policy.out"
# The one that is not protected went; the protected ones are untouched (still stopped).
check "[.targets[] | select(.pid == $plain) | .result.outcome]" '["exited"]' "$TMP/policy.out"
[ "$(state_of "$persistenced")" = T ] || fail "nvidia-persistenced was touched: $(state_of "$persistenced")"
[ "$(state_of "$xorg")" = T ] || fail "Xorg was touched: $(state_of "$xorg")"
! grep -q "pid=$persistenced \|pid=$xorg " "$TMP/policy.err" || fail "a protected process was signalled: $(cat "$TMP/policy.err")"

# A filter is not a name: --name selects, the protection stands.
run byname reap --stopped --name 'nvidia-*' --kill --yes --window 0.3
status 2 "--name does not lift the protection"
has_line "$TMP/byname.out" "refused: protected: nvidia-persistenced" "text refusal"
[ "$(state_of "$persistenced")" = T ] || fail "nvidia-persistenced was touched by --name"

# Named by pid: the operator means it.
run named reap --pid "$persistenced" --kill --yes --window 0.3 --json
status 0 "named protected process"
check '[.targets[] | [.pid, .named, .disposition, .result.outcome]]' \
    "[[$persistenced, true, \"signal\", \"exited\"]]" "$TMP/named.out"
gone "$persistenced" || fail "named nvidia-persistenced is still there"
[ "$(state_of "$xorg")" = T ] || fail "Xorg was touched when another pid was named"
finish
