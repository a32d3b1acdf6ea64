#!/usr/bin/env bash
# The host section from fixture trees, through the command line: values, window semantics,
# notes for what is missing or malformed.
. "$SRC/tests/fixtures/host/e2e.bash"

# A 5.15 server, one reading: values read, rates null (no window).
snap "$HOST_FIX/server" --only host
check '.collectors.host.state' '"partial"'
check '.collectors.host.notes' '["OOM kills unknown: the kernel log was not read (kernel_log: not_run)"]'
check '.host.cpus' '4'
check '[.host.load1, .host.load5, .host.load15]' '[3.5, 2.25, 1.0]'
check '.host.kernel_release' '"5.15.0-91-generic"'
check '.host.uptime_s' '86400.25'
check '.host.mem_total_bytes' "$((263840476 * 1024))"
check '.host.mem_available_bytes' "$((4194304 * 1024))"
check '.host.swap_total_bytes - .host.swap_free_bytes' "$(((8388604 - 2097148) * 1024))"
check '[.host.psi_cpu_some_avg10_pct, .host.psi_mem_full_avg10_pct, .host.psi_io_some_avg60_pct]' '[12.5, 0.5, 35.5]'
check '[.host.cpu_user_pct, .host.swap_in_pages_per_s, .host.psi_io_some_window_pct]' '[null, null, null]'
check '[.host.disks[] | [.name, .rotational, .util_pct]]' '[["sda",true,null],["nvme0n1",false,null],["dm-0",false,null]]'
check '[.host.filesystems[] | [.mount, .device, .fstype, .paths]]' '[["/","/dev/mapper/vg0-root","ext4",["/"]],["/tmp","tmpfs","tmpfs",["/tmp"]]]'
check '.host.filesystems[0].total_bytes > 0' 'true'
check '.samples[0].host | [.cpu_busy_pct, .mem_available_bytes]' "[null, $((4194304 * 1024))]"

# The same tree over a window: nothing moves in a fixture, so CPU shares have no ticks to
# divide (null), while rates are real zeros and disks are idle.
snap "$HOST_FIX/server" --only host --window 250ms
check '.window_ms' '250'
check '.host.cpu_user_pct' 'null'
check '[.host.swap_in_pages_per_s, .host.swap_out_pages_per_s]' '[0, 0]'
check '[.host.psi_cpu_some_window_pct, .host.psi_io_full_window_pct]' '[0, 0]'
check '[.host.disks[] | [.util_pct, .await_ms, .read_bytes_per_s]]' '[[0,null,0],[0,null,0],[0,null,0]]'
check '.samples | length >= 2' 'true'

# An old kernel: PSI and MemAvailable missing, said once each.
snap "$HOST_FIX/old" --only host
check '.host.cpus' '2'
check '[.host.psi_cpu_some_avg10_pct, .host.psi_io_full_avg10_pct, .host.mem_available_bytes]' '[null, null, null]'
check '.collectors.host.notes | map(select(startswith("PSI not available"))) | length' '1'
check '.collectors.host.notes | map(select(contains("no MemAvailable"))) | length' '1'

# Garbage everywhere: no crash, a note per file, valid JSON with printable quotes.
snap "$HOST_FIX/garbage" --only host --window 150ms
check '.collectors.host.state' '"partial"'
check '.collectors.host.notes | length >= 13' 'true'
check '.collectors.host.notes | map(select(contains("\\x01\\x02\\xff"))) | length' '1'
check '[.host.cpus, .host.load1, .host.kernel_release, .host.cpu_user_pct]' '[null, null, null, null]'
check '.host.mem_total_bytes' "$((16384000 * 1024))"

# A meminfo cut short after its first line: what is there counts, the rest is said missing.
mkdir -p "$TMP/cut/proc"
printf 'MemTotal:        1000 kB\n' >"$TMP/cut/proc/meminfo"
snap "$TMP/cut" --only host
check '[.host.mem_total_bytes, .host.swap_total_bytes, .host.mem_available_bytes]' '[1024000, null, null]'
check '.collectors.host.notes | map(select(. == "/proc/meminfo: MemTotal, SwapTotal or SwapFree missing (truncated?)")) | length' '1'

# A root with nothing in it.
mkdir -p "$TMP/empty"
snap "$TMP/empty" --only host
check '.collectors.host.state' '"unavailable"'
check '.host.cpus' 'null'

finish
