/*
 * Where the CUDA stack writes its versions (stack-versions.c): version.json and version.txt of a
 * toolkit, PyTorch's version.py, TensorFlow's build_info.py, pip METADATA, cuDNN headers, the
 * nvcc banner, library and dist-info names. Every parser gets the whole input; a version it
 * returns is a version (digits and dots) where the format promises one, and printable text
 * (no control characters: these files may belong to any user) where it does not.
 */
#include "collect/stack-versions.h"
#include "fuzz.h"
#include "util/strutil.h"

static void check_version(const char *what, char *v)
{
    if (v != NULL) {
        FUZZ_PRINTABLE(what, v); /* the report prints them, as root, on a terminal */
        free(v);
    }
}

static void check_numeric(const char *what, char *v)
{
    if (v != NULL)
        FUZZ_ASSERT(stackver_is_version(v, 1), "%s: '%s' is not a version", what, v);
    check_version(what, v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size), *sdk = NULL, *cudart = NULL, *nvcc = NULL, *v = NULL;
    bool is_none;

    (void)stackver_is_version(text, 2);
    (void)stackver_parts(text);
    check_numeric("first version", stackver_first_version(text));
    check_version("__version__", stackver_py_assign(text, "__version__", &is_none));
    check_version("cuda", stackver_py_assign(text, "cuda", NULL));
    check_version("tf cuda_version", stackver_tf_build_info(text, "cuda_version"));
    check_version("tf cudnn_version", stackver_tf_build_info(text, "cudnn_version"));
    check_numeric("cudnn header", stackver_cudnn_header(text));
    check_version("METADATA Version", stackver_metadata_version(text));
    check_version("METADATA pin", stackver_metadata_pin(text, "nvidia-cudnn"));
    check_version("version.txt", stackver_version_txt(text));
    if (stackver_version_json(text, size, &sdk, &cudart, &nvcc) == 0) {
        check_version("version.json cuda", sdk);
        check_version("version.json cudart", cudart);
        check_version("version.json nvcc", nvcc);
    } else {
        FUZZ_ASSERT(sdk == NULL && cudart == NULL && nvcc == NULL, "failed but returned strings");
    }
    check_version("nvcc banner", stackver_nvcc_banner((const char *)data, size));
    check_numeric("lib suffix", stackver_lib_suffix(text, "libcudnn.so"));
    if (stackver_dist_info(text, "nvidia-cudnn", &v))
        check_version("dist-info", v);
    else
        FUZZ_ASSERT(v == NULL, "no match but a version");
    free(text);
    return 0;
}
