/*
 * Who holds which GPU, as the process scan sees it: the /dev/nvidia* files each process has open
 * (its fd links, read in pass 1) and the lists NVML gave, joined into each record's GPUs with
 * what each source says (minor number, GPU index, memory, type).
 */
#include "collect/procfs-scan-internal.h"
#include "collect/procfs.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void held_add_minor(struct held *h, uint32_t minor)
{
    for (size_t i = 0; i < h->n_minors; i++) {
        if (h->minors[i] == minor)
            return;
    }
    xgrow(&h->minors, &h->cap_minors, h->n_minors + 1, sizeof(*h->minors));
    h->minors[h->n_minors++] = minor;
}

bool pscan_held_any(const struct held *h)
{
    return h->n_minors > 0 || h->ctl || h->uvm || h->other;
}

/*
 * Reads the links of the fd directory at path (/proc/<pid>/fd) into *h, listing it with the
 * caller's buffer dents (DENTS_SIZE bytes): any thread. Returns 0 or -errno.
 */
int pscan_read_fds(char *dents, int dirfd, const char *path, struct held *h)
{
    int fd = openat(dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    bool more = true;

    if (fd < 0)
        return -errno;
    while (more) {
        ssize_t n = getdents64(fd, dents, DENTS_SIZE);

        if (n < 0) {
            int e = errno;

            close(fd);
            return -e;
        }
        if (n == 0)
            break;
        /*
         * Directories fill the buffer until they run out of entries: room left for several more
         * means this was the last batch, and the call that would return 0 can be saved.
         */
        more = n > (ssize_t)DENTS_SIZE - 2048;
        for (ssize_t off = 0; off < n;) {
            const struct dirent64 *d = (const struct dirent64 *)(dents + off);
            char link[PATH_MAX];
            ssize_t len;
            uint32_t minor;

            off += d->d_reclen;
            if (!isdigit((unsigned char)d->d_name[0]))
                continue; /* ".", "..", and stray files in fixture trees */
            h->n_fds++;
            len = readlinkat(fd, d->d_name, link, sizeof(link) - 1);
            if (len < 0 && (errno == EACCES || errno == EPERM)) {
                /* Listed but not readable (a process that is not dumpable): fds unknown. */
                close(fd);
                return -EACCES;
            }
            if (len < 0)
                continue; /* closed since the listing */
            link[len] = '\0';
            switch (procfs_classify_link(link, &minor)) {
            case PROCFS_DEV_GPU:
                held_add_minor(h, minor);
                break;
            case PROCFS_DEV_CTL:
                h->ctl = true;
                break;
            case PROCFS_DEV_UVM:
                h->uvm = true;
                break;
            case PROCFS_DEV_OTHER:
                h->other = true;
                break;
            case PROCFS_DEV_NONE:
                break;
            }
        }
    }
    close(fd);
    return 0;
}

static int nvml_ref_cmp(const void *a, const void *b)
{
    const struct nvml_ref *x = a, *y = b;

    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return x->gpu < y->gpu ? -1 : x->gpu > y->gpu;
}

void pscan_nvml_collect(struct scan *sc)
{
    size_t n = 0;

    for (size_t i = 0; i < sc->s->n_gpus; i++) {
        const struct gpu *g = &sc->s->gpus[i];

        if (gpu_valid(g, GPU_S_PROCESSES))
            n += g->n_procs;
    }
    sc->nvml = xcalloc(n + 1, sizeof(*sc->nvml));
    for (size_t i = 0; i < sc->s->n_gpus; i++) {
        const struct gpu *g = &sc->s->gpus[i];

        if (!gpu_valid(g, GPU_S_PROCESSES))
            continue;
        for (size_t k = 0; k < g->n_procs; k++) {
            if (g->procs[k].pid == 0 || g->procs[k].pid > INT32_MAX)
                continue;
            sc->nvml[sc->n_nvml].pid = (int32_t)g->procs[k].pid;
            sc->nvml[sc->n_nvml].gpu = i;
            sc->nvml[sc->n_nvml].gp = &g->procs[k];
            sc->n_nvml++;
        }
    }
    if (sc->n_nvml > 1)
        qsort(sc->nvml, sc->n_nvml, sizeof(*sc->nvml), nvml_ref_cmp);
}

/* The first of NVML's entries for pid, or NULL. */
const struct nvml_ref *pscan_nvml_find(const struct scan *sc, int32_t pid)
{
    size_t lo = 0, hi = sc->n_nvml;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (sc->nvml[mid].pid < pid)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < sc->n_nvml && sc->nvml[lo].pid == pid ? &sc->nvml[lo] : NULL;
}

/* NVML index of the GPU behind /dev/nvidia<minor>, or UINT32_MAX when NVML did not say. */
static uint32_t gpu_of_minor(const struct scan *sc, uint32_t minor)
{
    for (size_t i = 0; i < sc->s->n_gpus; i++) {
        const struct gpu *g = &sc->s->gpus[i];

        if (gpu_valid(g, GPU_S_MINOR) && g->minor_number == minor)
            return g->index;
    }
    return UINT32_MAX;
}

static struct proc_gpu *proc_gpu_entry(struct proc *p, uint32_t gpu_index, uint32_t minor)
{
    struct proc_gpu *e;

    for (size_t i = 0; i < p->n_gpus; i++) {
        e = &p->gpus[i];
        if ((gpu_index != UINT32_MAX && e->gpu_index == gpu_index) ||
            (minor != UINT32_MAX && e->minor == minor)) {
            if (e->gpu_index == UINT32_MAX && gpu_index != UINT32_MAX) {
                e->gpu_index = gpu_index;
                e->valid |= UINT64_C(1) << PROC_GPU_S_INDEX;
            }
            if (e->minor == UINT32_MAX && minor != UINT32_MAX) {
                e->minor = minor;
                e->valid |= UINT64_C(1) << PROC_GPU_S_MINOR;
            }
            return e;
        }
    }
    p->gpus = xreallocarray(p->gpus, p->n_gpus + 1, sizeof(*p->gpus));
    e = &p->gpus[p->n_gpus++];
    memset(e, 0, sizeof(*e));
    e->gpu_index = gpu_index;
    e->minor = minor;
    if (gpu_index != UINT32_MAX)
        e->valid |= UINT64_C(1) << PROC_GPU_S_INDEX;
    if (minor != UINT32_MAX)
        e->valid |= UINT64_C(1) << PROC_GPU_S_MINOR;
    return e;
}

static int proc_gpu_cmp(const void *a, const void *b)
{
    const struct proc_gpu *x = a, *y = b;

    if (x->gpu_index != y->gpu_index)
        return x->gpu_index < y->gpu_index ? -1 : 1;
    return x->minor < y->minor ? -1 : x->minor > y->minor;
}

/* The GPUs of p: the devices it holds, joined with NVML's entries for its pid. */
void pscan_proc_add_gpus(struct scan *sc, struct proc *p, const struct held *h)
{
    const struct nvml_ref *r = pscan_nvml_find(sc, p->pid);

    for (size_t i = 0; h != NULL && i < h->n_minors; i++)
        proc_gpu_entry(p, gpu_of_minor(sc, h->minors[i]), h->minors[i])->holds_device = true;
    for (; r != NULL && r < sc->nvml + sc->n_nvml && r->pid == p->pid; r++) {
        const struct gpu *g = &sc->s->gpus[r->gpu];
        struct proc_gpu *e =
            proc_gpu_entry(p, g->index, gpu_valid(g, GPU_S_MINOR) ? g->minor_number : UINT32_MAX);

        e->nvml_listed = true;
        e->type_mask |= r->gp->type_mask;
        if (r->gp->valid & (UINT64_C(1) << GPU_PROC_S_USED)) {
            e->used_bytes = r->gp->used_bytes;
            e->valid |= UINT64_C(1) << PROC_GPU_S_USED;
        }
        if (r->gp->valid & (UINT64_C(1) << GPU_PROC_S_UTIL)) {
            e->sm_util_pct = r->gp->sm_util_pct;
            e->valid |= UINT64_C(1) << PROC_GPU_S_UTIL;
        }
    }
    if (p->n_gpus > 1)
        qsort(p->gpus, p->n_gpus, sizeof(*p->gpus), proc_gpu_cmp);
}
