# A real Slurm on loopback for the tests (Debian's slurmctld, slurmd and munge, a munge key made
# for the test), sourced after tests/fixtures/serve/common.bash: skips (77) without the tools or
# root; starts munged, slurmctld and slurmd on free ports with a minimal slurm.conf naming this
# host; stops them on exit. write_conf EXTRA rewrites slurm.conf with EXTRA lines (then
# `scontrol reconfigure`); node_field, node_state and node_reason read the node.
for tool in slurmctld slurmd scontrol munged mungekey ss; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed"; exit 77; }
done
[ "$(id -u)" = 0 ] || { echo "SKIP: the Slurm daemons need root"; exit 77; }

NODE=$(hostname -s)
S=$TMP/slurm
mkdir -p "$S/state" "$S/spool" "$S/log"
chmod 755 "$TMP" "$S" # munged wants its socket's directories reachable
# A port no socket uses, below the kernel's ephemeral range: a port in that range can be taken by
# any outgoing connection (another test's HTTP clients) between the check and slurmd's bind. The
# daemons are started again on other ports if one of them still could not bind (below).
EPHEMERAL_LOW=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
[ "$EPHEMERAL_LOW" -gt 12000 ] 2>/dev/null || EPHEMERAL_LOW=32768
free_port() {
    local p
    while :; do
        p=$((10000 + RANDOM % (EPHEMERAL_LOW - 10000)))
        ss -Hatn "sport = :$p" | grep . >/dev/null || { echo "$p"; return; }
    done
}
pick_ports() {
    CTLD_PORT=$(free_port)
    SLURMD_PORT=$(free_port)
    while [ "$SLURMD_PORT" = "$CTLD_PORT" ]; do SLURMD_PORT=$(free_port); done
}
pick_ports
stop_slurm() {
    local f
    for f in slurmd slurmctld munged; do
        [ -s "$S/$f.pid" ] && kill -TERM "$(cat "$S/$f.pid")" 2>/dev/null
    done
    sleep 0.5
    for f in slurmd slurmctld munged; do
        [ -s "$S/$f.pid" ] && kill -KILL "$(cat "$S/$f.pid")" 2>/dev/null
    done
    return 0
}
CLEANUPS+=(stop_slurm)

mungekey -c -k "$S/munge.key" -b 1024
chmod 600 "$S/munge.key"
munged -f --socket="$S/munge.sock" --key-file="$S/munge.key" --log-file="$S/log/munged.log" \
    --pid-file="$S/munged.pid" --seed-file="$S/munged.seed" --num-threads=1

write_conf() {
    cat >"$S/slurm.conf" <<CONF
ClusterName=gpudoctor-test
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$S/munge.sock
CredType=cred/munge
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/linear
MpiDefault=none
ReturnToService=2
MessageTimeout=5
$1
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
}
export SLURM_CONF=$S/slurm.conf
stop_daemons() { # slurmctld and slurmd, leaving munged
    local f
    for f in slurmd slurmctld; do
        [ -s "$S/$f.pid" ] && kill -KILL "$(cat "$S/$f.pid")" 2>/dev/null
        rm -f "$S/$f.pid"
    done
    return 0
}
for attempt in 1 2 3; do
    write_conf ""
    slurmctld -i -f "$S/slurm.conf"
    slurmd -f "$S/slurm.conf" -N "$NODE"
    sleep 0.5
    grep -q "Unable to bind\|Address already in use" "$S"/log/slurm*.log 2>/dev/null || break
    echo "note: a daemon could not bind its port (attempt $attempt); starting again on others"
    stop_daemons
    mkdir -p "$S/log/attempt-$attempt"
    mv "$S"/log/slurm*.log "$S/log/attempt-$attempt/"
    pick_ports
done

node_field() { # node_field KEY: a field of the node
    scontrol show node -o "$NODE" | sed -n "s/.* $1=\([^ ]*\).*/\1/p"
}
# The state without +NOT_RESPONDING, which slurmctld sets between pings and is not ours to test.
node_state() {
    node_field State | sed 's/+NOT_RESPONDING//'
}
node_reason() {
    scontrol show node -o "$NODE" | sed -n 's/.* Reason=\(.*\) \[[^]]*@[^]]*\]$/\1/p'
}
# until slurmctld has heard from slurmd (IDLE, without +NOT_RESPONDING)
for i in $(seq 200); do
    state=$(node_field State 2>/dev/null || true)
    [ "$state" = IDLE ] && break
    sleep 0.2
done
[ "$state" = IDLE ] || { echo "FAIL: the node never became idle ($state)"; tail -n 20 "$S"/log/*.log; exit 1; }
