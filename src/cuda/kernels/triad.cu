// STREAM triad: a[i] = b[i] + s * c[i], grid-stride. Built with -fmad=false so that the
// multiply and the add round separately, as the host's reference does.
extern "C" __global__ void gd_triad(float *a, const float *b, const float *c, float s,
                                    unsigned long long n)
{
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        a[i] = b[i] + s * c[i];
}
