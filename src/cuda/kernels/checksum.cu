// Checksum of n 32-bit words: the sum (mod 2^64) of a mix of each word with its index, so that
// a changed or moved word changes it; addition commutes, so the order threads add in does not.
extern "C" __global__ void gd_checksum(unsigned long long *sum, const unsigned int *data,
                                       unsigned long long n)
{
    unsigned long long local = 0;

    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned long long v = (i << 32) ^ data[i];

        v ^= v >> 33;
        v *= 0xff51afd7ed558ccdULL;
        v ^= v >> 33;
        local += v;
    }
    atomicAdd(sum, local);
}
