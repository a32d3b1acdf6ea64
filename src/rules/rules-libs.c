/*
 * CUDA libraries a program could not load, from the error it printed: "ImportError:
 * libcublas.so.9.1: cannot open shared object file", TensorFlow's "Could not load dynamic library
 * 'libcudart.so.11.0'", cuDNN's "Could not load library libcudnn_cnn_infer.so.8". The soname
 * says which CUDA (or cuDNN) release the program was built for; the snapshot says which are
 * installed and which the dynamic linker finds. stack.cuda-lib-missing judges the CUDA
 * libraries; the cuDNN ones are stack.cudnn's (rules-stack.c calls cudnn_reported).
 */
#include "data/cudaerr.h"
#include "data/cudasonames.h"
#include "rules/rule-impl.h"
#include "util/strutil.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The library an error text names: "cudart" and "10.1" of "libcudart.so.10.1". */
struct lib_named {
    char name[32];    /* "cudart", "cublas", "cudnn_cnn_infer" */
    char version[16]; /* "10.1", "8", "" when the soname has none */
};

/* The first "libNAME.so[.N[.M]]" in text whose NAME starts with prefix; false when none. */

/* An absolute path with no "." or ".." part and no backslash: it names the directory it shows. */
static bool plain_dir(const char *p)
{
    if (p[0] != '/' || strchr(p, '\\') != NULL)
        return false;
    for (const char *c = p; (c = strchr(c, '/')) != NULL; c++) {
        if ((c[1] == '.' && (c[2] == '/' || c[2] == '\0')) ||
            (c[1] == '.' && c[2] == '.' && (c[3] == '/' || c[3] == '\0')))
            return false;
    }
    return true;
}

static bool lib_in_text(const char *text, const char *prefix, struct lib_named *out)
{
    for (const char *p = strstr(text, "lib"); p != NULL; p = strstr(p + 3, "lib")) {
        const char *q = p + 3;
        size_t n = 0, v = 0;

        if (strncmp(q, prefix, strlen(prefix)) != 0)
            continue;
        while ((isalnum((unsigned char)q[n]) || q[n] == '_') && n + 1 < sizeof(out->name))
            n++;
        if (strncmp(q + n, ".so", 3) != 0)
            continue;
        memcpy(out->name, q, n);
        out->name[n] = '\0';
        q += n + 3;
        while (*q == '.' && isdigit((unsigned char)q[1]) && v + 4 < sizeof(out->version)) {
            if (v > 0)
                out->version[v++] = '.';
            q++;
            while (isdigit((unsigned char)*q) && v + 2 < sizeof(out->version))
                out->version[v++] = *q++;
        }
        out->version[v] = '\0';
        return true;
    }
    return false;
}

/* The first error given of that kind that names a library of the prefix. */
static bool reported_lib(const struct rule_ctx *ctx, enum cudaerr_kind kind, const char *prefix,
                         struct lib_named *lib)
{
    const struct snapshot *s = ctx->facts->snap;

    for (size_t i = 0; i < s->reported.n_errors; i++) {
        const struct cudaerr_info *m = cudaerr_match(s->reported.errors[i].text);

        if (m != NULL && m->kind == kind && lib_in_text(s->reported.errors[i].text, prefix, lib))
            return true;
    }
    return false;
}

/* The installed toolkits, as evidence: "installed: CUDA 9.0 (/usr/local/cuda-9.0)". */
static void toolkits_evidence(struct finding *f, const struct stack_info *st, bool read)
{
    char list[256] = "";
    size_t n = 0;

    for (size_t i = 0; i < st->n_toolkits && n + 48 < sizeof(list); i++) {
        const struct stack_toolkit *t = &st->toolkits[i];

        n += (size_t)snprintf(list + n, sizeof(list) - n, "%sCUDA %s%s%s%s", n ? ", " : "",
                              t->version ? t->version : "?", t->path ? " (" : "",
                              t->path ? t->path : "", t->path ? ")" : "");
    }
    if (n > 0)
        finding_evidence(f, "CUDA toolkits here: %s", list);
    else if (read)
        finding_evidence(f, "no CUDA toolkit was found here");
    else
        finding_evidence(f, "the CUDA toolkits installed here are not known (not collected)");
}

/* ---- stack.cuda-lib-missing ---- */

/* The CUDA releases that ship the soname, as evidence: the program was built with one of them. */
static void soname_evidence(struct finding *f, const struct cuda_soname *row)
{
    if (row->last == NULL)
        finding_evidence(f,
                         "%s ships with CUDA %s and every release since: the program was built "
                         "with one of them",
                         row->soname, row->first);
    else if (row->first_v == row->last_v)
        finding_evidence(f, "%s ships with CUDA %s only: the program was built with it",
                         row->soname, row->first);
    else
        finding_evidence(f, "%s ships with CUDA %s to %s: the program was built with one of them",
                         row->soname, row->first, row->last);
}

/* The title when no toolkit here ships the soname. */
static void not_installed_title(struct finding *f, const struct cuda_soname *row)
{
    if (row->last == NULL)
        finding_title(f,
                      "The program cannot load %s, which ships with CUDA %s and every release "
                      "since: none of them is installed here",
                      row->soname, row->first);
    else if (row->first_v == row->last_v)
        finding_title(f,
                      "The program cannot load %s, which ships with CUDA %s only: that CUDA is "
                      "not installed here",
                      row->soname, row->first);
    else
        finding_title(f,
                      "The program cannot load %s, which ships with CUDA %s to %s: none of them "
                      "is installed here",
                      row->soname, row->first, row->last);
}

/* The fix when no toolkit here ships the soname: install one that does. */
static void install_fix(struct finding *f, const struct cuda_soname *row)
{
    if (row->last == NULL)
        finding_fix(f,
                    "# install the libraries of CUDA %s or a later release beside the others "
                    "(NVIDIA's cuda-libraries package of that release, or the framework's pip "
                    "wheels of them), or install a build of the program for a CUDA that is "
                    "installed",
                    row->first);
    else if (row->first_v == row->last_v)
        finding_fix(f,
                    "# install CUDA %s's libraries beside the others (NVIDIA's cuda-libraries "
                    "package of that release, or the framework's pip wheels of them), or "
                    "install a build of the program for a CUDA that is installed",
                    row->first);
    else
        finding_fix(f,
                    "# install the libraries of one CUDA release from %s to %s beside the others "
                    "(NVIDIA's cuda-libraries package of that release, or the framework's pip "
                    "wheels of them), or install a build of the program for a CUDA that is "
                    "installed",
                    row->first, row->last);
}

static void check_lib_missing(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    const struct stack_info *st = &s->stack;
    const struct stack_toolkit *have = NULL; /* an installed toolkit that ships the soname */
    const struct stack_lib *known = NULL;    /* the linker knows the very soname */
    const struct stack_framework *fw = NULL;
    const struct cuda_soname *row = NULL; /* the releases that ship it; NULL: not known */
    bool read = s->collectors[COLLECTOR_STACK].state == CS_OK ||
                s->collectors[COLLECTOR_STACK].state == CS_PARTIAL;
    struct lib_named lib = { "", "" };
    bool named = reported_lib(ctx, CUDAERR_CUDA_LIB_MISSING, "cu", &lib) ||
                 reported_lib(ctx, CUDAERR_CUDA_LIB_MISSING, "nvrtc", &lib);
    char want[64] = "";
    struct finding *f;

    if (reported_find(ctx, CUDAERR_CUDA_LIB_MISSING, NULL) < 0)
        return;
    if (named && lib.version[0]) {
        snprintf(want, sizeof(want), "lib%s.so.%s", lib.name, lib.version);
        row = cuda_soname_find(lib.name, lib.version);
    }
    for (size_t i = 0; row != NULL && i < st->n_toolkits; i++) {
        if (cuda_soname_ships(row, st->toolkits[i].version))
            have = have ? have : &st->toolkits[i];
    }
    for (size_t i = 0; row != NULL && i < st->n_frameworks; i++) {
        if (cuda_soname_ships(row, st->frameworks[i].cuda_version))
            fw = fw ? fw : &st->frameworks[i];
    }
    for (size_t i = 0; want[0] && i < st->n_libs; i++) {
        const struct stack_lib *l = &st->libs[i];

        if (l->soname != NULL && strcmp(l->soname, want) == 0)
            known = known ? known : l;
    }
    f = finding_new(ctx, out, -1, -1);
    if (known != NULL) {
        f->severity = SEV_WARNING;
        finding_title(f,
                      "The program could not load %s, which the dynamic linker here finds: the "
                      "program ran with another view of the libraries",
                      want);
    } else if (have != NULL)
        finding_title(f,
                      "The program cannot load %s: CUDA %s, installed here, ships it, but the "
                      "dynamic linker does not look where it is",
                      want, have->version);
    else if (row != NULL && !read)
        finding_title(f,
                      "The program cannot load %s: the CUDA toolkits here were not read, so "
                      "whether one of them ships it is not known",
                      want);
    else if (row != NULL)
        not_installed_title(f, row);
    else if (want[0])
        finding_title(
            f, "The program cannot load %s: which CUDA release ships it is not known here", want);
    else if (named)
        finding_title(f, "The program cannot load the CUDA library lib%s", lib.name);
    else
        finding_title(f, "The program cannot load a CUDA library it needs");
    reported_texts(ctx, f, CUDAERR_CUDA_LIB_MISSING);
    if (row != NULL)
        soname_evidence(f, row);
    else if (want[0])
        finding_evidence(f,
                         "%s is not in gpudoctor's table of CUDA library sonames: which CUDA "
                         "release ships it, and so which toolkit here could, is not known",
                         want);
    if (fw != NULL)
        finding_evidence(f, "%s %s was built with CUDA %s", fw->name ? fw->name : "a framework",
                         fw->version ? fw->version : "", fw->cuda_version);
    toolkits_evidence(f, st, read);
    for (size_t i = 0; named && i < st->n_libs; i++) {
        const struct stack_lib *l = &st->libs[i];

        if (l->soname && strncmp(l->soname, "lib", 3) == 0 &&
            strncmp(l->soname + 3, lib.name, strlen(lib.name)) == 0 &&
            l->soname[3 + strlen(lib.name)] == '.')
            finding_evidence(f, "the dynamic linker knows %s (%s)", l->soname,
                             l->path ? l->path : "?");
    }
    finding_fix(f, "ldconfig -p | grep -E 'libcudart|libcublas'   # the CUDA libraries the linker "
                   "finds");
    if (known != NULL) {
        finding_fix(f, "# where the program failed (a container without this directory, a shell "
                       "with another LD_LIBRARY_PATH, another machine): LD_DEBUG=libs before its "
                       "command shows where the loader looked");
        f->impact = 0.5;
        return;
    }
    if (have != NULL && have->path != NULL) {
        char *lib64 = xasprintf("%s/lib64", have->path), *ql = NULL;

        /* It goes into the linker's configuration as root: a plain absolute path only (a
         * backslash would be an escape to some echo, ".." another directory than shown). */
        if (plain_dir(lib64))
            ql = fix_arg(f, "library path", lib64);
        else
            finding_fix(f, "# the toolkit's path is not a plain absolute path: add its lib64 "
                           "directory to LD_LIBRARY_PATH or /etc/ld.so.conf.d/ by hand");
        if (ql != NULL) {
            finding_fix(f,
                        "export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}   # for "
                        "this shell",
                        ql);
            finding_fix(f,
                        "printf '%%s\\n' %s | sudo tee /etc/ld.so.conf.d/gpudoctor-cuda.conf && "
                        "sudo ldconfig   # for every program",
                        ql);
        }
        free(ql);
        free(lib64);
    } else if (have != NULL) {
        finding_fix(f,
                    "# add the lib64 directory of the installed CUDA %s to LD_LIBRARY_PATH, or "
                    "to /etc/ld.so.conf.d/ and run sudo ldconfig",
                    have->version);
    } else if (row != NULL) {
        install_fix(f, row);
    } else if (want[0]) {
        finding_fix(f,
                    "# look for %s in the lib64 directories of the CUDA toolkits here and "
                    "put the one that has it on LD_LIBRARY_PATH; none has it: install the CUDA "
                    "release the program was built with, or a build of the program for a CUDA "
                    "that is installed",
                    want);
    }
    f->impact = 1.0;
}

const struct rule rule_stack_cuda_lib_missing = {
    .id = "stack.cuda-lib-missing",
    .severity = SEV_CRITICAL,
    .category = CAT_STACK,
    .title = N_("A CUDA library the program needs cannot load"),
    .explanation = N_(
        "A program built against the CUDA libraries loads them by soname, and a soname's version "
        "is the library's, not the CUDA release's: libcudart.so.11.0 is the runtime of every "
        "CUDA 11.x, libcublas.so.12 the cuBLAS of every CUDA 12.x, libcufft.so.10 the cuFFT of "
        "CUDA 10.1 to 11.8 and libcurand.so.10 the cuRAND of 10.1 to today's. When no CUDA "
        "installed ships that soname, or the one that does is installed where the dynamic "
        "linker does not look (not in /etc/ld.so.conf.d, not on LD_LIBRARY_PATH), the program "
        "fails at import ('cannot open shared object file'), or, like TensorFlow, says 'Could "
        "not load dynamic library' and runs on the CPU. A CUDA release that ships another "
        "soname of the library does not help."),
    .detection = N_(
        "An error given with --error that the catalogue recognises as a CUDA library (libcudart, "
        "libcublas, libcufft, libcurand, libcusolver, libcusparse, libnvrtc) that could not be "
        "loaded. gpudoctor's table of sonames (data/cuda-sonames.tsv) gives the CUDA releases "
        "that ship it; they are compared with the CUDA toolkits found here and the libraries the "
        "dynamic linker knows: one installed but not on the linker's path, or none installed "
        "(critical); a warning when the linker here finds that very soname, since the program "
        "then ran with another view of the libraries. A soname the table does not know is said "
        "to be of an unknown release, not guessed."),
    .fix = N_("Put the lib64 of an installed release that ships the soname on the linker's path "
              "(LD_LIBRARY_PATH, or /etc/ld.so.conf.d and ldconfig), or install a release that "
              "ships it, or a build of the program for a CUDA that is installed."),
    .thresholds = NO_THRESHOLDS,
    .check = check_lib_missing,
};

/* ---- stack.cudnn, from the error given ---- */

void cudnn_reported(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    const struct stack_info *st = &s->stack;
    const struct stack_framework *fw = NULL;
    struct lib_named lib = { "", "" };
    bool named = reported_lib(ctx, CUDAERR_CUDNN_MISSING, "cudnn", &lib);
    long want = named ? (long)str_version_major(lib.version) : 0, cuda_major = 0;
    struct finding *f;

    if (reported_find(ctx, CUDAERR_CUDNN_MISSING, NULL) < 0)
        return;
    for (size_t i = 0; i < st->n_frameworks; i++) {
        if (st->frameworks[i].cuda_version != NULL)
            fw = fw ? fw : &st->frameworks[i];
    }
    cuda_major = fw ? (long)str_version_major(fw->cuda_version) : 0;
    f = finding_new(ctx, out, -1, -1);
    if (want > 0)
        finding_title(f,
                      "The program cannot load cuDNN %ld (lib%s.so.%s): it is not installed "
                      "where the dynamic linker looks",
                      want, lib.name, lib.version);
    else
        finding_title(f, "The program cannot load cuDNN: it is not installed where the dynamic "
                         "linker looks");
    reported_texts(ctx, f, CUDAERR_CUDNN_MISSING);
    if (st->cudnn_version != NULL)
        finding_evidence(f, "the system's cuDNN: %s (%s)", st->cudnn_version,
                         st->cudnn_source ? st->cudnn_source : "?");
    else if (s->collectors[COLLECTOR_STACK].state == CS_OK)
        finding_evidence(f, "no cuDNN was found in the system's library directories");
    else
        finding_evidence(f, "the system's cuDNN is not known here (not collected)");
    if (fw != NULL && fw->cudnn_version != NULL)
        finding_evidence(f, "%s %s was built with CUDA %s, cuDNN %s",
                         fw->name ? fw->name : "a framework", fw->version ? fw->version : "",
                         fw->cuda_version, fw->cudnn_version);
    else if (fw != NULL)
        finding_evidence(f, "%s %s was built with CUDA %s", fw->name ? fw->name : "a framework",
                         fw->version ? fw->version : "", fw->cuda_version);
    finding_fix(f, "ldconfig -p | grep libcudnn   # the cuDNN the dynamic linker finds");
    finding_fix(f,
                "python3 -c 'import os, nvidia.cudnn; print(os.path.dirname(nvidia.cudnn.__file__)"
                " + \"/lib\")'   # a pip-installed cuDNN's directory, for LD_LIBRARY_PATH");
    if (want > 0 && (cuda_major == 11 || cuda_major == 12))
        finding_fix(f,
                    "pip install 'nvidia-cudnn-cu%ld==%ld.*'   # cuDNN %ld for CUDA %ld, as a "
                    "wheel; then put its lib directory on LD_LIBRARY_PATH",
                    cuda_major, want, want, cuda_major);
    else if (want > 0)
        finding_fix(f,
                    "# install cuDNN %ld for the program's CUDA (NVIDIA's libcudnn%ld "
                    "package, or the nvidia-cudnn-cuNN wheel), or add the directory of the "
                    "one that is there to LD_LIBRARY_PATH",
                    want, want);
    f->impact = 0.9;
}
