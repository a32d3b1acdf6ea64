/*
 * stack.arch-unsupported: a program whose build carries no kernels for the GPU's architecture.
 * CUDA code is compiled for compute capabilities; code for one runs on the same major at an equal
 * or higher minor (Tegra GPUs only their own), or from PTX the driver compiles. A build made with
 * a CUDA too old to know the GPU (an RTX 5090 under a PyTorch for CUDA 12.4), or too new to still
 * compile for it (a Kepler K80 under CUDA 12), fails at the first kernel with "no kernel image is
 * available for execution on the device". Evidence: the error the user gave (CUDA's 209 and
 * PyTorch's own warnings, which name the GPU's capability and the build's list), the GPUs'
 * capabilities from NVML, and the CUDA each framework was built with (data/cuda-arch.tsv). The fix
 * names the PyTorch wheel index built for the GPU (data/torch-builds.tsv).
 */
#include "data/cudaarch.h"
#include "data/cudaerr.h"
#include "data/torchbuilds.h"
#include "rules/rule-impl.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What the error text says: the GPU's capability, and the build's list where PyTorch gave it. */
struct arch_said {
    int gpu_cc;      /* 120; 0 when the text does not say */
    char build[160]; /* "sm_50 sm_60 ... sm_90"; "" when not given */
    int ptx[8];      /* the compute_NN (PTX) entries of the build's list */
    size_t n_ptx;
    int build_min; /* "The minimum cuda capability supported by this library is 3.7": 37 */
    int range_min; /* "Minimum and Maximum cuda capability ... is (8.0) - (12.0)": 80, 120 */
    int range_max;
};

/* N.M as 10 * N + M at p ("12.1"), 0 when p does not start so. */
static int dotted_cc(const char *p)
{
    char *end;
    long major;

    if (!isdigit((unsigned char)*p))
        return 0;
    major = strtol(p, &end, 10);
    if (*end != '.' || !isdigit((unsigned char)end[1]) || isdigit((unsigned char)end[2]))
        return 0;
    return major >= 1 && major <= 99 ? (int)(major * 10 + (end[1] - '0')) : 0;
}

/* The capability after prefix in text (case-insensitive): "N.M", or with sm "NN" of "sm_NN". */
static int cc_after(const char *text, const char *prefix, bool sm)
{
    const char *at = strcasestr(text, prefix);
    char *end;
    long v;

    if (at == NULL)
        return 0;
    at += strlen(prefix);
    if (!sm)
        return dotted_cc(at);
    if (!isdigit((unsigned char)*at))
        return 0;
    v = strtol(at, &end, 10);
    return v >= 10 && v <= 999 && !isalnum((unsigned char)*end) ? (int)v : 0;
}

/* The next "(N.M)" after p, skipping other parentheses ("(APIServer pid=1)"); 0 when none. */
static int next_paren_cc(const char **p)
{
    const char *q = *p;

    while ((q = strchr(q, '(')) != NULL) {
        int cc = dotted_cc(q + 1);

        q++;
        if (cc != 0 && strchr(q, ')') != NULL && *(strchr(q, '.') + 2) == ')') {
            *p = q;
            return cc;
        }
    }
    return 0;
}

static void arch_said_read(struct arch_said *a, const char *text)
{
    const char *list = strcasestr(text, "supports CUDA capabilities ");
    const char *range = strcasestr(text, "Minimum and Maximum cuda capability supported");
    size_t n = 0;

    memset(a, 0, sizeof(*a));
    a->gpu_cc = cc_after(text, "with CUDA capability sm_", true);
    if (a->gpu_cc == 0)
        a->gpu_cc = cc_after(text, "which is of cuda capability ", false);
    if (a->gpu_cc == 0)
        a->gpu_cc = cc_after(text, "which is of compute capability (CC) ", false);
    a->build_min = cc_after(text, "minimum cuda capability supported by this library is ", false);
    if (range != NULL) {
        a->range_min = next_paren_cc(&range);
        a->range_max = a->range_min ? next_paren_cc(&range) : 0;
        if (a->range_max < a->range_min)
            a->range_min = a->range_max = 0;
    }
    if (list == NULL)
        return;
    /* "sm_50 sm_60 compute_90": words of letters, digits and '_' up to anything else */
    for (list += strlen("supports CUDA capabilities "); *list && n + 1 < sizeof(a->build); list++) {
        char c = *list;

        if (isalnum((unsigned char)c) || c == '_')
            a->build[n++] = c;
        else if (c == ' ' && n > 0 && a->build[n - 1] != ' ')
            a->build[n++] = ' ';
        else if (c != ' ')
            break;
    }
    while (n > 0 && a->build[n - 1] == ' ')
        n--;
    a->build[n] = '\0';
    for (const char *w = strstr(a->build, "compute_"); w != NULL && a->n_ptx < 8;
         w = strstr(w + 1, "compute_")) {
        int v = cc_after(w, "compute_", true);

        if (v != 0)
            a->ptx[a->n_ptx++] = v;
    }
}

/* The PTX entry of the build's list the driver can compile for a GPU of capability cc, or 0. */
static int usable_ptx(const struct arch_said *a, int cc)
{
    for (size_t i = 0; i < a->n_ptx; i++) {
        if (a->ptx[i] <= cc)
            return a->ptx[i];
    }
    return 0;
}

/*
 * The GPUs of capability cc, or with cc 0 every GPU whose capability NVML gave; *uniform gets
 * the capability they all share (0 when they differ or none is known).
 */
static size_t gpus_of_cc(const struct rule_ctx *ctx, int cc, const struct gpu **first, int *uniform)
{
    size_t n = 0;

    *first = NULL;
    *uniform = 0;
    for (size_t k = 0; k < ctx->facts->n_gpus; k++) {
        const struct gpu *g = ctx->facts->gpus[k].g;
        int gcc;

        if (!gpu_valid(g, GPU_S_CC_MAJOR) || !gpu_valid(g, GPU_S_CC_MINOR))
            continue;
        gcc = g->cc_major * 10 + g->cc_minor;
        if (cc != 0 && gcc != cc)
            continue;
        *uniform = n == 0 || *uniform == gcc ? gcc : -1;
        n++;
        *first = *first ? *first : g;
    }
    if (*uniform < 0)
        *uniform = 0;
    return n;
}

/* The framework builds with a CUDA version: the only one, else NULL. */
static const struct stack_framework *only_framework(const struct snapshot *s)
{
    const struct stack_framework *fw = NULL;

    for (size_t i = 0; i < s->stack.n_frameworks; i++) {
        if (s->stack.frameworks[i].cuda_version == NULL)
            continue;
        if (fw != NULL)
            return NULL;
        fw = &s->stack.frameworks[i];
    }
    return fw;
}

/* "torch 2.5.1+cu124", "torch", or "a framework". */
static void fw_text(char *buf, size_t size, const struct stack_framework *fw)
{
    snprintf(buf, size, "%s%s%s", fw->name ? fw->name : "a framework", fw->version ? " " : "",
             fw->version ? fw->version : "");
}

static bool is_torch(const struct stack_framework *fw)
{
    return fw != NULL && fw->name != NULL && strcmp(fw->name, "torch") == 0;
}

static void cc_text(char *buf, size_t size, int cc)
{
    const struct cuda_arch *a = cuda_arch_find(cc);

    if (a != NULL)
        snprintf(buf, size, "%d.%d, %s", cc / 10, cc % 10, a->arch);
    else
        snprintf(buf, size, "%d.%d", cc / 10, cc % 10);
}

/* The framework's CUDA against capability cc: evidence, and the verdict. */
static enum cuda_arch_verdict framework_evidence(struct finding *f,
                                                 const struct stack_framework *fw, int cc)
{
    int need = 0;
    enum cuda_arch_verdict v = cuda_arch_check(fw->cuda_version, cc, &need);
    const struct cuda_arch *a = cuda_arch_find(cc);
    char what[96];

    fw_text(what, sizeof(what), fw);
    switch (v) {
    case CUDA_ARCH_TOO_NEW:
        finding_evidence(f,
                         "%s was built with CUDA %s; compute capability %d.%d needs CUDA "
                         "%d.%d or newer: the build can hold no compiled code for it, only PTX "
                         "that the driver compiles, where the build carries any",
                         what, fw->cuda_version, cc / 10, cc % 10, need / 10, need % 10);
        break;
    case CUDA_ARCH_TOO_OLD:
        finding_evidence(f,
                         "%s was built with CUDA %s, which no longer compiles for compute "
                         "capability %d.%d (the last CUDA that does is %d.x)",
                         what, fw->cuda_version, cc / 10, cc % 10,
                         a != NULL && a->removed ? a->removed / 10 - 1 : 0);
        break;
    case CUDA_ARCH_OK:
        finding_evidence(f,
                         "%s was built with CUDA %s, which compiles for compute capability "
                         "%d.%d: the kernels missing are those of a build or extension made "
                         "without it",
                         what, fw->cuda_version, cc / 10, cc % 10);
        break;
    case CUDA_ARCH_UNKNOWN:
        finding_evidence(f,
                         "%s was built with CUDA %s; whether that compiles for compute "
                         "capability %d.%d is not in gpudoctor's table",
                         what, fw->cuda_version, cc / 10, cc % 10);
        break;
    }
    return v;
}

/* The fix lines: PyTorch's own where the framework is PyTorch or unknown. */
static void arch_fixes(struct finding *f, int cc, const struct stack_framework *fw)
{
    const struct cuda_arch *a = cc ? cuda_arch_find(cc) : NULL;

    if (fw != NULL && !is_torch(fw)) {
        char what[96];
        int need = 0;
        enum cuda_arch_verdict v = cuda_arch_check(fw->cuda_version, cc, &need);

        fw_text(what, sizeof(what), fw);
        finding_fix(f, "nvidia-smi --query-gpu=index,name,compute_cap --format=csv   # each GPU's "
                       "compute capability");
        if (v == CUDA_ARCH_TOO_NEW)
            finding_fix(f,
                        "# install a build of %s made with CUDA %d.%d or newer, which compiles "
                        "for compute capability %d.%d",
                        fw->name ? fw->name : "the framework", need / 10, need % 10, cc / 10,
                        cc % 10);
        else if (v == CUDA_ARCH_TOO_OLD && a != NULL && a->removed != 0)
            finding_fix(f,
                        "# install a build of %s made with CUDA %d.x or older, the last that "
                        "compiles for compute capability %d.%d",
                        fw->name ? fw->name : "the framework", a->removed / 10 - 1, cc / 10,
                        cc % 10);
        return;
    }
    {
        const struct torch_build *tb = cc ? torch_build_for(cc) : NULL;

        finding_fix(f, "python3 -c 'import torch; print(torch.__version__, torch.version.cuda, "
                       "torch.cuda.get_arch_list())'   # the build, and the architectures it "
                       "carries");
        finding_fix(f, "nvidia-smi --query-gpu=index,name,compute_cap --format=csv   # each GPU's "
                       "compute capability");
        if (tb != NULL)
            finding_fix(f,
                        "pip install --force-reinstall torch --index-url "
                        "https://download.pytorch.org/whl/%s   # a PyTorch built with CUDA %s "
                        "carries code for compute capability %d.%d; the driver must support "
                        "CUDA %s",
                        tb->index, tb->cuda, cc / 10, cc % 10, tb->cuda);
        else if (a != NULL && a->removed != 0)
            finding_fix(f,
                        "# no PyTorch release of today is built for compute capability %d.%d: "
                        "use an older release built with CUDA %d.x or older, or build PyTorch "
                        "with TORCH_CUDA_ARCH_LIST=%d.%d",
                        cc / 10, cc % 10, a->removed / 10 - 1, cc / 10, cc % 10);
    }
    if (cc != 0)
        finding_fix(f,
                    "# a CUDA extension built on its own (pip install --no-build-isolation ...) "
                    "carries its own kernels: rebuild it with TORCH_CUDA_ARCH_LIST=%d.%d",
                    cc / 10, cc % 10);
    else
        finding_fix(f, "# a CUDA extension built on its own (pip install --no-build-isolation "
                       "...) carries its own kernels: rebuild it with TORCH_CUDA_ARCH_LIST set "
                       "to the GPU's compute capability");
}

/* One finding per GPU and capability, however many of the errors given name them. */
struct arch_group {
    int cc;
    int32_t gpu;
    struct finding *f;
};

/* What one error text says, for the finding it belongs to. */
static void text_evidence(struct finding *f, const char *text, const struct cudaerr_info *m,
                          const struct arch_said *said)
{
    finding_evidence(f, "the error given: \"%s\"", text);
    if (m->number >= 0)
        finding_evidence(f, "recognised as %s %s (%" PRId32 ")", m->api, m->name, m->number);
    else
        finding_evidence(f, "recognised as %s's \"%s\"", m->api, m->name);
    if (said->gpu_cc != 0)
        finding_evidence(f, "the GPU's compute capability, as the error gives it: %d.%d",
                         said->gpu_cc / 10, said->gpu_cc % 10);
    if (said->build[0] != '\0')
        finding_evidence(f, "the build carries code for: %s", said->build);
    if (said->build_min != 0)
        finding_evidence(f, "the oldest compute capability the build supports: %d.%d",
                         said->build_min / 10, said->build_min % 10);
    if (said->range_max != 0)
        finding_evidence(
            f, "the compute capabilities PyTorch says the build supports: %d.%d to %d.%d",
            said->range_min / 10, said->range_min % 10, said->range_max / 10, said->range_max % 10);
}

/*
 * How sure one text makes the finding, for a GPU of capability cc (0: unknown): CUDA's 209 is the
 * failure itself; PyTorch's warnings are checks made before any kernel ran. Its range check
 * ("(8.0) - (12.0)") warns for a GPU that runs the range's newest code (12.1 runs 12.0 code), and
 * its list check counts sm_ entries only, while PTX (compute_NN) runs on any newer GPU.
 */
static enum severity said_severity(const struct cudaerr_info *m, const struct arch_said *said,
                                   int cc, struct finding *f)
{
    const struct cuda_arch *gpu = cc ? cuda_arch_find(cc) : NULL;
    const struct cuda_arch *top = said->range_max ? cuda_arch_find(said->range_max) : NULL;
    int ptx = cc ? usable_ptx(said, cc) : 0;

    if (m->number == 209)
        return SEV_CRITICAL;
    if (said->range_max != 0 && cc > said->range_max && gpu != NULL && top != NULL &&
        cuda_arch_runs_on(top, gpu)) {
        finding_evidence(f,
                         "code built for %d.%d runs on compute capability %d.%d: PyTorch's "
                         "range check is stricter than the hardware, and the build's kernels "
                         "run here",
                         said->range_max / 10, said->range_max % 10, cc / 10, cc % 10);
        return SEV_INFO;
    }
    if (ptx != 0) {
        finding_evidence(f,
                         "the build carries PTX for compute_%d, which the driver compiles for "
                         "this GPU: its kernels may run (after a slow first start), unless the "
                         "PTX is newer than the driver",
                         ptx);
        return SEV_WARNING;
    }
    return SEV_CRITICAL;
}

static void set_title(struct finding *f, const struct gpu *g, int cc, enum severity sev)
{
    char cct[48];

    if (cc == 0) {
        finding_title(f, "The program's build has no kernels for the GPU's architecture");
        return;
    }
    cc_text(cct, sizeof(cct), cc);
    if (sev == SEV_INFO && g != NULL)
        finding_title(f,
                      "PyTorch warns about GPU %" PRIu32 " (%s, compute capability %s), whose "
                      "architecture runs the build's code: the warning is harmless",
                      g->index, g->name ? g->name : "?", cct);
    else if (sev == SEV_INFO)
        finding_title(f,
                      "PyTorch warns about a GPU of compute capability %s, whose architecture "
                      "runs the build's code: the warning is harmless",
                      cct);
    else if (g != NULL)
        finding_title(f,
                      "The program's build has no kernels for GPU %" PRIu32
                      "'s architecture (%s, compute capability %s)",
                      g->index, g->name ? g->name : "?", cct);
    else
        finding_title(f,
                      "The program's build has no kernels for the GPU's architecture "
                      "(compute capability %s)",
                      cct);
}

/* A reported error that says the program has no kernel for the GPU. */
static void reported_finding(const struct rule_ctx *ctx, struct findings *out, const char *text,
                             const struct cudaerr_info *m, struct arch_group *groups,
                             size_t *n_groups, size_t max_groups)
{
    const struct snapshot *s = ctx->facts->snap;
    const struct stack_framework *fw = only_framework(s);
    struct arch_said said;
    const struct gpu *g = NULL;
    size_t n_gpus;
    int cc, uniform;
    int32_t gpu;
    enum severity sev;
    struct finding *f;

    arch_said_read(&said, text);
    n_gpus = gpus_of_cc(ctx, said.gpu_cc, &g, &uniform);
    if (n_gpus != 1)
        g = NULL; /* several GPUs of it, or none known: no one GPU to name */
    cc = said.gpu_cc ? said.gpu_cc : uniform;
    gpu = g ? (int32_t)g->index : -1;
    for (size_t i = 0; i < *n_groups; i++) {
        if (groups[i].cc == cc && groups[i].gpu == gpu) {
            f = groups[i].f;
            text_evidence(f, text, m, &said);
            sev = said_severity(m, &said, cc, f);
            if (sev < f->severity) {
                f->severity = sev;
                set_title(f, g, cc, sev);
            }
            return;
        }
    }
    f = finding_new(ctx, out, gpu, -1);
    if (*n_groups < max_groups)
        groups[(*n_groups)++] = (struct arch_group){ cc, gpu, f };
    text_evidence(f, text, m, &said);
    sev = said_severity(m, &said, cc, f);
    f->severity = sev;
    set_title(f, g, cc, sev);
    if (g != NULL)
        finding_evidence(f, "GPU %" PRIu32 " (%s) is of compute capability %d.%d (NVML)", g->index,
                         g->name ? g->name : "?", g->cc_major, g->cc_minor);
    else if (said.gpu_cc == 0 && uniform != 0)
        finding_evidence(f, "all %zu GPUs here whose compute capability NVML gave are of %d.%d",
                         n_gpus, uniform / 10, uniform % 10);
    else if (said.gpu_cc == 0 && n_gpus > 1)
        finding_evidence(f,
                         "%zu GPUs report a compute capability here: which one the program "
                         "used is not in the error",
                         n_gpus);
    else if (cc == 0 && ctx->facts->snap->collectors[COLLECTOR_NVML].state == CS_UNAVAILABLE)
        finding_evidence(f, "the GPU's compute capability is unknown here: NVML is not available "
                            "(the driver's library cannot be loaded); if the error came from "
                            "another machine, run gpudoctor there");
    else if (cc == 0)
        finding_evidence(f, "the GPU's compute capability is unknown here (NVML did not give "
                            "it): which architecture is missing cannot be said");
    if (fw != NULL)
        fw_found_evidence(f, ctx, fw);
    if (fw != NULL && cc != 0) {
        framework_evidence(f, fw, cc);
    } else if (fw != NULL) {
        char what[96];

        fw_text(what, sizeof(what), fw);
        finding_evidence(f,
                         "%s was built with CUDA %s; without the GPU's compute capability "
                         "it cannot be judged against it",
                         what, fw->cuda_version);
    } else if (s->stack.n_frameworks == 1) {
        char what[96];

        fw_text(what, sizeof(what), &s->stack.frameworks[0]);
        finding_evidence(f, "%s was found; the CUDA it was built with is unknown here", what);
    } else if (s->stack.n_frameworks > 1) {
        finding_evidence(f,
                         "%zu framework builds were found: which one failed is not in the "
                         "error",
                         s->stack.n_frameworks);
    } else if (s->collectors[COLLECTOR_STACK].state == CS_NOT_RUN) {
        finding_evidence(f, "the software stack was not read: the framework and the CUDA it "
                            "was built with are unknown here");
    } else {
        finding_evidence(f, "no framework build was found here (none of the GPU processes "
                            "runs one): the CUDA it was built with is unknown; run from the "
                            "program's activated venv or conda env, gpudoctor reads its build");
    }
    arch_fixes(f, cc, fw);
    f->impact = 1.0;
}

/* A GPU process's framework that cannot run on a GPU it uses (or on any GPU here). */
static void framework_finding(const struct rule_ctx *ctx, struct findings *out,
                              const struct stack_framework *fw)
{
    const struct facts_use *use = NULL;
    struct {
        const struct gpu *g;
        enum cuda_arch_verdict v;
    } bad[8];
    size_t n_bad = 0, n_more = 0, n_judged = 0, title = 0;
    enum cuda_arch_verdict worst = CUDA_ARCH_OK;
    bool torch = is_torch(fw);
    bool gpus_known;
    char cct[48], what[96];
    struct finding *f;

    for (size_t i = 0; i < ctx->facts->n_uses; i++) {
        if (ctx->facts->uses[i].pid == fw->pid)
            use = &ctx->facts->uses[i];
    }
    gpus_known = use != NULL && use->n_gpus > 0;
    for (size_t k = 0; k < ctx->facts->n_gpus; k++) {
        const struct gpu *g = ctx->facts->gpus[k].g;
        bool used = !gpus_known;
        int need;
        enum cuda_arch_verdict v;

        for (size_t u = 0; !used && u < use->n_gpus; u++)
            used = use->gpus[u] == (int32_t)g->index;
        if (!used || !gpu_valid(g, GPU_S_CC_MAJOR) || !gpu_valid(g, GPU_S_CC_MINOR))
            continue;
        v = cuda_arch_check(fw->cuda_version, g->cc_major * 10 + g->cc_minor, &need);
        /* A GPU newer than the build's CUDA runs PTX the build carries: TensorFlow's releases
         * carry it (build_info's compute_NN); PyTorch's for such CUDA versions list sm_ code
         * only, and PyTorch warns for such a GPU. */
        if (v == CUDA_ARCH_UNKNOWN || (v == CUDA_ARCH_TOO_NEW && !torch))
            continue;
        n_judged++;
        if (v == CUDA_ARCH_OK)
            continue;
        if (n_bad == sizeof(bad) / sizeof(bad[0])) {
            n_more++;
        } else {
            bad[n_bad].g = g;
            bad[n_bad++].v = v;
        }
        if (worst != CUDA_ARCH_TOO_OLD)
            worst = v;
    }
    /* Where the process's GPUs are unknown, a machine with one GPU it can use is fine. */
    if (n_bad == 0 || (!gpus_known && n_bad + n_more < n_judged))
        return;
    while (bad[title].v != worst)
        title++;
    f = finding_new(ctx, out, n_bad == 1 ? (int32_t)bad[0].g->index : -1, fw_pid(fw));
    cc_text(cct, sizeof(cct), bad[title].g->cc_major * 10 + bad[title].g->cc_minor);
    fw_text(what, sizeof(what), fw);
    if (worst == CUDA_ARCH_TOO_OLD) {
        finding_title(f,
                      "%s (CUDA %s) cannot run on GPU %" PRIu32
                      " (compute capability %s): its CUDA no longer compiles for it",
                      what, fw->cuda_version, bad[title].g->index, cct);
    } else {
        f->severity = SEV_WARNING;
        finding_title(f,
                      "%s (CUDA %s) has no compiled code for GPU %" PRIu32
                      " (compute capability %s): it runs only from PTX, if the build has any",
                      what, fw->cuda_version, bad[title].g->index, cct);
    }
    fw_found_evidence(f, ctx, fw);
    for (size_t i = 0; i < n_bad; i++) {
        finding_evidence(f, "GPU %" PRIu32 " (%s) is of compute capability %d.%d (NVML)",
                         bad[i].g->index, bad[i].g->name ? bad[i].g->name : "?", bad[i].g->cc_major,
                         bad[i].g->cc_minor);
        framework_evidence(f, fw, bad[i].g->cc_major * 10 + bad[i].g->cc_minor);
    }
    if (n_more > 0)
        finding_evidence_take(f,
                              TWICE_N("and %zu more GPU like them", "and %zu more GPUs like them",
                                      n_more, (n_more), (n_more)));
    if (!gpus_known && fw_from_env(fw))
        finding_evidence(f, "which GPUs it would use is unknown: its CUDA compiles for none of "
                            "the GPUs judged here");
    else if (!gpus_known)
        finding_evidence(f, "which GPUs the process uses is unknown: its CUDA compiles for none "
                            "of the GPUs judged here");
    if (worst == CUDA_ARCH_TOO_NEW)
        finding_evidence(f, "PyTorch warns \"not compatible with the current PyTorch "
                            "installation\" for such a GPU and fails with \"no kernel image is "
                            "available\"");
    arch_fixes(f, bad[title].g->cc_major * 10 + bad[title].g->cc_minor, fw);
    f->impact = worst == CUDA_ARCH_TOO_OLD ? 1.0 : 0.5;
}

static void check_arch(const struct rule_ctx *ctx, struct findings *out)
{
    const struct snapshot *s = ctx->facts->snap;
    struct arch_group groups[16];
    size_t n_groups = 0;
    bool reported = false;

    for (size_t i = 0; i < s->reported.n_errors; i++) {
        const struct cudaerr_info *m = cudaerr_match(s->reported.errors[i].text);

        if (m != NULL && m->kind == CUDAERR_NO_KERNEL) {
            reported_finding(ctx, out, s->reported.errors[i].text, m, groups, &n_groups,
                             sizeof(groups) / sizeof(groups[0]));
            reported = true;
        }
    }
    if (reported)
        return; /* the error names the GPU; the framework is in its evidence */
    for (size_t i = 0; i < s->stack.n_frameworks; i++) {
        if (s->stack.frameworks[i].cuda_version != NULL)
            framework_finding(ctx, out, &s->stack.frameworks[i]);
    }
}

const struct rule rule_stack_arch_unsupported = {
    .id = "stack.arch-unsupported",
    .severity = SEV_CRITICAL,
    .category = CAT_STACK,
    .title = N_("Build has no kernels for the GPU's architecture"),
    .explanation =
        N_("CUDA code is compiled for GPU architectures (compute capabilities): code for one runs "
           "on GPUs of the same major and an equal or higher minor (8.0 code on an 8.6 GPU), and "
           "PTX, where a build carries it, is compiled by the driver for newer ones. A build of a "
           "framework or a CUDA extension made without the GPU's architecture fails at its first "
           "kernel with 'no kernel image is available for execution on the device' (CUDA 209): a "
           "new GPU under a build for an older CUDA (an RTX 50-series, compute capability 12.0, "
           "needs CUDA 12.8), or an old GPU under a build for a CUDA that dropped it (Kepler in "
           "CUDA 12, Maxwell, Pascal and Volta in CUDA 13). PyTorch warns first that the GPU 'is "
           "not compatible with the current PyTorch installation' and lists what it was built "
           "for. The job cannot use the GPU until the build matches it."),
    .detection =
        N_("An error given with --error that the catalogue recognises as CUDA 209 or as PyTorch's "
           "warnings about a GPU its build does not support (the GPU's capability and the build's "
           "list are read from the text), with the GPUs' compute capabilities from NVML and the "
           "CUDA each framework was built with. Without such an error: a framework found in a GPU "
           "process (or in the Python environment gpudoctor was started in) whose CUDA cannot "
           "compile for a GPU it uses (or, when its GPUs are unknown, "
           "for any GPU here), by the architecture table data/cuda-arch.tsv: critical when the "
           "CUDA no longer compiles for the GPU; a warning for a PyTorch whose CUDA is older "
           "than the GPU (a build with PTX may still run; TensorFlow's releases carry PTX, so "
           "they are not judged against a newer GPU)."),
    .fix = N_("Install a build of the framework for the GPU's architecture (PyTorch: the wheel "
              "index the evidence names), rebuild CUDA extensions with TORCH_CUDA_ARCH_LIST set "
              "to the GPU's compute capability, or run the job on a GPU the build supports."),
    .thresholds = NO_THRESHOLDS,
    .check = check_arch,
};
