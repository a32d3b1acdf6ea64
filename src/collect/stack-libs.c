/*
 * The CUDA libraries the dynamic linker knows (its cache, else the ld.so.conf directories) and
 * the version of a library file: its name, the NVIDIA pip wheel that installed it, or the
 * toolkit it belongs to.
 */
#include "collect/stack-internal.h"
#include "collect/stack-ldcache.h"
#include "collect/stack-versions.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LIBS    256
#define MAX_LD_DIRS 64
#define LDCACHE_MAX (64u << 20)

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

    if (depth > 4 || stack_slurp_in(r->rootfd, NULL, conf, SMALL_FILE_MAX, &text) < 0)
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
                char *cdir = stack_path_dirname(conf);

                full = stack_path_join(cdir, pat);
                free(cdir);
            }
            dir = stack_path_dirname(full);
            names = stack_list_dir(r->rootfd, NULL, dir, &nn);
            for (size_t i = 0; names && i < nn; i++) {
                if (fnmatch(stack_path_basename(full), names[i], 0) == 0) {
                    char *sub = stack_path_join(dir, names[i]);

                    ld_conf_dirs(r, sub, depth + 1, dirs, n, cap);
                    free(sub);
                }
            }
            stack_free_list(names, nn);
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
        char **names = stack_list_dir(r->rootfd, NULL, dirs[i], &nn);

        for (size_t k = 0; names && k < nn; k++) {
            const struct lib_kind *kind = lib_kind_of(names[k], 2);

            if (kind != NULL) {
                char *p = stack_path_join(dirs[i], names[k]);

                add_lib(r->st, kind, names[k], p);
                free(p);
            }
        }
        stack_free_list(names, nn);
    }
    stack_free_list(dirs, n);
}

/* The site-packages of a library an NVIDIA wheel installed (".../site-packages/nvidia/..."), whose
 * dist-info then names its version. Copies bundled elsewhere (torch/lib/libcudart-<hash>.so.12)
 * are not that wheel's. */
static char *wheel_site_packages(const char *path)
{
    char *sp = stack_site_packages_of(path);

    if (sp != NULL && !str_starts(path + strlen(sp), "/nvidia/")) {
        free(sp);
        sp = NULL;
    }
    return sp;
}

const struct lib_kind *stack_lib_kind(const char *kind)
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
char *stack_lib_version(struct stack_run *r, const char *prefix, const char *kind_name,
                        const char *path, const char **source)
{
    const struct lib_kind *k = stack_lib_kind(kind_name);
    char *real = stack_resolve(r->rootfd, prefix, path), *v = NULL, *sp;

    *source = NULL;
    for (size_t i = 0; i < ARRAY_SIZE(lib_kinds) && v == NULL; i++) {
        if (k != NULL && k != &lib_kinds[i])
            continue;
        v = stackver_lib_suffix(stack_path_basename(real), lib_kinds[i].stem);
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
        v = stack_dist_info_version(r->rootfd, prefix, sp, k->dist);
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
            char *di = stack_path_join(t->path, "dist-info");

            v = stack_dist_info_version(r->rootfd, NULL, di, k->dist);
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
    int kx = (int)(stack_lib_kind(x->kind) - lib_kinds),
        ky = (int)(stack_lib_kind(y->kind) - lib_kinds);

    if (kx != ky)
        return kx - ky;
    return strcmp(x->path, y->path);
}

void stack_collect_libs(struct stack_run *r)
{
    char *buf = NULL, *cause = NULL;
    ssize_t n = stack_slurp_in(r->rootfd, NULL, "/etc/ld.so.cache", LDCACHE_MAX, &buf);

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
        const struct lib_kind *k = stack_lib_kind(l->kind);
        const char *source;

        l->version = stack_lib_version(r, NULL, l->kind, l->path, &source);
        if (l->version == NULL && k != NULL &&
            (l->version = stackver_lib_suffix(l->soname, k->stem)) != NULL)
            source = "soname";
        if (l->version != NULL)
            l->version_source = xstrdup(source);
    }
}
