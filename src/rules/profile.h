/*
 * Expected-hardware profiles: what a node must have (GPU count and model, memory per GPU, PCIe
 * generation and width, NVLink links, InfiniBand ports and rate, driver / CUDA / Fabric Manager
 * versions, VBIOS). A profile is the [profile] section of a configuration file, written by hand
 * or by `gpudoctor profile save` from a known-good node. The profile.* rules (rules-profile.c)
 * report every deviation as a finding; `gpudoctor fleet` judges nodes by profiles.
 *
 * The keys are rows of one table (profile_keys): name, type, the rule that reports them, and the
 * snapshot section they need. A key whose section the snapshot does not have yet (NVLink,
 * InfiniBand, Fabric Manager) is "not in the evidence": never a mismatch, said as not checked.
 * What a node has is read into profile_facts (from a snapshot here, from Prometheus series in
 * fleet), so the comparison is one function whatever the source.
 */
#ifndef GPUDOCTOR_RULES_PROFILE_H
#define GPUDOCTOR_RULES_PROFILE_H

#include "snapshot/snapshot.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum profile_key_id {
    PK_GPU_COUNT,
    PK_GPU_MODEL,
    PK_GPU_MEMORY_MIB,
    PK_PCIE_GEN,
    PK_PCIE_WIDTH,
    PK_NVLINK_COUNT,
    PK_IB_PORTS,
    PK_IB_RATE_GBPS,
    PK_DRIVER_VERSION,
    PK_CUDA_VERSION,
    PK_FABRICMANAGER_VERSION,
    PK_VBIOS_VERSION,
    PK__COUNT
};

enum profile_type {
    PROFILE_INT,  /* a whole number in the key's range */
    PROFILE_TEXT, /* a string, compared exactly */
};

/* How a node's value is held against the profile's. */
enum profile_cmp {
    PROFILE_EQUAL,    /* must be the same */
    PROFILE_AT_LEAST, /* less is a deviation, more is not (a faster link is no fault) */
    PROFILE_NEAR,     /* within PROFILE_NEAR_PCT percent (memory: drivers reserve a little more) */
};

/* Memory per GPU may differ from the profile's by this much before it is a deviation. */
#define PROFILE_NEAR_PCT 1.0

struct profile_key_def {
    const char *name; /* the key in the [profile] section: "gpu_count" */
    enum profile_type type;
    enum profile_cmp cmp;
    int64_t min, max;    /* PROFILE_INT's accepted range */
    bool per_gpu;        /* compared for every GPU (model, memory, link, VBIOS) */
    const char *rule;    /* the rule that reports a deviation: "profile.gpu-count" */
    const char *section; /* the snapshot section it needs when there is none yet ("nvlink"),
                            else NULL: then the snapshot has it today */
    const char *unit;    /* "MiB", "lanes", ... ("" when none) */
    const char *help;    /* one line */
};

extern const struct profile_key_def profile_keys[PK__COUNT];

/* The key named name, or -1. */
int profile_key_find(const char *name);

/* A profile: the keys given, each with its value and where it was set. */
struct profile {
    bool set[PK__COUNT];
    int64_t num[PK__COUNT];  /* PROFILE_INT */
    char *text[PK__COUNT];   /* PROFILE_TEXT */
    char *origin[PK__COUNT]; /* "file:line" or "--set" */
    char *source;            /* the file it came from, NULL when only --set made it */
    /* profile_from_facts: the evidence had no section for the key (profile_format says so). */
    bool absent[PK__COUNT];
};

struct profile *profile_new(void);
void profile_free(struct profile *p);
/* Whether any key is set. */
bool profile_empty(const struct profile *p);
/*
 * Sets key id from its text value (already unquoted). Returns 0, or -1 with *cause saying what is
 * wrong with the value (the caller adds where, and frees it). origin is copied.
 */
int profile_set(struct profile *p, int id, const char *value, const char *origin, char **cause);
/* The value of a set key as text ("8", "NVIDIA H100 80GB HBM3") into buf. */
void profile_value(const struct profile *p, int id, char *buf, size_t size);

/*
 * The value of a [profile] line as written: bare (surrounding blanks trimmed) or in double quotes
 * with \" and \\ inside. Returns a new string, or NULL with *cause set (an unterminated quote,
 * text after the closing quote).
 */
char *profile_unquote(const char *value, char **cause);
/* value written for a [profile] line: in double quotes, '"' and '\' escaped. Caller frees. */
char *profile_quote(const char *value);

/* ---- what a node has ---- */

/* One GPU's facts. Strings NULL and flags false when unknown. */
struct profile_gpu_facts {
    int32_t index;
    char *model;
    bool mem_valid;
    uint64_t mem_mib;
    bool gen_valid;
    uint32_t pcie_gen; /* the highest generation the GPU and its slot allow */
    bool width_valid;
    uint32_t pcie_width; /* lanes the link runs now */
    bool nvlink_valid;
    uint32_t nvlinks; /* NVLink links active (0 on a GPU without NVLink) */
    char *vbios;
};

struct profile_facts {
    bool count_valid;
    uint32_t gpu_count;
    char *count_source; /* "NVML", "the PCI bus" */
    uint32_t pci_gpus;  /* NVIDIA GPUs on the PCI bus, when pci_valid */
    bool pci_valid;
    struct profile_gpu_facts *gpus;
    size_t n_gpus;
    char *driver_version;        /* NULL when unknown */
    char *cuda_version;          /* "12.4": the CUDA version the driver supports */
    char *fabricmanager_version; /* "550.54.15", NULL when unknown or none */
    bool ib_ports_valid;
    uint32_t ib_ports; /* InfiniBand (not RoCE) ports ACTIVE */
    bool ib_rate_valid;
    uint32_t ib_rate_gbps;       /* the slowest of them */
    bool has_section[PK__COUNT]; /* the key's section exists in the evidence */
};

/* What the snapshot says the node has. Free with profile_facts_free. */
void profile_facts_from_snapshot(struct profile_facts *f, const struct snapshot *s);
void profile_facts_free(struct profile_facts *f);
/* "12.4" for the driver's CUDA version 12040 into buf. */
void profile_cuda_text(char *buf, size_t size, int32_t cuda_driver_version);

/* ---- the comparison ---- */

enum profile_outcome {
    PROFILE_DEVIATES,        /* the node differs */
    PROFILE_UNKNOWN,         /* the evidence has the section but not this value (NVML failed) */
    PROFILE_NOT_IN_EVIDENCE, /* the snapshot has no section for it yet: never a mismatch */
};

struct profile_deviation {
    int key;     /* enum profile_key_id */
    int32_t gpu; /* -1: the node */
    enum profile_outcome outcome;
    bool fewer;     /* the node has less than the profile (count, generation, width, memory) */
    char *expected; /* the profile's value, as text */
    char *found;    /* the node's, as text; NULL when unknown */
};

/*
 * Holds the node's facts against the profile: one deviation per key (per GPU for per-GPU keys)
 * that differs, cannot be known, or is not in the evidence. Returns how many, in *out (the caller
 * frees with profile_deviations_free).
 */
size_t profile_compare(const struct profile *p, const struct profile_facts *f,
                       struct profile_deviation **out);
void profile_deviations_free(struct profile_deviation *d, size_t n);

/*
 * A profile from the node's facts, for `profile save`: every key the evidence has a value for.
 * Where the GPUs disagree (two models, two VBIOS versions) the most common value is taken and a
 * line for *notes says so (one per key; the caller frees each and the array). Returns NULL when
 * no GPU fact is known at all.
 */
struct profile *profile_from_facts(const struct profile_facts *f, char ***notes, size_t *n_notes);

/*
 * The profile as a [profile] section (config syntax), every key in table order; keys not in the
 * evidence as comments. header: comment lines to put first (may be NULL). The caller frees it.
 */
char *profile_format(const struct profile *p, const char *header);

#endif
