/*
 * Where the CUDA stack writes its versions down, parsed without running anything: toolkit
 * version files, cuDNN headers, PyTorch's version.py, TensorFlow's build_info.py, pip metadata,
 * library file names, the kernel module's banner. Pure functions of text, so each is tested
 * against real and broken inputs. The facts behind them: docs/stack.md.
 * Every returned string is the caller's to free; NULL means "not found / not in that format".
 */
#ifndef GPUDOCTOR_STACK_VERSIONS_H
#define GPUDOCTOR_STACK_VERSIONS_H

#include <stdbool.h>
#include <stddef.h>

/* All of s is digits and single dots, with at least min_parts numbers ("12", "9.2.1"). */
bool stackver_is_version(const char *s, int min_parts);

/* The number of dot-separated parts of a version ("12.4.127" -> 3). */
int stackver_parts(const char *s);

/* The first whitespace-separated token of the first line that is a version of 2+ parts. */
char *stackver_first_version(const char *text);

/*
 * A top-level assignment in a generated Python file: `name = 'x'`, `name: Optional[str] = 'x'`
 * or `= None`. Returns the string value; *is_none (may be NULL) tells None from absent.
 */
char *stackver_py_assign(const char *text, const char *name, bool *is_none);

/*
 * A key of TensorFlow's build_info.py: ('cuda_version', '12.1') in the OrderedDict form,
 * 'cuda_version': '12.1' in the dict form, or cuda_version_number = '10.1' in the oldest.
 */
char *stackver_tf_build_info(const char *text, const char *key);

/* cuDNN version from a cudnn_version*.h or old cudnn.h: the MAJOR, MINOR, PATCHLEVEL defines. */
char *stackver_cudnn_header(const char *text);

/* "Version:" of a pip METADATA file (its header part only). */
char *stackver_metadata_version(const char *text);

/* "Requires-Dist: nvidia-cudnn-cu12==9.1.0.70; ..." -> "9.1.0.70" for dist "nvidia-cudnn". */
char *stackver_metadata_pin(const char *text, const char *dist_prefix);

/* "CUDA Version 10.0.130" of an old toolkit's version.txt. */
char *stackver_version_txt(const char *text);

/*
 * A toolkit's version.json: the SDK ("cuda") and the cuda_cudart / cuda_nvcc component versions.
 * Returns 0, or -1 when the text is not JSON of that shape.
 */
int stackver_version_json(const char *text, size_t len, char **sdk, char **cudart, char **nvcc);

/* "Cuda compilation tools, release 13.0, V13.0.88" found in buf -> "13.0.88". */
char *stackver_nvcc_banner(const char *buf, size_t len);

/* "libcudnn.so.9.2.1" with stem "libcudnn.so" -> "9.2.1"; NULL when no numeric suffix. */
char *stackver_lib_suffix(const char *file_name, const char *stem);

/*
 * A dist-info directory name "nvidia_cudnn_cu12-9.1.0.70.dist-info": true when its project
 * name is prefix (compared with '-' and '_' alike, case-insensitively) or prefix followed by
 * "_cuNN"; *version gets "9.1.0.70".
 */
bool stackver_dist_info(const char *dir_name, const char *prefix, char **version);

#endif
