#!/usr/bin/env bash
# Regenerates root/ for scenario.json: a 16-core, 64 GiB workstation-class host whose training
# job (pid 48211, GPU 0) and its data loaders have used up the RAM: 1.2 % available, 7 of 8 GiB
# of swap used, tasks stalled on memory 38 % and on I/O 31 % of the last 10 s (PSI avg10).
# Swap and disk rates need two readings of counters that a fixture does not change, so the case
# runs with check-scenarios' --window 0 and the rules read the kernel's PSI averages.
set -euo pipefail
cd "$(dirname "$0")"
. ../make-root.lib.sh
host_base 16
mkdir -p root/home/bob/train
cat >root/proc/meminfo <<'EOP'
MemTotal:       65854464 kB
MemFree:          301244 kB
MemAvailable:     790252 kB
Buffers:            2048 kB
Cached:           612344 kB
SwapCached:       402112 kB
SwapTotal:       8388604 kB
SwapFree:        1183744 kB
EOP
printf 'pswpin 18234567\npswpout 25123456\n' >root/proc/vmstat
printf 'some avg10=38.12 avg60=31.40 avg300=22.05 total=912345678\nfull avg10=21.50 avg60=17.20 avg300=11.90 total=512345678\n' \
    >root/proc/pressure/memory
printf 'some avg10=31.44 avg60=27.80 avg300=19.10 total=812345678\nfull avg10=18.02 avg60=15.30 avg300=10.20 total=412345678\n' \
    >root/proc/pressure/io
printf '9.85 9.40 8.10 14/612 61234\n' >root/proc/loadavg

proc 1 systemd S 0 0 0 60 1 12000 / -- /sbin/init
proc 48211 python R 1 1001 3610 21000 48 52000000 /home/bob/train -- \
    /usr/bin/python3 train.py --workers 12 --cache-dataset-in-ram
gpu 48211 0
for w in $(seq 1 12); do
    proc $((48300 + w)) python S 48211 1001 3620 900 4 900000 /home/bob/train -- \
        /usr/bin/python3 train.py --workers 12 --cache-dataset-in-ram
done
echo "root/ regenerated"
