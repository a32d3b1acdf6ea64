/*
 * `gpudoctor snapshot --describe`: the snapshot's documentation, generated from the same field
 * tables that write and read it, so docs/snapshot.md cannot drift from the code (a test compares
 * them).
 */
#include "snapshot/snapshot-doc.h"
#include "nvml/nvml-abi.h"
#include "snapshot/snapshot.h"
#include "util/xalloc.h"

#include <string.h>

struct doc_section {
    const char *path;  /* where the object sits in the document */
    const char *intro; /* a paragraph */
    const struct jtable *table;
};

static const struct doc_section sections[] = {
    { "nvml",
      "What NVML says about the system, and how loading and talking to it went. Return codes are "
      "NVML's (0 = success; see the table at the end).",
      &nvml_system_table },
    { "gpus[]",
      "One object per GPU NVML reports, in NVML index order. A GPU whose handle could not be "
      "obtained has only `index` and `handle_status` (e.g. `\"GPU_IS_LOST\"`). Every other field "
      "is `null` when it could not be read, and `nvml_status` then maps the field to the NVML "
      "return code of the call that failed (`\"NOT_SUPPORTED\"`, `\"NO_PERMISSION\"`, "
      "`\"GPU_IS_LOST\"`…, or `\"NOT_COLLECTED\"` when it was not asked). The simulator reads "
      "these same keys as its scenario. `index_by_order`, true (imported evidence only), says "
      "`index` is the GPU's place among the blocks of a partial `nvidia-smi -q`, not NVML's "
      "index: fix lines then name the GPU by UUID or PCI address.",
      &gpu_table },
    { "gpus[].processes[]",
      "The processes NVML lists on the GPU (compute, graphics and MPS lists merged per pid). "
      "`type` is a list of `\"compute\"`, `\"graphics\"`, `\"mps\"`.",
      &gpu_proc_table },
    { "processes",
      "GPU processes: one pass over /proc (every process's open /dev/nvidia* files) joined with "
      "NVML's lists by host pid (docs/processes.md). The table holds GPU processes, their "
      "direct children (data-loader workers) and their ancestors up to init (the launcher, the "
      "shell, sshd: with stat, status, cgroup and cmdline only, for `gpudoctor procs --tree`).",
      &proc_table_jtable },
    { "processes.processes[]",
      "One process. Identity is (`pid`, `start_ticks`), never the pid alone.", &proc_jtable },
    { "processes.processes[].gpus[]", "One GPU the process uses.", &proc_gpu_jtable },
    { "processes.processes[].libs[]",
      "GPU libraries mapped into the process (from /proc/PID/maps).", &proc_lib_jtable },
    { "host",
      "CPU, memory, swap and pressure of the host (docs/host.md says where each value comes from). "
      "Rates and `_window_` values need a sampling window and are `null` with `--window 0`.",
      &host_info_table },
    { "host.disks[]", "Whole disks, with their activity over the window.", &host_disk_table },
    { "host.filesystems[]",
      "Free space of the file systems holding `/`, `/tmp` and the working directories of GPU "
      "processes, one entry per file system; `paths` lists the directories asked about.",
      &host_fs_table },
    { "pcie", "NVIDIA PCI devices as sysfs shows them, with or without a driver (docs/pcie.md).",
      &pcie_info_table },
    { "pcie.gpus[]", "One NVIDIA display-class device.", &pcie_device_table },
    { "pcie.gpus[].upstream[]", "The bridges above the GPU, nearest first.", &pcie_bridge_table },
    { "pcie.gpus[].peers[]",
      "Other high-bandwidth devices (NICs, NVMe drives, GPUs) under the same PCIe switch: they "
      "share its uplink.",
      &pcie_peer_table },
    { "pcie.nics[]",
      "Network cards under a PCIe switch that a GPU is also under (at any level): GPUDirect RDMA "
      "between them crosses the card's switch ports.",
      &pcie_nic_table },
    { "pcie.nics[].upstream[]",
      "The bridges above the card, nearest first; ACS is read on its switch's downstream ports up "
      "to the lowest switch it shares with each GPU.",
      &pcie_bridge_table },
    { "driver", "The NVIDIA kernel module and the kernel log (docs/driver.md).",
      &driver_info_table },
    { "driver.events[]",
      "NVIDIA-related kernel-log events, most recent last: XIDs, fallen off the bus, PCI-to-UUID "
      "lines, hung tasks, OOM kills.",
      &klog_event_table },
    { "stack", "The CUDA software stack (docs/stack.md).", &stack_info_table },
    { "stack.toolkits[]", "CUDA toolkits installed.", &stack_toolkit_table },
    { "stack.libraries[]", "CUDA libraries the dynamic linker knows.", &stack_lib_table },
    { "stack.frameworks[]", "Framework builds found through the interpreters of GPU processes.",
      &stack_framework_table },
    { "bench", "What `gpudoctor bench` measured (docs/bench.md); only in snapshots bench wrote.",
      &bench_info_table },
    { "bench.gpus[]", "One GPU's figures, expectations and baseline.", &bench_gpu_table },
    { "bench.pairs[]", "One ordered pair of GPUs: peer-to-peer copies.", &bench_pair_table },
    { "ib",
      "InfiniBand and RoCE ports from /sys/class/infiniband, and the GPUDirect RDMA module "
      "(docs/fabric.md). Written when the `ib` collector read something; a machine without "
      "InfiniBand has `devices` 0 and no ports.",
      &ib_info_table },
    { "ib.ports[]",
      "One port of one RDMA device. Counters are since they were last reset (and saturate at "
      "their width); `_window` values are their growth over the sampling window and `null` with "
      "`--window 0`.",
      &ib_port_table },
    { "fabric",
      "NVSwitches on the PCI bus, the NVSwitch driver's view of them, and NVIDIA Fabric Manager: "
      "installed, version, running, enabled, its log's errors since it last started "
      "(docs/fabric.md). Written when the `fabric` collector read something; a machine without "
      "NVSwitch and without Fabric Manager has an empty `switches` list and nothing else. "
      "NVSwitch errors (SXids) are `driver.events[]` of kind `sxid`. Snapshots written before "
      "gpudoctor read the driver's view lack `nvswitch_proc` and each switch's `driver_bound` and "
      "`bios_version`: they read back as unknown (`null`).",
      &fabric_info_table },
    { "fabric.switches[]",
      "One NVSwitch. `driver_bound` is `false` only when the driver's view is `present` and has no "
      "entry for the switch: its probe failed.",
      &fabric_switch_table },
    { "fabric.log_lines[]", "One error line of the Fabric Manager log.", &fabric_log_line_table },
    { "reported.errors[]",
      "The error texts the user saw, given with `--error TEXT` to `check` or `snapshot` "
      "(docs/reported-errors.md), and what gpudoctor's catalogue (data/cuda-errors.tsv) recognised "
      "in each. The section is written only when an error was given; a snapshot read back is "
      "recognised again with this gpudoctor's catalogue.",
      &reported_error_table },
    { "samples[].host", "The host part of each sample.", &host_sample_table },
    { "samples[].processes[]", "Each table process's CPU time at the sample.",
      &proc_sample_jtable },
    { "gpus[].nvlink[]",
      "One NVLink of the GPU: the links nvmlDeviceGetNvLinkState answers for, 0 to 35 (a GPU "
      "without NVLink has `nvlink` null and `nvml_status.nvlink` `\"NOT_SUPPORTED\"`). Each value "
      "has its own status in the link's `nvml_status`: the counters are field values, which fail "
      "one by one (`\"NOT_SUPPORTED\"` on drivers that do not give them). Counters are since the "
      "driver loaded. Samples carry `link`, `active` and the counters (docs/nvml.md).",
      &gpu_nvlink_table },
    { "gpus[].fabric",
      "The GPU's registration with the NVLink fabric (NVSwitch systems, Hopper and later; "
      "`null` with `nvml_status.fabric` `\"NOT_SUPPORTED\"` elsewhere). Read once, not in samples.",
      &gpu_fabric_table },
    { "gpus[].peers[]",
      "Another GPU as this one reaches it: their closest common ancestor and whether P2P works "
      "between them (nvmlDeviceGetTopologyCommonAncestor, nvmlDeviceGetP2PStatus). Every other "
      "GPU NVML gave a handle for, each value with its own status in the entry's `nvml_status`; "
      "a driver that answers neither call has `peers` null with its status. Read once, not in "
      "samples; not read past 64 GPUs (docs/nvml.md).",
      &gpu_peer_table },
};

static const char *type_name(const struct jfield *f)
{
    switch (f->type) {
    case JF_STR:
        return "string";
    case JF_U32:
    case JF_U64:
        return "integer ≥ 0";
    case JF_LIMIT:
        return "integer ≥ 0 or \"unlimited\"";
    case JF_I32:
    case JF_I64:
        return "integer";
    case JF_BOOL:
        return "boolean";
    case JF_DOUBLE:
        return "number";
    case JF_HEX32:
    case JF_HEX64:
        return "hex string";
    case JF_ENUM:
        return "string (enum)";
    case JF_NONE:
        return "list or null";
    }
    return "?";
}

/* Table cells cannot hold a bare '|'. */
static void put_cell(FILE *out, const char *text)
{
    for (const char *c = text; *c; c++) {
        if (*c == '|')
            fputc('\\', out);
        fputc(*c, out);
    }
}

static void describe_table(FILE *out, const struct doc_section *sec)
{
    const struct jtable *t = sec->table;
    bool has_source = false;

    for (size_t i = 0; i < t->n_fields; i++)
        has_source |= t->fields[i].source != NULL;
    fprintf(out, "## `%s`\n\n%s\n\n", sec->path, sec->intro);
    fprintf(out, has_source ? "| key | type | from | meaning |\n|---|---|---|---|\n"
                            : "| key | type | meaning |\n|---|---|---|\n");
    for (size_t i = 0; i < t->n_fields; i++) {
        const struct jfield *f = &t->fields[i];

        fprintf(out, "| `%s` | %s", f->name, type_name(f));
        if (has_source)
            fprintf(out, " | %s%s%s", f->source ? "`" : "", f->source ? f->source : "",
                    f->source ? "`" : "");
        fputs(" | ", out);
        put_cell(out, f->doc ? f->doc : "");
        if (f->type == JF_ENUM) {
            fputs(": ", out);
            for (size_t k = 0; f->enum_names[k] != NULL; k++)
                fprintf(out, "%s`%s`", k ? ", " : "", f->enum_names[k]);
        }
        if (f->flags & JF_DYNAMIC)
            fputs(" *(sampled)*", out);
        fputs(" |\n", out);
    }
    fputc('\n', out);
}

void snapshot_describe(FILE *out)
{
    fputs(
        "# The snapshot: `" SNAPSHOT_SCHEMA "`\n"
        "\n"
        "<!-- Generated by `gpudoctor snapshot --describe` from the field tables in "
        "src/snapshot/snap-*.c;\n"
        "     tests/e2e/docs-snapshot.sh fails when this file and the code disagree. -->\n"
        "\n"
        "`gpudoctor snapshot` writes everything gpudoctor saw as one JSON document; `gpudoctor "
        "check\n"
        "--from FILE` reads it back and runs exactly the rules a live check runs. Writing, reading "
        "and\n"
        "writing again gives the same bytes.\n"
        "\n"
        "Conventions:\n"
        "\n"
        "- Values are in base units and the key names the unit: `_bytes`, `_mw` (milliwatts), "
        "`_mj`\n"
        "  (millijoules), `_c` (degrees Celsius), `_mhz`, `_pct` (percent), `_ms`, `_us`, `_s`.\n"
        "- A value that could not be read is `null`, never 0. GPU fields say why in "
        "`nvml_status`;\n"
        "  other sections say it in `collectors.<name>.notes`.\n"
        "- Version 1 gains optional keys as gpudoctor reads more (`host.container`, "
        "`fabric.nvswitch_proc`):\n"
        "  an older snapshot without them reads, the values unknown. Readers reject keys they do "
        "not\n"
        "  know, so a typo in a hand-written file is an error with its line and column, and a "
        "snapshot\n"
        "  is read by the gpudoctor that wrote it or a newer one. A key is never removed or given "
        "another\n"
        "  meaning without a new schema name.\n"
        "- Fields marked *(sampled)* are also recorded in every entry of `samples`.\n"
        "- Strings are safe to print: a control character (C0 with TAB, CR and LF, DEL, C1 "
        "such as\n"
        "  CSI), a line separator or bidirectional override (U+2028, U+2029, U+202A..U+202E,\n"
        "  U+2066..U+2069) and a byte that is not UTF-8 become `?`, one for each byte, both when\n"
        "  gpudoctor reads them live (command lines, user names, kernel-log lines, NVML) and when "
        "it\n"
        "  reads a snapshot, so a hand-made file cannot put an escape sequence on a terminal or\n"
        "  reorder a fix line through `check --from`.\n"
        "- A snapshot is text of at most 256 MiB (a NUL byte is an error naming its line and "
        "column).\n"
        "  Its `gpus`, `processes.processes` and `samples` are read one element at a time when "
        "`schema`\n"
        "  is its first key, as gpudoctor writes it: a big snapshot costs about twice its size "
        "in\n"
        "  memory, not eight times (docs/performance.md).\n"
        "\n"
        "## Top level\n"
        "\n"
        "| key | type | meaning |\n"
        "|---|---|---|\n"
        "| `schema` | string | `\"" SNAPSHOT_SCHEMA "\"` |\n"
        "| `gpudoctor_version` | string | version of the gpudoctor that wrote it |\n"
        "| `hostname` | string | the machine |\n"
        "| `time_ms` | integer | Unix time of the capture, milliseconds; under a `--root` other "
        "than `/`, the tree's own clock (btime in its proc/stat plus its proc/uptime) when it "
        "has both |\n"
        "| `time_utc` | string | the same, ISO 8601 (informational; `time_ms` is read) |\n"
        "| `window_ms` | integer | the sampling window covered (0 = one reading; shorter than "
        "`--window` when `--timeout` ended it) |\n"
        "| `root` | string | root directory the host collectors read (`/` when live) |\n"
        "| `collectors` | object | per collector: how it went (below) |\n"
        "| `nvml` | object | NVML library and system (below) |\n"
        "| `gpus` | array | one object per GPU (below) |\n"
        "| `processes` | object | GPU processes seen from /proc joined with NVML |\n"
        "| `host` | object | CPU, memory, swap, pressure, disks, free space, kernel |\n"
        "| `pcie` | object | NVIDIA PCI devices from sysfs: links, upstream chain, peers, AER |\n"
        "| `driver` | object | kernel module version and kernel-log events (XIDs, ...) |\n"
        "| `stack` | object | CUDA toolkits, libraries, framework builds |\n"
        "| `ib` | object | InfiniBand / RoCE ports, counters, GPUDirect RDMA module (when read) |\n"
        "| `fabric` | object | NVSwitches and Fabric Manager (when read) |\n"
        "| `reported` | object | the errors the user gave with `--error` (when given) |\n"
        "| `samples` | array | the history over the window (below) |\n"
        "\n"
        "## `collectors.<name>`\n"
        "\n"
        "One object for each collector: `nvml`, `processes`, `host`, `pcie`, `driver`, "
        "`kernel_log`,\n`stack`, `ib`, `fabric`.\n"
        "\n"
        "| key | type | meaning |\n"
        "|---|---|---|\n"
        "| `state` | string | `ok`, `partial`, `unavailable`, `no_permission`, `failed`, "
        "`timeout`, `not_run` |\n"
        "| `detail` | string or null | one line: why the state is not `ok` |\n"
        "| `notes` | array of strings | what could not be read and why, one line each |\n"
        "| `elapsed_us` | integer | time the collector took |\n"
        "\n",
        out);
    for (size_t i = 0; i < ARRAY_SIZE(sections); i++)
        describe_table(out, &sections[i]);
    fputs("## `samples[]`\n"
          "\n"
          "The history over the sampling window, oldest first; the first sample is taken at the "
          "start.\n"
          "Each holds `t_ms` (milliseconds since the first sample), `gpus` (each GPU's `index` and "
          "its\n"
          "*(sampled)* fields, with `processes` holding each process's `pid` and sampled fields), "
          "`host`\n"
          "and `processes` (see those sections).\n"
          "\n"
          "## NVML return codes\n"
          "\n"
          "| code | name |\n"
          "|---|---|\n",
          out);
    for (int rc = 0; rc <= 999; rc++) {
        const char *name = nvml_rc_name(rc);

        if (name != NULL)
            fprintf(out, "| %d | `%s` |\n", rc, name);
    }
}
