#!/usr/bin/env bash
# An nvidia-bug-report.log's times (its "Date:" line, nvidia-smi's timestamps, the kernel log's
# syslog stamps) are the wall clock of the machine it was taken on; only the date names a zone.
# A zone whose offset the name gives (UTC, GMT, tzdata's numeric "+08", "+0530") places them all
# in it: the snapshot's time and a kernel-log event's are the same whatever this machine's TZ, and
# the event's age holds. An abbreviation such as CST (China's +08, or US Central's -06) gives no
# offset: the times are read in this machine's zone, as before, and a note says they may be hours
# off; the age still holds. TZ is given back after the import.
set -uo pipefail
command -v jq >/dev/null || { echo "SKIP: jq not installed"; exit 77; }
: "${GPUDOCTOR:?}" "${SRC:?}"
export GPUDOCTOR_CONFIG=/dev/null NO_COLOR=1 LANG=C.UTF-8
. "$SRC/tests/e2e/lib.bash"
LOG=$SRC/tests/import/bug-report/r384-4x1080ti-2017.log
# report ZONE: the 2017 report (dated 10:55:12, nvidia-smi's last timestamp 10:55:30) with its
# date in ZONE and an Xid 79 in the kernel log two hours before
report() {
    sed -e "s/^Date: Thu Sep  7 10:55:12 CST 2017\$/Date: Thu Sep  7 10:55:12 $1 2017/" \
        -e '/^  journalctl -b -0:$/a Sep 07 08:55:30 gpu-8-server-intesight kernel: NVRM: Xid (PCI:0000:05:00): 79, pid=0, GPU has fallen off the bus.' \
        "$LOG" >"$tmp/r.log"
    grep -q "^Date: Thu Sep  7 10:55:12 $1 2017\$" "$tmp/r.log" || fail "$1: the date was not set"
}
# seen TZ: the snapshot's time, the Xid's time, the notes on the time zone, one line
seen() {
    TZ=$1 "$GPUDOCTOR" snapshot --from "$tmp/r.log" 2>/dev/null | jq -c '[.time_ms,
        [.driver.events[] | select(.xid == 79) | .time_ms][0],
        [.collectors.host.notes[] | select(test("time zone")) | sub("^[^ ]*: "; "")]]'
}
# age TZ: how long ago check --from says the Xid was
age() {
    TZ=$1 "$GPUDOCTOR" check --from "$tmp/r.log" 2>/dev/null | grep -o 'kernel log [^:]* ago' | head -1
}

# 10:55:30 at +08 is 02:55:30 UTC (1504752930), the Xid 00:55:30 UTC
for zone in +08 +0800; do
    report "$zone"
    for tz in UTC America/Chicago Asia/Kolkata; do
        check "$zone, TZ=$tz" "$(seen $tz)" '[1504752930000,1504745730000,[]]'
        check "$zone, TZ=$tz: the age" "$(age $tz)" "kernel log 2h ago"
    done
done
# at +0530: 05:25:30 UTC; at -03: 13:55:30 UTC
report +0530
check "+0530, TZ=America/Chicago" "$(seen America/Chicago)" '[1504761930000,1504754730000,[]]'
report -03
check "-03, TZ=Asia/Shanghai" "$(seen Asia/Shanghai)" '[1504792530000,1504785330000,[]]'
# UTC and GMT: 10:55:30 UTC
for zone in UTC GMT; do
    report "$zone"
    for tz in UTC America/Chicago; do
        check "$zone, TZ=$tz" "$(seen $tz)" '[1504781730000,1504774530000,[]]'
    done
done

# CST: read in this machine's zone, as the report's other times are, and said
report CST
NOTE="the report's date names the time zone \"CST\", whose offset from UTC the name does not give: its times (the date, nvidia-smi's, the kernel log's) are read in this machine's time zone, and may be hours off; the kernel-log events' ages hold"
check "CST, TZ=UTC" "$(seen UTC)" "[1504781730000,1504774530000,[$(jq -cn --arg n "$NOTE" '$n')]]"
check "CST, TZ=Asia/Shanghai" "$(seen Asia/Shanghai)" "[1504752930000,1504745730000,[$(jq -cn --arg n "$NOTE" '$n')]]"
for tz in UTC America/Chicago; do
    check "CST, TZ=$tz: the age" "$(age $tz)" "kernel log 2h ago"
done

# TZ given back: a kernel log imported after the +08 report is read in this machine's zone
# (08:00 in Chicago's summer time, -05, is 13:00 UTC)
report +08
echo 'Sep 07 08:00:00 other kernel: NVRM: Xid (PCI:0000:09:00): 31, pid=1, Ch 00000010, intr 10000000. MMU Fault' >"$tmp/k.log"
check "+08 report, then a kernel log" \
    "$(TZ=America/Chicago "$GPUDOCTOR" snapshot --from "$tmp/r.log" --from "$tmp/k.log" 2>/dev/null |
        jq -c '[.driver.events[] | select(.xid == 31) | .time_ms]')" '[1504789200000]'

e2e_done "ok"
