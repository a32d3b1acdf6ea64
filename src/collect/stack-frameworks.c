/*
 * The framework build each GPU process runs (PyTorch, TensorFlow, JAX...), found from the process
 * itself: the site-packages of the files it has mapped, else those of its interpreter (a venv's
 * pyvenv.cfg, python3.X), then the versions the frameworks' own files and wheels write down.
 * A process's paths are read through <root>/proc/PID/root when that is another tree (a process
 * in a container sees its own files), else under <root> itself.
 */
#include "collect/stack-internal.h"
#include "collect/stack-versions.h"
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define MAX_SITE_PACKAGES 8 /* per process */
#define MAPS_MAX          (16u << 20)

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
        char *sp = p->libs[i].path ? stack_site_packages_of(p->libs[i].path) : NULL;

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
        char *sp = path ? stack_site_packages_of(path) : NULL;

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
    if (stack_exists_in(r->rootfd, prefix, path, S_IFDIR))
        add_unique(list, n, path);
    else
        free(path);
}

/* The rest of the line at p, without trailing whitespace. */
static char *dup_line(const char *p)
{
    char *v = xstrndup(p, strcspn(p, "\n"));

    return str_rtrim(v);
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

    if (exe == NULL || *exe != '/' || !str_starts(stack_path_basename(exe), "python") || depth > 1)
        return false;
    bindir = stack_path_dirname(exe);
    root = stack_path_dirname(bindir);
    xy = python_xy(stack_path_basename(exe));
    cfg_path = stack_path_join(root, "pyvenv.cfg");
    venv = stack_slurp_in(r->rootfd, prefix, cfg_path, SMALL_FILE_MAX, &cfg) >= 0;
    if (venv && xy == NULL)
        xy = venv_python_xy(cfg);
    free(cfg_path);
    /* lib/pythonX.Y/{site,dist}-packages; without X.Y, every lib/python3.* directory. */
    lib = stack_path_join(root, "lib");
    names = stack_list_dir(r->rootfd, prefix, lib, &nn);
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
    stack_free_list(names, nn);
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
        add_if_dir(r, prefix, stack_path_join(root, "lib/python3/dist-packages"), list, n);
        if (xy != NULL && strcmp(root, "/usr") == 0)
            add_if_dir(r, prefix, xasprintf("/usr/local/lib/python%s/dist-packages", xy), list, n);
    }
    free(cfg);
    free(xy);
    free(root);
    free(bindir);
    return venv;
}

/* The version a process actually loaded for a kind of library (full versions only); NULL
 * without a process. */
static const char *loaded_version(const struct proc *p, const char *kind)
{
    for (size_t i = 0; p != NULL && i < p->n_libs; i++) {
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
    char **names = stack_list_dir(r->rootfd, prefix, sp, &n);

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

            if (stack_slurp_in(r->rootfd, prefix, meta, SMALL_FILE_MAX, &w->torch_meta) < 0)
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
    stack_free_list(names, n);
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

/* p is the GPU process it was found from; NULL for gpudoctor's own environment (python). */
static void framework_common(struct stack_framework *f, const struct proc *p, const char *from,
                             const char *python)
{
    f->pid = p != NULL ? p->pid : 0;
    f->processes = p != NULL ? 1 : 0;
    python = p != NULL ? p->exe : python;
    f->python = python ? xstrdup(python) : NULL;
    f->found_from = xstrdup(from);
}

/* The frameworks installed in sp; p as for framework_common. */
static void check_site_packages(struct stack_run *r, const struct proc *p, const char *prefix,
                                const char *sp, const char *from, const char *python)
{
    char *path, *text = NULL;
    struct wheels w;
    bool have_torch, have_tf, existed;
    struct stack_framework *f;
    char *tf_text = NULL;

    path = stack_path_join(sp, "torch/version.py");
    have_torch = stack_slurp_in(r->rootfd, prefix, path, SMALL_FILE_MAX, &text) >= 0;
    free(path);
    path = stack_path_join(sp, "tensorflow/python/platform/build_info.py");
    have_tf = stack_slurp_in(r->rootfd, prefix, path, SMALL_FILE_MAX, &tf_text) >= 0;
    free(path);
    if (!have_torch && !have_tf)
        return;
    read_wheels(r, prefix, sp, &w);
    if (have_torch) {
        f = framework_slot(r->st, "torch", sp, &existed);
        if (existed) {
            f->processes += p != NULL;
        } else {
            framework_common(f, p, from, python);
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
            f->processes += p != NULL;
        } else {
            char *cudnn = stackver_tf_build_info(tf_text, "cudnn_version");

            framework_common(f, p, from, python);
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
            stack_lib_kind(l->kind) == NULL)
            continue;
        v = stack_lib_version(r, prefix, l->kind, l->path, &source);
        if (v != NULL) {
            free(l->version);
            l->version = v;
        }
    }
}

/*
 * The Python environment gpudoctor itself was started in: $VIRTUAL_ENV (an activated venv, which
 * shadows a conda env), else $CONDA_PREFIX. A program that failed at its start leaves no process
 * to read; run from the same shell (check --error), gpudoctor reads the build it would have run.
 * Live only: gpudoctor's environment says nothing of a fixture tree. An install a GPU process
 * runs keeps that process's record.
 */
static void env_frameworks(struct stack_run *r)
{
    static const char *const vars[] = { "VIRTUAL_ENV", "CONDA_PREFIX" };
    const char *var = NULL, *env = NULL;
    char *list[MAX_SITE_PACKAGES], *python;
    size_t n = 0;

    for (size_t i = 0; r->ctx->live && env == NULL && i < ARRAY_SIZE(vars); i++) {
        env = getenv(vars[i]);
        if (env == NULL || *env == '\0') {
            env = NULL;
        } else if (*env != '/' || strlen(env) >= PATH_MAX) {
            collector_note(r->c, "$%s is not an absolute path: not read", vars[i]);
            env = NULL;
        } else {
            var = vars[i];
        }
    }
    if (var == NULL)
        return;
    r->st->python_env = xstrdup(env);
    r->st->python_env_var = xstrdup(var);
    python = stack_path_join(env, "bin/python");
    sp_from_interpreter(r, "", python, list, &n, 0);
    if (n == 0)
        collector_note(r->c, "$%s (%s): no site-packages directory under it", var, env);
    for (size_t k = 0; k < n; k++) {
        check_site_packages(r, NULL, "", list[k], "environment", python);
        free(list[k]);
    }
    free(python);
}

void stack_collect_frameworks(struct stack_run *r)
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
            check_site_packages(r, p, prefix, list[k], from, NULL);
            free(list[k]);
        }
        free(prefix);
    }
    env_frameworks(r);
    if (r->maps_denied != 0)
        collector_note(r->c,
                       "/proc/PID/maps of %u GPU process(es) unreadable (not root?): "
                       "their framework found from the interpreter only",
                       r->maps_denied);
}
