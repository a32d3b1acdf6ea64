/*
 * What rule implementations share: the context the engine hands each rule (the facts it built
 * once per run: src/facts) and the helpers that make findings. Only the rule sources (src/rules)
 * include this.
 */
#ifndef GPUDOCTOR_RULE_IMPL_H
#define GPUDOCTOR_RULE_IMPL_H

#include "data/cudaerr.h"
#include "facts/facts.h"
#include "render/format.h"
#include "rules/rules.h"
#include "util/i18n.h"

#include <sys/types.h>
#include <stdbool.h>
#include <stdint.h>

/* What a rule sees: the facts the engine built once for the run, and which rule is running. */
struct rule_ctx {
    const struct facts *facts;
    const struct rule *rule;
};

/* stack.cudnn's finding for cuDNN libraries the error given says could not load (rules-libs.c). */
void cudnn_reported(const struct rule_ctx *ctx, struct findings *out);

/* Every rule of the table, declared once; catalog.c lists them in this order. */
#define RULE_LIST(X)                                                                               \
    X(health_nvml_hung)                                                                            \
    X(health_nvml_failed)                                                                          \
    X(host_container_lost_devices)                                                                 \
    X(health_gpu_lost)                                                                             \
    X(health_gpu_inaccessible)                                                                     \
    X(health_gpu_missing)                                                                          \
    X(health_no_gpu_found)                                                                         \
    X(health_xid)                                                                                  \
    X(health_ecc_uncorrectable)                                                                    \
    X(health_row_remap_failure)                                                                    \
    X(health_memory_repair_pending)                                                                \
    X(health_recovery_action)                                                                      \
    X(health_driver_hung_task)                                                                     \
    X(health_oom_kill)                                                                             \
    X(profile_gpu_count)                                                                           \
    X(profile_gpu_model)                                                                           \
    X(profile_gpu_memory)                                                                          \
    X(profile_vbios)                                                                               \
    X(profile_fabric)                                                                              \
    X(stack_no_driver)                                                                             \
    X(stack_driver_mismatch)                                                                       \
    X(stack_cuda_too_new)                                                                          \
    X(stack_arch_unsupported)                                                                      \
    X(stack_container_toolkit_missing)                                                             \
    X(stack_cuda_lib_missing)                                                                      \
    X(stack_uvm_not_loaded)                                                                        \
    X(stack_cuda_after_resume)                                                                     \
    X(stack_toolkit_mismatch)                                                                      \
    X(stack_cudnn)                                                                                 \
    X(stack_known_bad_driver)                                                                      \
    X(profile_versions)                                                                            \
    X(mem_nearly_full)                                                                             \
    X(mem_full_idle)                                                                               \
    X(mem_unaccounted)                                                                             \
    X(mem_leak)                                                                                    \
    X(mem_idle_held)                                                                               \
    X(mem_job_oom)                                                                                 \
    X(proc_stopped_holder)                                                                         \
    X(proc_zombie_holder)                                                                          \
    X(proc_orphan_holder)                                                                          \
    X(proc_idle_holder)                                                                            \
    X(proc_shared_gpu)                                                                             \
    X(proc_pileup)                                                                                 \
    X(proc_graphics_on_compute)                                                                    \
    X(proc_compute_mode)                                                                           \
    X(proc_cuda_visible_devices)                                                                   \
    X(proc_fd_limit)                                                                               \
    X(proc_memlock_limit)                                                                          \
    X(proc_nccl_socket_ifname)                                                                     \
    X(proc_mig_no_instance)                                                                        \
    X(perf_input_starved)                                                                          \
    X(perf_util_swing)                                                                             \
    X(host_cpu_saturated)                                                                          \
    X(host_io_wait)                                                                                \
    X(host_disk_busy)                                                                              \
    X(host_memory_pressure)                                                                        \
    X(host_memory_ecc)                                                                             \
    X(host_psu_fault)                                                                              \
    X(host_disk_full)                                                                              \
    X(host_shm_small)                                                                              \
    X(clock_thermal_slowdown)                                                                      \
    X(clock_hw_slowdown)                                                                           \
    X(clock_temp_rising)                                                                           \
    X(clock_throttle_episodes)                                                                     \
    X(clock_power_limit_low)                                                                       \
    X(clock_power_cap)                                                                             \
    X(clock_app_clocks)                                                                            \
    X(clock_low_pstate)                                                                            \
    X(clock_persistence_off)                                                                       \
    X(pcie_link_downshift)                                                                         \
    X(pcie_width_degraded)                                                                         \
    X(pcie_errors)                                                                                 \
    X(pcie_shared_switch)                                                                          \
    X(profile_pcie)                                                                                \
    X(bench_failed)                                                                                \
    X(bench_checksum_mismatch)                                                                     \
    X(bench_host_copy_slow)                                                                        \
    X(bench_mem_bandwidth_low)                                                                     \
    X(bench_compute_low)                                                                           \
    X(bench_p2p_slow)                                                                              \
    X(bench_throttle_under_load)                                                                   \
    X(bench_behind_under_load)                                                                     \
    X(bench_regression)                                                                            \
    X(ib_port_down)                                                                                \
    X(ib_rate_low)                                                                                 \
    X(ib_errors)                                                                                   \
    X(ib_peermem_missing)                                                                          \
    X(perf_collective_stalled)                                                                     \
    X(nvlink_down)                                                                                 \
    X(nvlink_errors)                                                                               \
    X(fabric_gpu_not_ready)                                                                        \
    X(pcie_p2p_unavailable)                                                                        \
    X(proc_numa_remote)                                                                            \
    X(proc_nccl_disabled)                                                                          \
    X(fabric_switch_not_initialized)                                                               \
    X(fabric_fm_not_running)                                                                       \
    X(fabric_fm_version)                                                                           \
    X(fabric_fm_errors)                                                                            \
    X(fabric_sxid)                                                                                 \
    X(pcie_acs_p2p)                                                                                \
    X(pcie_iommu_p2p)                                                                              \
    X(reported_system_not_ready)                                                                   \
    X(reported_devices_unavailable)                                                                \
    X(reported_error)

#define RULE_DECLARE(name) extern const struct rule rule_##name;
RULE_LIST(RULE_DECLARE)
#undef RULE_DECLARE

/* The thresholds a rule reads, for its table row. */
#define THRESHOLDS(...)                                                                            \
    (const enum threshold_id[])                                                                    \
    {                                                                                              \
        __VA_ARGS__, TH__COUNT                                                                     \
    }
#define NO_THRESHOLDS                                                                              \
    (const enum threshold_id[])                                                                    \
    {                                                                                              \
        TH__COUNT                                                                                  \
    }
#define YIELDS_TO(...)                                                                             \
    (const char *const[])                                                                          \
    {                                                                                              \
        __VA_ARGS__, NULL                                                                          \
    }

/* A rule's causal links (struct rule_link): { "rule.id", LINK_SAME_GPU, when, how, fix }, ... */
#define EXPLAINS(...)                                                                              \
    (const struct rule_link[])                                                                     \
    {                                                                                              \
        __VA_ARGS__,                                                                               \
        {                                                                                          \
            NULL, LINK_ANY, NULL, NULL, LINK_FIX_OWN                                               \
        }                                                                                          \
    }

#define MIB (1024.0 * 1024.0) /* thresholds in MiB against byte counts */

/* Threshold value. */
static inline double th(const struct rule_ctx *ctx, enum threshold_id id)
{
    return ctx->facts->th->v[id];
}

/*
 * Starts a finding of the running rule about a GPU (-1: none) and a pid (-1: none); user,
 * command, container and GPU UUID are filled from the snapshot.
 */
struct finding *finding_new(const struct rule_ctx *ctx, struct findings *out, int32_t gpu_index,
                            int32_t pid);
void finding_title(struct finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void finding_evidence(struct finding *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/*
 * An evidence line formatted by the caller twice: en in English, l for people (NULL: the
 * English). For lines whose arguments are words the reader translates too (a clock event
 * reason, a process state: N_() in their table, _() in l's arguments). Takes both.
 */
void finding_evidence_take(struct finding *f, char *en, char *l);
/* The same for the title. */
void finding_title_take(struct finding *f, char *en, char *l);
/* The same for a fix line, made safe like finding_fix's. */
void finding_fix_take(struct finding *f, char *en, char *l);
/*
 * The first error given with --error (the snapshot's reported section) that the catalogue reads
 * as kind, its row in *row (row may be NULL); -1 when none is.
 */
ssize_t reported_find(const struct rule_ctx *ctx, enum cudaerr_kind kind,
                      const struct cudaerr_info **row);
/* Adds every error given of that kind to f's evidence ("the error given: \"...\""). */
void reported_texts(const struct rule_ctx *ctx, struct finding *f, enum cudaerr_kind kind);

/*
 * A text kept in both languages while it is built from parts (a title's tail: an Xid's recovery
 * action, how often a fault came back). Starts zeroed: empty. text2_add_take appends en, and l
 * (NULL: en) to the people copy, as TWICE gives them, and takes both; text2_free.
 */
struct text2 {
    char *en;
    char *l;
};
void text2_add_take(struct text2 *t, char *en, char *l);
void text2_free(struct text2 *t);
/*
 * Adds a fix line: a comment ("# advice"), or one complete command with an optional
 * "   # why". Every value put into a command goes through fix_arg (strings) or is an integer
 * checked for range (fix_pid_ok); a line that would still not paste as one command becomes a
 * comment, and comments are made printable on one line.
 */
void finding_fix(struct finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * value as one shell word for a fix command (str_shell_quote), which the caller frees. When no
 * word can carry it (empty, a control character, not UTF-8, or a leading '-' that the command
 * would read as an option), adds a comment naming the value (what: "mount point") in the
 * command's place and returns NULL. NULL (unknown) gives NULL and no comment.
 */
char *fix_arg(struct finding *f, const char *what, const char *value);
/*
 * fix_arg for a PCI address (setpci -s, lspci -s): only a whole one, [DOMAIN:]BUS:DEVICE.FUNCTION
 * in hex; anything else ("*", "91:", "0000:91:00") would select every device matching it, so a
 * comment stands in its place and NULL is returned.
 */
char *fix_pci_arg(struct finding *f, const char *value);
/*
 * NVML's bus id as lspci writes it: the domain's leading zeros beyond four digits dropped
 * ("00000000:3B:00.0" is "0000:3B:00.0"; a VMD domain, "00010000:E1:00.0", stays "10000:E1:00.0").
 * A pointer into bus (NULL stays NULL).
 */
const char *pci_lspci_form(const char *bus);
/*
 * The fix lines that reset GPU g (fix-reset.c): `sudo nvidia-smi -r -i N   # why` (why: N_() text,
 * or NULL), or, where NVIDIA's rules say the GPU cannot be reset alone (NVLink before Ampere, an
 * NVSwitch system without Fabric Manager), the reset of every GPU after draining the node; then
 * what to stop when the reset is refused as in use. Where no reset can work now
 * (fix_reset_blocked), a drain and reboot instead.
 */
void fix_gpu_reset(const struct rule_ctx *ctx, struct finding *f, const struct gpu *g,
                   const char *why);
/*
 * Where no reset can work now (NVML hangs; the GPU, g or the one at PCI address pci, is lost from
 * the bus), adds the line that drains and reboots instead and returns true; else adds nothing.
 * fix_gpu_reset checks it first.
 */
bool fix_reset_blocked(const struct rule_ctx *ctx, struct finding *f, const struct gpu *g,
                       const char *pci);
/* Whether a pid may go into a command such as kill (1..PROC_PID_MAX; never 0 or -1). */
static inline bool fix_pid_ok(int64_t pid)
{
    return proc_pid_valid(pid);
}
/*
 * Declares that this finding explains findings of rule_id: the running rule's explains row for
 * rule_id must be one with a `when` (the evidence decides); a missing row is a programming error.
 */
void finding_explains(struct finding *f, const char *rule_id);
void finding_object(struct finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The same for an object that is a word people read translated (N_() text): "compute rate". */
void finding_object_word(struct finding *f, const char *word);

/* Records that the running rule could not check something (gpu_index -1: not one GPU). */
void rule_skip(const struct rule_ctx *ctx, struct findings *out, int32_t gpu_index, const char *fmt,
               ...) __attribute__((format(printf, 4, 5)));
/* rule_skip with the two texts made already (TWICE), which it takes: the English, the other or
 * NULL. */
void rule_skip_take(const struct rule_ctx *ctx, struct findings *out, int32_t gpu_index,
                    char *reason, char *reason_l);
/*
 * True when the GPU field in slot is valid; otherwise records a skip naming the field and its
 * NVML status ("temp_c NOT_SUPPORTED") and returns false.
 */
bool need_gpu(const struct rule_ctx *ctx, struct findings *out, const struct gpu *g,
              enum gpu_slot slot);
/* The JSON name of a GPU field ("temp_c") and the name of its status ("NOT_SUPPORTED"). */
const char *gpu_field_name(enum gpu_slot slot);
const char *gpu_status_name(const struct gpu *g, enum gpu_slot slot);

/* "alice: python train.py --lr 3e-4" (cut to fit size), or "pid 4121" when unknown. */
void proc_label(char *buf, size_t size, const struct rule_ctx *ctx, int32_t pid);
/* "pid 4121 (alice: python train.py)", or "pid 4121" when the process table lacks it. */
void proc_desc(char *buf, size_t size, const struct rule_ctx *ctx, int32_t pid);
/* Whether a framework record was found from gpudoctor's own Python environment, not a process. */
bool fw_from_env(const struct stack_framework *fw);
/* The process a framework record names, for finding_new: -1 when it names none. */
static inline int32_t fw_pid(const struct stack_framework *fw)
{
    return fw->pid > 0 ? fw->pid : -1;
}
/* The evidence line saying where a framework build was found: its process, or the environment. */
void fw_found_evidence(struct finding *f, const struct rule_ctx *ctx,
                       const struct stack_framework *fw);
/*
 * True when collector id ran; otherwise records one skip "<name> collector not run" (or what
 * went wrong) for the running rule and returns false.
 */
bool need_collector(const struct rule_ctx *ctx, struct findings *out, enum collector_id id);
/* The command line, else the comm, else "?". */
const char *proc_command(const struct proc *p);
/* "stopped", "zombie", "sleeping", ... for a /proc state letter. */
/* "stopped", "defunct (zombie)": English, N_()-marked (_() gives the reader's words). */
const char *proc_state_name(char state);
/* "docker 3f2a1b9c", "slurm job 4411", "k8s pod 1d2e..", or NULL on the host. */
void proc_container(char *buf, size_t size, const struct proc *p);
/* Whether a process field is valid (proc_has); false for NULL (a process the table lacks). */
static inline bool proc_ok(const struct proc *p, enum proc_slot slot)
{
    return p != NULL && proc_has(p, slot);
}

/* Whether NVML (else the fd scan) has the holder as a compute process on the GPU; MPS is not. */
static inline bool holder_compute(const struct facts_holder *h)
{
    return (h->type_mask & GPU_PROC_COMPUTE) != 0;
}
/*
 * Who a process belongs to, to tell owners apart: its container or job, else its user; false when
 * unknown (rules-proc-sharing.c).
 */
bool rules_owner_key(char *buf, size_t size, const struct proc *p);

/* Evidence lines for a GPU's holders, largest first, at most max (rules-mem.c). */
void rules_holder_evidence(const struct rule_ctx *ctx, struct finding *f, const struct facts_gpu *v,
                           size_t max);
/* The device file number of a GPU: its minor number when known, else its index. */
uint32_t gpu_dev_minor(const struct gpu *g);

/*
 * NVML's library missing, or DRIVER_NOT_LOADED, while the driver is there to reach: its module
 * seen loaded, or gpudoctor in a container (DRIVER_NOT_LOADED, or the library missing where the
 * host shows GPUs). health.nvml-failed reports it; stack.no-driver leaves it alone unless the
 * module is known not loaded (then it explains the other).
 */
bool nvml_unreached(const struct snapshot *s);
/*
 * The NVIDIA device files seen ("/dev/nvidiactl is here, with 2 GPU device files"), when the
 * driver collector looked at them and found any (rules-health.c).
 */
void dev_files_evidence(struct finding *f, const struct driver_info *d);

/* Whether NVML hung (its collector timed out, or a call did not return): health.nvml-hung. */
bool nvml_wedged(const struct rule_ctx *ctx);
/*
 * Whether GPU g (or, with g NULL, the GPU at PCI address pci) is lost now: NVML answers
 * GPU_IS_LOST, its handle or all its readings fail with UNKNOWN, or the kernel log says it fell
 * off the bus within klog_max_age_h (health.gpu-lost's evidence).
 */
bool gpu_lost_now(const struct rule_ctx *ctx, const struct gpu *g, const char *pci);

/* Kernel-log events (rules-health.c): age in seconds (-1 unknown), within klog_max_age_h, the GPU
 * of a "0000:3b:00" address, and "12m ago". */
double klog_age_s(const struct rule_ctx *ctx, const struct klog_event *ev);
bool klog_recent(const struct rule_ctx *ctx, const struct klog_event *ev);
/* Whether a kernel log was read (or events came with the snapshot). */
bool klog_source_known(const struct rule_ctx *ctx);
const struct facts_gpu *klog_gpu(const struct rule_ctx *ctx, const char *pci);
/* When a kernel-log event happened, for a finding: "58m ago", and the same for people. */
struct klog_time {
    char en[48];
    char l[96]; /* the translation, or the English when none is in use */
};
void klog_when(struct klog_time *w, const struct rule_ctx *ctx, const struct klog_event *ev);

/*
 * The past in the state file (past.c, docs/state.md). past_find: in how many earlier epochs the
 * state file remembers events of kind (and code: the Xid, else 0) on g, by its serial, else its
 * UUID (a replaced GPU has a new serial and starts clean): boots (boot ids other than this
 * one's) and resets (detected GPU resets known to lie between two occurrences in one boot, or
 * between one and the fault seen now: an Xid's newest line in this boot, else the snapshot's
 * uptime); the newest earlier occurrence in last. False when the past is unknown (no state file,
 * this boot's id unknown: unknown is not "first time") or clean. past_words: "1 reboot", "2 GPU
 * resets", "2 reboots and 1 reset", appended to w in both languages. past_said: the evidence
 * "the state file remembers WHAT (N_() text, or a name such as "Xid 79") on this GPU in N earlier
 * boots (or: before WORDS), the last at TIME", and how this boot's resets were seen. past_escalate
 * (something found): the escalation policy of a fault of the GPU, at least a warning after one
 * reboot or reset, critical after two or when sev is critical already, then with "inspect or
 * replace the GPU", a fix and the serial in the evidence; appends ", again after WORDS[: inspect or
 * replace the GPU]" to suffix and returns the severity.
 */
struct past {
    size_t boots;       /* earlier boots with the fault */
    size_t resets;      /* resets it came back after, in any boot */
    size_t here_resets; /* ... of them in this boot */
    const struct state_event *last;
    const struct state_gpu *sg;
};
bool past_find(const struct rule_ctx *ctx, const struct gpu *g, enum state_event_kind kind,
               int32_t code, struct past *p);
void past_words(const struct past *p, struct text2 *w);
void past_said(struct finding *f, const struct rule_ctx *ctx, const char *what,
               const struct past *p);
enum severity past_escalate(struct finding *f, const struct gpu *g, const struct past *p,
                            enum severity sev, struct text2 *suffix);

/*
 * clock.hw-slowdown's test (rules-clock.c): the GPU's clocks cut by the hardware power brake
 * (*brake), or by a hardware slowdown that persists without a thermal cause (*slow). False when
 * neither, or the clock event reasons were not read.
 */
bool gpu_hw_braked(const struct facts_gpu *v, bool *brake, bool *slow);

/*
 * Whether the GPU's maximum operating temperature, where software thermal slowdown starts, is set
 * far below its slowdown threshold: a platform setting, not heat (rules-clock.c). False when
 * either is unknown or implausible.
 */
bool gpu_max_temp_set_low(const struct gpu *g);
/* The fix lines for such a setting: read it against the threshold, check the platform's policy. */
void gpu_max_temp_set_low_fixes(struct finding *f, const struct gpu *g);

/* Percentages that cope with a zero total. */
double pct(double part, double whole);

/*
 * fix-ids.c: in the fix lines of findings about GPUs whose index the evidence does not give
 * (gpu.index_by_order), `nvidia-smi ... -i N` names the GPU by UUID or PCI address instead.
 */
void findings_name_gpus_by_id(const struct snapshot *s, struct findings *out);

#endif
