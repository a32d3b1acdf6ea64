/*
 * `scontrol show node -o` as slurm-check reads it (slurm_parse_node): the output of another
 * program, on a node that may be in any state. A node that parses has a name and a state, and
 * the decision taken on it is one of the three actions for every check status.
 */
#include "cmd/slurm.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_cstr(data, size), *cause = NULL;
    struct slurm_node n;

    memset(&n, 0, sizeof(n));
    if (slurm_parse_node(text, &n, &cause) == 0) {
        FUZZ_ASSERT(n.name != NULL && n.state != NULL, "a node without name or state");
        (void)slurm_reason_is_ours(n.reason);
        for (int status = 0; status <= 3; status++) {
            const char *why = NULL;
            enum slurm_action act = slurm_decide(
                &n, status, status == 2 ? SLURM_REASON_PREFIX "GPU 0 lost" : NULL, &why);

            FUZZ_ASSERT(act == SLURM_NOTHING || act == SLURM_DRAIN || act == SLURM_RESUME,
                        "action %d", (int)act);
            FUZZ_ASSERT(act != SLURM_DRAIN || status == 2, "drained on status %d", status);
            FUZZ_ASSERT(why != NULL, "no reason for the decision");
        }
    } else {
        FUZZ_ASSERT(cause != NULL, "refused without a reason");
        free(cause);
    }
    slurm_node_free(&n);
    free(text);
    return 0;
}
