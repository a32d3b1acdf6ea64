# Sourced by the benchmarks that run real processes (check-busy, procs-discovery) once they are
# inside their own mount and PID namespaces: checks that this shell is PID 1 there, and puts a
# tmpfs over /dev holding /dev/null and plain files named nvidia0 and nvidiactl, so processes can
# hold "/dev/nvidia0" without a driver (the host's /dev is untouched). $TMPD/data is the file the
# other processes hold.
[ $$ -eq 1 ] || { echo "(not in a PID namespace of its own: stopping)"; exit 1; }
mount -t tmpfs -o mode=755 none /dev
mknod -m 666 /dev/null c 1 3
ln -s /proc/self/fd /dev/fd
: >/dev/nvidia0
: >/dev/nvidiactl
: >"$TMPD/data"
