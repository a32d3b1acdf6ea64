/*
 * The parsers of /proc/<pid> files (procfs.c): stat, status, cmdline, environ, cgroup, maps, fd
 * link texts, and the host's btime and passwd lines the scan reads. Each gets the whole input.
 * Every string they return goes into the snapshot's JSON and onto terminals, so it must be valid
 * UTF-8 without control characters (C0, DEL, C1).
 */
#include "collect/procfs.h"
#include "fuzz.h"
#include "util/strutil.h"

static void check_text(const char *what, const char *s)
{
    if (s != NULL)
        FUZZ_PRINTABLE(what, s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size), *s, why[128];
    struct procfs_stat st;
    struct procfs_status status;
    struct procfs_cgroup cg;
    struct proc_lib *libs = NULL;
    size_t n_libs = 0;
    uint32_t minor;
    int64_t btime;

    if (procfs_parse_stat(text, &st, why, sizeof(why)) == 0) {
        FUZZ_ASSERT(memchr(st.comm, '\0', sizeof(st.comm)) != NULL, "comm not terminated");
        check_text("comm", st.comm);
    } else {
        FUZZ_ASSERT(memchr(why, '\0', sizeof(why)) != NULL && why[0] != '\0', "no reason given");
    }
    procfs_parse_status(text, &status);
    {
        uint64_t soft = 42;

        if (procfs_parse_nofile(text, &soft) == 0)
            FUZZ_ASSERT(soft == 42, "a limit written without being read");
        soft = 42;
        if (procfs_parse_memlock(text, &soft) == 0)
            FUZZ_ASSERT(soft == 42, "a locked-memory limit written without being read");
    }

    /* cmdline and environ are NUL-separated: the raw bytes, NULs included */
    s = procfs_cmdline_join((const char *)data, size);
    check_text("cmdline", s);
    free(s);
    s = NULL;
    if (procfs_environ_find((const char *)data, size, "CUDA_VISIBLE_DEVICES", &s) == 1)
        check_text("environ value", s);
    free(s);

    memset(&cg, 0, sizeof(cg));
    if (procfs_parse_cgroup(text, &cg) == 0) {
        check_text("cgroup path", cg.path);
        check_text("runtime", cg.runtime);
        check_text("container id", cg.container_id);
        check_text("pod uid", cg.pod_uid);
        check_text("slurm job", cg.slurm_job_id);
    }
    procfs_cgroup_free(&cg);

    procfs_parse_maps(text, &libs, &n_libs);
    for (size_t i = 0; i < n_libs; i++) {
        check_text("library path", libs[i].path);
        check_text("library version", libs[i].version);
        FUZZ_ASSERT(libs[i].kind != NULL, "library without a kind");
        free(libs[i].kind);
        free(libs[i].path);
        free(libs[i].version);
    }
    free(libs);

    if (procfs_classify_link(text, &minor) == PROCFS_DEV_GPU)
        FUZZ_ASSERT(strncmp(text, "/dev/nvidia", 11) == 0, "a GPU that is not /dev/nvidiaN");
    (void)procfs_parse_btime(text, &btime);
    for (uint32_t uid = 0; uid < 2; uid++) {
        s = procfs_passwd_lookup(text, uid);
        check_text("user name", s);
        free(s);
    }
    s = str_sanitize(fuzz_cstr(data, size));
    check_text("sanitized", s);
    free(s);
    free(text);
    return 0;
}
