/*
 * The bench kernels as PTX text (the .ptx files of src/cuda/kernels, embedded at build time),
 * loaded with the driver's JIT. Entry points and parameters: src/cuda/kernels/README.md.
 */
#ifndef GPUDOCTOR_CUDA_KERNELS_H
#define GPUDOCTOR_CUDA_KERNELS_H

extern const char cuda_ptx_triad[];
extern const char cuda_ptx_fma[];
extern const char cuda_ptx_checksum[];

#endif
