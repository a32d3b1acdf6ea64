/* The CUDA stack section's field tables and codec. */
#include "snapshot/snap-stack.h"
#include "snapshot/snap-procs.h"
#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define T(key, type, member, source, doc)                                                          \
    {                                                                                              \
        key, type, offsetof(struct stack_toolkit, member), -1, 0, NULL, source, doc                \
    }
static const struct jfield stack_toolkit_fields[] = {
    T("path", JF_STR, path, "/usr/local/cuda-*, /opt/cuda*, /usr/lib/cuda, $CUDA_HOME",
      "the toolkit directory"),
    T("version", JF_STR, version, "version.json, version.txt, dist-info/, bin/nvcc",
      "toolkit version; from dist-info/ or nvcc it is the component's, x.y is what matters"),
    T("version_source", JF_STR, version_source, NULL,
      "where version came from: version.json, version.txt, dist-info, nvcc"),
    T("cudart_version", JF_STR, cudart_version, "version.json cuda_cudart, dist-info",
      "CUDA runtime component version"),
    T("nvcc_version", JF_STR, nvcc_version, "version.json cuda_nvcc, dist-info, bin/nvcc",
      "compiler version"),
    T("cudnn_version", JF_STR, cudnn_version, "include/cudnn_version*.h, dist-info",
      "cuDNN installed into this toolkit"),
    T("is_default", JF_BOOL, is_default, "/usr/local/cuda", "/usr/local/cuda points here"),
    T("is_cuda_home", JF_BOOL, is_cuda_home, "$CUDA_HOME", "$CUDA_HOME names this toolkit"),
};
#undef T

const struct jtable stack_toolkit_table = {
    "CUDA toolkit", stack_toolkit_fields, ARRAY_SIZE(stack_toolkit_fields), JT_NONE, 0, NULL,
};

#define L(key, member, doc)                                                                        \
    {                                                                                              \
        key, JF_STR, offsetof(struct stack_lib, member), -1, 0, NULL, NULL, doc                    \
    }
static const struct jfield stack_lib_fields[] = {
    L("kind", kind, "cudart, cudnn, nccl, cublas, cuda (driver API library), nvml"),
    L("soname", soname, "the name programs ask for, \"libcudart.so.12\""),
    L("path", path, "the file the dynamic linker gives them"),
    L("version", version, "library version"),
    L("version_source", version_source,
      "\"file name\" (the file the links end at), \"dist-info\" (pip wheel metadata), "
      "\"toolkit\" (the toolkit it lies in records it) or \"soname\" (major only)"),
};
#undef L

const struct jtable stack_lib_table = {
    "library", stack_lib_fields, ARRAY_SIZE(stack_lib_fields), JT_NONE, 0, NULL,
};

#define F(key, type, member, source, doc)                                                          \
    {                                                                                              \
        key, type, offsetof(struct stack_framework, member), -1, 0, NULL, source, doc              \
    }
static const struct jfield stack_framework_fields[] = {
    F("pid", JF_I32, pid, NULL,
      "the first GPU process it was found from; 0 when found only from gpudoctor's environment"),
    F("processes", JF_U32, processes, NULL, "GPU processes running this install"),
    F("name", JF_STR, name, NULL, "\"torch\" or \"tensorflow\""),
    F("version", JF_STR, version, "torch/version.py, *.dist-info/METADATA", "framework version"),
    F("cuda_version", JF_STR, cuda_version,
      "torch/version.py cuda, tensorflow/python/platform/build_info.py",
      "the CUDA version it was built for; null for CPU and ROCm builds"),
    F("hip_version", JF_STR, hip_version, "torch/version.py hip", "ROCm builds: the HIP version"),
    F("cudnn_version", JF_STR, cudnn_version, "loaded libcudnn, nvidia-cudnn wheel, build_info.py",
      "cuDNN it uses (TensorFlow's build record gives the major only)"),
    F("cudart_version", JF_STR, cudart_version, "loaded libcudart, nvidia-cuda-runtime wheel",
      "CUDA runtime it uses"),
    F("nccl_version", JF_STR, nccl_version, "loaded libnccl, nvidia-nccl wheel", "NCCL it uses"),
    F("site_packages", JF_STR, site_packages, NULL, "the site-packages directory"),
    F("python", JF_STR, python, "/proc/PID/exe", "the interpreter"),
    F("found_from", JF_STR, found_from,
      "/proc/PID/maps, /proc/PID/exe, $VIRTUAL_ENV, $CONDA_PREFIX",
      "\"maps\" (a file it mapped lies in it), \"interpreter\" (the prefix of its argv[0] "
      "or executable) or \"environment\" (the Python environment gpudoctor was started in, "
      "`python_env`)"),
};
#undef F

const struct jtable stack_framework_table = {
    "framework", stack_framework_fields, ARRAY_SIZE(stack_framework_fields), JT_NONE, 0, NULL,
};

#define S(key, type, member, source, doc)                                                          \
    {                                                                                              \
        key, type, offsetof(struct stack_info, member), -1, 0, NULL, source, doc                   \
    }
static const struct jfield stack_info_fields[] = {
    S("cuda_home", JF_STR, cuda_home, "$CUDA_HOME", "CUDA_HOME in gpudoctor's environment"),
    S("python_env", JF_STR, python_env, "$VIRTUAL_ENV, $CONDA_PREFIX",
      "the Python environment gpudoctor was started in (live runs only)"),
    S("python_env_var", JF_STR, python_env_var, NULL,
      "which variable named it: \"VIRTUAL_ENV\" or \"CONDA_PREFIX\""),
    S("cudnn_version", JF_STR, cudnn_version, "cudnn_version*.h, libcudnn.so.X.Y.Z",
      "system cuDNN version"),
    S("cudnn_source", JF_STR, cudnn_source, NULL, "the header or library it was read from"),
    S("ld_source", JF_STR, ld_source, "/etc/ld.so.cache, /etc/ld.so.conf",
      "what told which libraries the dynamic linker knows"),
    S("toolkits", JF_NONE, toolkits, NULL, "CUDA toolkits installed (below)"),
    S("libraries", JF_NONE, libs, NULL, "CUDA libraries known to the dynamic linker (below)"),
    S("frameworks", JF_NONE, frameworks, NULL,
      "framework installs GPU processes run, one per site-packages and framework (below)"),
};
#undef S

const struct jtable stack_info_table = {
    "stack", stack_info_fields, ARRAY_SIZE(stack_info_fields), JT_NONE, 0, NULL,
};

json_t *stack_info_to_json(const struct stack_info *s)
{
    json_t *j = json_object();

    jtable_write(&stack_info_table, s, j, 0);
    json_object_set_new(
        j, "toolkits",
        jlist_write_table(&stack_toolkit_table, s->toolkits, s->n_toolkits, sizeof(*s->toolkits)));
    json_object_set_new(j, "libraries",
                        jlist_write_table(&stack_lib_table, s->libs, s->n_libs, sizeof(*s->libs)));
    json_object_set_new(j, "frameworks",
                        jlist_write_table(&stack_framework_table, s->frameworks, s->n_frameworks,
                                          sizeof(*s->frameworks)));
    return j;
}

int stack_info_from_json(struct stack_info *s, const json_t *j, const char *path, struct jerr *err)
{
    void *toolkits = NULL, *libs = NULL, *frameworks = NULL;
    int rc = -1;

    if (jtable_read(&stack_info_table, s, j, path, 0, NULL, err) != 0)
        return -1;
    /* The lists are assigned even on error, so stack_info_free frees what was read. */
    if (jlist_read_table(&stack_toolkit_table, j, "toolkits", path, sizeof(*s->toolkits), &toolkits,
                         &s->n_toolkits, err) < 0)
        goto out;
    if (jlist_read_table(&stack_lib_table, j, "libraries", path, sizeof(*s->libs), &libs,
                         &s->n_libs, err) < 0)
        goto out;
    if (jlist_read_table(&stack_framework_table, j, "frameworks", path, sizeof(*s->frameworks),
                         &frameworks, &s->n_frameworks, err) < 0)
        goto out;
    for (size_t i = 0; i < s->n_frameworks; i++) {
        char sub[256];

        snprintf(sub, sizeof(sub), "%s%sframeworks[%zu]", path, *path ? "." : "", i);
        if (proc_pid_check(((struct stack_framework *)frameworks)[i].pid, true, sub, "pid", err))
            goto out;
    }
    rc = 0;
out:
    s->toolkits = toolkits;
    s->libs = libs;
    s->frameworks = frameworks;
    return rc;
}

void stack_info_free(struct stack_info *s)
{
    for (size_t i = 0; i < s->n_toolkits; i++)
        jtable_free(&stack_toolkit_table, &s->toolkits[i]);
    for (size_t i = 0; i < s->n_libs; i++)
        jtable_free(&stack_lib_table, &s->libs[i]);
    for (size_t i = 0; i < s->n_frameworks; i++)
        jtable_free(&stack_framework_table, &s->frameworks[i]);
    free(s->toolkits);
    free(s->libs);
    free(s->frameworks);
    jtable_free(&stack_info_table, s);
    memset(s, 0, sizeof(*s));
}
