/*
 * CUDA libraries a program could not load, from the error it printed: "ImportError:
 * libcublas.so.9.1: cannot open shared object file", TensorFlow's "Could not load dynamic library
 * 'libcudart.so.11.0'", cuDNN's "Could not load library libcudnn_cnn_infer.so.8". The soname
 * says which CUDA (or cuDNN) release the program was built for; the snapshot says which are
 * installed and which the dynamic linker finds. stack.cuda-lib-missing judges the CUDA
 * libraries; the cuDNN ones are stack.cudnn's (rules-stack.c calls cudnn_reported).
 */
#include "data/cudaerr.h"
#include "rules/rule-impl.h"
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

/* The major of a version: 10 of "10.1", 0 when none. */
static long major_of(const char *v)
{
    return v != NULL && isdigit((unsigned char)*v) ? strtol(v, NULL, 10) : 0;
}

/*
 * Whether toolkit version tv ("10.2.89") is the release a soname version sv names: the same
 * major.minor ("10.1"), or the same major when the soname gives only that ("11", "12").
 */
static bool toolkit_matches(const char *tv, const char *sv)
{
    size_t n = strlen(sv);

    if (tv == NULL || n == 0)
        return false;
    if (strchr(sv, '.') == NULL)
        return major_of(tv) == major_of(sv);
    return strncmp(tv, sv, n) == 0 && (tv[n] == '\0' || tv[n] == '.');
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

static void check_lib_missing(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    const struct stack_info *st = &s->stack;
    const struct stack_toolkit *have = NULL;
    const struct stack_lib *known = NULL; /* the linker knows the very soname */
    const struct stack_framework *fw = NULL;
    bool read = s->collectors[COLLECTOR_STACK].state == CS_OK ||
                s->collectors[COLLECTOR_STACK].state == CS_PARTIAL;
    struct lib_named lib = { "", "" };
    bool named = reported_lib(ctx, CUDAERR_CUDA_LIB_MISSING, "cu", &lib) ||
                 reported_lib(ctx, CUDAERR_CUDA_LIB_MISSING, "nvrtc", &lib);
    struct finding *f;

    if (reported_find(ctx, CUDAERR_CUDA_LIB_MISSING, NULL) < 0)
        return;
    for (size_t i = 0; named && lib.version[0] && i < st->n_toolkits; i++) {
        if (toolkit_matches(st->toolkits[i].version, lib.version))
            have = have ? have : &st->toolkits[i];
    }
    for (size_t i = 0; named && lib.version[0] && i < st->n_frameworks; i++) {
        if (toolkit_matches(st->frameworks[i].cuda_version, lib.version))
            fw = fw ? fw : &st->frameworks[i];
    }
    for (size_t i = 0; named && lib.version[0] && i < st->n_libs; i++) {
        const struct stack_lib *l = &st->libs[i];
        char want[64];

        snprintf(want, sizeof(want), "lib%s.so.%s", lib.name, lib.version);
        if (l->soname != NULL && strcmp(l->soname, want) == 0)
            known = known ? known : l;
    }
    f = finding_new(ctx, out, -1, -1);
    if (known != NULL) {
        f->severity = SEV_WARNING;
        finding_title(f,
                      "The program could not load lib%s.so.%s, which the dynamic linker here "
                      "finds: the program ran with another view of the libraries",
                      lib.name, lib.version);
    } else if (named && lib.version[0] && have != NULL)
        finding_title(f,
                      "The program cannot load lib%s.so.%s: CUDA %s is installed, but the dynamic "
                      "linker does not look where it is",
                      lib.name, lib.version, lib.version);
    else if (named && lib.version[0])
        finding_title(f,
                      "The program was built for CUDA %s and cannot load lib%s.so.%s: that CUDA "
                      "is not installed here",
                      lib.version, lib.name, lib.version);
    else if (named)
        finding_title(f, "The program cannot load the CUDA library lib%s", lib.name);
    else
        finding_title(f, "The program cannot load a CUDA library it needs");
    reported_texts(ctx, f, CUDAERR_CUDA_LIB_MISSING);
    if (named && strchr(lib.version, '.') != NULL)
        finding_evidence(f, "lib%s.so.%s belongs to CUDA %s: the program was built for it",
                         lib.name, lib.version, lib.version);
    else if (named && lib.version[0])
        finding_evidence(f,
                         "lib%s.so.%s belongs to CUDA %s.x (CUDA 11 on name its libraries by "
                         "major): the program was built for it",
                         lib.name, lib.version, lib.version);
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
        char *lib64 = xasprintf("%s/lib64", have->path), *ql = fix_arg(f, "library path", lib64);

        if (ql != NULL) {
            finding_fix(f,
                        "export LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}   # for "
                        "this shell",
                        ql);
            finding_fix(f,
                        "echo %s | sudo tee /etc/ld.so.conf.d/gpudoctor-cuda.conf && sudo "
                        "ldconfig   # for every program",
                        ql);
        }
        free(ql);
        free(lib64);
    } else if (have != NULL) {
        finding_fix(f,
                    "# add the lib64 directory of the installed CUDA %s to LD_LIBRARY_PATH, or "
                    "to /etc/ld.so.conf.d/ and run sudo ldconfig",
                    lib.version);
    } else if (named && lib.version[0]) {
        finding_fix(f,
                    "# install CUDA %s's libraries beside the others (NVIDIA's cuda-libraries "
                    "package of that release, or the framework's pip wheels of them), or "
                    "install a build of the program for a CUDA that is installed",
                    lib.version);
    }
    f->impact = 1.0;
}

const struct rule rule_stack_cuda_lib_missing = {
    .id = "stack.cuda-lib-missing",
    .severity = SEV_CRITICAL,
    .category = CAT_STACK,
    .title = N_("A CUDA library the program needs cannot load"),
    .explanation = N_(
        "A program built against the CUDA libraries loads the exact releases it was built for: "
        "libcudart.so.10.1 is CUDA 10.1's runtime, libcublas.so.11 CUDA 11's cuBLAS. When that "
        "release is not installed, or is installed where the dynamic linker does not look (not in "
        "/etc/ld.so.conf.d, not on LD_LIBRARY_PATH), the program fails at import ('cannot open "
        "shared object file'), or, like TensorFlow, says 'Could not load dynamic library' and "
        "runs on the CPU. Another CUDA release installed does not help: the sonames differ."),
    .detection = N_(
        "An error given with --error that the catalogue recognises as a CUDA library (libcudart, "
        "libcublas, libcufft, libcurand, libcusolver, libcusparse, libnvrtc) that could not be "
        "loaded. The soname's version is compared with the CUDA toolkits found here and the "
        "libraries the dynamic linker knows: installed but not on the linker's path, or not "
        "installed at all (critical); a warning when the linker here finds that very soname, "
        "since the program then ran with another view of the libraries."),
    .fix = N_("Put the installed release's lib64 on the linker's path (LD_LIBRARY_PATH, or "
              "/etc/ld.so.conf.d and ldconfig), or install the release the program was built "
              "for, or a build of the program for a CUDA that is installed."),
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
    long want = named ? major_of(lib.version) : 0, cuda_major = 0;
    struct finding *f;

    if (reported_find(ctx, CUDAERR_CUDNN_MISSING, NULL) < 0)
        return;
    for (size_t i = 0; i < st->n_frameworks; i++) {
        if (st->frameworks[i].cuda_version != NULL)
            fw = fw ? fw : &st->frameworks[i];
    }
    cuda_major = fw ? major_of(fw->cuda_version) : 0;
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
