/*
 * The parsers of the host collector (hostfs.c): /proc/stat, loadavg, uptime, CPU lists,
 * meminfo, vmstat, pressure (PSI), diskstats, mountinfo, and the text cleaner for what the
 * kernel writes. Every parser gets the whole input. A parser that fails says why; what it keeps
 * is in range (no NaN load, disk names terminated, strings printable once cleaned), and a window
 * over two
 * readings of the same counters never yields a negative or impossible rate.
 */
#include "collect/hostfs.h"
#include "fuzz.h"
#include "snapshot/snapshot.h"
#include "util/strutil.h"

#include <math.h>

static void cause_given(int rc, char **cause)
{
    if (rc != 0) {
        char *text;

        FUZZ_ASSERT(*cause != NULL, "failed without saying why");
        /* a reason may quote the garbage; the collector cleans it as here before noting it */
        text = hostfs_text(*cause);
        FUZZ_PRINTABLE("the cleaned reason", text);
        free(text);
    }
    free(*cause);
    *cause = NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size), *cause = NULL, *s;
    struct hostfs_counters a, b;
    struct hostfs_meminfo mem;
    struct hostfs_mounts mounts = { 0 };
    struct host_info h;
    double load[3], up, busy, iowait, steal;
    uint32_t cpus, count;
    uint64_t in, out;
    int rc;

    memset(&a, 0, sizeof(a));
    rc = hostfs_parse_stat(text, &a.cpu, &cpus, &cause);
    a.have_cpu = rc == 0;
    cause_given(rc, &cause);
    if (hostfs_parse_loadavg(text, load, &cause) == 0) {
        for (int i = 0; i < 3; i++)
            FUZZ_ASSERT(isfinite(load[i]) && load[i] >= 0, "load %g", load[i]);
    }
    free(cause);
    cause = NULL;
    if (hostfs_parse_uptime(text, &up, &cause) == 0)
        FUZZ_ASSERT(isfinite(up) && up >= 0, "uptime %g", up);
    free(cause);
    cause = NULL;
    cause_given(hostfs_parse_cpu_list(text, &count, &cause), &cause);
    memset(&mem, 0, sizeof(mem));
    cause_given(hostfs_parse_meminfo(text, &mem, &cause) < 0 ? -1 : 0, &cause);
    rc = hostfs_parse_vmstat(text, &in, &out, &cause);
    a.have_swap = rc == 0;
    a.pswpin = in;
    a.pswpout = out;
    cause_given(rc, &cause);
    for (int r = 0; r < HOSTFS_PSI__COUNT; r++) {
        rc = hostfs_parse_psi(text, &a.psi[r], &cause);
        a.have_psi[r] = rc == 0;
        if (rc == 0) {
            FUZZ_ASSERT(isfinite(a.psi[r].some.avg10) && isfinite(a.psi[r].some.avg300),
                        "PSI average not finite");
        }
        cause_given(rc, &cause);
    }
    a.n_disks = 0;
    (void)hostfs_parse_diskstats(text, &a.disks, &a.n_disks, &cause);
    free(cause);
    cause = NULL;
    a.have_disks = true;
    for (size_t i = 0; i < a.n_disks; i++)
        FUZZ_ASSERT(memchr(a.disks[i].name, '\0', sizeof(a.disks[i].name)) != NULL,
                    "disk name not terminated");

    (void)hostfs_parse_mountinfo(text, &mounts, &cause);
    free(cause);
    for (size_t i = 0; i < mounts.n; i++) {
        /* raw as the kernel wrote them; the collector cleans each with hostfs_text */
        s = hostfs_text(mounts.v[i].mount_point);
        FUZZ_PRINTABLE("mount point", s);
        free(s);
        (void)hostfs_mount_find(&mounts, mounts.v[i].mount_point);
    }
    (void)hostfs_mount_find(&mounts, "/tmp/x");
    hostfs_mounts_free(&mounts);

    /* A window from a reading to a later one: the second is the first with time passed. */
    b = a;
    b.t_us = a.t_us + 1000000;
    memset(&h, 0, sizeof(h));
    hostfs_apply_window(&a, &b, &h);
    if (hostfs_cpu_pct(&a.cpu, &b.cpu, &busy, &iowait, &steal))
        FUZZ_ASSERT(busy >= 0 && busy <= 100, "busy %g %%", busy);
    host_info_free(&h);
    hostfs_counters_free(&a);

    s = hostfs_text(text);
    FUZZ_PRINTABLE("hostfs_text", s);
    free(s);
    s = hostfs_textn((const char *)data, size);
    FUZZ_PRINTABLE("hostfs_textn", s);
    free(s);
    free(text);
    return 0;
}
