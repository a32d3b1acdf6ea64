/*
 * What the CUDA worker says it is doing (src/bench), one "step" line before each part of the
 * bench; the last one is kept as the snapshot's hung_step when the deadline ends the worker.
 * A step is "gpu N: WHAT", "gpus A -> B: WHAT" or a WHAT alone, its WHAT one of the texts below
 * (the worker writes them through these names, so the English and the table that translates
 * it cannot drift apart) or the name of the CUDA call it makes ("cuInit"), the same in every
 * language. The snapshot keeps the English; bench_step_l gives it to people.
 */
#ifndef GPUDOCTOR_BENCH_STEPS_H
#define GPUDOCTOR_BENCH_STEPS_H

#include "util/i18n.h"

#define BENCH_STEP_DRIVER    N_("loading the CUDA driver")
#define BENCH_STEP_CONTEXT   N_("context")
#define BENCH_STEP_ALLOC     N_("cuMemAlloc_v2 and cuMemHostAlloc")
#define BENCH_STEP_H2D       N_("host to device copies (cuMemcpyHtoDAsync_v2)")
#define BENCH_STEP_D2H       N_("device to host copies (cuMemcpyDtoHAsync_v2)")
#define BENCH_STEP_PAGEABLE  N_("pageable copies")
#define BENCH_STEP_BIDIR     N_("both directions at once")
#define BENCH_STEP_D2D       N_("device to device copies (cuMemcpyDtoD_v2)")
#define BENCH_STEP_KERNELS   N_("loading the kernels (cuModuleLoadDataEx)")
#define BENCH_STEP_TRIAD     N_("triad kernel (cuLaunchKernel)")
#define BENCH_STEP_CHECKSUM  N_("checksum kernel (cuLaunchKernel)")
#define BENCH_STEP_FMA       N_("FMA kernel (cuLaunchKernel)")
#define BENCH_STEP_PEER      N_("peer copies (cuMemcpyPeerAsync)")
#define BENCH_STEP_CUBLASLT  N_("loading cuBLASLt")
#define BENCH_STEP_LT_HANDLE N_("cuBLASLt (cublasLtCreate)")
#define BENCH_STEP_REPORTING N_("reporting")
/* with values: the GEMM's precision ("FP16"); the matrices' side twice; the GPUs' list and the
 * load's seconds (GPU "" or "s" first) */
#define BENCH_STEP_GEMM        N_("cuBLASLt %s GEMM (cublasLtMatmul)")
#define BENCH_STEP_GEMM_BUFFER N_("GEMM buffers (cuMemAlloc_v2, %u x %u)")
#define BENCH_STEP_LOAD        "sustained load on GPU%s %s at once (%.1f s)"

/* The step before the worker's first (it died loading). */
#define BENCH_STEP_STARTUP N_("start-up")

/*
 * The details gpudoctor gives a bench that ended badly (src/bench/run.c): the deadline's
 * seconds; SIGINT or SIGTERM; the signal and the step it died in; the step it ended in.
 */
#define BENCH_DETAIL_TIMEOUT     N_("the CUDA worker did not finish within %.0f s")
#define BENCH_DETAIL_INTERRUPTED N_("interrupted by %s: the CUDA worker was ended")
#define BENCH_DETAIL_KILLED      N_("the CUDA worker was killed by signal %d during: %s")
#define BENCH_DETAIL_ENDED       N_("the CUDA worker ended without a result during: %s")

/*
 * A step as the worker wrote it, for people: translated where it is one of the steps above
 * (the GPU's words and WHAT), else NULL (show it as it is). The caller frees.
 */
char *bench_step_l(const char *step);
/* The same for a bench's detail: translated where gpudoctor wrote it (above), else NULL. */
char *bench_detail_l(const char *detail);

#endif
