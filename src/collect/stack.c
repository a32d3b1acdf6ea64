/*
 * The CUDA software stack collector: toolkits installed, the CUDA libraries the dynamic linker
 * knows, and - the strongest evidence - the framework build each GPU process runs, found from
 * the process itself (its mapped files, else its interpreter), not guessed. Reads files only:
 * nothing from the tree is executed. docs/stack.md describes every source.
 *
 * Paths of a process are read through <root>/proc/PID/root when that is another tree (a process
 * in a container sees its own files), else under <root> itself (host processes, fixture trees).
 */
#include "collect/collect.h"
#include "collect/stack-ldcache.h"
#include "collect/stack-versions.h"
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_TOOLKITS      32
#define MAX_LIBS          256
#define MAX_DIR_ENTRIES   20000 /* of one directory */
#define MAX_LD_DIRS       64
#define MAX_SITE_PACKAGES 8 /* per process */
#define MAX_LINK_HOPS     16
#define SMALL_FILE_MAX    (1u << 20) /* version files, headers, METADATA */
#define LDCACHE_MAX       (64u << 20)
#define MAPS_MAX          (16u << 20)
#define NVCC_SCAN_MAX     (64u << 20)
#define NVCC_CHUNK        (1u << 20)

struct lib_kind {
    const char *kind;
    const char *stem; /* file name up to the version */
    const char *dist; /* pip wheel project that ships it, NULL when none */
};

static const struct lib_kind lib_kinds[] = {
    { "cudart", "libcudart.so", "nvidia_cuda_runtime" },
    { "cudnn", "libcudnn.so", "nvidia_cudnn" },
    { "nccl", "libnccl.so", "nvidia_nccl" },
    { "cublas", "libcublas.so", "nvidia_cublas" },
    { "cuda", "libcuda.so", NULL },
    { "nvml", "libnvidia-ml.so", NULL },
};

struct stack_run {
    struct collect_ctx *ctx;
    int rootfd;
    struct snapshot *s;
    struct stack_info *st;
    struct collector_status *c;
    unsigned maps_denied; /* processes whose maps could not be read */
};

/* ---- paths ---- */

/* Resolves "." and ".." of an absolute path textually. */
static char *path_normalize(const char *path)
{
    char *out = xmalloc(strlen(path) + 2);
    size_t len = 0;
    const char *p = path;

    while (*p) {
        size_t n;

        while (*p == '/')
            p++;
        n = strcspn(p, "/");
        if (n == 0)
            break;
        if (n == 1 && p[0] == '.') {
            /* nothing */
        } else if (n == 2 && p[0] == '.' && p[1] == '.') {
            while (len > 0 && out[len - 1] != '/')
                len--;
            if (len > 0)
                len--;
        } else {
            out[len++] = '/';
            memcpy(out + len, p, n);
            len += n;
        }
        p += n;
    }
    if (len == 0)
        out[len++] = '/';
    out[len] = '\0';
    return out;
}

static char *path_join(const char *dir, const char *name)
{
    size_t n = strlen(dir);

    return xasprintf("%s%s%s", dir, n > 0 && dir[n - 1] == '/' ? "" : "/", name);
}

static char *path_dirname(const char *path)
{
    const char *slash = strrchr(path, '/');

    if (slash == NULL || slash == path)
        return xstrdup("/");
    return xstrndup(path, (size_t)(slash - path));
}

static const char *path_basename(const char *path)
{
    const char *slash = strrchr(path, '/');

    return slash ? slash + 1 : path;
}

/* prefix + path, relative to the root fd ("proc/12/root/usr/lib" or "usr/lib"). */
static char *rel_path(const char *prefix, const char *path)
{
    return prefix && *prefix ? xasprintf("%s/%s", prefix, sysroot_rel(path))
                             : xstrdup(sysroot_rel(path));
}

/*
 * Follows the symbolic links of path's last component (and of what they point to) inside the
 * tree at prefix, so absolute link targets stay in a fixture tree. Returns the final path.
 */
static char *resolve(int rootfd, const char *prefix, const char *path)
{
    char *cur = path_normalize(path);

    for (int hop = 0; hop < MAX_LINK_HOPS; hop++) {
        char target[4096], *rel = rel_path(prefix, cur), *next;
        ssize_t n = file_readlink_at(rootfd, rel, target, sizeof(target));

        free(rel);
        if (n <= 0)
            break;
        if (target[0] == '/') {
            next = path_normalize(target);
        } else {
            char *dir = path_dirname(cur), *joined = path_join(dir, target);

            next = path_normalize(joined);
            free(dir);
            free(joined);
        }
        free(cur);
        cur = next;
    }
    return cur;
}

static bool exists_in(int rootfd, const char *prefix, const char *path, mode_t type)
{
    char *rel = rel_path(prefix, path);
    struct stat st;
    bool ok = fstatat(rootfd, rel, &st, 0) == 0 && (type == 0 || (st.st_mode & S_IFMT) == type);

    free(rel);
    return ok;
}

static ssize_t slurp_in(int rootfd, const char *prefix, const char *path, size_t max, char **out)
{
    char *rel = rel_path(prefix, path);
    ssize_t n = file_slurp_at(rootfd, rel, max, out);

    free(rel);
    return n;
}

/* The rest of the line at p, without trailing whitespace. */
static char *dup_line(const char *p)
{
    char *v = xstrndup(p, strcspn(p, "\n"));

    return str_rtrim(v);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names in directory path (sorted, at most MAX_DIR_ENTRIES, no dot entries); NULL when it
 * cannot be opened. */
static char **list_dir(int rootfd, const char *prefix, const char *path, size_t *n)
{
    char *rel = rel_path(prefix, path);
    int fd = openat(rootfd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    char **names = NULL;
    size_t cap = 0;
    struct dirent *de;
    DIR *d;

    free(rel);
    *n = 0;
    if (fd < 0)
        return NULL;
    d = fdopendir(fd);
    if (d == NULL) {
        close(fd);
        return NULL;
    }
    while ((de = readdir(d)) != NULL && *n < MAX_DIR_ENTRIES) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        xgrow(&names, &cap, *n + 1, sizeof(*names));
        names[(*n)++] = xstrdup(de->d_name);
    }
    closedir(d);
    if (names == NULL)
        names = xcalloc(1, sizeof(*names));
    qsort(names, *n, sizeof(*names), cmp_str);
    return names;
}

static void free_list(char **names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

/* The version of the first dist-info in dir whose project is prefix (or prefix_cuNN). */
static char *dist_info_version(int rootfd, const char *prefix, const char *dir, const char *project)
{
    size_t n;
    char **names = list_dir(rootfd, prefix, dir, &n);
    char *version = NULL;

    for (size_t i = 0; names && i < n && version == NULL; i++) {
        char *v;

        if (!stackver_dist_info(names[i], project, &v))
            continue;
        /* METADATA is what pip reads; the directory name is the fallback. */
        {
            char *meta_path = xasprintf("%s/%s/METADATA", dir, names[i]), *text = NULL;

            if (slurp_in(rootfd, prefix, meta_path, SMALL_FILE_MAX, &text) >= 0)
                version = stackver_metadata_version(text);
            free(text);
            free(meta_path);
        }
        if (version == NULL)
            version = v;
        else
            free(v);
    }
    free_list(names, n);
    return version;
}

/* ---- toolkits ---- */

static char *cudnn_from_include(int rootfd, const char *prefix, const char *incdir, char **source)
{
    size_t n;
    char **names = list_dir(rootfd, prefix, incdir, &n);
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
            path = path_join(incdir, names[i]);
            if (slurp_in(rootfd, prefix, path, SMALL_FILE_MAX, &text) >= 0)
                version = stackver_cudnn_header(text);
            if (version != NULL && source != NULL)
                *source = xstrdup(path);
            free(text);
            free(path);
        }
    }
    free_list(names, n);
    return version;
}

/* The first "Cuda compilation tools" banner in the nvcc binary, read in bounded chunks. */
static char *nvcc_scan(int rootfd, const char *path)
{
    enum { TAIL = 128 }; /* kept between chunks: a banner split across two is still found */
    char *rel = rel_path(NULL, path), *buf, *v = NULL;
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

    path = path_join(t->path, "version.json");
    n = slurp_in(r->rootfd, NULL, path, SMALL_FILE_MAX, &text);
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
        path = path_join(t->path, "version.txt");
        if (slurp_in(r->rootfd, NULL, path, SMALL_FILE_MAX, &text) >= 0 &&
            (t->version = stackver_version_txt(text)) != NULL)
            t->version_source = xstrdup("version.txt");
        free(text);
        free(path);
        text = NULL;
    }

    /* Toolkits installed from pip wheels (this is how some images ship them) keep dist-info/. */
    path = path_join(t->path, "dist-info");
    if (t->cudart_version == NULL)
        t->cudart_version = dist_info_version(r->rootfd, NULL, path, "nvidia_cuda_runtime");
    if (t->nvcc_version == NULL)
        t->nvcc_version = dist_info_version(r->rootfd, NULL, path, "nvidia_cuda_nvcc");
    if (t->version == NULL && t->cudart_version != NULL) {
        t->version = xstrdup(t->cudart_version);
        t->version_source = xstrdup("dist-info");
    }
    {
        char *inc = path_join(t->path, "include");

        t->cudnn_version = cudnn_from_include(r->rootfd, NULL, inc, NULL);
        free(inc);
    }
    if (t->cudnn_version == NULL)
        t->cudnn_version = dist_info_version(r->rootfd, NULL, path, "nvidia_cudnn");
    free(path);

    if (t->version == NULL || t->nvcc_version == NULL) {
        char *v;

        path = path_join(t->path, "bin/nvcc");
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
        char *p = path_join(dir, marks[i]);
        bool ok = exists_in(rootfd, NULL, p, 0);

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
    char *real = resolve(r->rootfd, NULL, path);
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

static void collect_toolkits(struct stack_run *r)
{
    static const char *const parents[] = { "/usr/local", "/opt" };
    /* gpudoctor's own environment says nothing about a fixture tree or another root. */
    const char *home = r->ctx->live ? getenv("CUDA_HOME") : NULL;
    struct stack_toolkit *t;

    for (size_t i = 0; i < ARRAY_SIZE(parents); i++) {
        size_t n;
        char **names = list_dir(r->rootfd, NULL, parents[i], &n);

        for (size_t k = 0; names && k < n; k++) {
            if (strcmp(names[k], "cuda") == 0 || str_starts(names[k], "cuda-")) {
                char *p = path_join(parents[i], names[k]);

                add_toolkit(r, p);
                free(p);
            }
        }
        free_list(names, n);
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
        char *real = resolve(r->rootfd, NULL, "/usr/local/cuda");

        if ((t = find_toolkit(r->st, real)) != NULL)
            t->is_default = true;
        free(real);
    }
    if (home != NULL && *home == '/') {
        char *real = resolve(r->rootfd, NULL, home);

        if ((t = find_toolkit(r->st, real)) != NULL)
            t->is_cuda_home = true;
        else
            collector_note(r->c, "CUDA_HOME=%s is not a CUDA toolkit", home);
        free(real);
    }
    for (size_t i = 0; i < r->st->n_toolkits; i++)
        toolkit_versions(r, &r->st->toolkits[i]);
}

/* ---- libraries the dynamic linker knows ---- */

/* The kind of a library file name whose version suffix has at most max_parts parts (0: any). */
static const struct lib_kind *lib_kind_of(const char *soname, int max_parts)
{
    for (size_t i = 0; i < ARRAY_SIZE(lib_kinds); i++) {
        char *v = stackver_lib_suffix(soname, lib_kinds[i].stem);
        bool ok = v != NULL && (max_parts == 0 || stackver_parts(v) <= max_parts);

        free(v);
        if (ok)
            return &lib_kinds[i];
    }
    return NULL;
}

static void add_lib(struct stack_info *st, const struct lib_kind *k, const char *soname,
                    const char *path)
{
    struct stack_lib *l;

    for (size_t i = 0; i < st->n_libs; i++) {
        if (strcmp(st->libs[i].path, path) == 0)
            return;
    }
    if (st->n_libs >= MAX_LIBS)
        return;
    st->libs = xreallocarray(st->libs, st->n_libs + 1, sizeof(*st->libs));
    l = &st->libs[st->n_libs++];
    memset(l, 0, sizeof(*l));
    l->kind = xstrdup(k->kind);
    l->soname = xstrdup(soname);
    l->path = xstrdup(path);
}

static void ldcache_entry(void *arg, const char *soname, const char *path, uint32_t flags)
{
    struct stack_info *st = arg;
    uint32_t arch = ldcache_native_arch();
    const struct lib_kind *k;

    if ((flags & LDCACHE_FLAG_TYPE_MASK) != LDCACHE_FLAG_ELF_LIBC6 ||
        (arch != 0 && (flags & LDCACHE_FLAG_ARCH_MASK) != arch))
        return;
    /* Only the runtime names (libcudart.so.12): the bare .so is for linking. */
    k = lib_kind_of(soname, 0);
    if (k != NULL)
        add_lib(st, k, soname, path);
}

/* Directories of ld.so.conf, following "include" globs; at most MAX_LD_DIRS. */
static void ld_conf_dirs(struct stack_run *r, const char *conf, int depth, char ***dirs, size_t *n,
                         size_t *cap)
{
    char *text = NULL, *line, *save = NULL;

    if (depth > 4 || slurp_in(r->rootfd, NULL, conf, SMALL_FILE_MAX, &text) < 0)
        return;
    for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char *hash = strchr(line, '#'), *item;

        if (hash != NULL)
            *hash = '\0';
        item = (char *)str_ltrim(str_rtrim(line));
        if (*item == '\0' || str_starts(item, "hwcap "))
            continue;
        if (str_starts(item, "include") && (item[7] == ' ' || item[7] == '\t')) {
            const char *pat = str_ltrim(item + 8);
            char *full = *pat == '/' ? xstrdup(pat) : NULL, *dir, **names;
            size_t nn;

            if (full == NULL) {
                char *cdir = path_dirname(conf);

                full = path_join(cdir, pat);
                free(cdir);
            }
            dir = path_dirname(full);
            names = list_dir(r->rootfd, NULL, dir, &nn);
            for (size_t i = 0; names && i < nn; i++) {
                if (fnmatch(path_basename(full), names[i], 0) == 0) {
                    char *sub = path_join(dir, names[i]);

                    ld_conf_dirs(r, sub, depth + 1, dirs, n, cap);
                    free(sub);
                }
            }
            free_list(names, nn);
            free(dir);
            free(full);
            continue;
        }
        if (*item == '/' && *n < MAX_LD_DIRS) {
            item[strcspn(item, " \t=:")] = '\0';
            xgrow(dirs, cap, *n + 1, sizeof(**dirs));
            (*dirs)[(*n)++] = xstrdup(item);
        }
    }
    free(text);
}

/* Without a usable cache: the directories ld.so.conf names plus the default ones, scanned for
 * soname-style names: libcudart.so.12, and libcudart.so.11.0 (CUDA 10 and 11 put the minor in
 * the soname); the real files carry three or more parts (libcudart.so.12.4.127). */
static void scan_ld_dirs(struct stack_run *r)
{
    static const char *const defaults[] = { "/lib",
                                            "/usr/lib",
                                            "/lib64",
                                            "/usr/lib64",
                                            "/lib/x86_64-linux-gnu",
                                            "/usr/lib/x86_64-linux-gnu",
                                            "/lib/aarch64-linux-gnu",
                                            "/usr/lib/aarch64-linux-gnu" };
    char **dirs = NULL;
    size_t n = 0, cap = 0;

    ld_conf_dirs(r, "/etc/ld.so.conf", 0, &dirs, &n, &cap);
    for (size_t i = 0; i < ARRAY_SIZE(defaults) && n < MAX_LD_DIRS; i++) {
        xgrow(&dirs, &cap, n + 1, sizeof(*dirs));
        dirs[n++] = xstrdup(defaults[i]);
    }
    for (size_t i = 0; i < n; i++) {
        size_t nn;
        char **names = list_dir(r->rootfd, NULL, dirs[i], &nn);

        for (size_t k = 0; names && k < nn; k++) {
            const struct lib_kind *kind = lib_kind_of(names[k], 2);

            if (kind != NULL) {
                char *p = path_join(dirs[i], names[k]);

                add_lib(r->st, kind, names[k], p);
                free(p);
            }
        }
        free_list(names, nn);
    }
    free_list(dirs, n);
}

/* "/x/site-packages/nvidia/cudnn/lib/libcudnn.so.9" -> "/x/site-packages" */
static char *site_packages_of(const char *path)
{
    static const char *const markers[] = { "/site-packages/", "/dist-packages/" };

    for (size_t i = 0; i < ARRAY_SIZE(markers); i++) {
        const char *m = strstr(path, markers[i]);

        if (m != NULL)
            return xstrndup(path, (size_t)(m - path) + strlen(markers[i]) - 1);
    }
    return NULL;
}

/* The site-packages of a library an NVIDIA wheel installed (".../site-packages/nvidia/..."), whose
 * dist-info then names its version. Copies bundled elsewhere (torch/lib/libcudart-<hash>.so.12)
 * are not that wheel's. */
static char *wheel_site_packages(const char *path)
{
    char *sp = site_packages_of(path);

    if (sp != NULL && !str_starts(path + strlen(sp), "/nvidia/")) {
        free(sp);
        sp = NULL;
    }
    return sp;
}

static const struct lib_kind *kind_by_name(const char *kind)
{
    for (size_t i = 0; kind != NULL && i < ARRAY_SIZE(lib_kinds); i++) {
        if (strcmp(lib_kinds[i].kind, kind) == 0)
            return &lib_kinds[i];
    }
    return NULL;
}

/*
 * The version of a library file, best evidence first: the file name its links end at, the pip
 * wheel that installed it, the toolkit it belongs to. *source says which.
 */
static char *lib_version(struct stack_run *r, const char *prefix, const char *kind_name,
                         const char *path, const char **source)
{
    const struct lib_kind *k = kind_by_name(kind_name);
    char *real = resolve(r->rootfd, prefix, path), *v = NULL, *sp;

    *source = NULL;
    for (size_t i = 0; i < ARRAY_SIZE(lib_kinds) && v == NULL; i++) {
        if (k != NULL && k != &lib_kinds[i])
            continue;
        v = stackver_lib_suffix(path_basename(real), lib_kinds[i].stem);
        if (v != NULL && stackver_parts(v) < 2) {
            free(v);
            v = NULL;
        }
    }
    if (v != NULL) {
        *source = "file name";
        goto out;
    }
    if (k == NULL || k->dist == NULL)
        goto out;
    sp = wheel_site_packages(real);
    if (sp == NULL)
        sp = wheel_site_packages(path);
    if (sp != NULL) {
        v = dist_info_version(r->rootfd, prefix, sp, k->dist);
        free(sp);
        if (v != NULL) {
            *source = "dist-info";
            goto out;
        }
    }
    for (size_t i = 0; i < r->st->n_toolkits && (prefix == NULL || *prefix == '\0'); i++) {
        const struct stack_toolkit *t = &r->st->toolkits[i];
        size_t n = strlen(t->path);

        if (strncmp(real, t->path, n) != 0 || real[n] != '/')
            continue;
        /* What the toolkit records for its own runtime and cuDNN, else its dist-info/. */
        if (strcmp(k->kind, "cudart") == 0 && t->cudart_version != NULL)
            v = xstrdup(t->cudart_version);
        else if (strcmp(k->kind, "cudnn") == 0 && t->cudnn_version != NULL)
            v = xstrdup(t->cudnn_version);
        if (v != NULL) {
            *source = "toolkit";
        } else {
            char *di = path_join(t->path, "dist-info");

            v = dist_info_version(r->rootfd, NULL, di, k->dist);
            free(di);
            if (v != NULL)
                *source = "dist-info";
        }
        break;
    }
out:
    free(real);
    return v;
}

static int cmp_lib(const void *a, const void *b)
{
    const struct stack_lib *x = a, *y = b;
    int kx = (int)(kind_by_name(x->kind) - lib_kinds),
        ky = (int)(kind_by_name(y->kind) - lib_kinds);

    if (kx != ky)
        return kx - ky;
    return strcmp(x->path, y->path);
}

static void collect_libs(struct stack_run *r)
{
    char *buf = NULL, *cause = NULL;
    ssize_t n = slurp_in(r->rootfd, NULL, "/etc/ld.so.cache", LDCACHE_MAX, &buf);

    if (n >= 0 && ldcache_parse(buf, (size_t)n, ldcache_entry, r->st, &cause) >= 0) {
        r->st->ld_source = xstrdup("/etc/ld.so.cache");
    } else {
        if (n >= 0)
            collector_note(r->c, "/etc/ld.so.cache: %s; scanned the ld.so.conf directories", cause);
        else if (n != -ENOENT)
            collector_note(r->c,
                           "cannot read /etc/ld.so.cache: %s; scanned the ld.so.conf "
                           "directories",
                           strerror((int)-n));
        free(cause);
        r->st->ld_source = xstrdup("/etc/ld.so.conf");
        scan_ld_dirs(r);
    }
    free(buf);
    if (r->st->n_libs > 1)
        qsort(r->st->libs, r->st->n_libs, sizeof(*r->st->libs), cmp_lib);
    for (size_t i = 0; i < r->st->n_libs; i++) {
        struct stack_lib *l = &r->st->libs[i];
        const struct lib_kind *k = kind_by_name(l->kind);
        const char *source;

        l->version = lib_version(r, NULL, l->kind, l->path, &source);
        if (l->version == NULL && k != NULL &&
            (l->version = stackver_lib_suffix(l->soname, k->stem)) != NULL)
            source = "soname";
        if (l->version != NULL)
            l->version_source = xstrdup(source);
    }
}

static void collect_system_cudnn(struct stack_run *r)
{
    struct stack_info *st = r->st;
    size_t n;
    char **names;

    st->cudnn_version = cudnn_from_include(r->rootfd, NULL, "/usr/include", &st->cudnn_source);
    names = st->cudnn_version ? NULL : list_dir(r->rootfd, NULL, "/usr/include", &n);
    for (size_t i = 0; names && i < n && st->cudnn_version == NULL; i++) {
        if (strstr(names[i], "-linux-gnu") != NULL) {
            char *dir = path_join("/usr/include", names[i]);

            st->cudnn_version = cudnn_from_include(r->rootfd, NULL, dir, &st->cudnn_source);
            free(dir);
        }
    }
    if (names != NULL)
        free_list(names, n);
    /* Then the toolkits, the default one first. */
    for (int pass = 0; pass < 2 && st->cudnn_version == NULL; pass++) {
        for (size_t i = 0; i < st->n_toolkits && st->cudnn_version == NULL; i++) {
            char *inc;

            if (st->toolkits[i].is_default != (pass == 0))
                continue;
            inc = path_join(st->toolkits[i].path, "include");
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

/* ---- frameworks of the GPU processes ---- */

/* Where a process's files are read: through its own root when that is another tree (a
 * container), else directly under the root. */
static char *proc_prefix(struct stack_run *r, int32_t pid)
{
    char *p = xasprintf("proc/%d/root", (int)pid);
    struct stat st, mine;

    if (fstatat(r->rootfd, p, &st, 0) == 0 && S_ISDIR(st.st_mode) &&
        !(fstatat(r->rootfd, "", &mine, AT_EMPTY_PATH) == 0 && mine.st_dev == st.st_dev &&
          mine.st_ino == st.st_ino))
        return p;
    free(p);
    return xstrdup("");
}

static void add_unique(char **list, size_t *n, char *item)
{
    for (size_t i = 0; i < *n; i++) {
        if (strcmp(list[i], item) == 0) {
            free(item);
            return;
        }
    }
    if (*n >= MAX_SITE_PACKAGES) {
        free(item);
        return;
    }
    list[(*n)++] = item;
}

/* site-packages directories of files the process has mapped. */
static void sp_from_maps(struct stack_run *r, const struct proc *p, char **list, size_t *n)
{
    char *rel = xasprintf("proc/%d/maps", (int)p->pid), *text = NULL, *save = NULL, *line;
    ssize_t len;

    for (size_t i = 0; i < p->n_libs; i++) {
        char *sp = p->libs[i].path ? site_packages_of(p->libs[i].path) : NULL;

        if (sp != NULL)
            add_unique(list, n, sp);
    }
    len = file_slurp_at(r->rootfd, rel, MAPS_MAX, &text);
    free(rel);
    if (len < 0) {
        if (len != -ENOENT && len != -ESRCH)
            r->maps_denied++;
        return;
    }
    for (line = strtok_r(text, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        const char *path = strchr(line, '/');
        char *sp = path ? site_packages_of(path) : NULL;

        if (sp != NULL)
            add_unique(list, n, sp);
    }
    free(text);
}

/* "python3.11" -> "3.11"; NULL for "python3". */
static char *python_xy(const char *exe_name)
{
    const char *v;

    if (!str_starts(exe_name, "python"))
        return NULL;
    v = exe_name + 6;
    return stackver_is_version(v, 2) ? xstrdup(v) : NULL;
}

static void add_if_dir(struct stack_run *r, const char *prefix, char *path, char **list, size_t *n)
{
    if (exists_in(r->rootfd, prefix, path, S_IFDIR))
        add_unique(list, n, path);
    else
        free(path);
}

/* The value of "key = value" in a pyvenv.cfg, or NULL. */
static char *cfg_value(const char *cfg, const char *key)
{
    size_t n = strlen(key);

    for (const char *line = cfg; line != NULL && *line;) {
        const char *p = str_ltrim(line), *next = strchr(line, '\n');

        line = next ? next + 1 : NULL;
        if (strncmp(p, key, n) != 0)
            continue;
        p = str_ltrim(p + n);
        if (*p != '=')
            continue;
        p = str_ltrim(p + 1);
        return dup_line(p);
    }
    return NULL;
}

/* "3.11" from a pyvenv.cfg: "version = 3.11.7" (venv) or "version_info = 3.11.7.final.0". */
static char *venv_python_xy(const char *cfg)
{
    static const char *const keys[] = { "version", "version_info" };

    for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
        char *v = cfg_value(cfg, keys[i]);
        unsigned a, b;

        if (v != NULL && sscanf(v, "%u.%u", &a, &b) == 2) {
            free(v);
            return xasprintf("%u.%u", a, b);
        }
        free(v);
    }
    return NULL;
}

/*
 * site-packages of an interpreter at exe: a venv's (pyvenv.cfg beside bin/), a conda env's or a
 * prefix's (lib/pythonX.Y/site-packages), Debian's (lib/python3/dist-packages). Returns true
 * when exe belongs to a venv, whose own site-packages then stand alone unless its pyvenv.cfg
 * includes the system's.
 */
static bool sp_from_interpreter(struct stack_run *r, const char *prefix, const char *exe,
                                char **list, size_t *n, int depth)
{
    char *bindir, *root, *xy, *cfg_path, *cfg = NULL, *lib;
    bool venv;
    size_t nn;
    char **names;

    if (exe == NULL || *exe != '/' || !str_starts(path_basename(exe), "python") || depth > 1)
        return false;
    bindir = path_dirname(exe);
    root = path_dirname(bindir);
    xy = python_xy(path_basename(exe));
    cfg_path = path_join(root, "pyvenv.cfg");
    venv = slurp_in(r->rootfd, prefix, cfg_path, SMALL_FILE_MAX, &cfg) >= 0;
    if (venv && xy == NULL)
        xy = venv_python_xy(cfg);
    free(cfg_path);
    /* lib/pythonX.Y/{site,dist}-packages; without X.Y, every lib/python3.* directory. */
    lib = path_join(root, "lib");
    names = list_dir(r->rootfd, prefix, lib, &nn);
    for (size_t i = 0; names && i < nn; i++) {
        char *want = xy ? xasprintf("python%s", xy) : NULL;
        bool match = want ? strcmp(names[i], want) == 0
                          : str_starts(names[i], "python3") && names[i][7] != '\0';

        free(want);
        if (!match)
            continue;
        add_if_dir(r, prefix, xasprintf("%s/%s/site-packages", lib, names[i]), list, n);
        add_if_dir(r, prefix, xasprintf("%s/%s/dist-packages", lib, names[i]), list, n);
    }
    free_list(names, nn);
    free(lib);
    if (venv) {
        /* "include-system-site-packages = true": the base interpreter's too ("home = /usr/bin"). */
        char *inc = cfg_value(cfg, "include-system-site-packages");
        char *home = cfg_value(cfg, "home");

        if (inc != NULL && strcasecmp(inc, "true") == 0 && home != NULL && *home == '/') {
            char *base = xasprintf("%s/python%s", home, xy ? xy : "3");

            sp_from_interpreter(r, prefix, base, list, n, depth + 1);
            free(base);
        }
        free(inc);
        free(home);
    } else {
        /* Debian: /usr/lib/python3/dist-packages and /usr/local/lib/python3.X/dist-packages */
        add_if_dir(r, prefix, path_join(root, "lib/python3/dist-packages"), list, n);
        if (xy != NULL && strcmp(root, "/usr") == 0)
            add_if_dir(r, prefix, xasprintf("/usr/local/lib/python%s/dist-packages", xy), list, n);
    }
    free(cfg);
    free(xy);
    free(root);
    free(bindir);
    return venv;
}

/* The version a process actually loaded for a kind of library (full versions only). */
static const char *loaded_version(const struct proc *p, const char *kind)
{
    for (size_t i = 0; i < p->n_libs; i++) {
        const struct proc_lib *l = &p->libs[i];

        if (l->kind && strcmp(l->kind, kind) == 0 && l->version && stackver_parts(l->version) >= 2)
            return l->version;
    }
    return NULL;
}

struct wheels {
    char *cudart, *cudnn, *nccl; /* nvidia-* wheel versions in the site-packages */
    char *torch_meta;            /* torch's METADATA, for its pinned nvidia-* wheels */
    char *tf_version;
};

static void read_wheels(struct stack_run *r, const char *prefix, const char *sp, struct wheels *w)
{
    size_t n;
    char **names = list_dir(r->rootfd, prefix, sp, &n);

    memset(w, 0, sizeof(*w));
    for (size_t i = 0; names && i < n; i++) {
        char *v = NULL;

        if (!str_ends(names[i], ".dist-info"))
            continue;
        if (w->cudart == NULL && stackver_dist_info(names[i], "nvidia_cuda_runtime", &v))
            w->cudart = v;
        else if (w->cudnn == NULL && stackver_dist_info(names[i], "nvidia_cudnn", &v))
            w->cudnn = v;
        else if (w->nccl == NULL && stackver_dist_info(names[i], "nvidia_nccl", &v))
            w->nccl = v;
        else if (w->torch_meta == NULL && stackver_dist_info(names[i], "torch", &v)) {
            char *meta = xasprintf("%s/%s/METADATA", sp, names[i]);

            if (slurp_in(r->rootfd, prefix, meta, SMALL_FILE_MAX, &w->torch_meta) < 0)
                w->torch_meta = NULL;
            free(meta);
            free(v);
        } else if (w->tf_version == NULL && (stackver_dist_info(names[i], "tensorflow", &v) ||
                                             stackver_dist_info(names[i], "tensorflow_gpu", &v) ||
                                             stackver_dist_info(names[i], "tensorflow_cpu", &v) ||
                                             stackver_dist_info(names[i], "tf_nightly", &v))) {
            w->tf_version = v;
        } else {
            free(v);
        }
    }
    free_list(names, n);
}

static void free_wheels(struct wheels *w)
{
    free(w->cudart);
    free(w->cudnn);
    free(w->nccl);
    free(w->torch_meta);
    free(w->tf_version);
}

/* The first of: what the process loaded, the wheel installed, the version torch pins. */
static char *pick(const char *loaded, const char *wheel, const char *meta, const char *dist)
{
    if (loaded != NULL)
        return xstrdup(loaded);
    if (wheel != NULL)
        return xstrdup(wheel);
    return meta != NULL ? stackver_metadata_pin(meta, dist) : NULL;
}

static struct stack_framework *framework_slot(struct stack_info *st, const char *name,
                                              const char *sp, bool *existed)
{
    struct stack_framework *f;

    for (size_t i = 0; i < st->n_frameworks; i++) {
        f = &st->frameworks[i];
        if (strcmp(f->name, name) == 0 && strcmp(f->site_packages, sp) == 0) {
            *existed = true;
            return f;
        }
    }
    *existed = false;
    st->frameworks = xreallocarray(st->frameworks, st->n_frameworks + 1, sizeof(*f));
    f = &st->frameworks[st->n_frameworks++];
    memset(f, 0, sizeof(*f));
    f->name = xstrdup(name);
    f->site_packages = xstrdup(sp);
    return f;
}

static void framework_common(struct stack_framework *f, const struct proc *p, const char *from)
{
    f->pid = p->pid;
    f->processes = 1;
    f->python = p->exe ? xstrdup(p->exe) : NULL;
    f->found_from = xstrdup(from);
}

static void check_site_packages(struct stack_run *r, const struct proc *p, const char *prefix,
                                const char *sp, const char *from)
{
    char *path, *text = NULL;
    struct wheels w;
    bool have_torch, have_tf, existed;
    struct stack_framework *f;
    char *tf_text = NULL;

    path = path_join(sp, "torch/version.py");
    have_torch = slurp_in(r->rootfd, prefix, path, SMALL_FILE_MAX, &text) >= 0;
    free(path);
    path = path_join(sp, "tensorflow/python/platform/build_info.py");
    have_tf = slurp_in(r->rootfd, prefix, path, SMALL_FILE_MAX, &tf_text) >= 0;
    free(path);
    if (!have_torch && !have_tf)
        return;
    read_wheels(r, prefix, sp, &w);
    if (have_torch) {
        f = framework_slot(r->st, "torch", sp, &existed);
        if (existed) {
            f->processes++;
        } else {
            framework_common(f, p, from);
            f->version = stackver_py_assign(text, "__version__", NULL);
            f->cuda_version = stackver_py_assign(text, "cuda", NULL);
            f->hip_version = stackver_py_assign(text, "hip", NULL);
            f->cudnn_version =
                pick(loaded_version(p, "cudnn"), w.cudnn, w.torch_meta, "nvidia-cudnn");
            f->cudart_version =
                pick(loaded_version(p, "cudart"), w.cudart, w.torch_meta, "nvidia-cuda-runtime");
            f->nccl_version = pick(loaded_version(p, "nccl"), w.nccl, w.torch_meta, "nvidia-nccl");
            if (f->version == NULL)
                collector_note(r->c, "%s/torch/version.py: no __version__", sp);
        }
    }
    if (have_tf) {
        f = framework_slot(r->st, "tensorflow", sp, &existed);
        if (existed) {
            f->processes++;
        } else {
            char *cudnn = stackver_tf_build_info(tf_text, "cudnn_version");

            framework_common(f, p, from);
            f->version = w.tf_version ? xstrdup(w.tf_version) : NULL;
            f->cuda_version = stackver_tf_build_info(tf_text, "cuda_version");
            f->cudnn_version = pick(loaded_version(p, "cudnn"), w.cudnn, NULL, NULL);
            if (f->cudnn_version == NULL)
                f->cudnn_version = cudnn;
            else
                free(cudnn);
            f->cudart_version = pick(loaded_version(p, "cudart"), w.cudart, NULL, NULL);
            f->nccl_version = pick(loaded_version(p, "nccl"), w.nccl, NULL, NULL);
        }
    }
    free_wheels(&w);
    free(text);
    free(tf_text);
}

/* Fills in the versions of the process's mapped libraries that their file names lack. */
static void resolve_proc_libs(struct stack_run *r, struct proc *p, const char *prefix)
{
    for (size_t i = 0; i < p->n_libs; i++) {
        struct proc_lib *l = &p->libs[i];
        const char *source;
        char *v;

        if (l->path == NULL || (l->version != NULL && stackver_parts(l->version) >= 2) ||
            kind_by_name(l->kind) == NULL)
            continue;
        v = lib_version(r, prefix, l->kind, l->path, &source);
        if (v != NULL) {
            free(l->version);
            l->version = v;
        }
    }
}

static void collect_frameworks(struct stack_run *r)
{
    struct proc_table *t = &r->s->procs;

    for (size_t i = 0; i < t->n_procs; i++) {
        struct proc *p = &t->procs[i];
        char *list[MAX_SITE_PACKAGES], *prefix;
        const char *from = "maps";
        size_t n = 0;

        if (collect_time_left(r->ctx) == 0) {
            collector_note(r->c, "stopped at the deadline after %zu of %zu GPU processes", i,
                           t->n_procs);
            break;
        }
        if (proc_table_context_only(t, p))
            continue; /* a launcher or shell above a GPU process: not a user of the stack */
        prefix = proc_prefix(r, p->pid);
        resolve_proc_libs(r, p, prefix);
        sp_from_maps(r, p, list, &n);
        if (n == 0) {
            bool venv = false;

            from = "interpreter";
            /* /proc/PID/exe is the real binary: a venv's bin/python is a link to it, and only
             * argv[0] still names the venv. */
            if (p->cmdline != NULL && p->cmdline[0] == '/') {
                char *argv0 = xstrndup(p->cmdline, strcspn(p->cmdline, " "));

                venv = sp_from_interpreter(r, prefix, argv0, list, &n, 0);
                free(argv0);
            }
            if (!venv)
                sp_from_interpreter(r, prefix, p->exe, list, &n, 0);
        }
        for (size_t k = 0; k < n; k++) {
            check_site_packages(r, p, prefix, list[k], from);
            free(list[k]);
        }
        free(prefix);
    }
    if (r->maps_denied != 0)
        collector_note(r->c,
                       "/proc/PID/maps of %u GPU process(es) unreadable (not root?): "
                       "their framework found from the interpreter only",
                       r->maps_denied);
}

static void *start(struct collect_ctx *ctx, struct snapshot *s)
{
    struct stack_run r = { ctx, ctx->root.fd, s, &s->stack, &s->collectors[COLLECTOR_STACK], 0 };

    collector_set(r.c, CS_OK, NULL);
    collect_toolkits(&r);
    collect_libs(&r);
    collect_system_cudnn(&r);
    collect_frameworks(&r);
    return NULL;
}

const struct collector_ops collector_stack = { COLLECTOR_STACK, start, NULL, NULL };
