/* The stack collector over fixture trees: toolkits of every vintage, libraries from ld.so.conf
 * directories and from an ld.so.cache written here, framework builds found from GPU processes,
 * garbage everywhere, and the section's byte-identical JSON round trip. */
#include "collect/collect.h"
#include "collect/stack-ldcache.h"
#include "snapshot/snapshot.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static void add_lib(struct proc *p, const char *kind, const char *path, const char *version)
{
    struct proc_lib *l;

    p->libs = xreallocarray(p->libs, p->n_libs + 1, sizeof(*p->libs));
    l = &p->libs[p->n_libs++];
    l->kind = xstrdup(kind);
    l->path = xstrdup(path);
    l->version = version ? xstrdup(version) : NULL;
}

static struct proc *add_proc(struct snapshot *s, int32_t pid, const char *exe, const char *cmdline)
{
    struct proc *p;

    s->procs.procs = xreallocarray(s->procs.procs, s->procs.n_procs + 1, sizeof(*p));
    p = &s->procs.procs[s->procs.n_procs++];
    memset(p, 0, sizeof(*p));
    p->pid = pid;
    p->exe = exe ? xstrdup(exe) : NULL;
    p->cmdline = cmdline ? xstrdup(cmdline) : NULL;
    return p;
}

/* live: treat the tree as this machine's own root, so gpudoctor's environment ($CUDA_HOME) counts.
 */
static void run_stack_as(const char *root, struct snapshot *s, bool live)
{
    char *cause = NULL;
    struct collect_opts o = { 0 };
    struct collect_ctx ctx;

    memset(&ctx, 0, sizeof(ctx));
    o.root = root;
    o.timeout_ms = 10000;
    ctx.opts = &o;
    if (sysroot_open(&ctx.root, root, &cause) != 0)
        fail_msg("%s", cause);
    ctx.live = live;
    ctx.start_mono_ms = time_mono_ms();
    ctx.deadline_mono_ms = ctx.start_mono_ms + o.timeout_ms;
    assert_null(collector_stack.start(&ctx, s));
    sysroot_close(&ctx.root);
}

static void run_stack(const char *root, struct snapshot *s)
{
    run_stack_as(root, s, false);
}

static bool has_note(const struct snapshot *s, const char *text)
{
    const struct collector_status *c = &s->collectors[COLLECTOR_STACK];

    for (size_t i = 0; i < c->n_notes; i++) {
        if (strstr(c->notes[i], text) != NULL)
            return true;
    }
    return false;
}

static void assert_str(const char *got, const char *want)
{
    if (want == NULL && got != NULL)
        fail_msg("expected NULL, got \"%s\"", got);
    if (want != NULL && got == NULL)
        fail_msg("expected \"%s\", got NULL", want);
    if (want != NULL)
        assert_string_equal(got, want);
}

static void assert_toolkit(const struct stack_toolkit *t, const char *path, const char *version,
                           const char *source, const char *cudart, const char *nvcc,
                           const char *cudnn)
{
    assert_str(t->path, path);
    assert_str(t->version, version);
    assert_str(t->version_source, source);
    assert_str(t->cudart_version, cudart);
    assert_str(t->nvcc_version, nvcc);
    assert_str(t->cudnn_version, cudnn);
}

static void assert_lib(const struct stack_lib *l, const char *kind, const char *soname,
                       const char *path, const char *version, const char *source)
{
    assert_str(l->kind, kind);
    assert_str(l->soname, soname);
    assert_str(l->path, path);
    assert_str(l->version, version);
    assert_str(l->version_source, source);
}

/* The GPU processes of the basic fixture, as the processes collector would leave them. */
static struct snapshot *basic_snapshot(void)
{
    struct snapshot *s = snapshot_new();
    struct proc *p;

    p = add_proc(s, 4242, "/usr/bin/python3.11", "python train.py");
    add_lib(p, "cudart",
            "/opt/venv/lib/python3.11/site-packages/nvidia/cuda_runtime/lib/"
            "libcudart.so.12",
            "12");
    add_lib(p, "torch", "/opt/venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so", NULL);
    add_lib(p, "nccl", "/opt/venv/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2", NULL);
    /* A copy bundled into torch by auditwheel: not the nvidia-cuda-runtime wheel's. */
    add_lib(p, "cudart",
            "/opt/venv/lib/python3.11/site-packages/torch/lib/libcudart-9335f6a2.so.12", "12");
    add_proc(s, 4545, "/usr/bin/python3.11", "python worker.py");
    add_proc(s, 4343, "/usr/bin/python3.12", "/usr/bin/python3.12 tf_job.py");
    add_proc(s, 4646, "/opt/conda/bin/python3.8", "python old.py");
    add_proc(s, 4747, "/srv/cpu-env/bin/python3.10", "python cpu.py");
    /* A venv known only from argv[0]: exe is the real binary the venv links to. */
    add_proc(s, 4848, "/usr/bin/python3.11", "/opt/venv/bin/python -u serve.py");
    /* In a container: its files are under /proc/5151/root, not in the host's tree. */
    add_proc(s, 5151, "/usr/bin/python3.12", "python3 app.py");
    /* Not Python at all. */
    add_proc(s, 4949, "/usr/local/bin/llama-server", "llama-server -m x.gguf");
    return s;
}

static void test_cuda_home_only_for_the_live_root(void **state)
{
    struct snapshot *s = snapshot_new();

    (void)state;
    setenv("CUDA_HOME", "/usr/local/cuda-13.0", 1);
    run_stack(TEST_FIXTURES "/stack/basic", s);
    unsetenv("CUDA_HOME");
    /* Another root (a fixture, the host mounted in a container): our environment is not its. */
    assert_null(s->stack.cuda_home);
    for (size_t i = 0; i < s->stack.n_toolkits; i++)
        assert_false(s->stack.toolkits[i].is_cuda_home);
    assert_false(has_note(s, "CUDA_HOME"));
    snapshot_free(s);
}

static void test_basic_tree(void **state)
{
    struct snapshot *s = basic_snapshot();
    const struct stack_info *st = &s->stack;
    const struct stack_framework *f;

    (void)state;
    setenv("CUDA_HOME", "/usr/local/cuda-13.0", 1);
    run_stack_as(TEST_FIXTURES "/stack/basic", s, true);
    unsetenv("CUDA_HOME");

    assert_str(st->cuda_home, "/usr/local/cuda-13.0");
    assert_int_equal(st->n_toolkits, 5);
    assert_toolkit(&st->toolkits[0], "/opt/cuda-12.2", "12.2.140", "nvcc", NULL, "12.2.140", NULL);
    assert_toolkit(&st->toolkits[1], "/usr/local/cuda-10.0", "10.0.130", "version.txt", NULL, NULL,
                   NULL);
    /* 11.8's SDK version is a build date: the runtime's is reported. */
    assert_toolkit(&st->toolkits[2], "/usr/local/cuda-11.8", "11.8.89", "version.json", "11.8.89",
                   "11.8.89", NULL);
    assert_toolkit(&st->toolkits[3], "/usr/local/cuda-12.4", "12.4.1", "version.json", "12.4.127",
                   "12.4.131", "9.1.0");
    assert_true(st->toolkits[3].is_default);
    assert_false(st->toolkits[3].is_cuda_home);
    assert_toolkit(&st->toolkits[4], "/usr/local/cuda-13.0", "13.0.96", "dist-info", "13.0.96",
                   "13.0.88", "9.19.0.56");
    assert_true(st->toolkits[4].is_cuda_home);
    assert_false(st->toolkits[4].is_default);
    assert_true(has_note(s, "/opt/cuda-12.2/version.json: not the JSON a toolkit writes"));

    /* No ld.so.cache in this tree: the ld.so.conf directories were scanned. */
    assert_str(st->ld_source, "/etc/ld.so.conf");
    assert_int_equal(st->n_libs, 7);
    assert_lib(&st->libs[0], "cudart", "libcudart.so.12",
               "/usr/local/cuda-12.4/lib64/libcudart.so.12", "12.4.127", "file name");
    assert_lib(&st->libs[1], "cudart", "libcudart.so.13",
               "/usr/local/cuda-13.0/lib/libcudart.so.13", "13.0.96", "toolkit");
    assert_lib(&st->libs[2], "cudnn", "libcudnn.so.8", "/usr/lib/x86_64-linux-gnu/libcudnn.so.8",
               "8.9.7", "file name");
    assert_lib(&st->libs[3], "cudnn", "libcudnn.so.9", "/usr/local/cuda-13.0/lib/libcudnn.so.9",
               "9.19.0.56", "toolkit");
    assert_lib(&st->libs[4], "nccl", "libnccl.so.2", "/usr/local/cuda-13.0/lib/libnccl.so.2",
               "2.28.9", "dist-info");
    assert_lib(&st->libs[5], "cuda", "libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
               "550.54.15", "file name");
    assert_lib(&st->libs[6], "nvml", "libnvidia-ml.so.1",
               "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "550.54.15", "file name");

    /* The system's cuDNN: the Debian package's header in the triplet directory. */
    assert_str(st->cudnn_version, "8.9.7");
    assert_str(st->cudnn_source, "/usr/include/x86_64-linux-gnu/cudnn_version_v8.h");

    assert_int_equal(st->n_frameworks, 5);
    f = &st->frameworks[0];
    assert_str(f->name, "torch");
    assert_str(f->site_packages, "/opt/venv/lib/python3.11/site-packages");
    assert_int_equal(f->pid, 4242);
    assert_int_equal(f->processes, 3); /* 4242 and 4545 by their maps, 4848 by argv[0] */
    assert_str(f->version, "2.2.1+cu121");
    assert_str(f->cuda_version, "12.1");
    assert_null(f->hip_version);
    assert_str(f->cudart_version, "12.1.105"); /* the loaded libcudart.so.12, from its wheel */
    assert_str(f->cudnn_version, "8.9.2.26");  /* the nvidia-cudnn-cu12 wheel */
    assert_str(f->nccl_version, "2.19.3");     /* pinned in torch's METADATA */
    assert_str(f->python, "/usr/bin/python3.11");
    assert_str(f->found_from, "maps");
    f = &st->frameworks[1];
    assert_str(f->name, "tensorflow");
    assert_str(f->site_packages, "/usr/lib/python3/dist-packages");
    assert_int_equal(f->pid, 4343);
    assert_int_equal(f->processes, 1); /* 4848's venv does not include system packages */
    assert_str(f->version, "2.16.1");
    assert_str(f->cuda_version, "12.3");
    assert_str(f->cudnn_version, "8");
    assert_str(f->found_from, "interpreter");
    f = &st->frameworks[2];
    assert_str(f->site_packages, "/opt/conda/lib/python3.8/site-packages");
    assert_str(f->version, "1.8.1+cu111");
    assert_str(f->cuda_version, "11.1");
    assert_null(f->cudnn_version);
    f = &st->frameworks[3];
    assert_str(f->version, "2.3.0+cpu");
    assert_null(f->cuda_version);
    assert_int_equal(f->pid, 4747);
    f = &st->frameworks[4];
    assert_int_equal(f->pid, 5151);
    assert_str(f->site_packages, "/srv/app/lib/python3.12/site-packages");
    assert_str(f->version, "2.5.1+cu124");
    assert_str(f->found_from, "maps");

    /* The process's pip-wheel libcudart got its full version. */
    assert_str(s->procs.procs[0].libs[0].version, "12.1.105");
    assert_null(s->procs.procs[0].libs[1].version);
    assert_null(s->procs.procs[0].libs[2].version); /* no nccl wheel in this venv */
    assert_str(s->procs.procs[0].libs[3].version, "12");
    snapshot_free(s);
}

static void test_garbage_tree(void **state)
{
    struct snapshot *s = snapshot_new();
    const struct stack_info *st = &s->stack;

    (void)state;
    unsetenv("CUDA_HOME");
    add_proc(s, 5000, "/venv/bin/python3.9", NULL);
    run_stack(TEST_FIXTURES "/stack/garbage", s);

    assert_null(st->cuda_home);
    /* The link loops are not toolkits; the broken one is listed with what could be read. */
    assert_int_equal(st->n_toolkits, 1);
    assert_toolkit(&st->toolkits[0], "/usr/local/cuda-12.0", NULL, NULL, NULL, NULL, NULL);
    assert_true(has_note(s, "/usr/local/cuda-12.0/version.json: not the JSON a toolkit writes"));
    assert_true(has_note(s, "/etc/ld.so.cache: truncated: 32 bytes, the header alone is 48; "
                            "scanned the ld.so.conf directories"));
    assert_int_equal(st->n_libs, 1);
    assert_lib(&st->libs[0], "cudart", "libcudart.so.11.0", "/usr/lib64/libcudart.so.11.0", "11.0",
               "file name");
    assert_null(st->cudnn_version);
    assert_int_equal(st->n_frameworks, 2);
    assert_str(st->frameworks[0].name, "torch");
    assert_null(st->frameworks[0].version);
    assert_null(st->frameworks[0].cuda_version);
    assert_str(st->frameworks[0].cudnn_version, "9.1.0.70");
    assert_str(st->frameworks[1].name, "tensorflow");
    assert_null(st->frameworks[1].cuda_version);
    assert_true(has_note(s, "torch/version.py: no __version__"));
    assert_int_equal(s->collectors[COLLECTOR_STACK].state, CS_PARTIAL);
    snapshot_free(s);
}

/* ---- a tree with an ld.so.cache, written into a temporary root ---- */

static void put32(char *p, uint32_t v)
{
    memcpy(p, &v, sizeof(v));
}

static void write_file(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
}

static void write_ldcache(const char *path)
{
    static const struct {
        const char *key, *value;
        uint32_t flags;
    } e[] = {
        { "libnvidia-ml.so.1", "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", 0x0303 },
        { "libcudnn.so.8", "/usr/lib/x86_64-linux-gnu/libcudnn.so.8", 0x0303 },
        { "libcudnn.so", "/usr/lib/x86_64-linux-gnu/libcudnn.so", 0x0303 }, /* for linking */
        { "libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", 0x0303 },
        { "libcuda.so.1", "/usr/lib32/libcuda.so.1", 0x0003 }, /* 32-bit: not ours */
        { "libcudart.so.12", "/usr/local/cuda-12.4/lib64/libcudart.so.12", 0x0303 },
        { "libcublasLt.so.12", "/usr/local/cuda-12.4/lib64/libcublasLt.so.12", 0x0303 },
        { "libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6", 0x0303 },
    };
    char buf[4096] = { 0 };
    size_t n = ARRAY_SIZE(e), off = 48 + n * 24;

    memcpy(buf, "glibc-ld.so.cache1.1", 20);
    put32(buf + 20, (uint32_t)n);
    buf[28] = 2;
    for (size_t i = 0; i < n; i++) {
        put32(buf + 48 + i * 24, e[i].flags);
        put32(buf + 48 + i * 24 + 4, (uint32_t)off);
        strcpy(buf + off, e[i].key);
        off += strlen(e[i].key) + 1;
        put32(buf + 48 + i * 24 + 8, (uint32_t)off);
        strcpy(buf + off, e[i].value);
        off += strlen(e[i].value) + 1;
    }
    write_file(path, buf, off);
}

static void test_ld_cache(void **state)
{
    char dir[] = TEST_BINARY_DIR "/stack-root-XXXXXX";
    char *etc, *cache, *usr;
    struct snapshot *s = snapshot_new();
    const struct stack_info *st = &s->stack;

    (void)state;
    /* The entries written above carry x86-64's flags. */
    if (ldcache_native_arch() != 0x0300u)
        skip();
    assert_non_null(mkdtemp(dir));
    etc = xasprintf("%s/etc", dir);
    cache = xasprintf("%s/etc/ld.so.cache", dir);
    usr = xasprintf("%s/usr", dir);
    assert_int_equal(mkdir(etc, 0755), 0);
    write_ldcache(cache);
    /* The libraries' files are the basic fixture's. */
    assert_int_equal(symlink(TEST_FIXTURES "/stack/basic/usr", usr), 0);
    run_stack(dir, s);

    assert_str(st->ld_source, "/etc/ld.so.cache");
    assert_int_equal(st->n_libs, 4);
    assert_lib(&st->libs[0], "cudart", "libcudart.so.12",
               "/usr/local/cuda-12.4/lib64/libcudart.so.12", "12.4.127", "file name");
    assert_lib(&st->libs[1], "cudnn", "libcudnn.so.8", "/usr/lib/x86_64-linux-gnu/libcudnn.so.8",
               "8.9.7", "file name");
    assert_lib(&st->libs[2], "cuda", "libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
               "550.54.15", "file name");
    assert_lib(&st->libs[3], "nvml", "libnvidia-ml.so.1",
               "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "550.54.15", "file name");
    assert_int_equal(s->collectors[COLLECTOR_STACK].n_notes, 0);

    unlink(usr);
    unlink(cache);
    rmdir(etc);
    rmdir(dir);
    free(usr);
    free(cache);
    free(etc);
    snapshot_free(s);
}

static void test_round_trip(void **state)
{
    struct snapshot *s = basic_snapshot(), *back;
    char *first, *second, *cause = NULL;

    (void)state;
    run_stack(TEST_FIXTURES "/stack/basic", s);
    s->stack.cuda_home = xstrdup("relative/\"odd\" path");
    first = snapshot_to_json(s);
    back = snapshot_from_json(first, strlen(first), "first", &cause);
    if (back == NULL)
        fail_msg("%s", cause);
    second = snapshot_to_json(back);
    assert_string_equal(first, second);
    assert_int_equal(back->stack.n_toolkits, 5);
    assert_int_equal(back->stack.n_libs, 7);
    assert_int_equal(back->stack.n_frameworks, 5);
    assert_true(back->stack.toolkits[3].is_default);
    assert_int_equal(back->stack.frameworks[0].processes, 3);
    free(first);
    free(second);
    snapshot_free(back);
    snapshot_free(s);
}

static void expect_error(const char *stack, const char *what)
{
    char *text = xasprintf("{\"schema\": \"gpudoctor.snapshot/1\", \"stack\": %s}", stack);
    char *cause = NULL;
    struct snapshot *s = snapshot_from_json(text, strlen(text), "t.json", &cause);

    assert_null(s);
    if (cause == NULL || strstr(cause, what) == NULL)
        fail_msg("\"%s\" does not say \"%s\"", cause ? cause : "(null)", what);
    free(cause);
    free(text);
}

static void test_read_errors(void **state)
{
    (void)state;
    expect_error("{\"toolkits\": {}}", "toolkits: expected an array");
    expect_error("{\"toolkits\": [{\"path\": 5}]}", "stack.toolkits[0].path");
    expect_error("{\"libraries\": [{\"kind\": \"cudart\", \"bogus\": 1}]}",
                 "unknown key \"bogus\"");
    expect_error("{\"frameworks\": [{\"pid\": \"x\"}]}", "stack.frameworks[0].pid");
    expect_error("{\"toolkits\": [{\"is_default\": 1}]}", "expected true or false");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic_tree),
        cmocka_unit_test(test_cuda_home_only_for_the_live_root),
        cmocka_unit_test(test_garbage_tree),
        cmocka_unit_test(test_ld_cache),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_read_errors),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
