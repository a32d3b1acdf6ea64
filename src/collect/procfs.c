#include "collect/procfs.h"
#include "collect/numa-parse.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- stat ---- */

/* Names of stat fields 4..24, the ones parsed, for messages. */
static const char *const stat_field_names[] = {
    "ppid",     "pgrp",   "session",     "tty_nr",      "tpgid",     "flags",  "minflt",
    "cminflt",  "majflt", "cmajflt",     "utime",       "stime",     "cutime", "cstime",
    "priority", "nice",   "num_threads", "itrealvalue", "starttime", "vsize",  "rss",
};
#define STAT_FIRST 4 /* stat_field_names[0] is field 4 */
#define STAT_N     ARRAY_SIZE(stat_field_names)

struct stat_num {
    bool neg;
    uint64_t u; /* magnitude when !neg */
    int64_t s;  /* value when neg */
};

/* Reads " <decimal>" at *pp. Returns 0, -ENODATA at the end of the text, -EINVAL, -ERANGE. */
static int stat_number(const char **pp, struct stat_num *n)
{
    const char *p = *pp;
    char *end;

    if (*p == '\0' || *p == '\n')
        return -ENODATA;
    if (*p != ' ')
        return -EINVAL;
    p++;
    n->neg = *p == '-';
    if (!isdigit((unsigned char)p[n->neg ? 1 : 0]))
        return *p == '\0' || *p == '\n' ? -ENODATA : -EINVAL;
    errno = 0;
    if (n->neg)
        n->s = strtoll(p, &end, 10);
    else
        n->u = strtoull(p, &end, 10);
    if (errno == ERANGE)
        return -ERANGE;
    if (*end != ' ' && *end != '\n' && *end != '\0')
        return -EINVAL;
    *pp = end;
    return 0;
}

int procfs_parse_stat(const char *text, struct procfs_stat *st, char *why, size_t why_size)
{
    struct stat_num f[STAT_N];
    const char *open, *close, *p;
    uint64_t pid = 0;
    size_t comm_len;

    memset(st, 0, sizeof(*st));
    /* The pid, then " (": the command name runs from there to the last ')'. */
    for (p = text; isdigit((unsigned char)*p); p++) {
        pid = pid * 10 + (uint64_t)(*p - '0');
        if (pid > INT32_MAX) {
            snprintf(why, why_size, "the pid is out of range");
            return -EINVAL;
        }
    }
    if (p == text || pid == 0 || p[0] != ' ' || p[1] != '(') {
        snprintf(why, why_size, "does not start with \"<pid> (\"");
        return -EINVAL;
    }
    open = p + 1;
    close = strrchr(open, ')');
    if (close == NULL) {
        snprintf(why, why_size, "no ')' after the command name");
        return -EINVAL;
    }
    comm_len = (size_t)(close - open - 1);
    if (comm_len >= sizeof(st->comm))
        comm_len = sizeof(st->comm) - 1;
    memcpy(st->comm, open + 1, comm_len);
    st->comm[comm_len] = '\0';
    str_sanitize(st->comm);
    if (close[1] != ' ' || !isalpha((unsigned char)close[2])) {
        snprintf(why, why_size, "no state letter after the command name");
        return -EINVAL;
    }
    st->pid = (int32_t)pid;
    st->state = close[2];
    p = close + 3;
    for (size_t i = 0; i < STAT_N; i++) {
        int r = stat_number(&p, &f[i]);

        if (r == -ENODATA) {
            snprintf(why, why_size, "truncated: ends before field %zu (%s)", i + STAT_FIRST,
                     stat_field_names[i]);
            return -EINVAL;
        }
        if (r != 0) {
            snprintf(why, why_size, "field %zu (%s) is %s", i + STAT_FIRST, stat_field_names[i],
                     r == -ERANGE ? "out of range" : "not a number");
            return -EINVAL;
        }
    }
#define FIELD(n) f[(n)-STAT_FIRST]
    /* Fields the kernel prints as unsigned, or that cannot be negative. */
    {
        static const int must_be_positive[] = { 4, 9, 14, 15, 20, 22, 24 };

        for (size_t i = 0; i < ARRAY_SIZE(must_be_positive); i++) {
            int n = must_be_positive[i];

            if (FIELD(n).neg) {
                snprintf(why, why_size, "field %d (%s) is negative", n,
                         stat_field_names[n - STAT_FIRST]);
                return -EINVAL;
            }
        }
    }
    if (FIELD(4).u > INT32_MAX || FIELD(9).u > UINT32_MAX || FIELD(20).u > UINT32_MAX) {
        snprintf(why, why_size, "ppid, flags or num_threads is out of range");
        return -EINVAL;
    }
    st->ppid = (int32_t)FIELD(4).u;
    st->flags = (uint32_t)FIELD(9).u;
    st->utime_ticks = FIELD(14).u;
    st->stime_ticks = FIELD(15).u;
    st->threads = (uint32_t)FIELD(20).u;
    st->start_ticks = FIELD(22).u;
    st->rss_pages = FIELD(24).u;
#undef FIELD
    return 0;
}

/* ---- status ---- */

/* The value part of "Key:\tvalue" when line starts with key, else NULL. */
static const char *status_value(const char *line, const char *key)
{
    size_t n = strlen(key);

    if (strncmp(line, key, n) != 0 || line[n] != ':')
        return NULL;
    return line + n + 1;
}

/*
 * Reads the whitespace-separated unsigned numbers of one line (up to eol) into v[]. Returns how
 * many, or -1 when something else is on the line or there are more than max.
 */
static int line_numbers(const char *p, const char *eol, uint64_t *v, int max)
{
    int n = 0;

    for (;;) {
        char *end;

        while (p < eol && (*p == ' ' || *p == '\t'))
            p++;
        if (p >= eol)
            return n;
        if (!isdigit((unsigned char)*p) || n == max)
            return -1;
        errno = 0;
        v[n] = strtoull(p, &end, 10);
        if (errno != 0 || end > eol)
            return -1;
        n++;
        p = end;
        if (p < eol && *p != ' ' && *p != '\t')
            return -1;
    }
}

/* "Cpus_allowed_list:\t0-15,32-47": kept only when it is a cpulist the parser accepts. */
static void status_cpus(struct procfs_status *st, const char *v, const char *eol)
{
    uint64_t mask[NUMA_CPU_WORDS];
    size_t n;

    while (v < eol && (*v == ' ' || *v == '\t'))
        v++;
    n = (size_t)(eol - v);
    if (n == 0 || n >= sizeof(st->cpus_allowed))
        return;
    memcpy(st->cpus_allowed, v, n);
    st->cpus_allowed[n] = '\0';
    if (numa_parse_cpulist(st->cpus_allowed, mask, NUMA_CPU_WORDS) <= 0) {
        st->cpus_allowed[0] = '\0';
        return;
    }
    st->have_cpus = true;
}

int procfs_parse_nofile(const char *text, uint64_t *soft)
{
    return procfs_parse_limit(text, "Max open files", soft);
}

int procfs_parse_memlock(const char *text, uint64_t *soft)
{
    return procfs_parse_limit(text, "Max locked memory", soft);
}

int procfs_parse_limit(const char *text, const char *key, uint64_t *soft)
{
    size_t n = strlen(key);

    for (const char *line = text; line && *line;) {
        const char *eol = strchr(line, '\n'), *v = line + n;
        unsigned long long value;
        char *end;

        if (strncmp(line, key, n) == 0 && (*v == ' ' || *v == '\t')) {
            while (*v == ' ' || *v == '\t')
                v++;
            if (strncmp(v, "unlimited", 9) == 0 && (v[9] == ' ' || v[9] == '\t')) {
                *soft = UINT64_MAX;
                return 1;
            }
            if (!isdigit((unsigned char)*v))
                return 0;
            errno = 0;
            value = strtoull(v, &end, 10);
            if (errno != 0 || (*end != ' ' && *end != '\t'))
                return 0; /* out of range, or not followed by the hard limit */
            *soft = value;
            return 1;
        }
        line = eol ? eol + 1 : NULL;
    }
    return 0;
}

void procfs_parse_status(const char *text, struct procfs_status *st)
{
    memset(st, 0, sizeof(*st));
    for (const char *line = text; *line;) {
        const char *eol = strchr(line, '\n'), *v;
        uint64_t num[64];
        int n;

        if (eol == NULL)
            eol = line + strlen(line);
        if ((v = status_value(line, "Uid")) != NULL) {
            /* real, effective, saved, filesystem: ps shows the effective one */
            n = line_numbers(v, eol, num, 4);
            if (n == 4 && num[1] <= UINT32_MAX) {
                st->have_uid = true;
                st->uid = (uint32_t)num[1];
            }
        } else if ((v = status_value(line, "NSpid")) != NULL) {
            n = line_numbers(v, eol, num, (int)ARRAY_SIZE(num));
            if (n >= 1 && num[n - 1] > 0 && num[n - 1] <= INT32_MAX) {
                st->have_nspid = true;
                st->ns_pid = (int32_t)num[n - 1];
                st->ns_depth = (uint32_t)(n - 1);
            }
        } else if ((v = status_value(line, "VmRSS")) != NULL) {
            const char *kb = eol - 2;

            /* "VmRSS:\t   1234 kB" */
            if (eol - v > 3 && strncmp(kb, "kB", 2) == 0 && line_numbers(v, kb, num, 1) == 1 &&
                num[0] <= UINT64_MAX / 1024) {
                st->have_rss = true;
                st->rss_bytes = num[0] * 1024;
            }
        } else if ((v = status_value(line, "Cpus_allowed_list")) != NULL) {
            status_cpus(st, v, eol);
        }
        line = *eol ? eol + 1 : eol;
    }
}

/* ---- cmdline, environ ---- */

char *procfs_cmdline_join(const char *buf, size_t len)
{
    char *s;

    while (len > 0 && buf[len - 1] == '\0')
        len--;
    if (len == 0)
        return NULL;
    s = xmalloc(len + 1);
    memcpy(s, buf, len);
    s[len] = '\0';
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '\0')
            s[i] = ' ';
    }
    return str_sanitize(s);
}

int procfs_environ_find(const char *buf, size_t len, const char *name, char **value)
{
    size_t n = strlen(name);
    const char *end = buf + len;

    *value = NULL;
    for (const char *e = buf; e < end;) {
        const char *nul = memchr(e, '\0', (size_t)(end - e));
        size_t elen = nul ? (size_t)(nul - e) : (size_t)(end - e);

        if (elen > n && memcmp(e, name, n) == 0 && e[n] == '=') {
            char *v = xmalloc(elen - n);

            memcpy(v, e + n + 1, elen - n - 1);
            v[elen - n - 1] = '\0';
            *value = str_sanitize(v);
            return 1;
        }
        if (nul == NULL)
            break;
        e = nul + 1;
    }
    return 0;
}

/* ---- cgroup ---- */

static bool all_hex(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
            return false;
    }
    return true;
}

/* A container id: lower-case hex, at least a short id (12). */
static bool is_container_id(const char *s, size_t n)
{
    return n >= 12 && n <= 64 && all_hex(s, n);
}

/* The runtimes' systemd scope (and cgroupfs) names: "<prefix><id>[.scope]". */
static const struct {
    const char *prefix;
    const char *runtime;
} scope_prefixes[] = {
    { "docker-", "docker" },
    { "cri-containerd-", "containerd" },
    { "crio-", "cri-o" },
    { "libpod-", "podman" },
};

struct cg_ids {
    const char *runtime;
    char *id, *pod, *job;
};

/* A pod UID: 32 hex digits, with '-' (cgroupfs) or '_' (systemd) between the groups. */
static char *pod_uid(const char *s, size_t n)
{
    char *uid;
    size_t hex = 0;

    if (n < 32 || n > 36)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '-' || s[i] == '_')
            continue;
        if (!isxdigit((unsigned char)s[i]))
            return NULL;
        hex++;
    }
    if (hex != 32)
        return NULL;
    uid = xstrndup(s, n);
    for (char *c = uid; *c; c++) {
        if (*c == '_')
            *c = '-';
    }
    return uid;
}

static bool all_digits(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return false;
    }
    return true;
}

/* Reads the identities one cgroup path names; later (inner) components override earlier ones. */
static void cgroup_analyze(const char *path, struct cg_ids *ids)
{
    const char *prev = "", *c = path;
    size_t prev_len = 0;
    bool kube = false, slurm = false;

    while (*c) {
        size_t n;

        while (*c == '/')
            c++;
        n = strcspn(c, "/");
        if (n == 0)
            break;
        if (strncmp(c, "kubepods", 8) == 0) {
            const char *pod = NULL;

            kube = true;
            /* systemd driver: kubepods-burstable-pod<uid>.slice */
            for (size_t i = 0; i + 4 <= n; i++) {
                if (strncmp(c + i, "-pod", 4) == 0)
                    pod = c + i + 4;
            }
            if (pod != NULL && n > 6 && strncmp(c + n - 6, ".slice", 6) == 0) {
                char *uid = pod_uid(pod, (size_t)(c + n - 6 - pod));

                if (uid != NULL) {
                    free(ids->pod);
                    ids->pod = uid;
                }
            }
        } else if (kube && n > 3 && strncmp(c, "pod", 3) == 0) {
            /* cgroupfs driver: /kubepods/<qos>/pod<uid>/<container> */
            char *uid = pod_uid(c + 3, n - 3);

            if (uid != NULL) {
                free(ids->pod);
                ids->pod = uid;
            }
        } else if (strncmp(c, "slurm", 5) == 0) {
            slurm = true;
        } else if (slurm && n > 4 && strncmp(c, "job_", 4) == 0 && all_digits(c + 4, n - 4)) {
            free(ids->job);
            ids->job = xstrndup(c + 4, n - 4);
        } else {
            size_t k, idn;

            for (k = 0; k < ARRAY_SIZE(scope_prefixes); k++) {
                size_t pl = strlen(scope_prefixes[k].prefix);

                if (n <= pl || strncmp(c, scope_prefixes[k].prefix, pl) != 0)
                    continue;
                idn = n - pl;
                if (idn > 6 && strncmp(c + n - 6, ".scope", 6) == 0)
                    idn -= 6;
                if (is_container_id(c + pl, idn)) {
                    free(ids->id);
                    ids->id = xstrndup(c + pl, idn);
                    ids->runtime = scope_prefixes[k].runtime;
                    break;
                }
            }
            /* Bare ids: /docker/<id>, and /kubepods/.../pod<uid>/<id> (runtime unnamed). */
            if (k == ARRAY_SIZE(scope_prefixes) && n == 64 && all_hex(c, n)) {
                if (prev_len == 6 && strncmp(prev, "docker", 6) == 0) {
                    free(ids->id);
                    ids->id = xstrndup(c, n);
                    ids->runtime = "docker";
                } else if (kube) {
                    free(ids->id);
                    ids->id = xstrndup(c, n);
                    ids->runtime = NULL;
                }
            }
        }
        prev = c;
        prev_len = n;
        c += n;
    }
}

static void cgroup_take(struct procfs_cgroup *cg, const char *path, struct cg_ids *ids)
{
    bool named = false;

    if (ids->id != NULL && cg->container_id == NULL) {
        cg->container_id = ids->id;
        cg->runtime = ids->runtime ? xstrdup(ids->runtime) : NULL;
        ids->id = NULL;
        named = true;
    }
    if (ids->pod != NULL && cg->pod_uid == NULL) {
        cg->pod_uid = ids->pod;
        ids->pod = NULL;
        named = true;
    }
    if (ids->job != NULL && cg->slurm_job_id == NULL) {
        cg->slurm_job_id = ids->job;
        ids->job = NULL;
        named = true;
    }
    if (named && cg->path == NULL)
        cg->path = str_sanitize(xstrdup(path));
    free(ids->id);
    free(ids->pod);
    free(ids->job);
}

int procfs_parse_cgroup(const char *text, struct procfs_cgroup *cg)
{
    char *copy = xstrdup(text), *save = NULL, *v2 = NULL, *first = NULL;
    char **paths = NULL;
    size_t n_paths = 0, cap = 0;

    memset(cg, 0, sizeof(*cg));
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;

        if (c2 == NULL || !all_digits(line, (size_t)(c1 - line)) || c2[1] != '/')
            continue;
        if (c1 == line + 1 && line[0] == '0' && c2 == c1 + 1 && v2 == NULL)
            v2 = c2 + 1;
        if (first == NULL)
            first = c2 + 1;
        xgrow(&paths, &cap, n_paths + 1, sizeof(*paths));
        paths[n_paths++] = c2 + 1;
    }
    if (first == NULL) {
        free(paths);
        free(copy);
        return -EINVAL;
    }
    /* The unified (v2) hierarchy first: it is the one that is current on a mixed system. */
    if (v2 != NULL) {
        struct cg_ids ids = { NULL, NULL, NULL, NULL };

        cgroup_analyze(v2, &ids);
        cgroup_take(cg, v2, &ids);
    }
    for (size_t i = 0; i < n_paths; i++) {
        struct cg_ids ids = { NULL, NULL, NULL, NULL };

        if (paths[i] == v2)
            continue;
        cgroup_analyze(paths[i], &ids);
        cgroup_take(cg, paths[i], &ids);
    }
    if (cg->path == NULL)
        cg->path = str_sanitize(xstrdup(v2 ? v2 : first));
    free(paths);
    free(copy);
    return 0;
}

void procfs_cgroup_free(struct procfs_cgroup *cg)
{
    free(cg->path);
    free(cg->runtime);
    free(cg->container_id);
    free(cg->pod_uid);
    free(cg->slurm_job_id);
    memset(cg, 0, sizeof(*cg));
}

/* ---- maps ---- */

static const struct {
    const char *stem;
    bool any_suffix; /* libcudnn_ops, libcublasLt, libtensorflow_framework */
    const char *kind;
} lib_kinds[] = {
    { "libcuda", false, "cuda" },        { "libnvidia-ml", false, "nvml" },
    { "libcudart", false, "cudart" },    { "libcudnn", true, "cudnn" },
    { "libnccl", false, "nccl" },        { "libcublas", true, "cublas" },
    { "libtorch_cuda", false, "torch" }, { "libtensorflow", true, "tensorflow" },
};

/*
 * Does base name a library of kind k? Forms: stem[suffix][-<8 hex>].so[.<version>]; the hash is
 * what auditwheel adds to libraries it bundles in pip wheels (libcudart-9335f6a2.so.12).
 */
static bool lib_match(const char *base, size_t k, const char **version)
{
    size_t n = strlen(lib_kinds[k].stem);
    const char *p;

    if (strncmp(base, lib_kinds[k].stem, n) != 0)
        return false;
    p = base + n;
    if (lib_kinds[k].any_suffix) {
        while (isalnum((unsigned char)*p) || *p == '_')
            p++;
    }
    if (*p == '-') {
        if (strlen(p + 1) < 8 || !all_hex(p + 1, 8))
            return false;
        p += 9;
    }
    if (strncmp(p, ".so", 3) != 0)
        return false;
    p += 3;
    *version = NULL;
    if (*p == '\0')
        return true;
    if (*p != '.' || !isdigit((unsigned char)p[1]))
        return false;
    for (const char *v = p + 1; *v; v++) {
        if (!isdigit((unsigned char)*v) && *v != '.')
            return false;
    }
    *version = p + 1;
    return true;
}

static void add_lib(const char *path, struct proc_lib **libs, size_t *n_libs)
{
    const char *base = strrchr(path, '/');

    base = base ? base + 1 : path;
    for (size_t k = 0; k < ARRAY_SIZE(lib_kinds); k++) {
        const char *version;
        struct proc_lib *l;

        if (!lib_match(base, k, &version))
            continue;
        for (size_t i = 0; i < *n_libs; i++) {
            if (strcmp((*libs)[i].kind, lib_kinds[k].kind) == 0 &&
                strcmp((*libs)[i].path, path) == 0)
                return;
        }
        *libs = xreallocarray(*libs, *n_libs + 1, sizeof(**libs));
        l = &(*libs)[(*n_libs)++];
        l->kind = xstrdup(lib_kinds[k].kind);
        l->path = str_sanitize(xstrdup(path));
        l->version = version ? xstrdup(version) : NULL;
        return;
    }
}

void procfs_parse_maps(const char *text, struct proc_lib **libs, size_t *n_libs)
{
    static const char deleted[] = " (deleted)";

    for (const char *line = text; *line;) {
        const char *eol = strchr(line, '\n'), *p = line;
        char path[4096];
        size_t len;

        if (eol == NULL)
            break; /* cut by a bounded read: the name may be cut too */
        /* address perms offset dev inode, then the path (which may hold spaces) */
        for (int field = 0; field < 5; field++) {
            while (p < eol && *p != ' ')
                p++;
            while (p < eol && *p == ' ')
                p++;
        }
        len = (size_t)(eol - p);
        if (len > 0 && *p == '/' && len < sizeof(path)) {
            memcpy(path, p, len);
            path[len] = '\0';
            if (len > sizeof(deleted) - 1 &&
                strcmp(path + len - (sizeof(deleted) - 1), deleted) == 0)
                path[len - (sizeof(deleted) - 1)] = '\0';
            add_lib(path, libs, n_libs);
        }
        line = eol + 1;
    }
}

/* ---- fd links ---- */

enum procfs_dev procfs_classify_link(const char *link, uint32_t *minor)
{
    static const char dev[] = "/dev/nvidia", deleted[] = " (deleted)";
    const char *rest;
    size_t n;

    if (strncmp(link, dev, sizeof(dev) - 1) != 0)
        return PROCFS_DEV_NONE;
    rest = link + sizeof(dev) - 1;
    n = strlen(rest);
    /* A node removed while open (a container's /dev torn down) still names the device. */
    if (n >= sizeof(deleted) - 1 && strcmp(rest + n - (sizeof(deleted) - 1), deleted) == 0)
        n -= sizeof(deleted) - 1;
    if (n > 0 && n <= 9 && all_digits(rest, n) && (rest[0] != '0' || n == 1)) {
        uint32_t m = 0;

        for (size_t i = 0; i < n; i++)
            m = m * 10 + (uint32_t)(rest[i] - '0');
        *minor = m;
        return PROCFS_DEV_GPU;
    }
    if (n == 3 && strncmp(rest, "ctl", 3) == 0)
        return PROCFS_DEV_CTL;
    if ((n == 4 && strncmp(rest, "-uvm", 4) == 0) ||
        (n == 10 && strncmp(rest, "-uvm-tools", 10) == 0))
        return PROCFS_DEV_UVM;
    if (n > 1 && rest[0] == '-')
        return PROCFS_DEV_OTHER;
    return PROCFS_DEV_NONE;
}

/* ---- host files ---- */

int procfs_parse_btime(const char *text, int64_t *btime_s)
{
    for (const char *line = text; *line;) {
        const char *eol = strchr(line, '\n');

        if (strncmp(line, "btime ", 6) == 0) {
            uint64_t v;
            int n = line_numbers(line + 6, eol ? eol : line + strlen(line), &v, 1);

            if (n != 1 || v == 0 || v > INT64_MAX / 1000)
                return -EINVAL;
            *btime_s = (int64_t)v;
            return 0;
        }
        if (eol == NULL)
            break;
        line = eol + 1;
    }
    return -EINVAL;
}

char *procfs_passwd_lookup(const char *text, uint32_t uid)
{
    for (const char *line = text; *line;) {
        const char *eol = strchr(line, '\n'), *c1, *c2, *c3;

        if (eol == NULL)
            eol = line + strlen(line);
        /* name:password:uid:... */
        c1 = memchr(line, ':', (size_t)(eol - line));
        c2 = c1 ? memchr(c1 + 1, ':', (size_t)(eol - c1 - 1)) : NULL;
        c3 = c2 ? memchr(c2 + 1, ':', (size_t)(eol - c2 - 1)) : NULL;
        if (c3 != NULL && c1 > line && all_digits(c2 + 1, (size_t)(c3 - c2 - 1)) &&
            c3 - c2 - 1 <= 10) {
            uint64_t v = strtoull(c2 + 1, NULL, 10);

            if (v == uid)
                return str_sanitize(xstrndup(line, (size_t)(c1 - line)));
        }
        line = *eol ? eol + 1 : eol;
    }
    return NULL;
}

/* ---- reading ---- */

ssize_t procfs_read_bounded(int dirfd, const char *name, size_t max, char **out, bool *truncated)
{
    size_t cap = max < 4095 ? max + 1 : 4096, len = 0;
    char *buf;
    int fd;

    *out = NULL;
    *truncated = false;
    fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    buf = xmalloc(cap);
    for (;;) {
        ssize_t n;

        if (len + 1 == cap) {
            if (len >= max) {
                char probe;

                do
                    n = read(fd, &probe, 1);
                while (n < 0 && errno == EINTR);
                *truncated = n > 0;
                break;
            }
            cap = cap * 2 > max + 1 ? max + 1 : cap * 2;
            buf = xrealloc(buf, cap);
        }
        n = read(fd, buf + len, cap - 1 - len);
        if (n == 0)
            break;
        if (n < 0) {
            int e = errno;

            if (e == EINTR)
                continue;
            free(buf);
            close(fd);
            return -e;
        }
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    *out = buf;
    return (ssize_t)len;
}

ssize_t procfs_read_small(int dirfd, const char *path, char *buf, size_t size)
{
    size_t len = 0;
    int fd;

    if (size < 2)
        return -EINVAL;
    fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -errno;
    for (;;) {
        size_t want = size - 1 - len;
        ssize_t n;

        if (want == 0) {
            char probe;
            int e;

            do
                n = read(fd, &probe, 1);
            while (n < 0 && errno == EINTR);
            e = n < 0 ? errno : n > 0 ? EFBIG : 0;
            close(fd);
            if (e != 0)
                return -e;
            break;
        }
        n = read(fd, buf + len, want);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;

            close(fd);
            return -e;
        }
        len += (size_t)n;
        if (n == 0 || ((size_t)n < want && buf[len - 1] == '\n')) {
            close(fd);
            break;
        }
    }
    buf[len] = '\0';
    return (ssize_t)len;
}

bool procfs_task_states(int dirfd, size_t max, uint32_t *in_d, uint32_t *live)
{
    int fd = openat(dirfd, "task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    struct dirent *e;
    size_t seen = 0;
    bool any = false;

    *in_d = *live = 0;
    if (d == NULL) {
        if (fd >= 0)
            close(fd);
        return false;
    }
    while ((e = readdir(d)) != NULL && seen < max) {
        char path[300], buf[2048], why[128];
        struct procfs_stat st;

        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        seen++;
        snprintf(path, sizeof(path), "task/%s/stat", e->d_name);
        if (procfs_read_small(dirfd, path, buf, sizeof(buf)) <= 0 ||
            procfs_parse_stat(buf, &st, why, sizeof(why)) != 0)
            continue;
        any = true;
        *in_d += st.state == 'D';
        *live += st.state != 'Z' && st.state != 'X';
    }
    closedir(d);
    return any;
}
