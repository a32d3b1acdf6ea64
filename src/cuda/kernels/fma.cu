// FMA throughput: eight independent chains of x = x * m + k per thread, iters times; every
// thread computes the same values, so the result is known (the host computes it with fmaf) and
// one value per thread is written so that nothing is optimised away.
extern "C" __global__ void gd_fma(float *out, float m, float k, unsigned int iters)
{
    float x0 = 1.0f, x1 = 1.5f, x2 = 2.0f, x3 = 2.5f, x4 = 3.0f, x5 = 3.5f, x6 = 4.0f, x7 = 4.5f;

    for (unsigned int i = 0; i < iters; i++) {
        x0 = __fmaf_rn(x0, m, k);
        x1 = __fmaf_rn(x1, m, k);
        x2 = __fmaf_rn(x2, m, k);
        x3 = __fmaf_rn(x3, m, k);
        x4 = __fmaf_rn(x4, m, k);
        x5 = __fmaf_rn(x5, m, k);
        x6 = __fmaf_rn(x6, m, k);
        x7 = __fmaf_rn(x7, m, k);
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
}
