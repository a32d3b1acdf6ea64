#!/usr/bin/env bash
# gpudoctor snapshot --only processes on the /proc fixture trees (tests/fixtures/procs, written by
# make-fixtures.sh there): the JSON the binary prints says what the fixture holds.
set -euo pipefail
command -v jq >/dev/null || { echo "jq not installed"; exit 77; }
F=$SRC/tests/fixtures/procs
fails=0

# expect JSON FILTER WANTED: the compact value of FILTER must be WANTED
expect() {
    local got
    got=$(jq -c "$2" <<<"$1")
    if [ "$got" != "$3" ]; then
        echo "FAIL: $2"
        echo "   got:    $got"
        echo "   wanted: $3"
        fails=$((fails + 1))
    fi
}

host=$("$GPUDOCTOR" snapshot --only processes --root "$F/host")
expect "$host" '.collectors.processes.state' '"partial"'
expect "$host" '.collectors.processes.notes | length' '2'
expect "$host" '.collectors.processes.notes | map(select(startswith("stat of 2 processes could not be parsed, skipped (first: pid 250"))) | length' '1'
# processes in D state: command line, environment and maps are not read (that could hang)
expect "$host" '.collectors.processes.notes | map(select(startswith("command line, environment and maps of 3 processes with a thread in uninterruptible sleep (D) not read"))) | length' '1'
expect "$host" '[.processes.processes[] | select(.state == "D") | [.pid, .cmdline, .cuda_visible_devices_set, .libs]]' \
    '[[2103,null,null,null],[2300,null,null,null]]'
expect "$host" '.processes | del(.processes)' \
    '{"scanned":25,"vanished":0,"fd_denied":0,"garbled":2,"clk_tck":100,"boot_time_ms":1764662400000}'
# GPU processes, their workers, and their ancestors below init (2200, 2700, 3050)
expect "$host" '[.processes.processes[].pid]' \
    '[1500,2100,2101,2102,2103,2104,2200,2300,2400,2600,2700,2701,3050,3100,3200,3300,3400,3500,3600,3800]'
# An ancestor is there for the tree: its command line, not its environment, maps or links
expect "$host" '[.processes.processes[] | select(.pid == 2200 or .pid == 3050) | [.pid, .ppid, .cmdline, .user, .cuda_visible_devices_set, .libs, .exe, .cwd, .children]]' \
    '[[2200,1,"-bash","alice",null,null,null,null,[2300]],[3050,1,"/usr/bin/containerd-shim-runc-v2 -id 4f1c2a9be0d3c7a85e6f1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6a","root",null,null,null,null,[3100]]]'

# The training job and its workers
expect "$host" '.processes.processes[] | select(.pid == 2100) | [.user, .state, .cmdline, .start_time_ms, .cpu_time_ms, .rss_bytes, .threads]' \
    '["alice","S","python train.py --epochs 100",1764666000000,7560000,8589934592,48]'
expect "$host" '.processes.processes[] | select(.pid == 2100) | [.gpus[] | [.minor, .gpu_index, .holds_device, .nvml_listed]]' \
    '[[0,null,true,false],[1,null,true,false]]'
expect "$host" '.processes.processes[] | select(.pid == 2100) | [.holds_ctl, .holds_uvm, .children, .cuda_visible_devices_set, .cuda_visible_devices]' \
    '[true,true,[2101,2102,2103,2104],true,"0,1"]'
expect "$host" '.processes.processes[] | select(.pid == 2100) | [.libs[] | .kind + "=" + (.version // "?")]' \
    '["cuda=550.54.15","nvml=550.54.15","cudart=12","cudnn=9","cudnn=9","nccl=2","cublas=12","torch=?","cudart=12.4.127","nccl=2.21.5"]'
expect "$host" '[.processes.processes[] | select(.ppid == 2100) | [.pid, .state, (.gpus | length)]]' \
    '[[2101,"S",0],[2102,"S",0],[2103,"D",0],[2104,"S",0]]'

# States, the tricky name, a driver client without a GPU
expect "$host" '[.processes.processes[] | select(.pid == 2300 or .pid == 2400 or .pid == 2600) | [.pid, .state, .comm, .holds_ctl, [.gpus[].minor]]]' \
    '[[2300,"D","nvidia-smi",true,[]],[2400,"S","a) R 9 (b c",false,[2]],[2600,"T","python",true,[3]]]'

# Containers and jobs
expect "$host" '[.processes.processes[] | select(.container_id != null or .pod_uid != null or .slurm_job_id != null) | [.pid, .container_runtime, (.container_id // "" | .[0:12]), .pod_uid, .slurm_job_id, .ns_pid, .ns_depth]]' \
    '[[3100,"docker","4f1c2a9be0d3",null,null,42,1],[3200,"containerd","9e8d7c6b5a49","0f5b3c1e-8a2d-4f6b-9c3e-7d1a2b3c4d5e",null,1,1],[3300,"cri-o","1a2b3c4d5e6f","7c9e6679-7425-40de-944b-e07fc1f90ae7",null,5,2],[3400,"podman","ab12cd34ef56",null,null,2,1],[3500,null,"",null,"4242",3500,0],[3600,null,"",null,"4243",3600,0]]'
expect "$host" '.processes.processes[] | select(.pid == 3100) | [.uid, .user, .cuda_visible_devices_set]' '[2000,null,false]'

# Hostile bytes come out as '?', and the JSON stays valid
expect "$host" '.processes.processes[] | select(.pid == 3800) | [.cmdline, .cuda_visible_devices, .uid, .ns_pid, .cgroup]' \
    '["python -c print(\"?[31m\") ??","?]0;pwned?",null,null,null]'

# A window: one sample per interval, CPU % computed (a fixture does not run: 0)
win=$("$GPUDOCTOR" snapshot --only processes --root "$F/host" --window 0.3)
expect "$win" '.processes.processes[] | select(.pid == 2100) | .cpu_pct' '0'
expect "$win" '[.samples[] | .processes | length] | unique' '[20]'
expect "$win" '.samples[-1].processes[] | select(.pid == 2100)' '{"pid":2100,"start_ticks":360000,"cpu_time_ms":7560000}'

# The container, from inside: its own pids, the image's users
inside=$("$GPUDOCTOR" snapshot --only processes --root "$F/container")
expect "$inside" '[.processes.processes[] | [.pid, .ppid, .user, .ns_depth, .cgroup, [.gpus[].minor], .children]]' \
    '[[42,1,"trainer",0,"/",[2],[43]],[43,42,"trainer",0,"/",[],[]]]'
expect "$inside" '.collectors.processes.state' '"ok"'

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all process fixture checks passed"
