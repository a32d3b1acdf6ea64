#!/usr/bin/env python3
"""An NVML client of our own that shares nothing with the simulator.

It loads an NVML library with ctypes, declares NVIDIA's structs itself from the public header
(nvml.h 13.3.29, NVIDIA/go-nvml gen/nvml/nvml.h at 2f9e261; sizes and offsets as in
../shared/reference/nvml-facts.md), calls every function the library exports the way NVIDIA's
bindings do (versioned names first, then the fallbacks; struct versions set with the version
macros; buffers of the header's sizes; the two-call protocol), and checks each return code and
value against what the scenario file says, read here with Python's own json module and the
rules of docs/simulator.md. Nothing of the simulator's C code or headers is used.

    nvml-binding-check.py LIB SCENARIO [--expect FILE] [--only NAME,...]

SCENARIO is what the library serves (NVML_SIM_SCENARIO); --expect names another scenario to
check against instead (the e2e test uses it to prove that a wrong value or return code fails).
Every exported nvml* function must be checked: the dynamic symbol table of LIB is read here.
Exit status 0 when every check passed, 1 otherwise, with one line per failed check.
"""
import ctypes
import json
import os
import struct
import sys
import time

# ---- return codes (nvmlReturn_t) ----
SUCCESS = 0
UNINITIALIZED = 1
INVALID_ARGUMENT = 2
NOT_SUPPORTED = 3
NO_PERMISSION = 4
NOT_FOUND = 6
INSUFFICIENT_SIZE = 7
FUNCTION_NOT_FOUND = 13
ARGUMENT_VERSION_MISMATCH = 25
LIBRARY_NOT_FOUND = 12
UNKNOWN = 999

RC_NAMES = [
    "SUCCESS", "UNINITIALIZED", "INVALID_ARGUMENT", "NOT_SUPPORTED", "NO_PERMISSION",
    "ALREADY_INITIALIZED", "NOT_FOUND", "INSUFFICIENT_SIZE", "INSUFFICIENT_POWER",
    "DRIVER_NOT_LOADED", "TIMEOUT", "IRQ_ISSUE", "LIBRARY_NOT_FOUND", "FUNCTION_NOT_FOUND",
    "CORRUPTED_INFOROM", "GPU_IS_LOST", "RESET_REQUIRED", "OPERATING_SYSTEM",
    "LIB_RM_VERSION_MISMATCH", "IN_USE", "MEMORY", "NO_DATA", "VGPU_ECC_NOT_SUPPORTED",
    "INSUFFICIENT_RESOURCES", "FREQ_NOT_SUPPORTED", "ARGUMENT_VERSION_MISMATCH", "DEPRECATED",
    "NOT_READY", "GPU_NOT_FOUND", "INVALID_STATE", "RESET_TYPE_NOT_SUPPORTED",
]

# nvmlErrorString of the real library. 0-20, 23, 999: NVIDIA's nvml_error_strings.h
# (NVIDIA/DCGM), matching nvidia-smi's "Failed to initialize NVML: ..." lines; 25: the text
# NVIDIA/go-nvml#138 reports; 27: the text gpuopenanalytics/pynvml#54 reports; the others: the
# comment of the code in the 13.3.29 header (no public report of the library's own text).
ERROR_TEXTS = {
    0: "Success", 1: "Uninitialized", 2: "Invalid Argument", 3: "Not Supported",
    4: "Insufficient Permissions", 5: "Already Initialized", 6: "Not Found",
    7: "Insufficient Size", 8: "Insufficient External Power", 9: "Driver Not Loaded",
    10: "Timeout", 11: "Interrupt Request Issue", 12: "NVML Shared Library Not Found",
    13: "Function Not Found", 14: "Corrupted infoROM", 15: "GPU is lost",
    16: "GPU requires reset", 17: "GPU access blocked by the operating system",
    18: "Driver/library version mismatch", 19: "In use by another client",
    20: "Insufficient Memory", 21: "No data",
    22: "The requested vgpu operation is not available on target device, becasue ECC is enabled",
    23: "Insufficient Resources", 24: "Ran out of critical resources, other than memory",
    25: "Argument version mismatch", 26: "The requested functionality has been deprecated",
    27: "System is not in ready state", 28: "No GPUs were found",
    29: "Resource not in correct state to perform requested operation",
    30: "Reset not supported for given device/parameters", 999: "Unknown Error",
}


def rc_of_name(name):
    if isinstance(name, int):
        return name
    for prefix in ("NVML_ERROR_", "NVML_"):
        if name.startswith(prefix):
            name = name[len(prefix):]
    return UNKNOWN if name == "UNKNOWN" else RC_NAMES.index(name)


# ---- NVIDIA's structs, declared from the header ----
c_uint, c_ulonglong, c_int, c_char = ctypes.c_uint, ctypes.c_ulonglong, ctypes.c_int, ctypes.c_char


class PciInfo(ctypes.Structure):  # nvmlPciInfo_t, _v3: 68 bytes
    _fields_ = [("busIdLegacy", c_char * 16), ("domain", c_uint), ("bus", c_uint),
                ("device", c_uint), ("pciDeviceId", c_uint), ("pciSubSystemId", c_uint),
                ("busId", c_char * 32)]


class PciInfoLegacy(ctypes.Structure):  # unversioned and _v2: the pre-415 layout, 52 bytes
    _fields_ = [("busId", c_char * 16), ("domain", c_uint), ("bus", c_uint), ("device", c_uint),
                ("pciDeviceId", c_uint), ("pciSubSystemId", c_uint), ("reserved", c_uint * 4)]


class Memory(ctypes.Structure):  # nvmlMemory_t: 24 bytes
    _fields_ = [("total", c_ulonglong), ("free", c_ulonglong), ("used", c_ulonglong)]


class Memory2(ctypes.Structure):  # nvmlMemory_v2_t: 40 bytes
    _fields_ = [("version", c_uint), ("total", c_ulonglong), ("reserved", c_ulonglong),
                ("free", c_ulonglong), ("used", c_ulonglong)]


class Bar1(ctypes.Structure):
    _fields_ = [("bar1Total", c_ulonglong), ("bar1Free", c_ulonglong), ("bar1Used", c_ulonglong)]


class Utilization(ctypes.Structure):
    _fields_ = [("gpu", c_uint), ("memory", c_uint)]


class ProcInfo1(ctypes.Structure):  # nvmlProcessInfo_v1_t: 16 bytes
    _fields_ = [("pid", c_uint), ("usedGpuMemory", c_ulonglong)]


class ProcInfo2(ctypes.Structure):  # nvmlProcessInfo_v2_t: 24 bytes
    _fields_ = [("pid", c_uint), ("usedGpuMemory", c_ulonglong), ("gpuInstanceId", c_uint),
                ("computeInstanceId", c_uint)]


class ProcInfoR535(ctypes.Structure):  # _v3 of drivers 535.43.02 to 535.86.05: 32 bytes
    _fields_ = ProcInfo2._fields_ + [("usedGpuCcProtectedMemory", c_ulonglong)]


class ProcUtilSample(ctypes.Structure):  # nvmlProcessUtilizationSample_t: 32 bytes
    _fields_ = [("pid", c_uint), ("timeStamp", c_ulonglong), ("smUtil", c_uint),
                ("memUtil", c_uint), ("encUtil", c_uint), ("decUtil", c_uint)]


class Temperature1(ctypes.Structure):  # nvmlTemperature_v1_t: 12 bytes
    _fields_ = [("version", c_uint), ("sensorType", c_int), ("temperature", c_int)]


class FabricInfo(ctypes.Structure):  # nvmlGpuFabricInfo_t: 28 bytes
    _fields_ = [("clusterUuid", ctypes.c_ubyte * 16), ("status", c_int), ("cliqueId", c_uint),
                ("state", ctypes.c_ubyte)]


class FabricInfo3(ctypes.Structure):  # nvmlGpuFabricInfo_v3_t: 40 bytes
    _fields_ = [("version", c_uint), ("clusterUuid", ctypes.c_ubyte * 16), ("status", c_int),
                ("cliqueId", c_uint), ("state", ctypes.c_ubyte), ("healthMask", c_uint),
                ("healthSummary", ctypes.c_ubyte)]


class Value(ctypes.Union):  # nvmlValue_t
    _fields_ = [("dVal", ctypes.c_double), ("siVal", c_int), ("uiVal", c_uint),
                ("ulVal", ctypes.c_ulong), ("ullVal", c_ulonglong),
                ("sllVal", ctypes.c_longlong), ("usVal", ctypes.c_ushort)]


class FieldValue(ctypes.Structure):  # nvmlFieldValue_t: 40 bytes
    _fields_ = [("fieldId", c_uint), ("scopeId", c_uint), ("timestamp", ctypes.c_longlong),
                ("latencyUsec", ctypes.c_longlong), ("valueType", c_int), ("nvmlReturn", c_int),
                ("value", Value)]


def struct_version(size, ver):  # NVML_STRUCT_VERSION
    return size | (ver << 24)


LAYOUT = {FabricInfo: 28, FabricInfo3: 40, PciInfo: 68, PciInfoLegacy: 52, Memory: 24, Memory2: 40,
          Bar1: 24, Utilization: 8, ProcInfo1: 16, ProcInfo2: 24, ProcInfoR535: 32, ProcUtilSample: 32, Temperature1: 12,
          Value: 8, FieldValue: 40}
nvmlMemory_v2 = 0x02000028  # the header's macro value
nvmlTemperature_v1 = 0x0100000C
assert all(ctypes.sizeof(t) == n for t, n in LAYOUT.items()), "ctypes layout differs from nvml.h"
assert struct_version(ctypes.sizeof(Memory2), 2) == nvmlMemory_v2
assert struct_version(ctypes.sizeof(Temperature1), 1) == nvmlTemperature_v1
assert FieldValue.value.offset == 32 and ProcUtilSample.timeStamp.offset == 8

VALUE_NOT_AVAILABLE = 0xFFFFFFFFFFFFFFFF
NOT_MIG = 0xFFFFFFFF
SAMPLE_PERIOD_US = 166667  # docs/simulator.md: per-process samples, once per 1/6 s
BRANDS = ["unknown", "quadro", "tesla", "nvs", "grid", "geforce", "titan", "nvidia_vapps",
          "nvidia_vpc", "nvidia_vcs", "nvidia_vws", "nvidia_cloud_gaming", "quadro_rtx",
          "nvidia_rtx", "nvidia", "geforce_rtx", "titan_rtx"]
ARCHS = {"kepler": 2, "maxwell": 3, "pascal": 4, "volta": 5, "turing": 6, "ampere": 7, "ada": 8,
         "hopper": 9, "blackwell": 10, "rubin": 13, "unknown": 0xFFFFFFFF}
VALUE_TYPES = ["double", "unsigned_int", "unsigned_long", "unsigned_long_long",
               "signed_long_long", "signed_int", "unsigned_short"]
COMPUTE_MODES = ["default", "exclusive_thread", "prohibited", "exclusive_process"]
R535_V3 = ((535, 43, 2), (535, 86, 5))  # drivers whose _v3 lists wrote 32-byte records


def exported_functions(path):
    """The defined, global function symbols of an ELF64 shared object (.dynsym)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise SystemExit(f"{path}: not a little-endian ELF64 file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                for i in range(shnum)]
    names = set()
    for sh in sections:
        if sh[1] != 11:  # SHT_DYNSYM
            continue
        strtab = sections[sh[6]]
        for off in range(sh[4], sh[4] + sh[5], sh[9]):
            st_name, st_info, _, st_shndx, _, _ = struct.unpack_from("<IBBHQQ", data, off)
            if st_shndx != 0 and st_info & 0xF == 2 and st_info >> 4 in (1, 2):  # FUNC, GLOBAL|WEAK
                end = data.index(b"\0", strtab[4] + st_name)
                names.add(data[strtab[4] + st_name:end].decode())
    return names


def version_tuple(v):
    return tuple(int(x) for x in v.split("."))


class Checker:
    def __init__(self, lib_path, scn):
        self.lib = ctypes.CDLL(lib_path, mode=ctypes.RTLD_GLOBAL)
        self.exported = exported_functions(lib_path)
        self.scn = scn
        self.called = set()
        self.failures = 0
        self.checks = 0

    # -- calling --
    def fn(self, name):
        """A function by name, as a binding resolves it: None when the library lacks it."""
        self.called.add(name)
        if name not in self.exported:
            return None
        f = getattr(self.lib, name)
        f.restype = c_int
        return f

    def call(self, name, *args):
        f = self.fn(name)
        return FUNCTION_NOT_FOUND if f is None else f(*args)

    # -- checking --
    def check(self, what, got, want):
        self.checks += 1
        if got != want:
            self.failures += 1
            print(f"FAIL: {what}: expected {want!r}, got {got!r}")

    def check_rc(self, what, rc, want_rc):
        """Checks a return code; true when it is SUCCESS as expected (the values can be read)."""
        return self.rc_is(what, rc, want_rc) and rc == SUCCESS

    def rc_is(self, what, rc, want_rc):
        """Checks a return code; true when it is the one expected."""
        self.check(what + " return code", RC_NAMES[rc] if 0 <= rc < len(RC_NAMES) else rc,
                   RC_NAMES[want_rc] if 0 <= want_rc < len(RC_NAMES) else want_rc)
        return rc == want_rc

    # -- what the scenario says --
    def injected(self, gpu, name):
        """The error the scenario injects into name for gpu (None: the system), or 0."""
        root = name
        for suffix in ("_v2", "_v3"):
            if root.endswith(suffix):
                root = root[:-len(suffix)]
        root = {"nvmlDeviceGetTemperatureV": "nvmlDeviceGetTemperature",
                "nvmlDeviceGetCurrentClocksThrottleReasons": "nvmlDeviceGetCurrentClocksEventReasons",
                "nvmlDeviceGetSupportedClocksThrottleReasons":
                    "nvmlDeviceGetSupportedClocksEventReasons",
                "nvmlDeviceGetPowerState": "nvmlDeviceGetPerformanceState",
                "nvmlDeviceGetGpuFabricInfoV": "nvmlDeviceGetGpuFabricInfo"}.get(root, root)
        for scope in ([gpu.get("errors", {})] if gpu else []) + [self.scn.get("errors", {})]:
            for n in (name, root):
                if n in scope:
                    return rc_of_name(scope[n])
        return 0

    @staticmethod
    def field(g, key):
        """(return code, value) of a GPU field: its status, NOT_SUPPORTED when absent or null."""
        status = g.get("nvml_status", {}) or {}
        if key in status:
            return rc_of_name(status[key]), None
        v = g.get(key)
        if v is None:
            return NOT_SUPPORTED, None
        if isinstance(v, bool):
            v = int(v)
        elif key == "compute_mode":
            v = COMPUTE_MODES.index(v)
        elif isinstance(v, str) and v.startswith("0x") and key != "pci_bus_id":
            v = int(v, 16)
        return SUCCESS, v

    def fields(self, g, name, *keys):
        """The return code a call answering keys gives (injection first), and their values."""
        rc = self.injected(g, name)
        values = []
        for k in keys:
            r, v = self.field(g, k)
            rc = rc or r
            values.append(v)
        return rc, values

    def expect(self, g, what, name, got_rc, got, keys, convert=lambda *v: v[0] if len(v) == 1 else v):
        want_rc, values = self.fields(g, name, *keys)
        if self.check_rc(what, got_rc, want_rc):
            self.check(what, got, convert(*values))


# ---------------------------------------------------------------------------------------------

def check_errstr(c):
    f = c.fn("nvmlErrorString")
    f.restype = ctypes.c_char_p
    for code, text in ERROR_TEXTS.items():
        c.check(f"nvmlErrorString({code})", f(code).decode(), text)


def check_system(c):
    sysv = c.scn.get("system", {})
    for name, key in (("nvmlSystemGetDriverVersion", "driver_version"),
                      ("nvmlSystemGetNVMLVersion", "nvml_version")):
        buf = ctypes.create_string_buffer(80)  # NVML_SYSTEM_*_VERSION_BUFFER_SIZE
        rc = c.call(name, buf, 80)
        want = sysv.get(key)
        if c.check_rc(name, rc, c.injected(None, name) or (SUCCESS if want else NOT_SUPPORTED)):
            c.check(name, buf.value.decode(), want)
            # the string and its NUL must fit: one byte short is INSUFFICIENT_SIZE
            c.check_rc(name + " with a buffer one byte short",
                       c.call(name, buf, len(want)), INSUFFICIENT_SIZE)
    v = c_int(0)
    cuda = sysv.get("cuda_driver_version")
    rc = c.call("nvmlSystemGetCudaDriverVersion_v2", ctypes.byref(v))
    if c.check_rc("nvmlSystemGetCudaDriverVersion_v2", rc,
                  SUCCESS if cuda else LIBRARY_NOT_FOUND):
        c.check("nvmlSystemGetCudaDriverVersion_v2", v.value, cuda)
    rc = c.call("nvmlSystemGetCudaDriverVersion", ctypes.byref(v))
    if cuda and c.check_rc("nvmlSystemGetCudaDriverVersion", rc, SUCCESS):
        c.check("nvmlSystemGetCudaDriverVersion", v.value, cuda)
    # the name of a process from this machine's process table: our own
    name = ctypes.create_string_buffer(1024)
    if c.check_rc("nvmlSystemGetProcessName", c.call("nvmlSystemGetProcessName",
                                                     os.getpid(), name, 1024), SUCCESS):
        with open("/proc/self/cmdline", "rb") as f:
            c.check("nvmlSystemGetProcessName", name.value, f.read().split(b"\0")[0])
    c.check_rc("nvmlSystemGetProcessName of no process",
               c.call("nvmlSystemGetProcessName", 0x7FFFFFFF, name, 1024), NOT_FOUND)


def handles(c):
    """Counts and handles, by index (v1 and v2), by UUID and by PCI bus id."""
    gpus = c.scn.get("gpus", [])
    n = c_uint(0)
    if c.check_rc("nvmlDeviceGetCount_v2", c.call("nvmlDeviceGetCount_v2", ctypes.byref(n)),
                  SUCCESS):
        c.check("nvmlDeviceGetCount_v2", n.value, len(gpus))
    accessible = [g for g in gpus if g.get("handle_status") not in ("NO_PERMISSION", 4)]
    if c.check_rc("nvmlDeviceGetCount", c.call("nvmlDeviceGetCount", ctypes.byref(n)), SUCCESS):
        c.check("nvmlDeviceGetCount (v1: accessible GPUs only)", n.value, len(accessible))
    out = []
    h = ctypes.c_void_p()
    for g in gpus:
        h = ctypes.c_void_p()
        rc = c.call("nvmlDeviceGetHandleByIndex_v2", g["index"], ctypes.byref(h))
        want = rc_of_name(g["handle_status"]) if "handle_status" in g else SUCCESS
        if c.check_rc(f"nvmlDeviceGetHandleByIndex_v2({g['index']})", rc, want):
            out.append((g, h))
    c.check_rc("nvmlDeviceGetHandleByIndex_v2 past the last GPU",
               c.call("nvmlDeviceGetHandleByIndex_v2", len(gpus), ctypes.byref(h)),
               INVALID_ARGUMENT)
    for k, g in enumerate(accessible):
        h1 = ctypes.c_void_p()
        rc = c.call("nvmlDeviceGetHandleByIndex", k, ctypes.byref(h1))
        want = rc_of_name(g["handle_status"]) if "handle_status" in g else SUCCESS
        if c.check_rc(f"nvmlDeviceGetHandleByIndex({k})", rc, want):
            c.check(f"nvmlDeviceGetHandleByIndex({k}) handle", h1.value,
                    dict((x["index"], y.value) for x, y in out)[g["index"]])
    for g, h in out:
        other = ctypes.c_void_p()
        if g.get("uuid") and c.check_rc(
                "nvmlDeviceGetHandleByUUID", c.call("nvmlDeviceGetHandleByUUID",
                                                    g["uuid"].encode(), ctypes.byref(other)),
                SUCCESS):
            c.check("nvmlDeviceGetHandleByUUID handle", other.value, h.value)
        if g.get("pci_bus_id") and c.check_rc(
                "nvmlDeviceGetHandleByPciBusId_v2",
                c.call("nvmlDeviceGetHandleByPciBusId_v2", g["pci_bus_id"].encode(),
                       ctypes.byref(other)), SUCCESS):
            c.check("nvmlDeviceGetHandleByPciBusId_v2 handle", other.value, h.value)
    c.check_rc("nvmlDeviceGetHandleByUUID of an unknown UUID",
               c.call("nvmlDeviceGetHandleByUUID", b"GPU-no-such-gpu", ctypes.byref(h)),
               NOT_FOUND)
    return out


def check_strings(c, g, h, p):
    # name, UUID, serial, VBIOS, part number: buffers of the header's sizes
    for name, key, size in (("nvmlDeviceGetName", "name", 96), ("nvmlDeviceGetUUID", "uuid", 96),
                            ("nvmlDeviceGetSerial", "serial", 30),
                            ("nvmlDeviceGetVbiosVersion", "vbios_version", 32),
                            ("nvmlDeviceGetBoardPartNumber", "board_part_number", 80)):
        buf = ctypes.create_string_buffer(size)
        rc = c.call(name, h, buf, size)
        want_rc, (v,) = c.fields(g, name, key)
        if c.check_rc(p + name, rc, want_rc):
            c.check(p + name, buf.value.decode(), v)
            c.check_rc(p + name + " with a buffer one byte short",
                       c.call(name, h, buf, len(v)), INSUFFICIENT_SIZE)
    idx = c_uint(0)
    if c.check_rc(p + "nvmlDeviceGetIndex", c.call("nvmlDeviceGetIndex", h, ctypes.byref(idx)),
                  c.injected(g, "nvmlDeviceGetIndex")):
        c.check(p + "nvmlDeviceGetIndex", idx.value, g["index"])
    u = c_uint(0)
    c.expect(g, p + "nvmlDeviceGetMinorNumber", "nvmlDeviceGetMinorNumber",
             c.call("nvmlDeviceGetMinorNumber", h, ctypes.byref(u)), u.value, ["minor_number"])
    a, b = c_int(0), c_int(0)
    rc = c.call("nvmlDeviceGetCudaComputeCapability", h, ctypes.byref(a), ctypes.byref(b))
    c.expect(g, p + "nvmlDeviceGetCudaComputeCapability", "nvmlDeviceGetCudaComputeCapability",
             rc, (a.value, b.value), ["compute_capability_major", "compute_capability_minor"],
             lambda x, y: (x, y))


def split_bus_id(s):
    dom, bus, rest = s.split(":")
    dev, _ = rest.split(".")
    return int(dom, 16), int(bus, 16), int(dev, 16)


def check_pci(c, g, h, p):
    keys = ["pci_bus_id", "pci_device_id", "pci_subsystem_id"]
    for name, cls in (("nvmlDeviceGetPciInfo_v3", PciInfo), ("nvmlDeviceGetPciInfo_v2", PciInfoLegacy),
                      ("nvmlDeviceGetPciInfo", PciInfoLegacy)):
        # the struct and 16 guard bytes: the call must write its own layout and nothing after
        buf = (ctypes.c_ubyte * (ctypes.sizeof(cls) + 16))(*([0xA5] * (ctypes.sizeof(cls) + 16)))
        rc = c.call(name, h, buf)
        want_rc, (bus_id, dev_id, sub) = c.fields(g, name, *keys)
        if not c.check_rc(p + name, rc, want_rc):
            continue
        c.check(p + name + " bytes after the struct", bytes(buf[ctypes.sizeof(cls):]),
                b"\xA5" * 16)
        info = cls.from_buffer(buf)
        dom, bus, dev = split_bus_id(bus_id)
        c.check(p + name + " ids", (info.domain, info.bus, info.device, info.pciDeviceId,
                                    info.pciSubSystemId), (dom, bus, dev, dev_id, sub))
        legacy = "%04X:%02X:%02X.0" % (dom, bus, dev)  # NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT
        if cls is PciInfo:
            c.check(p + name + " busId", info.busId.decode(), "%08X:%02X:%02X.0" % (dom, bus, dev))
            c.check(p + name + " busIdLegacy", info.busIdLegacy.decode(), legacy)
        else:
            c.check(p + name + " busId", info.busId.decode(), legacy)


def check_memory(c, g, h, p):
    m = Memory()
    rc = c.call("nvmlDeviceGetMemoryInfo", h, ctypes.byref(m))
    want_rc, (total, used, free) = c.fields(g, "nvmlDeviceGetMemoryInfo", "mem_total_bytes",
                                            "mem_used_bytes", "mem_free_bytes")
    if c.check_rc(p + "nvmlDeviceGetMemoryInfo", rc, want_rc):
        # v1 "used" is allocated plus reserved memory on R510 and later drivers
        c.check(p + "nvmlDeviceGetMemoryInfo", (m.total, m.free, m.used),
                (total, free, used + (g.get("mem_reserved_bytes") or 0)))
    m2 = Memory2(version=nvmlMemory_v2)
    rc = c.call("nvmlDeviceGetMemoryInfo_v2", h, ctypes.byref(m2))
    c.expect(g, p + "nvmlDeviceGetMemoryInfo_v2", "nvmlDeviceGetMemoryInfo_v2", rc,
             (m2.total, m2.reserved, m2.free, m2.used),
             ["mem_total_bytes", "mem_reserved_bytes", "mem_free_bytes", "mem_used_bytes"],
             lambda *v: v)
    if c.injected(g, "nvmlDeviceGetMemoryInfo_v2") == 0:
        # the bare 2 of the header's "must be 2" comment: drivers answer FUNCTION_NOT_FOUND
        c.check_rc(p + "nvmlDeviceGetMemoryInfo_v2 with version 2",
                   c.call("nvmlDeviceGetMemoryInfo_v2", h, ctypes.byref(Memory2(version=2))),
                   FUNCTION_NOT_FOUND)
    b = Bar1()
    rc = c.call("nvmlDeviceGetBAR1MemoryInfo", h, ctypes.byref(b))
    c.expect(g, p + "nvmlDeviceGetBAR1MemoryInfo", "nvmlDeviceGetBAR1MemoryInfo", rc,
             (b.bar1Total, b.bar1Used, b.bar1Free), ["bar1_total_bytes", "bar1_used_bytes"],
             lambda t, u: (t, u, t - u))
    u = Utilization()
    rc = c.call("nvmlDeviceGetUtilizationRates", h, ctypes.byref(u))
    c.expect(g, p + "nvmlDeviceGetUtilizationRates", "nvmlDeviceGetUtilizationRates", rc,
             (u.gpu, u.memory), ["util_gpu_pct", "util_mem_pct"], lambda a, b: (a, b))
    for name, key in (("nvmlDeviceGetEncoderUtilization", "util_enc_pct"),
                      ("nvmlDeviceGetDecoderUtilization", "util_dec_pct")):
        v, period = c_uint(0), c_uint(0)
        rc = c.call(name, h, ctypes.byref(v), ctypes.byref(period))
        c.expect(g, p + name, name, rc, (v.value, period.value), [key],
                 lambda x: (x, SAMPLE_PERIOD_US))


def check_thermal_power(c, g, h, p):
    u = c_uint(0)
    c.expect(g, p + "nvmlDeviceGetTemperature", "nvmlDeviceGetTemperature",
             c.call("nvmlDeviceGetTemperature", h, 0, ctypes.byref(u)), u.value, ["temp_c"])
    t = Temperature1(version=nvmlTemperature_v1, sensorType=0)
    c.expect(g, p + "nvmlDeviceGetTemperatureV", "nvmlDeviceGetTemperatureV",
             c.call("nvmlDeviceGetTemperatureV", h, ctypes.byref(t)), t.temperature, ["temp_c"])
    if c.injected(g, "nvmlDeviceGetTemperatureV") == 0:
        c.check_rc(p + "nvmlDeviceGetTemperatureV with version 1",
                   c.call("nvmlDeviceGetTemperatureV", h,
                          ctypes.byref(Temperature1(version=1, sensorType=0))),
                   ARGUMENT_VERSION_MISMATCH)
    for kind, key in enumerate(["temp_shutdown_c", "temp_slowdown_c", "temp_mem_max_c",
                                "temp_gpu_max_c"]):
        c.expect(g, p + f"nvmlDeviceGetTemperatureThreshold({kind})",
                 "nvmlDeviceGetTemperatureThreshold",
                 c.call("nvmlDeviceGetTemperatureThreshold", h, kind, ctypes.byref(u)), u.value,
                 [key])
    if c.injected(g, "nvmlDeviceGetTemperatureThreshold") == 0:
        c.check_rc(p + "nvmlDeviceGetTemperatureThreshold(ACOUSTIC_MIN)",
                   c.call("nvmlDeviceGetTemperatureThreshold", h, 4, ctypes.byref(u)),
                   NOT_SUPPORTED)
    for name, key in (("nvmlDeviceGetPowerUsage", "power_mw"),
                      ("nvmlDeviceGetPowerManagementLimit", "power_limit_mw"),
                      ("nvmlDeviceGetPowerManagementDefaultLimit", "power_default_limit_mw"),
                      ("nvmlDeviceGetEnforcedPowerLimit", "power_enforced_limit_mw")):
        c.expect(g, p + name, name, c.call(name, h, ctypes.byref(u)), u.value, [key])
    lo, hi = c_uint(0), c_uint(0)
    rc = c.call("nvmlDeviceGetPowerManagementLimitConstraints", h, ctypes.byref(lo),
                ctypes.byref(hi))
    c.expect(g, p + "nvmlDeviceGetPowerManagementLimitConstraints",
             "nvmlDeviceGetPowerManagementLimitConstraints", rc, (lo.value, hi.value),
             ["power_min_limit_mw", "power_max_limit_mw"], lambda a, b: (a, b))
    e = c_ulonglong(0)
    c.expect(g, p + "nvmlDeviceGetTotalEnergyConsumption", "nvmlDeviceGetTotalEnergyConsumption",
             c.call("nvmlDeviceGetTotalEnergyConsumption", h, ctypes.byref(e)), e.value,
             ["energy_mj"])
    fan = "fan_speed_pct"
    c.expect(g, p + "nvmlDeviceGetFanSpeed", "nvmlDeviceGetFanSpeed",
             c.call("nvmlDeviceGetFanSpeed", h, ctypes.byref(u)), u.value, [fan])
    c.expect(g, p + "nvmlDeviceGetFanSpeed_v2(0)", "nvmlDeviceGetFanSpeed_v2",
             c.call("nvmlDeviceGetFanSpeed_v2", h, 0, ctypes.byref(u)), u.value, [fan])
    c.expect(g, p + "nvmlDeviceGetNumFans", "nvmlDeviceGetNumFans",
             c.call("nvmlDeviceGetNumFans", h, ctypes.byref(u)), u.value, [fan], lambda _: 1)


# (type, clock id) -> the key that answers it; None: no such clock (NOT_SUPPORTED)
CLOCKS = {
    (0, 0): "clock_graphics_mhz", (1, 0): "clock_sm_mhz", (2, 0): "clock_mem_mhz",
    (3, 0): "clock_video_mhz",
    # application clocks: the graphics target is the SM one; video has none
    (0, 1): "clock_sm_app_mhz", (1, 1): "clock_sm_app_mhz", (2, 1): "clock_mem_app_mhz",
    (3, 1): None,
    (0, 2): "clock_sm_app_default_mhz", (1, 2): "clock_sm_app_default_mhz",
    (2, 2): "clock_mem_app_default_mhz", (3, 2): None,
    (0, 3): "clock_graphics_max_mhz", (1, 3): "clock_sm_max_mhz", (2, 3): "clock_mem_max_mhz",
    (3, 3): "clock_video_max_mhz",
}


def check_clocks(c, g, h, p):
    u = c_uint(0)
    for (ctype, cid), key in CLOCKS.items():
        calls = [("nvmlDeviceGetClock", (h, ctype, cid, ctypes.byref(u)))]
        calls.append({0: ("nvmlDeviceGetClockInfo", (h, ctype, ctypes.byref(u))),
                      1: ("nvmlDeviceGetApplicationsClock", (h, ctype, ctypes.byref(u))),
                      2: ("nvmlDeviceGetDefaultApplicationsClock", (h, ctype, ctypes.byref(u))),
                      3: ("nvmlDeviceGetMaxClockInfo", (h, ctype, ctypes.byref(u)))}[cid])
        for name, args in calls:
            what = f"{p}{name}(type {ctype}, id {cid})"
            rc = c.call(name, *args)
            if key is None:
                c.check_rc(what, rc, c.injected(g, name) or NOT_SUPPORTED)
            else:
                c.expect(g, what, name, rc, u.value, [key])
    r = c_ulonglong(0)
    for name, key in (("nvmlDeviceGetCurrentClocksEventReasons", "clocks_event_reasons"),
                      ("nvmlDeviceGetCurrentClocksThrottleReasons", "clocks_event_reasons"),
                      ("nvmlDeviceGetSupportedClocksEventReasons", "clocks_event_reasons_supported"),
                      ("nvmlDeviceGetSupportedClocksThrottleReasons",
                       "clocks_event_reasons_supported")):
        c.expect(g, p + name, name, c.call(name, h, ctypes.byref(r)), r.value, [key])
    i = c_int(0)
    for name in ("nvmlDeviceGetPerformanceState", "nvmlDeviceGetPowerState"):
        c.expect(g, p + name, name, c.call(name, h, ctypes.byref(i)), i.value, ["pstate"])


def check_modes(c, g, h, p):
    i, j = c_int(0), c_int(0)
    for name, key in (("nvmlDeviceGetPersistenceMode", "persistence_mode"),
                      ("nvmlDeviceGetComputeMode", "compute_mode"),
                      ("nvmlDeviceGetDisplayMode", "display_mode"),
                      ("nvmlDeviceGetDisplayActive", "display_active"),
                      ("nvmlDeviceGetRetiredPagesPendingStatus", "retired_pages_pending")):
        c.expect(g, p + name, name, c.call(name, h, ctypes.byref(i)), i.value, [key])
    c.expect(g, p + "nvmlDeviceGetEccMode", "nvmlDeviceGetEccMode",
             c.call("nvmlDeviceGetEccMode", h, ctypes.byref(i), ctypes.byref(j)),
             (i.value, j.value), ["ecc_mode", "ecc_mode_pending"], lambda a, b: (a, b))
    a, b = c_uint(0), c_uint(0)
    c.expect(g, p + "nvmlDeviceGetMigMode", "nvmlDeviceGetMigMode",
             c.call("nvmlDeviceGetMigMode", h, ctypes.byref(a), ctypes.byref(b)),
             (a.value, b.value), ["mig_mode", "mig_mode_pending"], lambda x, y: (x, y))
    u = c_uint(0)
    c.expect(g, p + "nvmlDeviceGetMaxMigDeviceCount", "nvmlDeviceGetMaxMigDeviceCount",
             c.call("nvmlDeviceGetMaxMigDeviceCount", h, ctypes.byref(u)), u.value, ["mig_mode"],
             lambda _: 7)
    want_rc, (n,) = c.fields(g, "nvmlDeviceGetMigDeviceHandleByIndex", "mig_devices")
    for k in range(8):
        mig = ctypes.c_void_p()
        rc = c.call("nvmlDeviceGetMigDeviceHandleByIndex", h, k, ctypes.byref(mig))
        if k >= 7:  # past the 7 slices of an A100/H100
            want = c.injected(g, "nvmlDeviceGetMigDeviceHandleByIndex") or INVALID_ARGUMENT
        else:
            want = want_rc or (SUCCESS if k < n else NOT_FOUND)
        if c.check_rc(f"{p}nvmlDeviceGetMigDeviceHandleByIndex({k})", rc, want):
            check_mig_handle(c, g, mig, f"{p}MIG {k}: ")
    for ctr, cname in enumerate(("volatile", "aggregate")):
        for err, ename in enumerate(("corrected", "uncorrected")):
            r = c_ulonglong(0)
            c.expect(g, f"{p}nvmlDeviceGetTotalEccErrors({ename}, {cname})",
                     "nvmlDeviceGetTotalEccErrors",
                     c.call("nvmlDeviceGetTotalEccErrors", h, err, ctr, ctypes.byref(r)),
                     r.value, [f"ecc_{cname}_{ename}"])
    for cause, key in enumerate(("retired_pages_sbe", "retired_pages_dbe")):
        for name in ("nvmlDeviceGetRetiredPages", "nvmlDeviceGetRetiredPages_v2"):
            check_retired(c, g, h, p, name, cause, key)
    vals = [c_uint(0) for _ in range(4)]
    c.expect(g, p + "nvmlDeviceGetRemappedRows", "nvmlDeviceGetRemappedRows",
             c.call("nvmlDeviceGetRemappedRows", h, *[ctypes.byref(v) for v in vals]),
             tuple(v.value for v in vals),
             ["remapped_rows_correctable", "remapped_rows_uncorrectable", "remapped_rows_pending",
              "remapped_rows_failure"], lambda *v: v)


def check_mig_handle(c, g, mig, p):
    """A MIG device: its own UUID, found again by UUID; other queries NOT_SUPPORTED."""
    buf = ctypes.create_string_buffer(96)
    if c.check_rc(p + "nvmlDeviceGetUUID", c.call("nvmlDeviceGetUUID", mig, buf, 96), SUCCESS):
        c.check(p + "nvmlDeviceGetUUID prefix", buf.value[:4], b"MIG-")
        again = ctypes.c_void_p()
        if c.check_rc(p + "nvmlDeviceGetHandleByUUID", c.call("nvmlDeviceGetHandleByUUID",
                                                             buf.value, ctypes.byref(again)),
                      SUCCESS):
            c.check(p + "nvmlDeviceGetHandleByUUID handle", again.value, mig.value)
    c.check_rc(p + "nvmlDeviceGetName", c.call("nvmlDeviceGetName", mig, buf, 96), SUCCESS)
    u = c_uint(0)
    c.check_rc(p + "nvmlDeviceGetPowerUsage", c.call("nvmlDeviceGetPowerUsage", mig,
                                                      ctypes.byref(u)), NOT_SUPPORTED)


def check_retired(c, g, h, p, name, cause, key):
    """The two-call protocol: the count, then the addresses docs/simulator.md describes."""
    n = c_uint(0)
    rc = c.call(name, h, cause, ctypes.byref(n), None, *([None] if name.endswith("_v2") else []))
    want_rc, (count,) = c.fields(g, name, key)
    what = f"{p}{name}(cause {cause})"
    if want_rc:
        c.check_rc(what, rc, want_rc)
        return
    if count == 0:
        c.check_rc(what + " size query", rc, SUCCESS)
        c.check(what + " count", n.value, 0)
        return
    if not c.rc_is(what + " size query", rc, INSUFFICIENT_SIZE):
        return
    c.check(what + " count", n.value, count)
    addrs = (c_ulonglong * count)()
    times = (c_ulonglong * count)()
    extra = [times] if name.endswith("_v2") else []
    if c.check_rc(what, c.call(name, h, cause, ctypes.byref(n), addrs, *extra), SUCCESS):
        gi = g["index"]
        c.check(what + " addresses", list(addrs),
                [(gi << 28) + (cause << 20) + 0x100000 + k * 0x1000 for k in range(count)])
        if extra:
            c.check(what + " times", list(times), [1767225600 + k * 86400 for k in range(count)])


def check_pcie(c, g, h, p):
    u = c_uint(0)
    for name, key in (("nvmlDeviceGetCurrPcieLinkGeneration", "pcie_gen"),
                      ("nvmlDeviceGetMaxPcieLinkGeneration", "pcie_gen_max"),
                      ("nvmlDeviceGetGpuMaxPcieLinkGeneration", "pcie_gen_gpu_max"),
                      ("nvmlDeviceGetCurrPcieLinkWidth", "pcie_width"),
                      ("nvmlDeviceGetMaxPcieLinkWidth", "pcie_width_max"),
                      ("nvmlDeviceGetPcieReplayCounter", "pcie_replay_count")):
        c.expect(g, p + name, name, c.call(name, h, ctypes.byref(u)), u.value, [key])
    for counter, key in ((0, "pcie_tx_bytes_per_s"), (1, "pcie_rx_bytes_per_s")):
        # KB/s, KB = 1024 bytes
        c.expect(g, f"{p}nvmlDeviceGetPcieThroughput({counter})", "nvmlDeviceGetPcieThroughput",
                 c.call("nvmlDeviceGetPcieThroughput", h, counter, ctypes.byref(u)), u.value,
                 [key], lambda b: b // 1024)


# ---- what NVIDIA's bindings read and gpudoctor does not ----

def extra(g, key):
    """(return code, value) of a key only scenarios have; absent and null: NOT_SUPPORTED."""
    v = g.get(key)
    return (NOT_SUPPORTED, None) if v is None else (SUCCESS, v)


def arch_of(g):
    if "architecture" in g:
        v = g["architecture"]
        return (NOT_SUPPORTED, None) if v is None else (SUCCESS, ARCHS.get(v, v))
    major, minor = g.get("compute_capability_major"), g.get("compute_capability_minor")
    if major is None or minor is None:
        return NOT_SUPPORTED, None
    # CUDA C++ Programming Guide, developer.nvidia.com/cuda-gpus
    if major == 7:
        return SUCCESS, ARCHS["turing"] if minor >= 5 else ARCHS["volta"]
    if major == 8:
        return SUCCESS, ARCHS["ada"] if minor == 9 else ARCHS["ampere"]
    return SUCCESS, {3: 2, 5: 3, 6: 4, 9: 9, 10: 10, 12: 10}.get(major, 0xFFFFFFFF)


def check_client(c, g, h, p):
    i, j = c_int(-1), c_int(-1)
    want_rc, v = extra(g, "brand")
    rc = c.call("nvmlDeviceGetBrand", h, ctypes.byref(i))
    if c.check_rc(p + "nvmlDeviceGetBrand", rc, c.injected(g, "nvmlDeviceGetBrand") or want_rc):
        c.check(p + "nvmlDeviceGetBrand", i.value, BRANDS.index(v) if isinstance(v, str) else v)
    u = c_uint(0)
    want_rc, v = arch_of(g)
    rc = c.call("nvmlDeviceGetArchitecture", h, ctypes.byref(u))
    if c.check_rc(p + "nvmlDeviceGetArchitecture", rc,
                  c.injected(g, "nvmlDeviceGetArchitecture") or want_rc):
        c.check(p + "nvmlDeviceGetArchitecture", u.value, v)
    # the driver model is a Windows notion; one NULL output is allowed, both is not
    for name in ("nvmlDeviceGetDriverModel_v2", "nvmlDeviceGetDriverModel"):
        c.check_rc(p + name, c.call(name, h, ctypes.byref(i), ctypes.byref(j)),
                   c.injected(g, name) or NOT_SUPPORTED)
        c.check_rc(p + name + " with both outputs NULL", c.call(name, h, None, None),
                   INVALID_ARGUMENT)
    rc = c.call("nvmlDeviceGetAccountingMode", h, ctypes.byref(i))
    mode = g.get("accounting_mode", False)
    if c.check_rc(p + "nvmlDeviceGetAccountingMode", rc,
                  c.injected(g, "nvmlDeviceGetAccountingMode") or
                  (NOT_SUPPORTED if "accounting_mode" in g and mode is None else SUCCESS)):
        c.check(p + "nvmlDeviceGetAccountingMode", i.value, int(bool(mode) and not g.get("mig_mode")))
    links = nvlink_states(g)
    for link in range(len(links) + 1):
        rc = c.call("nvmlDeviceGetNvLinkState", h, link, ctypes.byref(i))
        want = (c.injected(g, "nvmlDeviceGetNvLinkState") or
                (NOT_SUPPORTED if not links else SUCCESS if link < len(links) else INVALID_ARGUMENT))
        if c.check_rc(f"{p}nvmlDeviceGetNvLinkState({link})", rc, want):
            c.check(f"{p}nvmlDeviceGetNvLinkState({link})", i.value, int(links[link]))
    check_field_values(c, g, h, p)
    check_nvlink_details(c, g, h, p)
    check_fabric(c, g, h, p)


NVLINK_REMOTE = {"gpu": 0, "ibmnpu": 1, "switch": 2, "unknown": 0xFF}
FABRIC_STATES = ["not_supported", "not_started", "in_progress", "completed"]


def check_nvlink_details(c, g, h, p):
    """Version, remote end and scoped error counters of each link of the "nvlink" list."""
    links = g.get("nvlink") or []
    if "nvlinks" in g or not links:
        for name in ("nvmlDeviceGetNvLinkVersion", "nvmlDeviceGetNvLinkRemoteDeviceType"):
            i = c_uint()
            want = c.injected(g, name) or NOT_SUPPORTED  # no list, or booleans only
            c.check_rc(f"{p}{name}(0)", c.call(name, h, 0, ctypes.byref(i)), want)
        pci = PciInfo()
        c.check_rc(f"{p}nvmlDeviceGetNvLinkRemotePciInfo_v2(0)",
                   c.call("nvmlDeviceGetNvLinkRemotePciInfo_v2", h, 0, ctypes.byref(pci)),
                   c.injected(g, "nvmlDeviceGetNvLinkRemotePciInfo_v2") or NOT_SUPPORTED)
        return
    for l in links:
        n, st = l["link"], l.get("nvml_status", {}) or {}

        def want(key, fn):
            return c.injected(g, fn) or (rc_of_name(st[key]) if key in st else
                                         NOT_SUPPORTED if l.get(key) is None else SUCCESS)
        v = c_uint()
        if c.check_rc(f"{p}nvmlDeviceGetNvLinkVersion({n})",
                      c.call("nvmlDeviceGetNvLinkVersion", h, n, ctypes.byref(v)),
                      want("version", "nvmlDeviceGetNvLinkVersion")):
            c.check(f"{p}nvmlDeviceGetNvLinkVersion({n})", v.value, l["version"])
        t = c_int()
        if c.check_rc(f"{p}nvmlDeviceGetNvLinkRemoteDeviceType({n})",
                      c.call("nvmlDeviceGetNvLinkRemoteDeviceType", h, n, ctypes.byref(t)),
                      want("remote_type", "nvmlDeviceGetNvLinkRemoteDeviceType")):
            c.check(f"{p}nvmlDeviceGetNvLinkRemoteDeviceType({n})", t.value,
                    NVLINK_REMOTE[l["remote_type"]])
        pci = PciInfo()
        if c.check_rc(f"{p}nvmlDeviceGetNvLinkRemotePciInfo_v2({n})",
                      c.call("nvmlDeviceGetNvLinkRemotePciInfo_v2", h, n, ctypes.byref(pci)),
                      want("remote_pci_bus_id", "nvmlDeviceGetNvLinkRemotePciInfo_v2")):
            c.check(f"{p}nvmlDeviceGetNvLinkRemotePciInfo_v2({n}).busId",
                    pci.busId.decode().upper(), l["remote_pci_bus_id"].upper())
    # the scoped counters (161 replay, 162 recovery, 163 CRC; 138 data sent, 139 received) of
    # every link, by field value
    asks = [(fid, key, l) for l in links for fid, key in LINK_COUNTERS.items()]
    values = (FieldValue * len(asks))()
    for v, (fid, _, l) in zip(values, asks):
        v.fieldId, v.scopeId = fid, l["link"]
    rc = c.call("nvmlDeviceGetFieldValues", h, len(asks), values)
    if not c.check_rc(f"{p}nvmlDeviceGetFieldValues(nvlink counters)", rc,
                      c.injected(g, "nvmlDeviceGetFieldValues") or SUCCESS):
        return
    explicit = {(e["id"], e.get("scope")) for e in g.get("field_values") or []}
    for v, (fid, key, l) in zip(values, asks):
        if (fid, l["link"]) in explicit or (fid, None) in explicit:
            continue
        what = f"{p}field {fid} scope {l['link']}"
        st = l.get("nvml_status", {}) or {}
        want = rc_of_name(st[key]) if key in st else NOT_SUPPORTED if l.get(key) is None else SUCCESS
        if c.check_rc(what, v.nvmlReturn, want):
            c.check(what + " value", v.value.ullVal, l[key])


def check_fabric(c, g, h, p):
    """nvmlDeviceGetGpuFabricInfoV (v3, v2, a wrong version) and the unversioned call."""
    fab = g.get("fabric")
    status = (g.get("nvml_status", {}) or {}).get("fabric")
    base = rc_of_name(status) if status else NOT_SUPPORTED if fab is None else SUCCESS
    for version, size in ((struct_version(40, 3), 40), (struct_version(36, 2), 36),
                          (struct_version(40, 1), 40)):
        f = FabricInfo3(version=version)
        rc = c.call("nvmlDeviceGetGpuFabricInfoV", h, ctypes.byref(f))
        want = c.injected(g, "nvmlDeviceGetGpuFabricInfoV") or (
            ARGUMENT_VERSION_MISMATCH if version == struct_version(40, 1) else base)
        if c.check_rc(f"{p}nvmlDeviceGetGpuFabricInfoV({version:#x})", rc, want) and fab:
            c.check(f"{p}nvmlDeviceGetGpuFabricInfoV.state", f.state,
                    FABRIC_STATES.index(fab["state"]) if fab["state"] in FABRIC_STATES else 255)
            c.check(f"{p}nvmlDeviceGetGpuFabricInfoV.cliqueId", f.cliqueId, fab["clique_id"])
            c.check(f"{p}nvmlDeviceGetGpuFabricInfoV.status", f.status, fab["status"])
            c.check(f"{p}nvmlDeviceGetGpuFabricInfoV.clusterUuid", bytes(f.clusterUuid).hex(),
                    fab["cluster_uuid"].replace("-", "").lower())
    f1 = FabricInfo()
    if c.check_rc(f"{p}nvmlDeviceGetGpuFabricInfo",
                  c.call("nvmlDeviceGetGpuFabricInfo", h, ctypes.byref(f1)),
                  c.injected(g, "nvmlDeviceGetGpuFabricInfo") or base) and fab:
        c.check(f"{p}nvmlDeviceGetGpuFabricInfo.cliqueId", f1.cliqueId, fab["clique_id"])


TOPOLOGY_LEVELS = {"internal": 0, "single": 10, "multiple": 20, "hostbridge": 30, "node": 40,
                   "system": 50}
P2P_STATUSES = ["ok", "chipset_not_supported", "gpu_not_supported", "topology_not_supported",
                "disabled_by_regkey", "not_supported", "unknown"]


def check_peers(c, found):
    """nvmlDeviceGetTopologyCommonAncestor and nvmlDeviceGetP2PStatus (every capability index)
    between every two GPUs, from the first GPU's "peers" list; the same GPU twice and an index
    the header does not have are INVALID_ARGUMENT."""
    level, status = ctypes.c_int(-1), ctypes.c_int(-1)
    for g, h in found:
        p = f"GPU {g['index']}: "
        c.check_rc(f"{p}nvmlDeviceGetTopologyCommonAncestor of itself",
                   c.call("nvmlDeviceGetTopologyCommonAncestor", h, h, ctypes.byref(level)),
                   c.injected(g, "nvmlDeviceGetTopologyCommonAncestor") or INVALID_ARGUMENT)
        for g2, h2 in found:
            if g2 is g:
                continue
            list_rc, peers = c.field(g, "peers")
            peer = next((x for x in peers or [] if x.get("gpu") == g2["index"]), None)

            def want(key, fn):
                injected = c.injected(g, fn)
                if injected or list_rc != SUCCESS or peer is None:
                    return injected or (list_rc if list_rc != SUCCESS else NOT_SUPPORTED), None
                return c.field(peer, key)
            q = f"{p}to GPU {g2['index']}: "
            rc, v = want("topology", "nvmlDeviceGetTopologyCommonAncestor")
            if c.check_rc(f"{q}nvmlDeviceGetTopologyCommonAncestor",
                          c.call("nvmlDeviceGetTopologyCommonAncestor", h, h2, ctypes.byref(level)),
                          rc):
                c.check(f"{q}nvmlDeviceGetTopologyCommonAncestor", level.value,
                        TOPOLOGY_LEVELS.get(v, 60))
            for index in range(5):
                key = "p2p_nvlink" if index == 2 else "p2p_read"
                rc, v = want(key, "nvmlDeviceGetP2PStatus")
                if c.check_rc(f"{q}nvmlDeviceGetP2PStatus({index})",
                              c.call("nvmlDeviceGetP2PStatus", h, h2, index, ctypes.byref(status)),
                              rc):
                    c.check(f"{q}nvmlDeviceGetP2PStatus({index})", status.value,
                            P2P_STATUSES.index(v) if v in P2P_STATUSES else 6)
            c.check_rc(f"{q}nvmlDeviceGetP2PStatus(5)",
                       c.call("nvmlDeviceGetP2PStatus", h, h2, 5, ctypes.byref(status)),
                       c.injected(g, "nvmlDeviceGetP2PStatus") or INVALID_ARGUMENT)


def nvlink_states(g):
    """Active or not per link: the older "nvlinks" booleans, or the snapshot's "nvlink" list
    (links numbered from 0 without gaps, as the scenarios here list them)."""
    if "nvlinks" in g:
        return g.get("nvlinks") or []
    return [bool(l.get("active")) for l in sorted(g.get("nvlink") or [], key=lambda l: l["link"])]


# The scoped NVLink counter fields the simulator answers from a link of the "nvlink" list.
LINK_COUNTERS = {163: "crc_errors", 161: "replay_errors", 162: "recovery_errors",
                 138: "tx_kib", 139: "rx_kib"}


def check_field_values(c, g, h, p):
    entries = g.get("field_values") or []
    # every entry of the scenario, one field it does not list, and each entry at another scope
    asks = [(e["id"], e.get("scope", 0)) for e in entries] + [(0x7FFFFFF0, 0)]
    asks += [(e["id"], e["scope"] + 1) for e in entries if "scope" in e]
    values = (FieldValue * len(asks))()
    for v, (fid, scope) in zip(values, asks):
        v.fieldId, v.scopeId = fid, scope
    before = time.time_ns() // 1000
    rc = c.call("nvmlDeviceGetFieldValues", h, len(asks), values)
    after = time.time_ns() // 1000
    if not c.check_rc(p + "nvmlDeviceGetFieldValues", rc,
                      c.injected(g, "nvmlDeviceGetFieldValues")):
        return
    for v, (fid, scope) in zip(values, asks):
        what = f"{p}nvmlDeviceGetFieldValues field {fid} scope {scope}"
        e = next((e for e in entries if e["id"] == fid and e.get("scope", scope) == scope), None)
        if e is None and fid in LINK_COUNTERS and any(
                l["link"] == scope for l in g.get("nvlink") or []):
            continue  # a link's own counter: check_nvlink judges it
        if e is None or "status" in e:
            c.check_rc(what, v.nvmlReturn, rc_of_name(e["status"]) if e else NOT_SUPPORTED)
            continue
        if not c.check_rc(what, v.nvmlReturn, SUCCESS):
            continue
        kind = VALUE_TYPES.index(e["type"]) if isinstance(e["type"], str) else e["type"]
        c.check(what + " type", v.valueType, kind)
        got = [v.value.dVal, v.value.uiVal, v.value.ulVal, v.value.ullVal, v.value.sllVal,
               v.value.siVal, v.value.usVal][kind]
        c.check(what + " value", got, e["value"])
        c.check(what + " stamped during the call", before <= v.timestamp <= after, True)
    c.check_rc(p + "nvmlDeviceGetFieldValues with no array",
               c.call("nvmlDeviceGetFieldValues", h, 1, None), INVALID_ARGUMENT)


# ---- process lists and utilisation ----

def proc_types(proc):
    t = proc.get("type", "compute")
    return [t] if isinstance(t, str) else t


def v3_stride(c):
    driver = c.scn.get("system", {}).get("driver_version")
    if driver and R535_V3[0] <= version_tuple(driver) <= R535_V3[1]:
        return 32
    return 24


def check_lists(c, g, h, p):
    procs = g.get("processes") or []
    for kind, base in (("compute", "nvmlDeviceGetComputeRunningProcesses"),
                       ("graphics", "nvmlDeviceGetGraphicsRunningProcesses"),
                       ("mps", "nvmlDeviceGetMPSComputeRunningProcesses")):
        want = [q for q in procs if kind in proc_types(q)]
        for name, stride in ((base + "_v3", v3_stride(c)), (base + "_v2", 24), (base, 16)):
            check_list(c, g, h, p + name, name, stride, want)


def check_list(c, g, h, what, name, stride, want):
    """The two-call protocol, a buffer one short, then records of the stride the call writes."""
    n = c_uint(0)
    rc = c.call(name, h, ctypes.byref(n), None)
    status = (g.get("nvml_status") or {}).get("processes")
    want_rc = c.injected(g, name) or (rc_of_name(status) if status else 0)
    if want_rc:
        c.check_rc(what, rc, want_rc)
        return
    if not want:
        c.check_rc(what + " size query", rc, SUCCESS)
        c.check(what + " count", n.value, 0)
        return
    if not c.rc_is(what + " size query", rc, INSUFFICIENT_SIZE):
        return
    c.check(what + " count", n.value, len(want))
    size = (len(want) + 2) * 32
    buf = (ctypes.c_ubyte * size)(*([0xA5] * size))
    short = c_uint(len(want) - 1)
    if len(want) > 1:
        c.check_rc(what + " into a buffer one record short",
                   c.call(name, h, ctypes.byref(short), buf), INSUFFICIENT_SIZE)
        c.check(what + " count after a short buffer", short.value, len(want))
        buf = (ctypes.c_ubyte * size)(*([0xA5] * size))
    n = c_uint(len(want))
    if not c.check_rc(what, c.call(name, h, ctypes.byref(n), buf), SUCCESS):
        return
    c.check(what + " count", n.value, len(want))
    written = max(i for i, b in enumerate(bytes(buf)) if b != 0xA5) + 1
    c.check(what + " bytes written", written, len(want) * stride)
    cls = {16: ProcInfo1, 24: ProcInfo2, 32: ProcInfoR535}[stride]
    for k, q in enumerate(want):
        r = cls.from_buffer(buf, k * stride)
        got = [r.pid, r.usedGpuMemory]
        exp = [q["pid"], q.get("used_bytes", VALUE_NOT_AVAILABLE)]
        if stride >= 24:
            got += [r.gpuInstanceId, r.computeInstanceId]
            exp += [q.get("gpu_instance_id", NOT_MIG), q.get("compute_instance_id", NOT_MIG)]
        if stride == 32:
            got.append(r.usedGpuCcProtectedMemory)
            exp.append(0)
        c.check(f"{what} record {k}", got, exp)


def read_util(c, h, last_seen):
    """nvmlDeviceGetProcessUtilization as pynvml reads it: size with NULL, then fill."""
    n = c_uint(0)
    rc = c.call("nvmlDeviceGetProcessUtilization", h, None, ctypes.byref(n), c_ulonglong(last_seen))
    if rc != INSUFFICIENT_SIZE:
        return rc, []
    n.value += 4  # room for processes sampled between the two calls
    samples = (ProcUtilSample * n.value)()
    rc = c.call("nvmlDeviceGetProcessUtilization", h, samples, ctypes.byref(n),
                c_ulonglong(last_seen))
    return rc, list(samples[:n.value]) if rc == SUCCESS else []


def check_util(c, g, h, p):
    name = "nvmlDeviceGetProcessUtilization"
    want = {q["pid"]: q for q in g.get("processes") or [] if q.get("sm_util_pct") is not None}
    status = (g.get("nvml_status") or {}).get("process_utilization")
    fixed = c.injected(g, name) or (rc_of_name(status) if status else 0) or (
        NOT_SUPPORTED if g.get("mig_mode") else 0)
    t1 = time.time_ns() // 1000
    rc, samples = read_util(c, h, 0)
    if fixed or not want:
        c.check_rc(p + name, rc, fixed or NOT_FOUND)
        return
    if not c.check_rc(p + name, rc, SUCCESS):
        return
    t2 = time.time_ns() // 1000
    c.check(p + name + " processes", sorted(s.pid for s in samples), sorted(want))
    for s in samples:
        q = want.get(s.pid, {})
        c.check(f"{p}{name} pid {s.pid}", (s.smUtil, s.memUtil, s.encUtil, s.decUtil),
                tuple(q.get(k, 0) or 0 for k in ("sm_util_pct", "mem_util_pct", "enc_util_pct",
                                                 "dec_util_pct")))
        # the moment of the process's newest sample: within the last period
        c.check(f"{p}{name} pid {s.pid} sampled in the last period",
                t1 - SAMPLE_PERIOD_US < s.timeStamp <= t2, True)
    if len(samples) > 1:
        c.check(p + name + " one time stamp per process",
                len(set(s.timeStamp for s in samples)) > 1, True)
    newest = max(s.timeStamp for s in samples)
    c.check_rc(p + name + " with nothing newer than lastSeenTimeStamp",
               read_util(c, h, time.time_ns() // 1000 + 10 ** 9)[0], NOT_FOUND)
    # reading every 100 ms, passing the time of the previous read: each read has only the
    # samples taken since, and every process shows within any two reads (200 ms > one period)
    seen = []
    last = time.time_ns() // 1000
    for _ in range(6):
        time.sleep(0.1)
        now = time.time_ns() // 1000
        rc, samples = read_util(c, h, last)
        c.check(p + name + " read 100 ms later", rc in (SUCCESS, NOT_FOUND), True)
        c.check(p + name + " read 100 ms later: only newer samples",
                all(last < s.timeStamp <= time.time_ns() // 1000 for s in samples), True)
        seen.append(set(s.pid for s in samples))
        last = now
    for k in range(len(seen) - 1):
        c.check(f"{p}{name} reads {k} and {k + 1} together", seen[k] | seen[k + 1], set(want))
    # as nvitop reads: one second back, every process
    rc, samples = read_util(c, h, time.time_ns() // 1000 - 1000000)
    if c.check_rc(p + name + " one second back", rc, SUCCESS):
        c.check(p + name + " one second back", sorted(s.pid for s in samples), sorted(want))
    c.check(p + name + " newest sample not in the future", newest <= time.time_ns() // 1000, True)


# ---- after the last nvmlShutdown ----

def check_after_shutdown(c, handle):
    u = c_uint(0)
    c.check_rc("nvmlDeviceGetCount_v2 after nvmlShutdown",
               c.call("nvmlDeviceGetCount_v2", ctypes.byref(u)), UNINITIALIZED)
    if handle is not None:
        c.check_rc("nvmlDeviceGetBrand after nvmlShutdown",
                   c.call("nvmlDeviceGetBrand", handle, ctypes.byref(u)), UNINITIALIZED)
    c.check_rc("nvmlShutdown after the last nvmlShutdown", c.call("nvmlShutdown"), UNINITIALIZED)


def run(lib_path, serve, expect, only):
    os.environ["NVML_SIM_SCENARIO"] = serve
    os.environ.setdefault("NVML_SIM_QUIET", "1")
    with open(expect) as f:
        scn = json.load(f)
    c = Checker(lib_path, scn)
    check_errstr(c)
    # init as pynvml does (nvmlInitWithFlags(0)), and the other two; reference counted
    for name, args in (("nvmlInitWithFlags", (0,)), ("nvmlInit_v2", ()), ("nvmlInit", ())):
        c.check_rc(name, c.call(name, *args), SUCCESS)
    check_system(c)
    found = handles(c)
    per_gpu = [check_strings, check_pci, check_memory, check_thermal_power, check_clocks,
               check_modes, check_pcie, check_client, check_lists, check_util]
    for g, h in found:
        for check in per_gpu:
            if not only or check.__name__ in only:
                check(c, g, h, f"GPU {g['index']}: ")
    if not only or "check_peers" in only:
        check_peers(c, found)
    for _ in range(3):
        c.check_rc("nvmlShutdown", c.call("nvmlShutdown"), SUCCESS)
    check_after_shutdown(c, found[0][1] if found else None)
    nvml = set(n for n in c.exported if n.startswith("nvml"))
    if not only:
        c.check("exported functions this client does not call", sorted(nvml - c.called), [])
    c.check("functions this client calls that the library does not export",
            sorted(c.called - nvml), [])
    print(f"{c.checks} checks, {c.failures} failed")
    return 1 if c.failures else 0


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[-6], file=sys.stderr)
        return 2
    lib_path, serve = argv[1], argv[2]
    expect, only = serve, set()
    rest = argv[3:]
    while rest:
        if rest[0] == "--expect" and len(rest) > 1:
            expect, rest = rest[1], rest[2:]
        elif rest[0] == "--only" and len(rest) > 1:
            only, rest = set(rest[1].split(",")), rest[2:]
        else:
            print(f"nvml-binding-check: unknown argument {rest[0]}", file=sys.stderr)
            return 2
    return run(lib_path, serve, expect, only)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
