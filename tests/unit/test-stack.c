/* The stack's version parsers, each against real formats and broken input, and the
 * ld.so.cache reader against caches written here, broken ones, and this machine's own. */
#include "collect/stack-ldcache.h"
#include "collect/stack-versions.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void assert_str_free(char *got, const char *want)
{
    if (want == NULL) {
        if (got != NULL)
            fail_msg("expected NULL, got \"%s\"", got);
    } else {
        if (got == NULL)
            fail_msg("expected \"%s\", got NULL", want);
        assert_string_equal(got, want);
    }
    free(got);
}

static void test_version_tokens(void **state)
{
    (void)state;
    assert_true(stackver_is_version("550.54.14", 2));
    assert_true(stackver_is_version("12", 1));
    assert_false(stackver_is_version("12", 2));
    assert_false(stackver_is_version("12.", 1));
    assert_false(stackver_is_version(".12", 1));
    assert_false(stackver_is_version("12..4", 1));
    assert_false(stackver_is_version("12.4a", 1));
    assert_false(stackver_is_version("", 1));
    assert_false(stackver_is_version(NULL, 1));
    assert_int_equal(stackver_parts("12.4.127"), 3);
    assert_int_equal(stackver_parts(""), 0);
    assert_str_free(stackver_first_version("NVRM version: NVIDIA UNIX Open Kernel Module for "
                                           "x86_64  575.57.08  Release Build  (dvs@U16)  Wed"),
                    "575.57.08");
    assert_str_free(stackver_first_version("no version here\n1.2.3 on the next line"), NULL);
    assert_str_free(stackver_first_version(""), NULL);
}

static void test_torch_version_py(void **state)
{
    static const char annotated[] = "from typing import Optional\n\n"
                                    "__all__ = ['__version__', 'debug', 'cuda', 'git_version', "
                                    "'hip']\n"
                                    "__version__ = '2.7.1+cu126'\n"
                                    "debug = False\n"
                                    "cuda: Optional[str] = '12.6'\n"
                                    "git_version = 'e2d141dbde55c2a4370fac5165b0561b6af4798b'\n"
                                    "hip: Optional[str] = None\n"
                                    "xpu: Optional[str] = None\n";
    static const char plain[] = "__version__ = '1.8.1+cu111'\ndebug = False\ncuda = \"11.1\"\n"
                                "hip = None\n";
    bool none;

    (void)state;
    assert_str_free(stackver_py_assign(annotated, "__version__", NULL), "2.7.1+cu126");
    assert_str_free(stackver_py_assign(annotated, "cuda", &none), "12.6");
    assert_false(none);
    assert_str_free(stackver_py_assign(annotated, "hip", &none), NULL);
    assert_true(none);
    assert_str_free(stackver_py_assign(plain, "cuda", NULL), "11.1");
    assert_str_free(stackver_py_assign(plain, "rocm", &none), NULL);
    assert_false(none);
    /* Not assignments: comparison, indented, another name with the same start. */
    assert_str_free(stackver_py_assign("cuda == '1'\n  cuda = '2'\ncudart = '3'\n", "cuda", NULL),
                    NULL);
    /* Truncated string, missing value. */
    assert_str_free(stackver_py_assign("cuda: Optional[str] = '12.\n", "cuda", NULL), NULL);
    assert_str_free(stackver_py_assign("cuda =", "cuda", NULL), NULL);
    assert_str_free(stackver_py_assign("cuda", "cuda", NULL), NULL);
}

static void test_tf_build_info(void **state)
{
    static const char ordered[] =
        "import collections\n\nbuild_info = collections.OrderedDict([('cpu_compiler', "
        "'/usr/bin/gcc'), ('cuda_compute_capabilities', ['sm_52', 'compute_90']), "
        "('cuda_version', '12.1'), ('cudnn_version', '8'), ('is_cuda_build', True)])\n";
    static const char dict[] = "build_info = {'cuda_version': \"11.2\", 'cudnn_version': '8', "
                               "'is_cuda_build': True}\n";
    static const char oldest[] = "is_cuda_build = True\ncuda_version_number = '10.1'\n"
                                 "cudnn_version_number = '7'\n";

    (void)state;
    assert_str_free(stackver_tf_build_info(ordered, "cuda_version"), "12.1");
    assert_str_free(stackver_tf_build_info(ordered, "cudnn_version"), "8");
    assert_str_free(stackver_tf_build_info(ordered, "is_cuda_build"), NULL);
    assert_str_free(stackver_tf_build_info(dict, "cuda_version"), "11.2");
    assert_str_free(stackver_tf_build_info(oldest, "cuda_version"), "10.1");
    assert_str_free(stackver_tf_build_info(oldest, "cudnn_version"), "7");
    assert_str_free(stackver_tf_build_info("OrderedDict([('cuda_version', '12.", "cuda_version"),
                    NULL);
    assert_str_free(stackver_tf_build_info("'cuda_version'", "cuda_version"), NULL);
    assert_str_free(stackver_tf_build_info("", "cuda_version"), NULL);
}

static void test_cudnn_header(void **state)
{
    (void)state;
    assert_str_free(stackver_cudnn_header("#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 19\n"
                                          "#define CUDNN_PATCHLEVEL 0\n#define CUDNN_VERSION "
                                          "(CUDNN_MAJOR * 10000 + CUDNN_MINOR * 100)\n"),
                    "9.19.0");
    /* Spaces after '#', tabs, a comment after the value. */
    assert_str_free(stackver_cudnn_header("# define\tCUDNN_MAJOR\t8\n  #define CUDNN_MINOR 9 /* x "
                                          "*/\n#define CUDNN_PATCHLEVEL  7\n"),
                    "8.9.7");
    /* cuDNN 8's cudnn.h only includes cudnn_version.h: no defines of its own. */
    assert_str_free(stackver_cudnn_header("#include \"cudnn_version.h\"\n"), NULL);
    assert_str_free(stackver_cudnn_header("#define CUDNN_MAJOR 9\n#define CUDNN_MINOR"), NULL);
    assert_str_free(stackver_cudnn_header("#define CUDNN_MAJOR_X 9\n#define CUDNN_MINOR 1\n"
                                          "#define CUDNN_PATCHLEVEL 0\n"),
                    NULL);
    assert_str_free(stackver_cudnn_header("#define CUDNN_MAJOR -9\n#define CUDNN_MINOR 1\n"
                                          "#define CUDNN_PATCHLEVEL 0\n"),
                    NULL);
}

static void test_pip_metadata(void **state)
{
    static const char meta[] =
        "Metadata-Version: 2.1\nName: torch\nVersion: 2.2.1+cu121\n"
        "Requires-Dist: filelock\n"
        "Requires-Dist: nvidia-cuda-runtime-cu12==12.1.105; platform_system == \"Linux\"\n"
        "Requires-Dist: nvidia-cudnn-cu12 ==8.9.2.26 ; platform_system == \"Linux\"\n"
        "Requires-Dist: nvidia_nccl_cu12 (==2.19.3)\n"
        "Requires-Dist: nvidia-cuda-runtime-extra==9.9.9\n"
        "\nVersion: 0.0.0 in the description\n";

    (void)state;
    assert_str_free(stackver_metadata_version(meta), "2.2.1+cu121");
    assert_str_free(stackver_metadata_version("Name: x\n\nVersion: 1.0\n"), NULL);
    assert_str_free(stackver_metadata_version("Name: x\r\n\r\nVersion: 1.0\r\n"), NULL);
    assert_str_free(stackver_metadata_version("Version:   \n"), NULL);
    assert_str_free(stackver_metadata_version("Version: 13.0.96\r\n"), "13.0.96");
    assert_str_free(stackver_metadata_pin(meta, "nvidia-cuda-runtime"), "12.1.105");
    assert_str_free(stackver_metadata_pin(meta, "nvidia-cudnn"), "8.9.2.26");
    assert_str_free(stackver_metadata_pin(meta, "nvidia-nccl"), "2.19.3");
    assert_str_free(stackver_metadata_pin(meta, "nvidia-cublas"), NULL);
    assert_str_free(stackver_metadata_pin("Requires-Dist: nvidia-cudnn-cu12>=9\n", "nvidia-cudnn"),
                    NULL);
}

static void test_toolkit_files(void **state)
{
    static const char json[] = "{\"cuda\" : {\"name\" : \"CUDA SDK\", \"version\" : \"12.4.1\"},"
                               " \"cuda_cudart\" : {\"name\" : \"CUDA Runtime (cudart)\", "
                               "\"version\" : \"12.4.127\"}, \"cuda_nvcc\": {\"version\": 5}}";
    char *sdk, *cudart, *nvcc;

    (void)state;
    assert_int_equal(stackver_version_json(json, strlen(json), &sdk, &cudart, &nvcc), 0);
    assert_str_free(sdk, "12.4.1");
    assert_str_free(cudart, "12.4.127");
    assert_str_free(nvcc, NULL);
    assert_int_equal(stackver_version_json("[1,2]", 5, &sdk, &cudart, &nvcc), -1);
    assert_null(sdk);
    assert_int_equal(stackver_version_json("{\"cuda\": {\"vers", 15, &sdk, &cudart, &nvcc), -1);
    {
        static const char bad_version[] = "{\"cuda\": {\"version\": \"x.y\"}}";

        assert_int_equal(
            stackver_version_json(bad_version, strlen(bad_version), &sdk, &cudart, &nvcc), 0);
    }
    assert_null(sdk);
    assert_str_free(stackver_version_txt("CUDA Version 10.0.130\n"), "10.0.130");
    assert_str_free(stackver_version_txt("CUDA Version 9\n"), NULL);
    assert_str_free(stackver_version_txt("CUDA Version garbage\n"), NULL);
    assert_str_free(stackver_version_txt(""), NULL);
}

static void test_nvcc_banner(void **state)
{
    static const char bin[] = "\x7f"
                              "ELF\0\0\0nvcc: NVIDIA (R) Cuda compiler driver\0Cuda compilation "
                              "tools, release 13.0, V13.0.88\0Build cuda_13.0";

    (void)state;
    assert_str_free(stackver_nvcc_banner(bin, sizeof(bin) - 1), "13.0.88");
    /* Cut before the full version: not found, and no read past the end. */
    {
        const char *v = memmem(bin, sizeof(bin) - 1, "V13", 3);

        assert_non_null(v);
        assert_str_free(stackver_nvcc_banner(bin, (size_t)(v - bin) + 1), NULL);
    }
    assert_str_free(stackver_nvcc_banner("Cuda compilation tools, release 13.0", 36), NULL);
    assert_str_free(stackver_nvcc_banner("nothing", 7), NULL);
}

static void test_lib_and_dist_names(void **state)
{
    char *v;

    (void)state;
    assert_str_free(stackver_lib_suffix("libcudnn.so.9.2.1", "libcudnn.so"), "9.2.1");
    assert_str_free(stackver_lib_suffix("libcuda.so.580.126.09", "libcuda.so"), "580.126.09");
    assert_str_free(stackver_lib_suffix("libcudart.so.12", "libcudart.so"), "12");
    assert_str_free(stackver_lib_suffix("libcudart.so", "libcudart.so"), NULL);
    assert_str_free(stackver_lib_suffix("libcudnn_ops.so.9", "libcudnn.so"), NULL);
    assert_str_free(stackver_lib_suffix("libcudart.so.12.abc", "libcudart.so"), NULL);
    assert_str_free(stackver_lib_suffix("libcublasLt.so.12", "libcublas.so"), NULL);

    assert_true(stackver_dist_info("nvidia_cudnn_cu12-9.1.0.70.dist-info", "nvidia_cudnn", &v));
    assert_str_free(v, "9.1.0.70");
    assert_true(
        stackver_dist_info("nvidia_cuda_runtime-13.0.96.dist-info", "nvidia_cuda_runtime", &v));
    assert_str_free(v, "13.0.96");
    assert_true(stackver_dist_info("torch-2.2.1+cu121.dist-info", "torch", &v));
    assert_str_free(v, "2.2.1+cu121");
    assert_true(stackver_dist_info("Nvidia_CUDA_Runtime_cu12-12.1.105.dist-info",
                                   "nvidia-cuda-runtime", &v));
    assert_str_free(v, "12.1.105");
    assert_false(
        stackver_dist_info("nvidia_cuda_nvrtc_cu12-12.1.105.dist-info", "nvidia_cuda", &v));
    assert_false(stackver_dist_info("torchvision-0.17.1.dist-info", "torch", &v));
    assert_false(stackver_dist_info("nvidia_cudnn_cuXX-9.dist-info", "nvidia_cudnn", &v));
    assert_false(stackver_dist_info("nvidia_cudnn_cu12-.dist-info", "nvidia_cudnn", &v));
    assert_false(stackver_dist_info("nvidia_cudnn_cu12-9.1.egg-info", "nvidia_cudnn", &v));
    assert_false(stackver_dist_info(".dist-info", "x", &v));
    assert_null(v);
}

/* ---- ld.so.cache ---- */

struct entry {
    const char *key, *value;
    uint32_t flags;
};

static void put32(char *p, uint32_t v)
{
    memcpy(p, &v, sizeof(v));
}

/* Writes a cache in glibc's new format (optionally after an old-format part); *len its size. */
static char *make_cache(const struct entry *e, size_t n, bool old_prefix, size_t *len)
{
    size_t start = 0, strings, cap = 65536, off;
    char *buf = xcalloc(1, cap);

    if (old_prefix) {
        memcpy(buf, "ld.so-1.7.0", 11);
        put32(buf + 12, 2);
        start = (16 + 2 * 12 + 7) & ~(size_t)7;
    }
    memcpy(buf + start, "glibc-ld.so.cache1.1", 20);
    put32(buf + start + 20, (uint32_t)n);
    buf[start + 28] = 2; /* little endian */
    strings = 48 + n * 24;
    off = strings;
    for (size_t i = 0; i < n; i++) {
        char *rec = buf + start + 48 + i * 24;

        put32(rec, e[i].flags);
        put32(rec + 4, (uint32_t)off);
        strcpy(buf + start + off, e[i].key);
        off += strlen(e[i].key) + 1;
        put32(rec + 8, (uint32_t)off);
        strcpy(buf + start + off, e[i].value);
        off += strlen(e[i].value) + 1;
    }
    put32(buf + start + 24, (uint32_t)(off - strings));
    *len = start + off;
    return buf;
}

struct seen {
    char text[4096];
    int n;
};

static void collect(void *arg, const char *soname, const char *path, uint32_t flags)
{
    struct seen *s = arg;
    size_t len = strlen(s->text);

    snprintf(s->text + len, sizeof(s->text) - len, "%s=%s:%04x;", soname, path, flags);
    s->n++;
}

static void test_ldcache_written_here(void **state)
{
    static const struct entry e[] = {
        { "libcudart.so.12", "/usr/local/cuda-12.4/lib64/libcudart.so.12", 0x0303 },
        { "libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", 0x0303 },
        { "libcuda.so.1", "/usr/lib32/libcuda.so.1", 0x0003 },
    };
    struct seen s = { "", 0 };
    char *buf, *cause = NULL;
    size_t len;

    (void)state;
    for (int old = 0; old < 2; old++) {
        memset(&s, 0, sizeof(s));
        buf = make_cache(e, 3, old, &len);
        assert_int_equal(ldcache_parse(buf, len, collect, &s, &cause), 3);
        assert_string_equal(s.text,
                            "libcudart.so.12=/usr/local/cuda-12.4/lib64/libcudart.so.12:0303;"
                            "libcuda.so.1=/usr/lib/x86_64-linux-gnu/libcuda.so.1:0303;"
                            "libcuda.so.1=/usr/lib32/libcuda.so.1:0003;");
        free(buf);
    }
}

static void expect_bad(const char *buf, size_t len, const char *what)
{
    struct seen s = { "", 0 };
    char *cause = NULL;

    assert_int_equal(ldcache_parse(buf, len, collect, &s, &cause), -1);
    assert_non_null(cause);
    if (strstr(cause, what) == NULL)
        fail_msg("\"%s\" does not say \"%s\"", cause, what);
    free(cause);
}

static void test_ldcache_broken(void **state)
{
    static const struct entry e[] = { { "libc.so.6", "/lib/libc.so.6", 0x0303 } };
    char *buf;
    size_t len;

    (void)state;
    expect_bad("", 0, "not an ld.so.cache");
    expect_bad("garbage garbage garbage garbage garbage garbage garbage", 55, "not an ld.so.cache");
    expect_bad("glibc-ld.so.cache1.1\xff\xff\xff\x7f", 24, "truncated: 24 bytes");
    buf = make_cache(e, 1, false, &len);
    /* Every prefix of a good cache is an error, never a crash. */
    for (size_t cut = 0; cut < len; cut++) {
        struct seen s = { "", 0 };
        char *cause = NULL;

        assert_int_equal(ldcache_parse(buf, cut, collect, &s, &cause), -1);
        free(cause);
    }
    memcpy(buf + 17, "2.0", 3);
    expect_bad(buf, len, "format version \"2.0\"");
    memcpy(buf + 17, "1.1", 3);
    put32(buf + 20, 1000000);
    expect_bad(buf, len, "truncated: 1000000 entries");
    put32(buf + 20, 1);
    put32(buf + 48 + 4, (uint32_t)len + 10);
    expect_bad(buf, len, "entry 0: a name lies outside the file");
    put32(buf + 48 + 4, 48 + 24);
    buf[28] = 3; /* big endian */
    expect_bad(buf, len, "other byte order");
    free(buf);
    expect_bad("ld.so-1.7.0\0\x02\0\0\0", 16, "truncated: the old-format part");
    {
        char old[64] = "ld.so-1.7.0";

        put32(old + 12, 0);
        expect_bad(old, sizeof(old), "only the old ld.so-1.7.0 format");
    }
}

static void find_libc(void *arg, const char *soname, const char *path, uint32_t flags)
{
    int *found = arg;

    (void)flags;
    if (strcmp(soname, "libc.so.6") == 0 && strstr(path, "/libc.so.6") != NULL)
        (*found)++;
}

/* This machine's real cache, when it has one: libc is in every glibc system's cache. */
static void test_ldcache_live(void **state)
{
    int found = 0;
    char *buf = NULL, *cause = NULL;
    ssize_t n = file_slurp_at(AT_FDCWD, "/etc/ld.so.cache", 64u << 20, &buf);
    long count;

    (void)state;
    if (n < 0 || (size_t)n < 20 || memcmp(buf, "glibc-ld.so.cache", 17) != 0) {
        free(buf);
        skip();
    }
    count = ldcache_parse(buf, (size_t)n, find_libc, &found, &cause);
    if (count < 0)
        fail_msg("%s", cause);
    assert_true(count > 0);
    assert_true(found > 0);
    free(buf);
}

/* Every prefix of the stack fixtures' version files through every parser (for the sanitizer). */
static void test_truncations(void **state)
{
    static const char *const files[] = {
        "basic/usr/local/cuda-12.4/version.json",
        "basic/usr/local/cuda-12.4/include/cudnn_version.h",
        "basic/usr/local/cuda-10.0/version.txt",
        "basic/opt/venv/lib/python3.11/site-packages/torch/version.py",
        "basic/opt/venv/lib/python3.11/site-packages/torch-2.2.1+cu121.dist-info/METADATA",
        "basic/usr/lib/python3/dist-packages/tensorflow/python/platform/build_info.py",
        "basic/opt/cuda-12.2/bin/nvcc",
        "basic/opt/venv/pyvenv.cfg",
    };

    (void)state;
    for (size_t f = 0; f < ARRAY_SIZE(files); f++) {
        char *path = xasprintf("%s/stack/%s", TEST_FIXTURES, files[f]), *text = NULL;
        ssize_t n = file_slurp_at(AT_FDCWD, path, 1u << 20, &text);

        assert_true(n > 0);
        for (ssize_t cut = 0; cut <= n; cut++) {
            char *piece = xmalloc((size_t)cut + 1), *a, *b, *c;

            memcpy(piece, text, (size_t)cut);
            piece[cut] = '\0';
            free(stackver_first_version(piece));
            free(stackver_py_assign(piece, "cuda", NULL));
            free(stackver_tf_build_info(piece, "cuda_version"));
            free(stackver_cudnn_header(piece));
            free(stackver_metadata_version(piece));
            free(stackver_metadata_pin(piece, "nvidia-cudnn"));
            free(stackver_version_txt(piece));
            if (stackver_version_json(piece, (size_t)cut, &a, &b, &c) == 0) {
                free(a);
                free(b);
                free(c);
            }
            free(stackver_nvcc_banner(piece, (size_t)cut));
            free(piece);
        }
        free(text);
        free(path);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_tokens),       cmocka_unit_test(test_torch_version_py),
        cmocka_unit_test(test_tf_build_info),        cmocka_unit_test(test_cudnn_header),
        cmocka_unit_test(test_pip_metadata),         cmocka_unit_test(test_toolkit_files),
        cmocka_unit_test(test_nvcc_banner),          cmocka_unit_test(test_lib_and_dist_names),
        cmocka_unit_test(test_ldcache_written_here), cmocka_unit_test(test_ldcache_broken),
        cmocka_unit_test(test_ldcache_live),         cmocka_unit_test(test_truncations),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
