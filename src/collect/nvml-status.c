#include "collect/nvml-status.h"
#include "collect/nvml-lib.h"
#include "collect/nvml-query.h"
#include "nvml/nvml-abi.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char *rc_name(int32_t rc)
{
    const char *name = nvml_rc_name(rc);

    return name ? name : "an unknown error";
}

/* Why nvmlInit failed, in words an operator acts on. */
static char *init_sentence(const struct nvml_system *sys)
{
    const char *lib = sys->library ? sys->library : NVML_DEFAULT_LIB;
    char *what, *out;

    switch (sys->init_rc) {
    case NVML_ERROR_DRIVER_NOT_LOADED:
        what = xstrdup("the NVIDIA kernel module is not loaded");
        break;
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
        /* The kernel module's version is the driver collector's to tell. */
        what = xasprintf("driver/library version mismatch: the NVML library %s (version %s) does "
                         "not match the loaded kernel module; reload the nvidia module or reboot",
                         lib, sys->library_version ? sys->library_version : "unknown");
        break;
    case NVML_ERROR_NO_PERMISSION:
        what = xstrdup("no permission to use the NVIDIA driver: this user cannot open "
                       "/dev/nvidiactl or /dev/nvidia*");
        break;
    case NVML_ERROR_GPU_NOT_FOUND:
        what = xstrdup("the NVIDIA driver is loaded but finds no GPU");
        break;
    case NVML_ERROR_INSUFFICIENT_RESOURCES:
    case NVML_ERROR_MEMORY:
        what = xstrdup("the NVIDIA driver ran out of resources while starting NVML");
        break;
    default:
        what = xstrdup("NVML could not be initialised");
        break;
    }
    out = xasprintf("%s (nvmlInit: %s%s%s)", what, rc_name(sys->init_rc),
                    sys->init_error ? ": " : "", sys->init_error ? sys->init_error : "");
    free(what);
    return out;
}

const struct jfield *nvml_status_lost_field(const struct gpu *g)
{
    for (size_t i = 0; i < gpu_table.n_fields; i++) {
        const struct jfield *f = &gpu_table.fields[i];

        if (f->slot >= 0 && g->rc[f->slot] == NVML_ERROR_GPU_IS_LOST)
            return f;
    }
    return NULL;
}

static const char *handle_reason(int32_t rc)
{
    switch (rc) {
    case NVML_ERROR_GPU_IS_LOST:
        return "has fallen off the bus or is otherwise inaccessible";
    case NVML_ERROR_NO_PERMISSION:
        return "cannot be opened by this user";
    case NVML_ERROR_INSUFFICIENT_POWER:
        return "is not powered properly: check its external power cables";
    case NVML_ERROR_IRQ_ISSUE:
        return "has an interrupt problem the kernel detected";
    case NVML_ERROR_RESET_REQUIRED:
        return "needs a reset before it can be used again";
    default:
        return "cannot be opened";
    }
}

char *nvml_status_gpu_note(const struct gpu *g)
{
    const struct jfield *lost;

    if (g->handle_rc != NVML_SUCCESS)
        return xasprintf("GPU %u %s (nvmlDeviceGetHandleByIndex: %s)", g->index,
                         handle_reason(g->handle_rc), rc_name(g->handle_rc));
    lost = nvml_status_lost_field(g);
    if (lost == NULL)
        return NULL;
    return xasprintf("GPU %u%s%s%s fell off the bus during collection (%s: GPU_IS_LOST)", g->index,
                     g->pci_bus_id ? " (" : "", g->pci_bus_id ? g->pci_bus_id : "",
                     g->pci_bus_id ? ")" : "", lost->source ? lost->source : lost->name);
}

bool nvml_status_judge(const struct nvml_system *sys, const struct gpu *gpus, size_t n_gpus,
                       struct collector_status *c)
{
    const char *lib = sys->library ? sys->library : NVML_DEFAULT_LIB;

    if (sys->load_error == NVML_ERROR_LIBRARY_NOT_FOUND && strchr(lib, '/') != NULL) {
        /* A path given (--nvml-lib, GPUDOCTOR_NVML_LIB): the loader's words, not a guess. */
        if (sys->load_detail != NULL && strncmp(sys->load_detail, lib, strlen(lib)) == 0)
            collector_set(c, CS_UNAVAILABLE, "cannot load %s", sys->load_detail);
        else
            collector_set(c, CS_UNAVAILABLE, "cannot load %s: %s", lib,
                          sys->load_detail ? sys->load_detail : "not found");
        return false;
    }
    if (sys->load_error == NVML_ERROR_LIBRARY_NOT_FOUND) {
        collector_set(c, CS_UNAVAILABLE, "NVIDIA driver not installed: cannot load %s", lib);
        return false;
    }
    if (sys->load_error != NVML_SUCCESS) {
        collector_set(c, CS_FAILED, "%s is not a usable NVML library: %s", lib,
                      sys->load_detail ? sys->load_detail : rc_name(sys->load_error));
        return false;
    }
    if (sys->init_rc != NVML_SUCCESS) {
        char *why = init_sentence(sys);

        collector_set(c, CS_FAILED, "%s", why);
        free(why);
        return false;
    }
    if (sys->device_count_rc != NVML_SUCCESS) {
        collector_set(c, CS_FAILED, "NVML cannot count the GPUs (nvmlDeviceGetCount: %s)",
                      sys->device_count_rc == JF_RC_NOT_COLLECTED ? "not asked"
                                                                  : rc_name(sys->device_count_rc));
        return false;
    }
    if (n_gpus == 0) {
        collector_set(c, CS_OK, "NVML reports no GPU");
        return false;
    }
    collector_set(c, CS_OK, NULL);
    /* The query reads at most NVML_QUERY_MAX_GPUS: the rest must not pass for checked. */
    if (sys->device_count > n_gpus)
        collector_note(c,
                       "NVML counts %" PRIu32 " GPUs; gpudoctor reads %zu of them (at most %d): "
                       "GPUs %zu and above are not checked",
                       sys->device_count, n_gpus, NVML_QUERY_MAX_GPUS, n_gpus);
    for (size_t i = 0; i < n_gpus; i++) {
        char *note = nvml_status_gpu_note(&gpus[i]);

        if (note != NULL) {
            collector_note(c, "%s", note);
            free(note);
        }
    }
    return true;
}
