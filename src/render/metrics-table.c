/*
 * Every Prometheus metric family gpudoctor exports, one row each: name, type, where the value
 * comes from, labels and help. A GPU field names its key in gpu_table with a unit conversion
 * (G rows); the other sources (S rows) are rendered by the loops of metrics-gpu.c and
 * metrics-health.c. docs/prometheus.md is generated from these rows (serve --describe-metrics).
 */
#include "render/metrics.h"
#include "util/xalloc.h"

/* clang-format off */
#define G(name, type, field, labels, mul, div, help) \
    { name, type, MSRC_GPU_FIELD, field, labels, mul, div, GPU_LABELS, help }
#define S(name, type, source, label_doc, help) \
    { name, type, source, NULL, NULL, 1, 1, label_doc, help }
/* clang-format on */
#define GPU_LABELS "gpu, uuid, name"
#define IB_LABELS  "device, port, link_layer"
/* NVML's labels of the GPU at the same PCI address (else CUDA's name), and the address */
#define BENCH_LABELS GPU_LABELS ", pci_bus_id"
#define GAUGE        METRIC_GAUGE
#define COUNTER      METRIC_COUNTER

/*
 * Rows with the same name must be adjacent (one family, HELP and TYPE once); they differ by
 * their constant labels. tests/unit/test-metrics.c checks that, and that every field exists.
 */
const struct metric_family metric_families[] = {
    S("gpudoctor_build_info", GAUGE, MSRC_BUILD_INFO, "version",
      "always 1; the gpudoctor version in a label"),
    S("gpudoctor_collect_duration_seconds", GAUGE, MSRC_COLLECT_SECONDS, "",
      "time the last collection cycle took (collectors, sampling window and rules); none "
      "before the first"),
    S("gpudoctor_collect_success", GAUGE, MSRC_COLLECT_SUCCESS, "",
      "1 when the last collection cycle produced a snapshot, else 0; none before the first"),
    S("gpudoctor_collect_cycles_total", COUNTER, MSRC_COLLECT_CYCLES, "",
      "collection cycles completed since the exporter started"),
    S("gpudoctor_last_collect_timestamp_seconds", GAUGE, MSRC_COLLECT_TIME, "",
      "Unix time the last collection cycle completed (age = time() - this)"),
    S("gpudoctor_data_age_seconds", GAUGE, MSRC_DATA_AGE, "",
      "seconds since the last collection cycle completed, at the time of the scrape; before "
      "the first, since the exporter started (serve only)"),
    S("gpudoctor_collector_up", GAUGE, MSRC_COLLECTOR_UP, "collector",
      "1 when the collector read everything or part of it, 0 when it failed, timed out or "
      "found nothing to read"),
    S("gpudoctor_collector_duration_seconds", GAUGE, MSRC_COLLECTOR_SECONDS, "collector",
      "time the collector took in the last cycle"),
    S("gpudoctor_nvml_up", GAUGE, MSRC_NVML_UP, "",
      "1 when NVML loaded, initialised and answered before its deadline"),
    S("gpudoctor_nvml_devices", GAUGE, MSRC_NVML_DEVICES, "", "GPUs NVML reports"),
    S("gpudoctor_pci_gpus", GAUGE, MSRC_PCI_GPUS, "",
      "NVIDIA GPUs on the PCI bus, with or without a driver"),
    S("gpudoctor_host_memory_errors_total", COUNTER, MSRC_HOST_MEM_ERRORS, "type",
      "ECC errors of the host's own memory (type uncorrectable or corrected), all memory "
      "controllers, since the EDAC driver's counters were reset (usually the boot); only where "
      "an EDAC driver counts them (host.memory-ecc)"),
    S("gpudoctor_driver_info", GAUGE, MSRC_DRIVER_INFO,
      "driver_version, cuda_version, module_version",
      "always 1; the NVIDIA driver, the CUDA version it supports, and the kernel module"),
    S("gpudoctor_check_status", GAUGE, MSRC_CHECK_STATUS, "",
      "the verdict as `gpudoctor check` exits: 0 healthy, 1 warning, 2 critical, 3 could not "
      "check"),
    S("gpudoctor_findings", GAUGE, MSRC_FINDINGS, "severity",
      "findings of each severity (info, warning, critical)"),
    S("gpudoctor_finding", GAUGE, MSRC_FINDING, "id, severity, subject",
      "one series, value 1, per finding now (`gpudoctor explain ID` tells what it means); "
      "findings of one rule about one subject (two XIDs on one GPU) are one series, with the "
      "severity of the most serious, while `gpudoctor_findings` counts each"),
    S("gpudoctor_finding_acknowledged", GAUGE, MSRC_FINDING_ACK, "id, subject",
      "1 for each finding now acknowledged with `gpudoctor ack` (not counted in "
      "`gpudoctor_findings` nor in `gpudoctor_check_status`; a new event on the GPU ends it)"),

    S("gpudoctor_gpu_info", GAUGE, MSRC_GPU_INFO,
      GPU_LABELS ", pci_bus_id, serial, vbios_version, compute_capability",
      "always 1; the GPU's identity in labels (those NVML gave), for inventories and joins"),
    S("gpudoctor_gpu_up", GAUGE, MSRC_GPU_UP, GPU_LABELS,
      "1 when NVML answers for the GPU, 0 when it is lost or inaccessible"),
    G("gpudoctor_gpu_memory_total_bytes", GAUGE, "mem_total_bytes", NULL, 1, 1,
      "installed GPU memory"),
    G("gpudoctor_gpu_memory_reserved_bytes", GAUGE, "mem_reserved_bytes", NULL, 1, 1,
      "GPU memory reserved by the driver and firmware"),
    G("gpudoctor_gpu_memory_used_bytes", GAUGE, "mem_used_bytes", NULL, 1, 1,
      "GPU memory allocated by processes"),
    G("gpudoctor_gpu_memory_free_bytes", GAUGE, "mem_free_bytes", NULL, 1, 1, "GPU memory free"),
    G("gpudoctor_gpu_bar1_total_bytes", GAUGE, "bar1_total_bytes", NULL, 1, 1,
      "BAR1 aperture size"),
    G("gpudoctor_gpu_bar1_used_bytes", GAUGE, "bar1_used_bytes", NULL, 1, 1,
      "BAR1 aperture in use"),
    G("gpudoctor_gpu_utilization_ratio", GAUGE, "util_gpu_pct", NULL, 1, 100,
      "fraction of the last sample period a kernel was running (0-1)"),
    G("gpudoctor_gpu_memory_utilization_ratio", GAUGE, "util_mem_pct", NULL, 1, 100,
      "fraction of the last sample period memory was read or written (0-1)"),
    G("gpudoctor_gpu_encoder_utilization_ratio", GAUGE, "util_enc_pct", NULL, 1, 100,
      "video encoder utilisation (0-1)"),
    G("gpudoctor_gpu_decoder_utilization_ratio", GAUGE, "util_dec_pct", NULL, 1, 100,
      "video decoder utilisation (0-1)"),
    G("gpudoctor_gpu_temperature_celsius", GAUGE, "temp_c", NULL, 1, 1, "GPU core temperature"),
    G("gpudoctor_gpu_temperature_threshold_celsius", GAUGE, "temp_slowdown_c",
      "threshold=\"slowdown\"", 1, 1,
      "temperature thresholds: slowdown, shutdown, gpu_max and memory_max (operating limits)"),
    G("gpudoctor_gpu_temperature_threshold_celsius", GAUGE, "temp_shutdown_c",
      "threshold=\"shutdown\"", 1, 1, NULL),
    G("gpudoctor_gpu_temperature_threshold_celsius", GAUGE, "temp_gpu_max_c",
      "threshold=\"gpu_max\"", 1, 1, NULL),
    G("gpudoctor_gpu_temperature_threshold_celsius", GAUGE, "temp_mem_max_c",
      "threshold=\"memory_max\"", 1, 1, NULL),
    G("gpudoctor_gpu_power_watts", GAUGE, "power_mw", NULL, 1, 1000, "power draw"),
    G("gpudoctor_gpu_power_limit_watts", GAUGE, "power_limit_mw", "limit=\"current\"", 1, 1000,
      "power limits: current (set), default, enforced (after every limiter), min and max "
      "(settable range)"),
    G("gpudoctor_gpu_power_limit_watts", GAUGE, "power_default_limit_mw", "limit=\"default\"", 1,
      1000, NULL),
    G("gpudoctor_gpu_power_limit_watts", GAUGE, "power_enforced_limit_mw", "limit=\"enforced\"", 1,
      1000, NULL),
    G("gpudoctor_gpu_power_limit_watts", GAUGE, "power_min_limit_mw", "limit=\"min\"", 1, 1000,
      NULL),
    G("gpudoctor_gpu_power_limit_watts", GAUGE, "power_max_limit_mw", "limit=\"max\"", 1, 1000,
      NULL),
    G("gpudoctor_gpu_energy_joules_total", COUNTER, "energy_mj", NULL, 1, 1000,
      "energy used since the driver loaded"),
    G("gpudoctor_gpu_clock_hertz", GAUGE, "clock_graphics_mhz", "clock=\"graphics\"", 1000000, 1,
      "current clocks: graphics, sm, memory, video"),
    G("gpudoctor_gpu_clock_hertz", GAUGE, "clock_sm_mhz", "clock=\"sm\"", 1000000, 1, NULL),
    G("gpudoctor_gpu_clock_hertz", GAUGE, "clock_mem_mhz", "clock=\"memory\"", 1000000, 1, NULL),
    G("gpudoctor_gpu_clock_hertz", GAUGE, "clock_video_mhz", "clock=\"video\"", 1000000, 1, NULL),
    G("gpudoctor_gpu_clock_max_hertz", GAUGE, "clock_graphics_max_mhz", "clock=\"graphics\"",
      1000000, 1, "maximum clocks: graphics, sm, memory"),
    G("gpudoctor_gpu_clock_max_hertz", GAUGE, "clock_sm_max_mhz", "clock=\"sm\"", 1000000, 1, NULL),
    G("gpudoctor_gpu_clock_max_hertz", GAUGE, "clock_mem_max_mhz", "clock=\"memory\"", 1000000, 1,
      NULL),
    G("gpudoctor_gpu_clock_application_hertz", GAUGE, "clock_sm_app_mhz", "clock=\"sm\"", 1000000,
      1, "application clock targets: sm, memory"),
    G("gpudoctor_gpu_clock_application_hertz", GAUGE, "clock_mem_app_mhz", "clock=\"memory\"",
      1000000, 1, NULL),
    G("gpudoctor_gpu_clock_application_default_hertz", GAUGE, "clock_sm_app_default_mhz",
      "clock=\"sm\"", 1000000, 1, "default application clocks: sm, memory"),
    G("gpudoctor_gpu_clock_application_default_hertz", GAUGE, "clock_mem_app_default_mhz",
      "clock=\"memory\"", 1000000, 1, NULL),
    S("gpudoctor_gpu_clock_event_reason", GAUGE, MSRC_CLOCK_REASON, GPU_LABELS ", reason",
      "1 while this reason holds the clocks below maximum, 0 when it does not; one series per "
      "reason the GPU can report (gpu_idle, applications_clocks, sw_power_cap, hw_slowdown, "
      "sync_boost, sw_thermal, hw_thermal, hw_power_brake, display_clock)"),
    G("gpudoctor_gpu_performance_state", GAUGE, "pstate", NULL, 1, 1,
      "performance state, 0 (fastest) to 15; 32 unknown"),
    G("gpudoctor_gpu_fan_speed_ratio", GAUGE, "fan_speed_pct", NULL, 1, 100,
      "intended fan speed as a fraction of the maximum (may exceed 1)"),
    G("gpudoctor_gpu_persistence_mode", GAUGE, "persistence_mode", NULL, 1, 1,
      "1 when the driver stays loaded with no client"),
    G("gpudoctor_gpu_compute_mode", GAUGE, "compute_mode", "mode", 1, 1,
      "always 1; the compute mode in the mode label (default, exclusive_thread, prohibited, "
      "exclusive_process)"),
    G("gpudoctor_gpu_mig_mode", GAUGE, "mig_mode", NULL, 1, 1, "1 when MIG is enabled"),
    G("gpudoctor_gpu_mig_devices", GAUGE, "mig_devices", NULL, 1, 1, "MIG devices that exist"),
    G("gpudoctor_gpu_display_active", GAUGE, "display_active", NULL, 1, 1,
      "1 when a display is initialised on the GPU"),
    G("gpudoctor_gpu_ecc_mode", GAUGE, "ecc_mode", NULL, 1, 1, "1 when ECC is enabled"),
    G("gpudoctor_gpu_ecc_errors_total", COUNTER, "ecc_volatile_corrected",
      "type=\"corrected\",scope=\"volatile\"", 1, 1,
      "ECC errors: corrected or uncorrected, since the driver loaded (volatile) or over the "
      "GPU's life (aggregate)"),
    G("gpudoctor_gpu_ecc_errors_total", COUNTER, "ecc_volatile_uncorrected",
      "type=\"uncorrected\",scope=\"volatile\"", 1, 1, NULL),
    G("gpudoctor_gpu_ecc_errors_total", COUNTER, "ecc_aggregate_corrected",
      "type=\"corrected\",scope=\"aggregate\"", 1, 1, NULL),
    G("gpudoctor_gpu_ecc_errors_total", COUNTER, "ecc_aggregate_uncorrected",
      "type=\"uncorrected\",scope=\"aggregate\"", 1, 1, NULL),
    G("gpudoctor_gpu_retired_pages", GAUGE, "retired_pages_sbe", "cause=\"single_bit\"", 1, 1,
      "memory pages retired, by cause: repeated single-bit or double-bit errors"),
    G("gpudoctor_gpu_retired_pages", GAUGE, "retired_pages_dbe", "cause=\"double_bit\"", 1, 1,
      NULL),
    G("gpudoctor_gpu_retired_pages_pending", GAUGE, "retired_pages_pending", NULL, 1, 1,
      "1 when a page retirement waits for the next reset"),
    G("gpudoctor_gpu_remapped_rows", GAUGE, "remapped_rows_correctable", "cause=\"correctable\"", 1,
      1, "memory rows remapped, by the kind of error that caused it"),
    G("gpudoctor_gpu_remapped_rows", GAUGE, "remapped_rows_uncorrectable",
      "cause=\"uncorrectable\"", 1, 1, NULL),
    G("gpudoctor_gpu_remapped_rows_pending", GAUGE, "remapped_rows_pending", NULL, 1, 1,
      "1 when a row remap waits for the next GPU reset"),
    G("gpudoctor_gpu_remapped_rows_failure", GAUGE, "remapped_rows_failure", NULL, 1, 1,
      "1 when a row remap failed (the GPU needs service)"),
    G("gpudoctor_gpu_pcie_link_generation", GAUGE, "pcie_gen", NULL, 1, 1,
      "PCIe link generation now"),
    G("gpudoctor_gpu_pcie_link_generation_max", GAUGE, "pcie_gen_max", NULL, 1, 1,
      "highest PCIe generation the GPU and its slot allow"),
    G("gpudoctor_gpu_pcie_link_generation_gpu_max", GAUGE, "pcie_gen_gpu_max", NULL, 1, 1,
      "highest PCIe generation the GPU itself supports"),
    G("gpudoctor_gpu_pcie_link_width", GAUGE, "pcie_width", NULL, 1, 1, "PCIe lanes now"),
    G("gpudoctor_gpu_pcie_link_width_max", GAUGE, "pcie_width_max", NULL, 1, 1,
      "most PCIe lanes the GPU and its slot allow"),
    G("gpudoctor_gpu_pcie_throughput_bytes_per_second", GAUGE, "pcie_tx_bytes_per_s",
      "direction=\"tx\"", 1, 1, "PCIe throughput over NVML's 20 ms sample, tx and rx"),
    G("gpudoctor_gpu_pcie_throughput_bytes_per_second", GAUGE, "pcie_rx_bytes_per_s",
      "direction=\"rx\"", 1, 1, NULL),
    G("gpudoctor_gpu_pcie_replays_total", COUNTER, "pcie_replay_count", NULL, 1, 1,
      "PCIe replays (link-level retransmissions)"),
    S("gpudoctor_gpu_nvlink_links_active", GAUGE, MSRC_NVLINK_LINKS_ACTIVE, GPU_LABELS,
      "NVLink links in state active; 0 for a GPU without NVLink (nvlink.down when fewer than its "
      "siblings)"),
    S("gpudoctor_gpu_nvlink_active", GAUGE, MSRC_NVLINK_ACTIVE, GPU_LABELS ", link",
      "1 when the NVLink link is active, else 0; only links the GPU has"),
    S("gpudoctor_gpu_nvlink_errors_total", COUNTER, MSRC_NVLINK_ERRORS,
      GPU_LABELS ", link, counter",
      "the link's data-link error counters since the driver loaded: crc (CRC errors), replay "
      "(retransmissions) and recovery (link recoveries) (nvlink.errors)"),
    S("gpudoctor_gpu_nvlink_data_bytes_total", COUNTER, MSRC_NVLINK_DATA,
      GPU_LABELS ", link, direction",
      "payload bytes the link sent (direction tx) and received (rx) since the driver loaded, "
      "counted by NVML in KiB; rate() of it is the link's traffic"),
    S("gpudoctor_gpu_xid_errors_total", COUNTER, MSRC_XID, GPU_LABELS " (or pci), xid",
      "XID lines of the GPU in the kernel log, by XID code: the log as far as it reaches back "
      "at serve's first collection, then each new line once, so the count never goes down when "
      "the log rotates; a GPU that stopped answering keeps the labels it had (docs/prometheus.md)"),
    S("gpudoctor_gpu_processes", GAUGE, MSRC_GPU_PROCESSES, GPU_LABELS,
      "processes NVML lists on the GPU (compute, graphics, MPS)"),
    S("gpudoctor_process_gpu_memory_bytes", GAUGE, MSRC_PROC_MEMORY,
      "gpu, uuid, pid, command, user",
      "GPU memory a process holds; only the processes holding the most (serve --top-processes)"),
    S("gpudoctor_process_gpu_memory_omitted", GAUGE, MSRC_PROC_DROPPED, "",
      "GPU processes left out of gpudoctor_process_gpu_memory_bytes by --top-processes"),

    /* the node's last `gpudoctor bench` (bench-last.json in the state directory; serve reads it) */
    S("gpudoctor_bench_last_read", GAUGE, MSRC_BENCH_READ, "",
      "1 when the node's last bench result (bench-last.json in the state directory) was read, 0 "
      "when that file is unusable (serve logs why); no series when no bench has run or the state "
      "is off"),
    S("gpudoctor_bench_last_timestamp_seconds", GAUGE, MSRC_BENCH_TIME, "",
      "Unix time the last bench ended (its age = time() - this); the gpudoctor_bench_* figures "
      "are from that run"),
    S("gpudoctor_bench_host_copy_bytes_per_second", GAUGE, MSRC_BENCH_HOST_COPY,
      BENCH_LABELS ", direction, memory",
      "last bench: host-GPU copy bandwidth, direction h2d, d2h or both (at once, the sum), "
      "from pinned or pageable host memory"),
    S("gpudoctor_bench_memory_bytes_per_second", GAUGE, MSRC_BENCH_MEMORY, BENCH_LABELS ", method",
      "last bench: device memory bandwidth, bytes read and written, by the STREAM triad kernel "
      "(method triad) or a device-to-device copy (device_copy)"),
    S("gpudoctor_bench_compute_flops", GAUGE, MSRC_BENCH_FMA, BENCH_LABELS,
      "last bench: FP32 floating-point operations per second of the FMA kernel"),
    S("gpudoctor_bench_checksum_ok", GAUGE, MSRC_BENCH_CHECKSUM, BENCH_LABELS,
      "last bench: 1 when the GPU's checksum equalled the host's computation of the same triad, "
      "0 when it did not (wrong results: bench.checksum-mismatch)"),
    S("gpudoctor_bench_p2p_bytes_per_second", GAUGE, MSRC_BENCH_P2P,
      "src_gpu, src_pci_bus_id, dst_gpu, dst_pci_bus_id",
      "last bench: peer-to-peer copy bandwidth from one GPU to another"),
    S("gpudoctor_bench_p2p_latency_seconds", GAUGE, MSRC_BENCH_P2P_LATENCY,
      "src_gpu, src_pci_bus_id, dst_gpu, dst_pci_bus_id",
      "last bench: time of a 4-byte peer-to-peer copy"),

    /* InfiniBand / RoCE ports from sysfs (docs/fabric.md) */
    S("gpudoctor_ib_port_active", GAUGE, MSRC_IB_PORT_ACTIVE, IB_LABELS,
      "1 when the port is ACTIVE with its physical link up, else 0 (ib.port-down)"),
    S("gpudoctor_ib_port_rate_bytes_per_second", GAUGE, MSRC_IB_PORT_RATE, IB_LABELS,
      "the rate the port negotiated, in bytes (5e10 for 4X NDR, 400 Gb/s)"),
    S("gpudoctor_ib_port_errors_total", COUNTER, MSRC_IB_PORT_ERRORS, IB_LABELS ", counter",
      "the port's error counters by their sysfs names (symbol_error, link_downed, ...), since "
      "they were last reset; they saturate instead of wrapping (symbol_error at 65535)"),
    S("gpudoctor_ib_port_receive_bytes_total", COUNTER, MSRC_IB_PORT_RCV_BYTES, IB_LABELS,
      "data the port received (port_rcv_data × 4)"),
    S("gpudoctor_ib_port_transmit_bytes_total", COUNTER, MSRC_IB_PORT_XMIT_BYTES, IB_LABELS,
      "data the port sent (port_xmit_data × 4)"),
    S("gpudoctor_ib_peermem_loaded", GAUGE, MSRC_IB_PEERMEM, "",
      "1 when the GPUDirect RDMA module (nvidia_peermem or nv_peer_mem) is loaded, 0 when not; "
      "only on a machine with InfiniBand or RoCE ports (ib.peermem-missing)"),

    /* NVSwitches and Fabric Manager (docs/fabric.md) */
    S("gpudoctor_nvswitches", GAUGE, MSRC_NVSWITCHES, "",
      "NVSwitches on the PCI bus (0 on a machine without)"),
    S("gpudoctor_nvswitch_driver_bound", GAUGE, MSRC_NVSWITCH_BOUND, "pci",
      "1 when the NVSwitch driver took the switch (its /proc/driver/nvidia-nvswitch entry), 0 "
      "when its probe failed; only where that view was read "
      "(fabric.switch-not-initialized)"),
    S("gpudoctor_fabric_manager_running", GAUGE, MSRC_FM_RUNNING, "",
      "1 when a Fabric Manager process (nv-fabricmanager) runs, 0 when not; only where there are "
      "NVSwitches or Fabric Manager is installed (fabric.fm-not-running)"),
    S("gpudoctor_fabric_manager_info", GAUGE, MSRC_FM_INFO, "version",
      "always 1; the Fabric Manager version (its package's, else its log's), which must equal "
      "gpudoctor_driver_info's (fabric.fm-version)"),
    S("gpudoctor_fabric_manager_log_errors", GAUGE, MSRC_FM_LOG_ERRORS, "",
      "[ERROR] and [FATAL] lines in the Fabric Manager log since it last started "
      "(fabric.fm-errors)"),
    S("gpudoctor_nvswitch_sxid_errors_total", COUNTER, MSRC_SXID, "pci, fatal",
      "SXid lines of the NVSwitch in the kernel log, fatal or not, counted as the XID lines are "
      "(fabric.sxid)"),
};
#undef G
#undef S

const size_t n_metric_families = ARRAY_SIZE(metric_families);
