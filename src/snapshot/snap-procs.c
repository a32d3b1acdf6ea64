#include "snapshot/snap-procs.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SRC_STAT    "/proc/<pid>/stat"
#define SRC_STATUS  "/proc/<pid>/status"
#define SRC_ENVIRON "/proc/<pid>/environ"

#define F(key, type, member, slot, flags, source, doc)                                             \
    {                                                                                              \
        key, type, offsetof(struct proc, member), slot, flags, NULL, source, doc                   \
    }
/*
 * JF_NONE rows are written by hand below (state is a single character, the lists are arrays);
 * they are in the table so the documentation and the key check know them.
 */
static const struct jfield proc_fields[] = {
    F("pid", JF_I32, pid, -1, JF_ID, "/proc/<pid>", "process id in the PID namespace of /proc"),
    F("ppid", JF_I32, ppid, PROC_S_PPID, 0, SRC_STAT, "parent process id"),
    F("start_ticks", JF_U64, start_ticks, PROC_S_START_TICKS, JF_ID, SRC_STAT,
      "start time in clock ticks after boot; with pid, the process identity"),
    F("start_time_ms", JF_I64, start_time_ms, PROC_S_START_TIME, 0, SRC_STAT " + /proc/stat",
      "Unix time the process started (its age is time_ms minus this)"),
    { "state", JF_NONE, 0, PROC_S_STATE, 0, NULL, SRC_STAT,
      "one letter as ps shows it: R running, S sleeping, D uninterruptible (often I/O or a "
      "driver call), Z zombie, T stopped, t traced, I idle kernel thread, X dead" },
    F("uid", JF_U32, uid, PROC_S_USER, 0, SRC_STATUS, "effective user id"),
    F("user", JF_STR, user, PROC_S_USER_NAME, 0, "passwd",
      "user name of uid (null when the uid has no name here, e.g. a container's user)"),
    F("comm", JF_STR, comm, PROC_S_COMM, 0, SRC_STAT, "command name (at most 15 bytes for tasks)"),
    F("cmdline", JF_STR, cmdline, PROC_S_CMDLINE, 0, "/proc/<pid>/cmdline",
      "command line, arguments joined by spaces (null when empty: zombie, kernel thread)"),
    F("exe", JF_STR, exe, PROC_S_EXE, 0, "/proc/<pid>/exe", "executable (needs root for others)"),
    F("cwd", JF_STR, cwd, PROC_S_CWD, 0, "/proc/<pid>/cwd",
      "working directory (needs root for others)"),
    F("cpu_time_ms", JF_U64, cpu_time_ms, PROC_S_CPU_TIME, 0, SRC_STAT,
      "CPU time used, user + system, when the scan read it"),
    F("cpu_pct", JF_DOUBLE, cpu_pct, PROC_S_CPU_PCT, 0, SRC_STAT " over the window",
      "CPU use over the sampling window, 100 = one core (null without a window)"),
    F("rss_bytes", JF_U64, rss_bytes, PROC_S_RSS, 0, SRC_STATUS, "resident memory (VmRSS)"),
    F("threads", JF_U32, threads, PROC_S_THREADS, 0, SRC_STAT, "number of threads"),
    { "gpus", JF_NONE, 0, -1, 0, NULL, "/proc/<pid>/fd + NVML",
      "the GPUs the process uses: objects described under `processes.processes[].gpus[]`" },
    F("holds_ctl", JF_BOOL, holds_ctl, PROC_S_HOLDS_CTL, 0, "/proc/<pid>/fd",
      "has /dev/nvidiactl open (a driver client, e.g. a hung nvidia-smi)"),
    F("holds_uvm", JF_BOOL, holds_uvm, PROC_S_HOLDS_UVM, 0, "/proc/<pid>/fd",
      "has /dev/nvidia-uvm open (CUDA unified memory)"),
    { "children", JF_NONE, 0, -1, 0, NULL, SRC_STAT,
      "pids of direct children, ascending (of a GPU process: its data-loader workers)" },
    F("cuda_visible_devices_set", JF_BOOL, cuda_visible_devices_set, PROC_S_ENV, 0,
      "/proc/<pid>/environ",
      "CUDA_VISIBLE_DEVICES is in the environment (null: environ unreadable, needs root)"),
    F("cuda_visible_devices", JF_STR, cuda_visible_devices, -1, 0, "/proc/<pid>/environ",
      "value of CUDA_VISIBLE_DEVICES (null when unset or unknown)"),
    F("cgroup", JF_STR, cgroup, PROC_S_CGROUP, 0, "/proc/<pid>/cgroup",
      "cgroup path: the one naming a container or job when there is one"),
    F("container_runtime", JF_STR, container_runtime, -1, 0, "/proc/<pid>/cgroup",
      "\"docker\", \"containerd\", \"cri-o\" or \"podman\"; null when not in a container or the "
      "path does not name the runtime"),
    F("container_id", JF_STR, container_id, -1, 0, "/proc/<pid>/cgroup",
      "container id (hex); null when not in a container"),
    F("pod_uid", JF_STR, pod_uid, -1, 0, "/proc/<pid>/cgroup", "Kubernetes pod UID"),
    F("slurm_job_id", JF_STR, slurm_job_id, -1, 0, "/proc/<pid>/cgroup", "Slurm job id"),
    F("ns_pid", JF_I32, ns_pid, PROC_S_NS_PID, 0, SRC_STATUS " NSpid",
      "pid inside its own (innermost) PID namespace"),
    F("ns_depth", JF_U32, ns_depth, PROC_S_NS_DEPTH, 0, SRC_STATUS " NSpid",
      "PID namespaces below the one of /proc: 0 on the host, 1 in a container"),
    { "libs", JF_NONE, 0, PROC_S_MAPS, 0, NULL, "/proc/<pid>/maps",
      "GPU libraries mapped: objects described under `processes.processes[].libs[]` (null: maps "
      "unreadable)" },
    F("cpus_allowed", JF_STR, cpus_allowed, PROC_S_CPUS, 0, SRC_STATUS " Cpus_allowed_list",
      "CPUs the process may run on, a cpulist such as \"0-15,32-47\" (null: not read)"),
    { "nccl", JF_NONE, 0, PROC_S_NCCL, 0, NULL, SRC_ENVIRON,
      "the NCCL settings that matter, as {\"NCCL_P2P_DISABLE\": \"1\", ...}: only "
      "NCCL_P2P_DISABLE, NCCL_IB_DISABLE, NCCL_SHM_DISABLE, NCCL_SOCKET_IFNAME, "
      "NCCL_NET_GDR_LEVEL, "
      "NCCL_P2P_LEVEL, NCCL_IB_HCA, NCCL_ALGO, NCCL_PROTO and NCCL_DEBUG are ever kept, values "
      "printable ASCII of at most 63 bytes; {} when none is set; null when not collected "
      "(environ of another user without root, or longer than 1 MiB: the notes say why)" },
    F("shm_total_bytes", JF_U64, shm_total_bytes, PROC_S_SHM, 0, "statvfs /proc/<pid>/root/dev/shm",
      "size of the POSIX shared memory (/dev/shm) the process sees, in its own mount namespace "
      "(a container's: docker's default is 64 MiB); read for GPU processes"),
    F("shm_avail_bytes", JF_U64, shm_avail_bytes, PROC_S_SHM_AVAIL, 0,
      "statvfs /proc/<pid>/root/dev/shm", "what is still free of it"),
    F("open_files", JF_U32, open_files, PROC_S_OPEN_FILES, 0, "/proc/<pid>/fd",
      "file descriptors it has open (sockets, pipes and shared-memory files included)"),
    F("open_files_limit", JF_LIMIT, open_files_limit, PROC_S_NOFILE, 0,
      "/proc/<pid>/limits Max open files",
      "its soft limit on open files (ulimit -n; RLIMIT_NOFILE): opening one more fails with "
      "\"Too many open files\"; \"unlimited\" when there is none; read for GPU processes"),
    F("memlock_limit", JF_LIMIT, memlock_limit, PROC_S_MEMLOCK, 0,
      "/proc/<pid>/limits Max locked memory",
      "its soft limit on locked memory in bytes (ulimit -l; RLIMIT_MEMLOCK): InfiniBand and "
      "RDMA pin the buffers they register against it; \"unlimited\" when there is none; read "
      "for GPU processes"),
};
#undef F

const char *const proc_nccl_names[PROC_NCCL_VARS] = {
    "NCCL_P2P_DISABLE",   "NCCL_IB_DISABLE", "NCCL_SHM_DISABLE", "NCCL_SOCKET_IFNAME",
    "NCCL_NET_GDR_LEVEL", "NCCL_P2P_LEVEL",  "NCCL_IB_HCA",      "NCCL_ALGO",
    "NCCL_PROTO",         "NCCL_DEBUG",
};

char **proc_nccl_value(struct proc *p, size_t i)
{
    char **v[PROC_NCCL_VARS] = {
        &p->nccl_p2p_disable,   &p->nccl_ib_disable, &p->nccl_shm_disable, &p->nccl_socket_ifname,
        &p->nccl_net_gdr_level, &p->nccl_p2p_level,  &p->nccl_ib_hca,      &p->nccl_algo,
        &p->nccl_proto,         &p->nccl_debug,
    };

    return i < PROC_NCCL_VARS ? v[i] : NULL;
}

const char *proc_nccl_get(const struct proc *p, size_t i)
{
    char **v = proc_nccl_value((struct proc *)p, i);

    return v ? *v : NULL;
}

const struct jtable proc_jtable = {
    "process", proc_fields, ARRAY_SIZE(proc_fields), JT_BITS, offsetof(struct proc, valid), NULL,
};

#define G(key, type, member, slot, flags, source, doc)                                             \
    {                                                                                              \
        key, type, offsetof(struct proc_gpu, member), slot, flags, NULL, source, doc               \
    }
static const struct jfield proc_gpu_fields[] = {
    G("gpu_index", JF_U32, gpu_index, PROC_GPU_S_INDEX, 0, "NVML",
      "NVML index of the GPU (null when NVML did not answer: known by minor only)"),
    G("minor", JF_U32, minor, PROC_GPU_S_MINOR, 0, "/proc/<pid>/fd, nvmlDeviceGetMinorNumber",
      "N of /dev/nvidiaN (null when unknown)"),
    G("holds_device", JF_BOOL, holds_device, -1, 0, "/proc/<pid>/fd", "has /dev/nvidiaN open"),
    G("nvml_listed", JF_BOOL, nvml_listed, -1, 0, "nvmlDeviceGet*RunningProcesses",
      "NVML lists the process on this GPU"),
    G("nvml_type_mask", JF_U32, type_mask, -1, 0, "nvmlDeviceGet*RunningProcesses",
      "lists NVML shows it in: 1 compute, 2 graphics, 4 MPS (0 when not listed)"),
    G("used_bytes", JF_U64, used_bytes, PROC_GPU_S_USED, 0, "nvmlDeviceGet*RunningProcesses",
      "GPU memory the process holds on this GPU"),
    G("sm_util_pct", JF_U32, sm_util_pct, PROC_GPU_S_UTIL, 0, "nvmlDeviceGetProcessUtilization",
      "SM utilisation by this process (driver sample)"),
};
#undef G

const struct jtable proc_gpu_jtable = {
    "process GPU",
    proc_gpu_fields,
    ARRAY_SIZE(proc_gpu_fields),
    JT_BITS,
    offsetof(struct proc_gpu, valid),
    NULL,
};

#define L(key, member, doc)                                                                        \
    {                                                                                              \
        key, JF_STR, offsetof(struct proc_lib, member), -1, 0, NULL, "/proc/<pid>/maps", doc       \
    }
static const struct jfield proc_lib_fields[] = {
    L("kind", kind,
      "\"cuda\", \"nvml\", \"cudart\", \"cudnn\", \"nccl\", \"cublas\", \"torch\" or "
      "\"tensorflow\""),
    L("path", path, "the mapped file"),
    L("version", version, "version in the file name (null when it has none, as in pip wheels)"),
};
#undef L

const struct jtable proc_lib_jtable = {
    "process library", proc_lib_fields, ARRAY_SIZE(proc_lib_fields), JT_NONE, 0, NULL,
};

#define T(key, type, member, slot, source, doc)                                                    \
    {                                                                                              \
        key, type, offsetof(struct proc_table, member), slot, 0, NULL, source, doc                 \
    }
static const struct jfield proc_table_fields[] = {
    T("scanned", JF_U32, scanned, PROC_TABLE_S_SCAN, "/proc", "/proc entries looked at"),
    T("vanished", JF_U32, vanished, PROC_TABLE_S_SCAN, "/proc",
      "processes that exited during the scan (skipped)"),
    T("fd_denied", JF_U32, fd_denied, PROC_TABLE_S_SCAN, "/proc/<pid>/fd",
      "processes whose open files could not be read (not root): GPU holders among them are "
      "missed unless NVML lists them"),
    T("garbled", JF_U32, garbled, PROC_TABLE_S_SCAN, "/proc/<pid>/stat",
      "processes whose stat could not be parsed (skipped)"),
    T("clk_tck", JF_U32, clk_tck, PROC_TABLE_S_SCAN, "sysconf(_SC_CLK_TCK)",
      "clock ticks per second of start_ticks"),
    T("boot_time_ms", JF_I64, boot_time_ms, PROC_TABLE_S_BOOT_TIME, "/proc/stat btime",
      "Unix time of boot"),
    { "processes", JF_NONE, 0, -1, 0, NULL, "/proc + NVML",
      "one object per GPU process and per direct child of one, by pid (below)" },
};
#undef T

const struct jtable proc_table_jtable = {
    "process table",
    proc_table_fields,
    ARRAY_SIZE(proc_table_fields),
    JT_BITS,
    offsetof(struct proc_table, valid),
    NULL,
};

static const struct jfield proc_sample_fields[] = {
    { "pid", JF_I32, offsetof(struct proc_sample, pid), -1, JF_ID, NULL, "/proc/<pid>",
      "process id" },
    { "start_ticks", JF_U64, offsetof(struct proc_sample, start_ticks), -1, JF_ID, NULL, SRC_STAT,
      "with pid, the process identity" },
    { "cpu_time_ms", JF_U64, offsetof(struct proc_sample, cpu_time_ms), -1, JF_DYNAMIC, NULL,
      SRC_STAT, "CPU time used so far, user + system" },
};

const struct jtable proc_sample_jtable = {
    "process sample", proc_sample_fields, ARRAY_SIZE(proc_sample_fields), JT_NONE, 0, NULL,
};

static bool has(const struct proc *p, enum proc_slot slot)
{
    return (p->valid >> slot) & 1u;
}

static void set_valid(struct proc *p, enum proc_slot slot, bool valid)
{
    if (valid)
        p->valid |= UINT64_C(1) << slot;
    else
        p->valid &= ~(UINT64_C(1) << slot);
}

int64_t proc_age_ms(const struct proc *p, int64_t now_ms)
{
    if (!has(p, PROC_S_START_TIME))
        return -1;
    return now_ms > p->start_time_ms ? now_ms - p->start_time_ms : 0;
}

void proc_free(struct proc *p)
{
    jtable_free(&proc_jtable, p);
    free(p->gpus);
    free(p->children);
    for (size_t i = 0; i < p->n_libs; i++)
        jtable_free(&proc_lib_jtable, &p->libs[i]);
    free(p->libs);
    for (size_t i = 0; i < PROC_NCCL_VARS; i++)
        free(*proc_nccl_value(p, i));
    memset(p, 0, sizeof(*p));
}

void proc_table_free(struct proc_table *t)
{
    for (size_t i = 0; i < t->n_procs; i++)
        proc_free(&t->procs[i]);
    free(t->procs);
    memset(t, 0, sizeof(*t));
}

struct proc *proc_table_find(const struct proc_table *t, int32_t pid)
{
    for (size_t i = 0; i < t->n_procs; i++) {
        if (t->procs[i].pid == pid)
            return &t->procs[i];
    }
    return NULL;
}

/* Uses a GPU or the driver: what made the scan keep it (a client of nvidiactl alone too). */
static bool gpu_process(const struct proc *p)
{
    return p->n_gpus > 0 || p->holds_ctl || p->holds_uvm;
}

bool proc_table_context_only(const struct proc_table *t, const struct proc *p)
{
    const struct proc *parent;

    /* An ancestor has children in the table (the walk up came from one); a worker's parent is a
     * GPU process. */
    if (gpu_process(p) || p->n_children == 0)
        return false;
    parent = p->ppid != p->pid ? proc_table_find(t, p->ppid) : NULL;
    return parent == NULL || !gpu_process(parent);
}

/* ---- writing ---- */

/* One row of a table, through jtable_write, so hand-written rows keep the table's key order. */
static void write_field(const struct jtable *t, const struct jfield *f, const void *obj,
                        json_t *out)
{
    struct jtable one = *t;

    one.fields = f;
    one.n_fields = 1;
    jtable_write(&one, obj, out, 0);
}

/* The valid bits with each group bit the collector set spelled out as its fields' bits. */
static uint64_t field_bits(uint64_t valid)
{
    if (valid & PROC_BIT(PROC_S_STAT))
        valid |= PROC_STAT_FIELDS;
    if (valid & PROC_BIT(PROC_S_FDS))
        valid |= PROC_FDS_FIELDS;
    if (valid & PROC_BIT(PROC_S_NSPID))
        valid |= PROC_NSPID_FIELDS;
    return valid;
}

/* A group whose fields are all there is its group bit, as the collector sets it. */
static uint64_t group(uint64_t valid, enum proc_slot slot, uint64_t fields)
{
    valid &= ~PROC_BIT(slot);
    return (valid & fields) == fields ? (valid & ~fields) | PROC_BIT(slot) : valid;
}

/* The bits a record read from JSON has, in the collector's form: group bits where a group is
 * whole, the fields' own bits where it is not. */
static uint64_t group_bits(uint64_t valid)
{
    valid = group(valid, PROC_S_STAT, PROC_STAT_FIELDS);
    valid = group(valid, PROC_S_FDS, PROC_FDS_FIELDS);
    return group(valid, PROC_S_NSPID, PROC_NSPID_FIELDS);
}

static json_t *proc_to_json(const struct proc *proc)
{
    json_t *j = json_object();
    struct proc copy = *proc; /* the table's rows test the fields' own bits */
    const struct proc *p = &copy;

    copy.valid = field_bits(proc->valid);

    for (size_t i = 0; i < proc_jtable.n_fields; i++) {
        const struct jfield *f = &proc_jtable.fields[i];

        if (f->type != JF_NONE || !jfield_valid(&proc_jtable, p, f)) {
            write_field(&proc_jtable, f, p, j);
        } else if (strcmp(f->name, "state") == 0) {
            char state[2] = { p->state, '\0' };

            /* A letter that is not printable ASCII would not be valid JSON text. */
            if (p->state <= ' ' || p->state > '~')
                state[0] = '?';
            json_object_set_new(j, f->name, json_string(state));
        } else if (strcmp(f->name, "gpus") == 0) {
            json_object_set_new(
                j, f->name,
                jlist_write_table(&proc_gpu_jtable, p->gpus, p->n_gpus, sizeof(*p->gpus)));
        } else if (strcmp(f->name, "children") == 0) {
            json_t *a = json_array();

            for (size_t k = 0; k < p->n_children; k++)
                json_array_append_new(a, json_integer(p->children[k]));
            json_object_set_new(j, f->name, a);
        } else if (strcmp(f->name, "libs") == 0) {
            json_object_set_new(
                j, f->name,
                jlist_write_table(&proc_lib_jtable, p->libs, p->n_libs, sizeof(*p->libs)));
        } else if (strcmp(f->name, "nccl") == 0) {
            json_t *o = json_object();

            for (size_t k = 0; k < PROC_NCCL_VARS; k++) {
                const char *v = proc_nccl_get(p, k);

                if (v != NULL)
                    json_object_set_new(o, proc_nccl_names[k], json_string(v));
            }
            json_object_set_new(j, f->name, o);
        } else {
            fatal("process field %s has no writer", f->name);
        }
    }
    return j;
}

json_t *proc_table_to_json(const struct proc_table *t)
{
    json_t *j = json_object(), *procs = json_array();

    jtable_write(&proc_table_jtable, t, j, 0);
    for (size_t i = 0; i < t->n_procs; i++)
        json_array_append_new(procs, proc_to_json(&t->procs[i]));
    json_object_set_new(j, "processes", procs);
    return j;
}

json_t *proc_sample_to_json(const struct proc_sample *s)
{
    json_t *j = json_object();

    jtable_write(&proc_sample_jtable, s, j, 0);
    return j;
}

/* ---- reading ---- */

static int read_state(struct proc *p, const json_t *j, const char *path, struct jerr *err)
{
    const json_t *v = json_object_get(j, "state");
    const char *s;

    if (v == NULL || json_is_null(v))
        return 0;
    s = json_is_string(v) ? json_string_value(v) : NULL;
    if (s == NULL || strlen(s) != 1 || s[0] <= ' ' || s[0] > '~') {
        char sub[256];

        snprintf(sub, sizeof(sub), "%s.state", path);
        jerr_set(err, sub, "expected one letter such as \"S\" or \"Z\"");
        return -1;
    }
    p->state = s[0];
    set_valid(p, PROC_S_STATE, true);
    return 0;
}

int proc_pid_check(int64_t pid, bool zero_ok, const char *path, const char *key, struct jerr *err)
{
    char sub[256];

    if (proc_pid_valid(pid) || (zero_ok && pid == 0))
        return 0;
    snprintf(sub, sizeof(sub), "%s.%s", path, key);
    jerr_set(err, sub, "%" PRId64 " is not a process id (%s1 to %d)", pid, zero_ok ? "0 or " : "",
             PROC_PID_MAX);
    return -1;
}

static int read_gpu(void *elem, const json_t *j, const char *path, struct jerr *err)
{
    struct proc_gpu *g = elem;

    if (jtable_read(&proc_gpu_jtable, g, j, path, 0, NULL, err) != 0)
        return -1;
    /* The struct keeps the sentinel the code tests; JSON says null. */
    if (!((g->valid >> PROC_GPU_S_INDEX) & 1u))
        g->gpu_index = UINT32_MAX;
    if (!((g->valid >> PROC_GPU_S_MINOR) & 1u))
        g->minor = UINT32_MAX;
    return 0;
}

static int read_child(void *elem, const json_t *j, const char *path, struct jerr *err)
{
    if (!json_is_integer(j) || !proc_pid_valid(json_integer_value(j))) {
        jerr_set(err, path, "expected a process id (1 to %d)", PROC_PID_MAX);
        return -1;
    }
    *(int32_t *)elem = (int32_t)json_integer_value(j);
    return 0;
}

static int read_lib(void *elem, const json_t *j, const char *path, struct jerr *err)
{
    struct proc_lib *l = elem;

    if (jtable_read(&proc_lib_jtable, l, j, path, 0, NULL, err) != 0)
        return -1;
    if (l->kind == NULL || l->path == NULL) {
        jerr_set(err, path, "a library needs \"kind\" and \"path\"");
        return -1;
    }
    return 0;
}

/* "nccl": null or absent (not collected), or an object of the ten names only. */
static int read_nccl(struct proc *p, const json_t *j, const char *path, struct jerr *err)
{
    const json_t *o = json_object_get(j, "nccl"), *v;
    const char *key;

    set_valid(p, PROC_S_NCCL, false);
    if (o == NULL || json_is_null(o))
        return 0;
    if (!json_is_object(o)) {
        jerr_set(err, path, "nccl: expected an object or null");
        return -1;
    }
    json_object_foreach((json_t *)o, key, v)
    {
        size_t k, n;
        char *val;

        for (k = 0; k < PROC_NCCL_VARS && strcmp(key, proc_nccl_names[k]) != 0; k++)
            ;
        if (k == PROC_NCCL_VARS || !json_is_string(v)) {
            jerr_set(err, path, "nccl: expected a string for one of the NCCL settings kept");
            return -1;
        }
        val = str_sanitized(json_string_value(v));
        if ((n = strlen(val)) > PROC_NCCL_VALUE_MAX)
            val[PROC_NCCL_VALUE_MAX] = '\0';
        free(*proc_nccl_value(p, k));
        *proc_nccl_value(p, k) = val;
    }
    set_valid(p, PROC_S_NCCL, true);
    return 0;
}

static int read_proc(void *elem, const json_t *j, const char *path, struct jerr *err)
{
    struct proc *p = elem;
    void *items = NULL;
    int r;

    if (jtable_read(&proc_jtable, p, j, path, 0, NULL, err) != 0 ||
        read_state(p, j, path, err) != 0 || proc_pid_check(p->pid, false, path, "pid", err) != 0 ||
        (has(p, PROC_S_PPID) && proc_pid_check(p->ppid, true, path, "ppid", err) != 0) ||
        (has(p, PROC_S_NS_PID) && proc_pid_check(p->ns_pid, false, path, "ns_pid", err) != 0))
        return -1;
    /* What a group stands for is known when all of its fields are. */
    p->valid = group_bits(p->valid);
    r = jlist_read(j, "gpus", path, sizeof(*p->gpus), &items, &p->n_gpus, read_gpu, err);
    p->gpus = items;
    if (r < 0)
        return -1;
    items = NULL;
    r = jlist_read(j, "children", path, sizeof(*p->children), &items, &p->n_children, read_child,
                   err);
    p->children = items;
    if (r < 0)
        return -1;
    items = NULL;
    r = jlist_read(j, "libs", path, sizeof(*p->libs), &items, &p->n_libs, read_lib, err);
    p->libs = items;
    if (r < 0)
        return -1;
    set_valid(p, PROC_S_MAPS, r > 0);
    return read_nccl(p, j, path, err);
}

int proc_from_json(struct proc *p, const json_t *j, const char *path, struct jerr *err)
{
    return read_proc(p, j, path, err);
}

int proc_table_from_json(struct proc_table *t, const json_t *j, const char *path, struct jerr *err)
{
    static const char *const extra[] = { "processes", NULL };
    void *items = NULL;
    int r;

    if (jtable_read(&proc_table_jtable, t, j, path, 0, extra, err) != 0)
        return -1;
    r = jlist_read(j, "processes", path, sizeof(*t->procs), &items, &t->n_procs, read_proc, err);
    t->procs = items;
    return r < 0 ? -1 : 0;
}

int proc_sample_from_json(struct proc_sample *s, const json_t *j, const char *path,
                          struct jerr *err)
{
    if (jtable_read(&proc_sample_jtable, s, j, path, 0, NULL, err) != 0)
        return -1;
    if (json_object_get(j, "pid") == NULL) {
        jerr_set(err, path, "missing required key \"pid\"");
        return -1;
    }
    return proc_pid_check(s->pid, false, path, "pid", err);
}
