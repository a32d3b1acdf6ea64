/*
 * The CUDA toolkits installed (the usual directories, /usr/local/cuda's target, $CUDA_HOME of a
 * live system) with the version each says about itself: version.json, version.txt, a toolkit's
 * pip dist-info, or the banner inside its nvcc; the cuDNN header of each, and the system's.
 */
#include "collect/stack-internal.h"
#include "collect/stack-versions.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_TOOLKITS  32
#define NVCC_SCAN_MAX (64u << 20)
#define NVCC_CHUNK    (1u << 20)

static char *cudnn_from_include(int rootfd, const char *prefix, const char *incdir, char **source)
{
    size_t n;
    char **names = stack_list_dir(rootfd, prefix, incdir, &n);
    char *version = NULL;

    /* cudnn_version.h (8, 9), then cudnn_version_v9.h-style copies, then cudnn.h (7 and older,
     * where the defines live in cudnn.h itself). */
    for (int pass = 0; pass < 3 && version == NULL && names; pass++) {
        for (size_t i = 0; i < n && version == NULL; i++) {
            bool want = pass == 0 ? strcmp(names[i], "cudnn_version.h") == 0
                        : pass == 1
                            ? str_starts(names[i], "cudnn_version") && str_ends(names[i], ".h")
                            : strcmp(names[i], "cudnn.h") == 0 ||
                                  (str_starts(names[i], "cudnn_v") && str_ends(names[i], ".h"));
            char *path, *text = NULL;

            if (!want)
                continue;
            path = stack_path_join(incdir, names[i]);
            if (stack_slurp_in(rootfd, prefix, path, SMALL_FILE_MAX, &text) >= 0)
                version = stackver_cudnn_header(text);
            if (version != NULL && source != NULL)
                *source = xstrdup(path);
            free(text);
            free(path);
        }
    }
    stack_free_list(names, n);
    return version;
}

/* The first "Cuda compilation tools" banner in the nvcc binary, read in bounded chunks. */
static char *nvcc_scan(int rootfd, const char *path)
{
    enum { TAIL = 128 }; /* kept between chunks: a banner split across two is still found */
    char *rel = stack_rel_path(NULL, path), *buf, *v = NULL;
    size_t total = 0, keep = 0;
    int fd = openat(rootfd, rel, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    struct stat st;

    free(rel);
    if (fd < 0)
        return NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return NULL;
    }
    buf = xmalloc(TAIL + NVCC_CHUNK);
    while (v == NULL && total < NVCC_SCAN_MAX) {
        ssize_t n = read(fd, buf + keep, NVCC_CHUNK);
        size_t have;

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        total += (size_t)n;
        have = keep + (size_t)n;
        v = stackver_nvcc_banner(buf, have);
        keep = have < TAIL ? have : TAIL;
        memmove(buf, buf + have - keep, keep);
    }
    free(buf);
    close(fd);
    return v;
}

static void toolkit_versions(struct stack_run *r, struct stack_toolkit *t)
{
    char *path, *text = NULL, *sdk = NULL, *cudart = NULL, *nvcc = NULL;
    ssize_t n;

    path = stack_path_join(t->path, "version.json");
    n = stack_slurp_in(r->rootfd, NULL, path, SMALL_FILE_MAX, &text);
    if (n >= 0 && stackver_version_json(text, (size_t)n, &sdk, &cudart, &nvcc) != 0)
        collector_note(r->c, "%s: not the JSON a toolkit writes", path);
    free(text);
    free(path);
    text = NULL;
    /* Some installers write a build date as the SDK version (11.8.20220929): use the runtime's. */
    if (sdk != NULL && stackver_parts(sdk) == 3 && strtoul(strrchr(sdk, '.') + 1, NULL, 10) < 1000)
        t->version = xstrdup(sdk);
    else if (cudart != NULL)
        t->version = xstrdup(cudart);
    else if (sdk != NULL)
        t->version = xstrdup(sdk);
    if (t->version != NULL)
        t->version_source = xstrdup("version.json");
    free(sdk);
    t->cudart_version = cudart;
    t->nvcc_version = nvcc;

    if (t->version == NULL) {
        path = stack_path_join(t->path, "version.txt");
        if (stack_slurp_in(r->rootfd, NULL, path, SMALL_FILE_MAX, &text) >= 0 &&
            (t->version = stackver_version_txt(text)) != NULL)
            t->version_source = xstrdup("version.txt");
        free(text);
        free(path);
        text = NULL;
    }

    /* Toolkits installed from pip wheels (this is how some images ship them) keep dist-info/. */
    path = stack_path_join(t->path, "dist-info");
    if (t->cudart_version == NULL)
        t->cudart_version = stack_dist_info_version(r->rootfd, NULL, path, "nvidia_cuda_runtime");
    if (t->nvcc_version == NULL)
        t->nvcc_version = stack_dist_info_version(r->rootfd, NULL, path, "nvidia_cuda_nvcc");
    if (t->version == NULL && t->cudart_version != NULL) {
        t->version = xstrdup(t->cudart_version);
        t->version_source = xstrdup("dist-info");
    }
    {
        char *inc = stack_path_join(t->path, "include");

        t->cudnn_version = cudnn_from_include(r->rootfd, NULL, inc, NULL);
        free(inc);
    }
    if (t->cudnn_version == NULL)
        t->cudnn_version = stack_dist_info_version(r->rootfd, NULL, path, "nvidia_cudnn");
    free(path);

    if (t->version == NULL || t->nvcc_version == NULL) {
        char *v;

        path = stack_path_join(t->path, "bin/nvcc");
        v = nvcc_scan(r->rootfd, path);
        free(path);
        if (v != NULL && t->nvcc_version == NULL)
            t->nvcc_version = xstrdup(v);
        if (v != NULL && t->version == NULL) {
            t->version = xstrdup(v);
            t->version_source = xstrdup("nvcc");
        }
        free(v);
    }
}

static bool looks_like_toolkit(int rootfd, const char *dir)
{
    static const char *const marks[] = { "version.json", "version.txt", "bin/nvcc", "dist-info" };

    for (size_t i = 0; i < ARRAY_SIZE(marks); i++) {
        char *p = stack_path_join(dir, marks[i]);
        bool ok = stack_exists_in(rootfd, NULL, p, 0);

        free(p);
        if (ok)
            return true;
    }
    return false;
}

static struct stack_toolkit *find_toolkit(struct stack_info *st, const char *real)
{
    for (size_t i = 0; i < st->n_toolkits; i++) {
        if (strcmp(st->toolkits[i].path, real) == 0)
            return &st->toolkits[i];
    }
    return NULL;
}

/* Adds the toolkit at path (after links) unless known; returns it, or NULL when not one. */
static struct stack_toolkit *add_toolkit(struct stack_run *r, const char *path)
{
    char *real = stack_resolve(r->rootfd, NULL, path);
    struct stack_toolkit *t = find_toolkit(r->st, real);

    if (t != NULL || r->st->n_toolkits >= MAX_TOOLKITS || !looks_like_toolkit(r->rootfd, real)) {
        free(real);
        return t;
    }
    r->st->toolkits = xreallocarray(r->st->toolkits, r->st->n_toolkits + 1, sizeof(*t));
    t = &r->st->toolkits[r->st->n_toolkits++];
    memset(t, 0, sizeof(*t));
    t->path = real;
    return t;
}

static int cmp_toolkit(const void *a, const void *b)
{
    return strcmp(((const struct stack_toolkit *)a)->path, ((const struct stack_toolkit *)b)->path);
}

void stack_collect_toolkits(struct stack_run *r)
{
    static const char *const parents[] = { "/usr/local", "/opt" };
    /* gpudoctor's own environment says nothing about a fixture tree or another root. */
    const char *home = r->ctx->live ? getenv("CUDA_HOME") : NULL;
    struct stack_toolkit *t;

    for (size_t i = 0; i < ARRAY_SIZE(parents); i++) {
        size_t n;
        char **names = stack_list_dir(r->rootfd, NULL, parents[i], &n);

        for (size_t k = 0; names && k < n; k++) {
            if (strcmp(names[k], "cuda") == 0 || str_starts(names[k], "cuda-")) {
                char *p = stack_path_join(parents[i], names[k]);

                add_toolkit(r, p);
                free(p);
            }
        }
        stack_free_list(names, n);
    }
    add_toolkit(r, "/usr/lib/cuda"); /* Debian's nvidia-cuda-toolkit */
    if (home != NULL && *home == '/') {
        r->st->cuda_home = xstrdup(home);
        add_toolkit(r, home);
    } else if (home != NULL) {
        r->st->cuda_home = xstrdup(home);
    }
    if (r->st->n_toolkits > 1) /* qsort may not be given a NULL array, even empty */
        qsort(r->st->toolkits, r->st->n_toolkits, sizeof(*r->st->toolkits), cmp_toolkit);
    /* Marks after sorting: the pointers move. */
    {
        char *real = stack_resolve(r->rootfd, NULL, "/usr/local/cuda");

        if ((t = find_toolkit(r->st, real)) != NULL)
            t->is_default = true;
        free(real);
    }
    if (home != NULL && *home == '/') {
        char *real = stack_resolve(r->rootfd, NULL, home);

        if ((t = find_toolkit(r->st, real)) != NULL)
            t->is_cuda_home = true;
        else
            collector_note(r->c, "CUDA_HOME=%s is not a CUDA toolkit", home);
        free(real);
    }
    for (size_t i = 0; i < r->st->n_toolkits; i++)
        toolkit_versions(r, &r->st->toolkits[i]);
}

void stack_collect_system_cudnn(struct stack_run *r)
{
    struct stack_info *st = r->st;
    size_t n;
    char **names;

    st->cudnn_version = cudnn_from_include(r->rootfd, NULL, "/usr/include", &st->cudnn_source);
    names = st->cudnn_version ? NULL : stack_list_dir(r->rootfd, NULL, "/usr/include", &n);
    for (size_t i = 0; names && i < n && st->cudnn_version == NULL; i++) {
        if (strstr(names[i], "-linux-gnu") != NULL) {
            char *dir = stack_path_join("/usr/include", names[i]);

            st->cudnn_version = cudnn_from_include(r->rootfd, NULL, dir, &st->cudnn_source);
            free(dir);
        }
    }
    if (names != NULL)
        stack_free_list(names, n);
    /* Then the toolkits, the default one first. */
    for (int pass = 0; pass < 2 && st->cudnn_version == NULL; pass++) {
        for (size_t i = 0; i < st->n_toolkits && st->cudnn_version == NULL; i++) {
            char *inc;

            if (st->toolkits[i].is_default != (pass == 0))
                continue;
            inc = stack_path_join(st->toolkits[i].path, "include");
            st->cudnn_version = cudnn_from_include(r->rootfd, NULL, inc, &st->cudnn_source);
            free(inc);
        }
    }
    /* Last, the name of the library file the dynamic linker would load. */
    for (size_t i = 0; i < st->n_libs && st->cudnn_version == NULL; i++) {
        if (strcmp(st->libs[i].kind, "cudnn") == 0 && st->libs[i].version != NULL &&
            stackver_parts(st->libs[i].version) >= 2) {
            st->cudnn_version = xstrdup(st->libs[i].version);
            st->cudnn_source = xstrdup(st->libs[i].path);
        }
    }
}
