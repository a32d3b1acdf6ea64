/*
 * Where a GPU job runs and how it talks to its peers (issue 12): proc.numa-remote (a GPU process
 * allowed only CPUs of another NUMA node than its GPUs') and proc.nccl-disabled (a multi-GPU job
 * with an NCCL fast path switched off in its environment). Evidence: the processes collector
 * (cpus_allowed, nccl_* from /proc/<pid>/status and environ) and the pcie collector (numa_node,
 * numa_cpus, numa_nodes). The cpulists are compared with the pure parser of collect/numa-parse.h,
 * on strings of the snapshot only.
 */
#include "collect/numa-parse.h"
#include "rules/rule-impl.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- proc.numa-remote ---- */

static bool mask_meets(const uint64_t *a, const uint64_t *b)
{
    for (size_t i = 0; i < NUMA_CPU_WORDS; i++) {
        if (a[i] & b[i])
            return true;
    }
    return false;
}

/* The GPU's node and its CPUs, when both are known and the node has CPUs. */
static bool gpu_node(const struct facts_gpu *v, uint64_t *mask)
{
    const struct pcie_device *d = v ? v->pcie : NULL;

    if (d == NULL || !pcie_device_valid(d, PCIE_S_NUMA) || d->numa_node < 0 ||
        !pcie_device_valid(d, PCIE_S_NUMA_CPUS) || d->numa_cpus == NULL)
        return false;
    return numa_parse_cpulist(d->numa_cpus, mask, NUMA_CPU_WORDS) > 0;
}

static void numa_fix(struct finding *f, const struct proc *p, const struct pcie_device *d)
{
    char *cpus = fix_arg(f, "CPU list", d->numa_cpus);

    if (cpus != NULL && fix_pid_ok(p->pid))
        finding_fix(f,
                    "taskset -a -p -c %s %" PRId32
                    "   # move its threads onto the GPU's node now (as its user or root); memory "
                    "it already has stays where it is",
                    cpus, p->pid);
    free(cpus);
    finding_fix(f,
                "# start it again bound to node %" PRId32 ": numactl --cpunodebind=%" PRId32
                " --membind=%" PRId32
                " <its command>, or fix the launcher's binding (srun --cpu-bind, "
                "torchrun with numactl, the container's cpuset)",
                d->numa_node, d->numa_node, d->numa_node);
}

static void check_numa_one(const struct rule_ctx *ctx, struct findings *out,
                           const struct facts_use *u, uint64_t *allowed, uint64_t *node)
{
    const struct proc *p = u->p;
    const struct pcie_device *first = NULL;
    char desc[192], nodes[64] = "";
    size_t known = 0, len = 0;
    struct finding *f;

    if (!proc_ok(p, PROC_S_CPUS) || p->cpus_allowed == NULL) {
        rule_skip(ctx, out, u->top_gpu, "CPUs allowed of pid %" PRId32 " not read", u->pid);
        return;
    }
    if (numa_parse_cpulist(p->cpus_allowed, allowed, NUMA_CPU_WORDS) <= 0)
        return;
    for (size_t k = 0; k < u->n_gpus; k++) {
        const struct facts_gpu *v = facts_gpu_find(ctx->facts, (uint32_t)u->gpus[k]);

        if (!gpu_node(v, node))
            continue;
        if (mask_meets(allowed, node))
            return; /* it may run next to one of its GPUs */
        if (first == NULL)
            first = v->pcie;
        known++;
        if (len < sizeof(nodes))
            len += (size_t)snprintf(nodes + len, sizeof(nodes) - len, "%s%" PRId32, len ? ", " : "",
                                    v->pcie->numa_node);
    }
    if (known < u->n_gpus) {
        rule_skip(ctx, out, u->top_gpu,
                  "NUMA node of a GPU of pid %" PRId32 " unknown (numa_node, numa_cpus)", u->pid);
        return;
    }
    if (first == NULL)
        return;
    proc_desc(desc, sizeof(desc), ctx, u->pid);
    f = finding_new(ctx, out, u->top_gpu, u->pid);
    finding_title(f, "%s runs on CPUs of another NUMA node than its GPU (node %s)", desc, nodes);
    finding_evidence(f, "the process may run only on CPUs %s (Cpus_allowed_list)", p->cpus_allowed);
    finding_evidence(f, "GPU %" PRId32 " (%s) is on NUMA node %" PRId32 ", whose CPUs are %s",
                     u->top_gpu, first->address ? first->address : "?", first->numa_node,
                     first->numa_cpus);
    finding_evidence(f, "every copy between host memory and the GPU, and every kernel launch, "
                        "crosses the inter-socket link");
    numa_fix(f, p, first);
    f->impact = 0.3;
}

static void check_numa(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    uint64_t *allowed, *node;

    if (!need_collector(ctx, out, COLLECTOR_PCIE) || !need_collector(ctx, out, COLLECTOR_PROCS))
        return;
    if (!((s->pcie.valid >> PCIE_I_NODES) & 1u)) {
        rule_skip(ctx, out, -1, "NUMA nodes not read (/sys/devices/system/node)");
        return;
    }
    if (s->pcie.numa_nodes <= 1)
        return; /* one node: every CPU is local */
    allowed = xcalloc(NUMA_CPU_WORDS, sizeof(*allowed));
    node = xcalloc(NUMA_CPU_WORDS, sizeof(*node));
    for (size_t i = 0; i < ctx->facts->n_uses; i++) {
        const struct facts_use *u = &ctx->facts->uses[i];

        if (u->p == NULL || u->n_gpus == 0 || proc_table_context_only(&s->procs, u->p))
            continue;
        check_numa_one(ctx, out, u, allowed, node);
    }
    free(allowed);
    free(node);
}

const struct rule rule_proc_numa_remote = {
    .id = "proc.numa-remote",
    .severity = SEV_WARNING,
    .category = CAT_PROCESS,
    .title = N_("GPU process pinned to CPUs of another NUMA node"),
    .explanation = N_(
        "On a server with more than one NUMA node (one per CPU socket, or more), each GPU hangs "
        "off one node's PCIe root. A process whose allowed CPUs all belong to another node reaches "
        "its GPU only across the inter-socket link: host-to-device copies, pinned-memory "
        "buffers and kernel launches all get slower, and the data loader competes for the link "
        "too. It happens when a launcher, a container cpuset or a scheduler binds the job to the "
        "wrong socket, or binds every rank to node 0."),
    .detection = N_("per GPU process, its Cpus_allowed_list (/proc/<pid>/status) against the "
                    "cpulist of its GPUs' NUMA nodes (numa_node in sysfs, "
                    "/sys/devices/system/node/node<N>/cpulist), on machines with more than one "
                    "node: reported when it may run on none of the CPUs of any of its GPUs' "
                    "nodes."),
    .fix = N_("Bind the job to the GPU's node: numactl --cpunodebind=N --membind=N, srun "
              "--cpu-bind, or the container's cpuset; taskset -a -p moves a running process's "
              "threads, but memory it already has stays on the other node."),
    .thresholds = NO_THRESHOLDS,
    .check = check_numa,
};

/* ---- proc.nccl-disabled ---- */

/* The NCCL variables that switch a fast path off, by their index in proc_nccl_names. */
enum { NCCL_P2P = 0, NCCL_IB = 1, NCCL_SHM = 2 };

/* NCCL reads these variables as integers: "1" (any non-zero number) switches the path off. */
static bool env_on(const char *v)
{
    int64_t n;

    return v != NULL && str_to_i64(v, 10, &n) && n != 0;
}

/* What makes processes one job: a Slurm job, a container, else the same parent (torchrun). */
static void job_key(char *buf, size_t size, const struct proc *p)
{
    if (p->slurm_job_id)
        snprintf(buf, size, "slurm job %s", p->slurm_job_id);
    else if (p->container_id)
        snprintf(buf, size, "container %s", p->container_id);
    else if (proc_ok(p, PROC_S_PPID) && p->ppid > 1)
        snprintf(buf, size, "parent %" PRId32, p->ppid);
    else
        snprintf(buf, size, "pid %" PRId32, p->pid);
}

/* The GPUs of every process of u's job, counted without repeats (at most 64 told apart). */
static size_t job_gpus(const struct rule_ctx *ctx, const char *key, size_t *n_procs)
{
    uint64_t seen = 0;
    size_t n = 0;

    *n_procs = 0;
    for (size_t i = 0; i < ctx->facts->n_uses; i++) {
        const struct facts_use *o = &ctx->facts->uses[i];
        char k[128];

        if (o->p == NULL)
            continue;
        job_key(k, sizeof(k), o->p);
        if (strcmp(k, key) != 0)
            continue;
        (*n_procs)++;
        for (size_t g = 0; g < o->n_gpus; g++) {
            uint32_t idx = (uint32_t)o->gpus[g];

            if (idx < 64 && !(seen & (UINT64_C(1) << idx))) {
                seen |= UINT64_C(1) << idx;
                n++;
            }
        }
    }
    return n;
}

static void nccl_finding(const struct rule_ctx *ctx, struct findings *out,
                         const struct facts_use *u, const char *key, size_t n_gpus, size_t n_procs,
                         const bool *off)
{
    const struct snapshot *s = ctx->facts->snap;
    char desc[192], vars[96] = "";
    size_t len = 0;
    struct finding *f;

    for (size_t i = 0; i < 3; i++) {
        if (off[i])
            len += (size_t)snprintf(vars + len, sizeof(vars) - len, "%s%s", len ? " " : "",
                                    proc_nccl_names[i]);
    }
    proc_desc(desc, sizeof(desc), ctx, u->pid);
    f = finding_new(ctx, out, u->top_gpu, u->pid);
    finding_title(f, "NCCL fast paths switched off in a job on %zu GPUs: %s", n_gpus, vars);
    finding_evidence(f, "%s (%zu process%s of %s) has %s set to a non-zero value", desc, n_procs,
                     n_procs == 1 ? "" : "es", key, vars);
    if (off[NCCL_P2P])
        finding_evidence(f, "NCCL_P2P_DISABLE: GPUs exchange data through host memory instead "
                            "of NVLink or PCIe peer-to-peer");
    if (off[NCCL_SHM])
        finding_evidence(f, "NCCL_SHM_DISABLE: processes on this machine talk through the "
                            "network stack instead of shared memory");
    if (off[NCCL_IB])
        finding_evidence(f,
                         "NCCL_IB_DISABLE: %zu InfiniBand/RoCE port%s here, but NCCL uses TCP "
                         "sockets between machines",
                         s->ib.n_ports, s->ib.n_ports == 1 ? "" : "s");
    if (off[NCCL_P2P] && ((s->pcie.valid >> PCIE_I_IOMMU) & 1u) && s->pcie.iommu_present)
        finding_evidence(f, "an IOMMU is active here: P2P is often disabled as a workaround for "
                            "hangs when the IOMMU or PCIe ACS redirects peer traffic");
    finding_fix(f, "unset %s   # in the job script or container environment, then restart the job",
                vars);
    if (off[NCCL_P2P])
        finding_fix(f, "# if it was set because jobs hung with P2P on: check PCIe ACS and the "
                       "IOMMU (iommu=pt) instead, and test with nccl-tests all_reduce_perf");
    f->impact = 0.3;
}

static void check_nccl(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    char(*done)[128] = NULL;
    size_t n_done = 0, cap = 0;
    bool ib = ((s->ib.valid >> IB_I_PORTS) & 1u) && s->ib.n_ports > 0;

    if (!need_collector(ctx, out, COLLECTOR_PROCS))
        return;
    for (size_t i = 0; i < ctx->facts->n_uses; i++) {
        const struct facts_use *u = &ctx->facts->uses[i];
        const struct proc *p = u->p;
        bool off[3], any = false, seen = false;
        size_t n_gpus, n_procs;
        char key[128];

        if (p == NULL || u->n_gpus == 0 || proc_table_context_only(&s->procs, p))
            continue;
        job_key(key, sizeof(key), p);
        n_gpus = job_gpus(ctx, key, &n_procs);
        if (n_gpus < 2)
            continue; /* one GPU: no collective crosses a GPU boundary */
        if (!proc_ok(p, PROC_S_NCCL)) {
            rule_skip(ctx, out, u->top_gpu, "NCCL settings of pid %" PRId32 " not collected",
                      u->pid);
            continue;
        }
        off[NCCL_P2P] = env_on(p->nccl_p2p_disable);
        off[NCCL_SHM] = env_on(p->nccl_shm_disable);
        off[NCCL_IB] = ib && env_on(p->nccl_ib_disable);
        for (size_t k = 0; k < 3; k++)
            any |= off[k];
        if (!any)
            continue;
        for (size_t k = 0; k < n_done && !seen; k++)
            seen = strcmp(done[k], key) == 0;
        if (seen)
            continue; /* one finding per job */
        xgrow(&done, &cap, n_done + 1, sizeof(*done));
        snprintf(done[n_done++], sizeof(done[0]), "%s", key);
        nccl_finding(ctx, out, u, key, n_gpus, n_procs, off);
    }
    free(done);
}

const struct rule rule_proc_nccl_disabled = {
    .id = "proc.nccl-disabled",
    .severity = SEV_WARNING,
    .category = CAT_PROCESS,
    .title = N_("NCCL fast paths switched off in a multi-GPU job"),
    .explanation = N_(
        "A job that spans several GPUs (one process on many GPUs, or several processes of one "
        "Slurm job, container or launcher) has NCCL_P2P_DISABLE, NCCL_SHM_DISABLE or, where "
        "InfiniBand or RoCE ports exist, NCCL_IB_DISABLE set to a non-zero value. NCCL then "
        "takes the slow path: collectives go through host memory instead of NVLink or PCIe "
        "peer-to-peer, or over TCP instead of RDMA, several times slower, with no error. The "
        "variables are often left over from debugging, or set to work around hangs that PCIe ACS "
        "or the IOMMU caused by redirecting peer-to-peer traffic."),
    .detection = N_("the NCCL_* variables of each GPU process's environment (/proc/<pid>/environ; "
                    "only the NCCL settings are kept), for processes whose job uses two or more "
                    "GPUs; NCCL_IB_DISABLE only with ports in /sys/class/infiniband."),
    .fix = N_("Unset the variable where the job is launched and restart it. If it was set "
              "because the job hung with peer-to-peer on, fix the cause instead (ACS on the PCIe "
              "switches, IOMMU translation: iommu=pt) and test with nccl-tests."),
    .thresholds = NO_THRESHOLDS,
    .check = check_nccl,
};

/* ---- proc.nccl-socket-ifname ---- */

/*
 * How many of the interfaces in up (space-separated) NCCL_SOCKET_IFNAME spec selects: a list of
 * prefixes, "=" before exact names, "^" before a list to exclude (NCCL's environment
 * documentation).
 */
static size_t ifname_selects(const char *spec, const char *up)
{
    bool exclude = spec[0] == '^', exact;
    size_t n = 0;

    spec += exclude;
    exact = spec[0] == '=';
    spec += exact;
    for (const char *i = up; *i != '\0';) {
        size_t ilen = strcspn(i, " ");
        bool match = false;

        for (const char *p = spec; *p != '\0' && !match;) {
            size_t plen = strcspn(p, ",");

            match = plen > 0 && (exact ? plen == ilen && strncmp(p, i, plen) == 0
                                       : plen <= ilen && strncmp(p, i, plen) == 0);
            p += plen + (p[plen] == ',');
        }
        n += match != exclude;
        i += ilen + (i[ilen] == ' ');
    }
    return n;
}

static void socket_fixes(struct finding *f)
{
    finding_fix(f, "ip -brief address   # this node's interfaces: the one the nodes reach each "
                   "other on");
    finding_fix(f, "# NCCL_SOCKET_IFNAME must match an interface on every node: a prefix "
                   "(NCCL_SOCKET_IFNAME=enp) or a list (enp6s0,enp4s0) covers names that differ "
                   "between machines; =NAME matches that name only, ^docker,lo excludes");
    finding_fix(f, "# run the job with NCCL_DEBUG=INFO: its 'NET/Socket : Using' line names the "
                   "interfaces NCCL took on each node");
}

/* The job's NCCL_SOCKET_IFNAME, judged against this host's interfaces when they were read. */
static void ifname_finding(const struct rule_ctx *ctx, struct findings *out, const struct proc *p)
{
    const struct host_info *h = &ctx->facts->snap->host;
    bool known = host_valid(h, HOST_S_NET) && h->net_up != NULL;
    struct finding *f = finding_new(ctx, out, -1, p->pid);

    finding_object(f, "NCCL_SOCKET_IFNAME");
    if (known && ifname_selects(p->nccl_socket_ifname, h->net_up) > 0) {
        /* it names an interface here: another node, or another cause */
        f->severity = SEV_INFO;
        finding_title(f,
                      "NCCL_SOCKET_IFNAME=%s of pid %d matches an interface here; the job's "
                      "other nodes were not checked",
                      p->nccl_socket_ifname, (int)p->pid);
        finding_evidence(f, "interfaces up here: %s (/sys/class/net)", h->net_up);
        reported_texts(ctx, f, CUDAERR_NCCL_SOCKET);
        reported_texts(ctx, f, CUDAERR_NCCL_FAILED);
        socket_fixes(f);
        f->impact = 0;
        return;
    }
    if (known) {
        f->severity = SEV_CRITICAL;
        finding_title(f, "NCCL_SOCKET_IFNAME=%s of pid %d matches no interface of this host",
                      p->nccl_socket_ifname, (int)p->pid);
        finding_evidence(f, "interfaces up here: %s (/sys/class/net)",
                         h->net_up[0] ? h->net_up : "none but lo");
    } else {
        finding_title(f, "NCCL failed while NCCL_SOCKET_IFNAME=%s restricts its sockets (pid %d)",
                      p->nccl_socket_ifname, (int)p->pid);
        finding_evidence(f, "whether this host and the job's other nodes have such an interface "
                            "was not read (/sys/class/net)");
    }
    finding_evidence(f,
                     "NCCL_SOCKET_IFNAME=%s in the environment of pid %d: NCCL's bootstrap "
                     "and socket transport use only the interfaces it matches",
                     p->nccl_socket_ifname, (int)p->pid);
    reported_texts(ctx, f, CUDAERR_NCCL_SOCKET);
    reported_texts(ctx, f, CUDAERR_NCCL_FAILED);
    socket_fixes(f);
    f->impact = known ? 1.0 : 0.5;
}

/* No process restricts the interfaces, and NCCL's own words say it found none or used none. */
static void no_interface_finding(const struct rule_ctx *ctx, struct findings *out)
{
    const struct host_info *h = &ctx->facts->snap->host;
    bool known = host_valid(h, HOST_S_NET) && h->net_up != NULL;
    struct finding *f = finding_new(ctx, out, -1, -1);

    finding_object(f, "NCCL_SOCKET_IFNAME");
    reported_texts(ctx, f, CUDAERR_NCCL_SOCKET);
    if (known && h->net_up[0] == '\0') {
        f->severity = SEV_CRITICAL;
        finding_title(f, "NCCL found no network interface: none is up here but lo");
    } else {
        finding_title(f, "NCCL found no network interface it could use");
        if (known)
            finding_evidence(f,
                             "interfaces up here: %s (/sys/class/net); NCCL leaves out lo "
                             "and docker*, and the job's NCCL_SOCKET_IFNAME may filter the "
                             "rest",
                             h->net_up);
        else
            finding_evidence(f, "this host's interfaces were not read (/sys/class/net)");
    }
    socket_fixes(f);
    f->impact = 0.5;
}

static void check_nccl_socket(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    bool socket_error = reported_find(ctx, CUDAERR_NCCL_SOCKET, NULL) >= 0;
    const char *judged[8];
    size_t n_judged = 0;

    if (!socket_error && reported_find(ctx, CUDAERR_NCCL_FAILED, NULL) < 0)
        return;
    if (!need_collector(ctx, out, COLLECTOR_PROCS))
        return;
    for (size_t i = 0; i < s->procs.n_procs; i++) {
        const struct proc *p = &s->procs.procs[i];
        bool seen = false;

        if (!proc_ok(p, PROC_S_NCCL) || p->nccl_socket_ifname == NULL ||
            p->nccl_socket_ifname[0] == '\0')
            continue;
        for (size_t k = 0; k < n_judged && !seen; k++)
            seen = strcmp(judged[k], p->nccl_socket_ifname) == 0;
        if (seen || n_judged == sizeof(judged) / sizeof(judged[0]))
            continue; /* one finding per setting: the job's ranks share it */
        judged[n_judged++] = p->nccl_socket_ifname;
        ifname_finding(ctx, out, p);
    }
    if (n_judged == 0 && socket_error)
        no_interface_finding(ctx, out);
}

const struct rule rule_proc_nccl_socket_ifname = {
    .id = "proc.nccl-socket-ifname",
    .severity = SEV_WARNING,
    .category = CAT_PROCESS,
    .title = N_("NCCL without a network interface to use"),
    .explanation = N_(
        "NCCL's bootstrap and its socket transport connect the ranks over the network interfaces "
        "NCCL_SOCKET_IFNAME allows (a list of prefixes; without it, all but lo and docker*). A "
        "setting that names an interface a node does not have (eth2 where the NIC is enp6s0, one "
        "name on machines whose names differ) leaves NCCL with nothing to bind or connect: it "
        "fails at initialisation with 'no socket interface found', an address 'neither AF_INET "
        "nor AF_INET6', or a bare internal or system error. Critical when the setting matches no "
        "interface that is up here; a warning when the interfaces were not read; information "
        "when it matches one here (the job's other nodes may still lack it)."),
    .detection = N_("An error given with --error that the catalogue reads as NCCL finding no "
                    "interface, or as NCCL's system or internal error, with the NCCL_SOCKET_IFNAME "
                    "of the processes (/proc/<pid>/environ) matched against the interfaces that "
                    "are up (/sys/class/net) as NCCL matches them; without such a setting, "
                    "NCCL's own words that it found no interface."),
    .fix = N_("Set NCCL_SOCKET_IFNAME to the interface the nodes reach each other on, with a "
              "prefix or a list that matches it on every node; NCCL_DEBUG=INFO shows the "
              "interfaces it takes."),
    .thresholds = NO_THRESHOLDS,
    .check = check_nccl_socket,
};
