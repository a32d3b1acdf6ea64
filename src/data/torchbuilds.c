/* The PyTorch build table's reader (data/torchbuilds.h); the rows come from
 * data/torch-builds.tsv. */
#include "data/torchbuilds.h"

#include "data/cudaarch.h"

const struct torch_build *torch_build_for(int cc)
{
    const struct cuda_arch *gpu = cuda_arch_find(cc);

    for (size_t i = 0; gpu != NULL && i < torch_build_n_rows; i++) {
        for (const int *c = torch_build_rows[i].ccs; *c != 0; c++) {
            const struct cuda_arch *code = cuda_arch_find(*c);

            if (code != NULL && cuda_arch_runs_on(code, gpu))
                return &torch_build_rows[i];
        }
    }
    return NULL;
}
