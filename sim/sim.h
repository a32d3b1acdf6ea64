/*
 * The NVML simulator: a real libnvidia-ml.so.1 whose answers come from a scenario file
 * (NVML_SIM_SCENARIO). Internal interface between its files:
 *   scenario.c  reads and checks a scenario (or a gpudoctor snapshot) into struct sim_scenario
 *   timeline.c  the value of a field at time t: base value, then the timeline entries
 *   state.c     init reference count, the lock, handles, injected errors/delays/hangs, errors text
 *   api-*.c     the exported nvml* functions, each a thin shell around sim_begin/sim_end
 * Nothing but the nvml* entry points is exported (SIM_API); everything here is hidden.
 */
#ifndef GPUDOCTOR_SIM_H
#define GPUDOCTOR_SIM_H

#include "nvml/nvml-abi.h"
#include "snapshot/snap-gpu.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SIM_API __attribute__((visibility("default")))

/* Every function of the list, with exactly the prototype gpudoctor's collector calls. */
#define SIM_DECLARE(name, params) SIM_API nvmlReturn_t name params;
NVML_FUNCTIONS(SIM_DECLARE)
NVML_CLIENT_FUNCTIONS(SIM_DECLARE)
#undef SIM_DECLARE
SIM_API const char *nvmlErrorString(nvmlReturn_t result);

#define SIM_SCENARIO_SCHEMA "gpudoctor.scenario/1"

/* MIG slices of an A100/H100: the most MIG devices one GPU can hold. */
#define SIM_MIG_MAX 7

/* The driver samples per-process and codec utilisation at this period (1/6 s). */
#define SIM_SAMPLE_PERIOD_US 166667u

/*
 * What a scenario injects into one function (by exact symbol name, or by the name shared by all
 * its versions: see sim_fn_root). A field is "unset" when its has_ flag is false.
 */
struct sim_rule {
    const char *fn; /* a function name or root name, owned */
    bool has_error, has_delay, hang, has_growth;
    int32_t error;
    int64_t delay_ms;
    uint32_t growth; /* entries a size query leaves out: the list grows before the next call */
};

struct sim_inject {
    struct sim_rule *rules;
    size_t n_rules;
};

/* What one call resolves from the rules of its GPU and of the whole scenario. */
struct sim_effect {
    int32_t error; /* 0: none */
    int64_t delay_ms;
    bool hang;
    uint32_t growth;
};

/* A device handle: nvmlDevice_t points at one of these, inside the scenario's arrays. */
struct nvmlDevice_st {
    struct sim_gpu *gpu;
    int32_t mig; /* -1: the GPU itself; else the MIG device index */
};

/* What nvmlDeviceGetFieldValues answers for one field id (and scope). */
struct sim_field_value {
    uint32_t id;
    bool any_scope; /* no "scope" given: the entry answers for every scopeId */
    uint32_t scope;
    int32_t rc;   /* 0: the value below; else the code of this value */
    int32_t type; /* NVML_VALUE_TYPE_* */
    nvmlValue_t value;
};

/* A key of a GPU that only scenarios have: absent, null (NOT_SUPPORTED) or a value. */
enum sim_key_state { SIM_KEY_ABSENT, SIM_KEY_NULL, SIM_KEY_SET };

/*
 * What a scenario GPU may say beyond the snapshot's GPU format: the values clients written
 * against NVIDIA's bindings read and gpudoctor does not (docs/simulator.md, "Beyond the
 * snapshot"). They do not change over time.
 */
struct sim_extra {
    enum sim_key_state brand_state, arch_state, part_state, accounting_state, video_max_state,
        nvlink_state, fields_state;
    int32_t brand;
    uint32_t arch;
    char *part_number;
    bool accounting;
    uint32_t clock_video_max_mhz;
    bool *nvlinks; /* per link: active */
    size_t n_nvlinks;
    struct sim_field_value *fields;
    size_t n_fields;
};

struct sim_gpu {
    struct gpu g; /* base values, exactly as gpu_from_json read them */
    struct sim_extra extra;
    struct sim_inject inject;
    struct nvmlDevice_st handle;
    struct nvmlDevice_st migs[SIM_MIG_MAX];
    /* pci_bus_id split up, checked when the scenario was read */
    uint32_t pci_domain, pci_bus, pci_device, pci_function;
    /* per link of g.nvlinks: remote_pci_bus_id split up the same way */
    uint32_t link_pci[NVML_NVLINK_MAX_LINKS][4];
    unsigned char fabric_uuid[NVML_GPU_FABRIC_UUID_LEN]; /* g.fabric.cluster_uuid as bytes */
};

enum sim_ev_kind { SIM_EV_RATE, SIM_EV_WINDOW, SIM_EV_SQUARE };

/* One timeline entry, checked and resolved against its GPU and field. */
struct sim_event {
    uint32_t gpu;               /* index into sim_scenario.gpus */
    long proc;                  /* -1: a GPU field; else index into gpus[gpu].g.procs */
    long link;                  /* -1; else index into gpus[gpu].g.nvlinks (field of that link) */
    const struct jfield *field; /* row of gpu_table or gpu_proc_table; NULL: process presence */
    enum sim_ev_kind kind;
    double from_s, to_s; /* active in [from_s, to_s) */
    double rate_per_s;
    bool has_min, has_max;
    double min, max;
    uint64_t value;   /* SIM_EV_WINDOW, in the field's raw representation (see sim_raw_get) */
    uint64_t *values; /* SIM_EV_SQUARE */
    size_t n_values;
    double period_s;
};

struct sim_scenario {
    char *path;
    char *driver_version, *nvml_version;
    int32_t driver_version_rc, nvml_version_rc; /* NOT_SUPPORTED when absent */
    int32_t cuda_driver_version;
    int32_t cuda_driver_version_rc; /* LIBRARY_NOT_FOUND when absent (no libcuda) */
    int32_t device_count_rc;        /* a replayed snapshot's nvmlDeviceGetCount failure */
    int32_t init_rc;                /* what nvmlInit* returns instead of success */
    char *init_error;               /* a replayed snapshot's text for init_rc, or NULL */
    double epoch_s;                 /* NVML_SIM_EPOCH (Unix seconds); NAN: first nvmlInit */
    struct sim_inject inject;
    struct sim_gpu *gpus;
    size_t n_gpus;
    struct sim_event *events;
    size_t n_events;
    /* "processes_follow_proc": a listed process whose pid is not in /proc ($NVML_SIM_PROC) is
     * gone, as when a real process exits: tests that end real processes see the memory freed. */
    bool processes_follow_proc;
};

/* scenario.c */

/*
 * Reads the scenario file path (a gpudoctor.scenario/1 or gpudoctor.snapshot/1 document).
 * Returns it, or NULL with *cause set to "path:line:column: what" (the caller frees it).
 */
struct sim_scenario *sim_scenario_load(const char *path, char **cause);
/* Same, from text already in memory (NUL-terminated at len); name is used in messages. */
struct sim_scenario *sim_scenario_parse(const char *text, size_t len, const char *name,
                                        char **cause);
void sim_scenario_free(struct sim_scenario *s);

/* The rule of in for exactly fn, or NULL. */
const struct sim_rule *sim_inject_find(const struct sim_inject *in, const char *fn);

/* The functions the library exports (NVML_FUNCTIONS, then NVML_CLIENT_FUNCTIONS), for name
 * checks. */
struct sim_fn {
    const char *name;
    void (*addr)(void);
};
extern const struct sim_fn sim_fns[];
extern const size_t sim_n_fns;

/*
 * The name all versions and renamings of fn share: "nvmlDeviceGetMemoryInfo" for
 * nvmlDeviceGetMemoryInfo_v2, "nvmlDeviceGetTemperature" for nvmlDeviceGetTemperatureV.
 * Writes into buf (size bytes) and returns it.
 */
const char *sim_fn_root(const char *fn, char *buf, size_t size);
/* Whether name is an exported function or the root of one. */
bool sim_fn_known(const char *name);

/* timeline.c */

/*
 * A field's raw value in obj (struct gpu or struct gpu_proc) as 64 bits: unsigned types
 * zero-extended, signed ones sign-extended, booleans 0/1.
 */
uint64_t sim_raw_get(const void *obj, const struct jfield *f);
/* Whether rates make sense for the field's type (plain integers). */
bool sim_field_is_numeric(const struct jfield *f);

/* The gpu_table row of a validity slot. */
const struct jfield *sim_slot_field(enum gpu_slot slot);

/*
 * The value of GPU field slot of gpu index gi at time t (seconds on the scenario clock):
 * 0 and *out set, or the NVML status that stands for the field (never negative).
 */
int32_t sim_gpu_value(const struct sim_scenario *s, uint32_t gi, enum gpu_slot slot, double t,
                      uint64_t *out);
/* The same for field f (a gpu_proc_table row) of process pi; NOT_SUPPORTED when invalid. */
int32_t sim_proc_value(const struct sim_scenario *s, uint32_t gi, size_t pi, const struct jfield *f,
                       double t, uint64_t *out);
/* The same for field slot of link record li (index into g.nvlinks): its status, or 0 and *out. */
int32_t sim_link_value(const struct sim_scenario *s, uint32_t gi, size_t li,
                       enum gpu_nvlink_slot slot, double t, uint64_t *out);
/* The gpu_nvlink_table row of a link status slot. */
const struct jfield *sim_link_field(enum gpu_nvlink_slot slot);
/* Whether process pi of GPU gi exists at time t (timeline "present" entries). */
bool sim_proc_present(const struct sim_scenario *s, uint32_t gi, size_t pi, double t);

/* state.c */

/* One API call in progress: sim_begin fills it, the function reads values through it. */
struct sim_call {
    const char *fn;
    bool locked;
    struct sim_scenario *scn;
    struct sim_gpu *gpu; /* device calls */
    uint32_t gi;         /* index of gpu in scn->gpus */
    int32_t mig;         /* -1, or the MIG device index of the handle */
    double t;            /* scenario clock, seconds */
    struct sim_effect effect;
};

/*
 * Starts a call of a function that takes no device: takes the lock, checks initialisation and
 * args_ok (false: a NULL pointer or bad argument), then applies what the scenario injects
 * (hang, delay, error). Returns NVML_SUCCESS or the code the function must return.
 * Always end with sim_end, whatever it returned.
 */
nvmlReturn_t sim_begin(struct sim_call *c, const char *fn, bool args_ok);
/* The same for a device function; MIG device handles are refused unless mig_ok. */
nvmlReturn_t sim_begin_dev(struct sim_call *c, const char *fn, nvmlDevice_t device, bool args_ok,
                           bool mig_ok);
/* Releases the lock; returns rc. */
nvmlReturn_t sim_end(struct sim_call *c, nvmlReturn_t rc);
/* The GPU a handle belongs to (and its MIG index, -1 for the GPU), or NULL when it is not one of
 * ours. Call with the lock held (between sim_begin_dev and sim_end). */
struct sim_gpu *sim_find_handle(struct sim_scenario *s, nvmlDevice_t device, int32_t *mig);

/* nvmlInit, nvmlInit_v2, nvmlInitWithFlags: v1 when called through the v1 nvmlInit. */
nvmlReturn_t sim_init(const char *fn, bool v1);
/* nvmlShutdown, inside a call (the lock held): the last one unloads the scenario. */
void sim_unref(void);
/* Whether the library was initialised through the v1 nvmlInit (inaccessible GPUs hidden). */
bool sim_v1_init(void);

/* A GPU that nvmlDeviceGetCount (v1) and nvmlInit (v1) do not see. */
bool sim_gpu_inaccessible(const struct sim_gpu *g);

/* Typed readers for api-*.c: the current value of a field of the call's GPU. */
nvmlReturn_t sim_u32(struct sim_call *c, enum gpu_slot slot, unsigned int *out);
nvmlReturn_t sim_u64(struct sim_call *c, enum gpu_slot slot, unsigned long long *out);
nvmlReturn_t sim_int(struct sim_call *c, enum gpu_slot slot, int *out);
/* Copies a string field into buf of length bytes: INSUFFICIENT_SIZE when it does not fit. */
nvmlReturn_t sim_str(struct sim_call *c, enum gpu_slot slot, char *buf, unsigned int length);
/* Copies s into buf of length bytes (with its NUL), or INSUFFICIENT_SIZE. */
nvmlReturn_t sim_copy_str(const char *s, char *buf, unsigned int length);

/* api-device.c: MIG devices of GPU gi that exist at time t, and the UUID of one of them. */
uint32_t sim_mig_count(const struct sim_scenario *s, uint32_t gi, double t);
void sim_mig_uuid(const struct sim_gpu *sg, int32_t k, char *buf, size_t size);

/* Microseconds of Unix time, and the scenario clock (seconds) for scenario s. */
int64_t sim_now_real_us(void);
double sim_clock(const struct sim_scenario *s);

#endif
