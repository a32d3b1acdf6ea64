#!/usr/bin/env python3
"""Writes the shm-* and fd-* snapshot cases: healthy-8gpu-busy's 8 x H100 training (one process
per GPU, pids 48211-48218, under launcher 48200) with what the host and processes collectors read
of the limits a job meets on the host, an error given with --error where the story has one, and
each case's `expect`. Run it from anywhere after changing a story; commit what it writes.

- shm-*: /dev/shm as gpudoctor and the GPU processes see it (host.shm_*, processes[].shm_*).
  docker and Kubernetes give a container 64 MiB of /dev/shm; a host's is half its RAM.
- fd-*: open-files limits and counts (processes[].open_files, open_files_limit;
  host.open_files_limit, gpudoctor's own).
- oom-*: GPU memory, the job's "CUDA out of memory" (oom-beside-compositor starts from
  graphics-on-compute-compositor's workstation instead).
- resume-*, uvm-*: CUDA's unknown error (999) at start-up after a system suspend
  (host.suspend_count, the driver's suspend parameters) or with nvidia_uvm not loaded
  (uvm-not-loaded starts from healthy-idle-gen1's idle machine).
- memlock-*: NCCL's InfiniBand registration refused for lack of lockable memory
  (processes[].memlock_limit; proc.memlock-limit).
- nccl-*: NCCL unable to set up its sockets: the ranks' NCCL_SOCKET_IFNAME against the interfaces
  up here (host.net_up; proc.nccl-socket-ifname).
- image-*: nvidia-container-cli refusing a container image whose NVIDIA_REQUIRE_* conditions the
  host does not meet (stack.cuda-too-new)."""
import copy
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
BASE = json.load(open(os.path.join(HERE, "healthy-8gpu-busy", "snapshot.json")))
MIB, GIB = 1 << 20, 1 << 30
BUS_ERROR = ("RuntimeError: DataLoader worker (pid 48300) is killed by signal: Bus error. It is "
             "possible that dataloader's workers are out of shared memory. Please try to raise "
             "your shared memory limit.")
NCCL_ERROR = ("node1:48211:48290 [0] include/shm.h:48 NCCL WARN Error while creating shared "
              "memory segment /dev/shm/nccl-pZafXL (size 7340384)")


def reported(*texts):
    return {"errors": [{"text": t, "error": None, "api": None, "number": None} for t in texts]}


def in_container(s, kind="docker", sign="/.dockerenv"):
    s["host"]["container"] = kind
    s["host"]["container_sign"] = sign


def own_shm(s, total, avail):
    s["host"]["shm_total_bytes"] = total
    s["host"]["shm_avail_bytes"] = avail


def procs_shm(s, total, avail, pids=None, container_id=None):
    for p in s["processes"]["processes"]:
        if p["gpus"] and (pids is None or p["pid"] in pids):
            p["shm_total_bytes"] = total
            p["shm_avail_bytes"] = avail
            if container_id:
                p["container_runtime"] = "docker"
                p["container_id"] = container_id


CID = "3f2a9c1d7e4b8a6f0c2d5e7a9b1c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c"
CASES = {
    "shm-error-container": (
        "a DataLoader worker died of a bus error; gpudoctor runs in the job's docker container, "
        "whose /dev/shm is docker's default 64 MiB",
        lambda s: (in_container(s), own_shm(s, 64 * MIB, 63 * MIB),
                   s.__setitem__("reported", reported(BUS_ERROR))),
        ["exit 2", "+ host.shm-small object=/dev/shm", "- reported.error"]),
    "shm-error-large": (
        "the same bus error on a host whose /dev/shm is 32 GiB and nearly empty: not too small "
        "here, information saying a job in a container had its own",
        lambda s: (own_shm(s, 32 * GIB, 32 * GIB - 200 * MIB),
                   s.__setitem__("reported", reported(BUS_ERROR))),
        ["exit 0", "+ host.shm-small object=/dev/shm", "- reported.error"]),
    "shm-error-unread": (
        "NCCL could not create its shared-memory segment; /dev/shm's size was not read "
        "(a snapshot from another machine)",
        lambda s: s.__setitem__("reported", reported(NCCL_ERROR)),
        ["exit 1", "+ host.shm-small object=/dev/shm", "- reported.error"]),
    "shm-small-shared": (
        "eight GPU processes of one docker container share its 64 MiB /dev/shm (NCCL's "
        "shared-memory transport and torch multiprocessing need room there); no error yet",
        lambda s: procs_shm(s, 64 * MIB, 60 * MIB, container_id=CID),
        ["exit 1", "+ host.shm-small pid=48211", "- reported.error"]),
    "shm-full": (
        "the training processes' /dev/shm (the host's, 16 GiB) is 97 % used: segments of jobs "
        "that ended fill it",
        lambda s: procs_shm(s, 16 * GIB, 16 * GIB * 3 // 100),
        ["exit 1", "+ host.shm-small pid=48211"]),
    "shm-default-alone": (
        "one GPU process in a container with docker's default 64 MiB /dev/shm and no workers: "
        "information only (NVIDIA's containers warn about the size); its peers are on the host",
        lambda s: procs_shm(s, 64 * MIB, 64 * MIB, pids={48215}, container_id=CID),
        ["exit 0", "+ host.shm-small pid=48215"]),
    "shm-own-small-no-error": (
        "gpudoctor itself runs in a container with 64 MiB of /dev/shm and no error was given: "
        "nothing to judge (its own /dev/shm serves no GPU job)",
        lambda s: (in_container(s), own_shm(s, 64 * MIB, 64 * MIB)),
        ["exit 0", "- host.shm-small"]),
}

TOO_MANY = ("RuntimeError: Too many open files. Communication with the workers is no longer "
            "possible. Please increase the limit using `ulimit -n` in the shell or change the "
            "sharing strategy by calling "
            "`torch.multiprocessing.set_sharing_strategy('file_system')` at the beginning of "
            "your code")
ANCDATA = "RuntimeError: received 0 items of ancdata"


def files(s, limit, counts=None):
    for p in s["processes"]["processes"]:
        if p["gpus"]:
            p["open_files_limit"] = limit
            p["open_files"] = (counts or {}).get(p["pid"], 180)


CASES.update({
    "fd-error-low-limit": (
        "the DataLoader lost its workers ('Too many open files'); the training processes may "
        "open 1024 files, the traditional soft limit",
        lambda s: (files(s, 1024), s.__setitem__("reported", reported(TOO_MANY))),
        ["exit 2", "+ proc.fd-limit object=open files", "- reported.error"]),
    "fd-error-high-limit": (
        "'received 0 items of ancdata' where gpudoctor's own limit (the job's shell's) is "
        "1048576: reached anyway, a warning naming the sharing strategy",
        lambda s: (s["host"].__setitem__("open_files_limit", 1048576),
                   s.__setitem__("reported", reported(ANCDATA))),
        ["exit 1", "+ proc.fd-limit object=open files", "- reported.error"]),
    "fd-near-limit": (
        "no error yet: GPU process 48213 has 1000 of its 1024 descriptors open, its peers 180",
        lambda s: files(s, 1024, {48213: 1000}),
        ["exit 1", "+ proc.fd-limit pid=48213", "- proc.fd-limit pid=48211"]),
    "fd-healthy": (
        "processes with 180 of 1048576 descriptors open and no error: nothing to say",
        lambda s: files(s, 1048576),
        ["exit 0", "- proc.fd-limit"]),
})

# oom-*: a job's "CUDA out of memory" (mem.job-oom), as PyTorch words it.
COMPOSITOR = json.load(open(os.path.join(HERE, "graphics-on-compute-compositor", "snapshot.json")))
OOM_1 = ("RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.11 GiB total "
         "capacity; 61.56 GiB already allocated; 1.19 GiB free; 76.77 GiB reserved in total by "
         "PyTorch)")
OOM_2 = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
         "total capacity of 23.99 GiB of which 1.77 GiB is free. Process 1820 has 7.20 GiB memory "
         "in use. Process 1500 has 350.00 MiB memory in use. Including non-PyTorch memory, this "
         "process has 14.00 GiB memory in use. Of the allocated memory 13.10 GiB is allocated by "
         "PyTorch, and 400.00 MiB is reserved by PyTorch but unallocated.")
CASES.update({
    "oom-fragmented": (
        "one of eight training jobs ran out of GPU memory with 15 GiB reserved by PyTorch but "
        "unallocated (PyTorch 1.x's wording): fragmentation, and which GPU is not known",
        lambda s: s.__setitem__("reported", reported(OOM_1)),
        ["exit 1", "+ mem.job-oom object=GPU memory", "- reported.error"]),
    "oom-beside-compositor": (
        "the workstation's training asked for 2 GiB more while gnome-shell held 7.2 GiB of the "
        "GPU: the graphics finding is the cause and comes first",
        lambda s: s.__setitem__("reported", reported(OOM_2)),
        ["exit 1", "+ proc.graphics-on-compute gpu=0", "+ mem.job-oom gpu=0",
         "- reported.error"]),
})
TF_OOM = ("tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating "
          "tensor with shape[32,1024,64,64] and type float on "
          "/job:localhost/replica:0/task:0/device:%s:0 by allocator %s")
CASES.update({
    "oom-tensorflow-gpu": (
        "TensorFlow's allocator ran out on device:GPU:0: the job ran out of GPU memory (no figures "
        "in TensorFlow's wording)",
        lambda s: s.__setitem__("reported", reported(TF_OOM % ("GPU", "GPU_0_bfc"))),
        ["exit 1", "+ mem.job-oom object=GPU memory", "- reported.error"]),
    "oom-tensorflow-cpu": (
        "the same words on device:CPU:0 are the host's RAM: no GPU finding, reported.error "
        "explains it",
        lambda s: s.__setitem__("reported", reported(TF_OOM % ("CPU", "cpu"))),
        ["exit 0", "- mem.job-oom", "+ reported.error"]),
})
# resume-*, uvm-*: CUDA's unknown error at start-up (stack.cuda-after-resume, stack.uvm-not-loaded).
IDLE = json.load(open(os.path.join(HERE, "healthy-idle-gen1", "snapshot.json")))
TORCH_999 = ("UserWarning: CUDA initialization: CUDA unknown error - this may be due to an "
             "incorrectly set up environment, e.g. changing env variable CUDA_VISIBLE_DEVICES "
             "after program start. Setting the available devices to be zero.")
XLA_999 = ("E external/xla/xla/stream_executor/cuda/cuda_driver.cc:268] failed call to cuInit: "
           "CUDA_ERROR_UNKNOWN: unknown error")


def suspended(s, count, preserve=None):
    s["host"]["suspend_count"] = count
    if preserve is not None:
        s["driver"]["preserve_vram"] = preserve


CASES.update({
    "resume-cuda-unknown": (
        "the machine was suspended twice since it booted; a new job fails with PyTorch's 'CUDA "
        "unknown error'; the driver keeps only essential video memory across a suspend and the "
        "eight training processes that slept through it still hold /dev/nvidia-uvm",
        lambda s: (suspended(s, 2, False), s.__setitem__("reported", reported(TORCH_999))),
        ["exit 2", "+ stack.cuda-after-resume", "- stack.uvm-not-loaded", "- reported.error"]),
    "resume-preserved": (
        "XLA's 'failed call to cuInit: CUDA_ERROR_UNKNOWN' after one suspend on a machine whose "
        "driver preserves video memory: still the cause to reload, the evidence says the "
        "preservation did not help",
        lambda s: (suspended(s, 1, True), s.__setitem__("reported", reported(XLA_999))),
        ["exit 2", "+ stack.cuda-after-resume", "- reported.error"]),
    "resume-never-suspended": (
        "the same PyTorch error on a machine never suspended since it booted: not this cause; "
        "reported.error says what the error means",
        lambda s: (suspended(s, 0), s.__setitem__("reported", reported(TORCH_999))),
        ["exit 0", "- stack.cuda-after-resume", "- stack.uvm-not-loaded", "+ reported.error"]),
    "uvm-not-loaded": (
        "an idle machine whose nvidia module is loaded and nvidia_uvm is not: PyTorch's 'CUDA "
        "unknown error' at start-up",
        lambda s: (s["driver"].__setitem__("uvm_loaded", False),
                   s.__setitem__("reported", reported(TORCH_999))),
        ["exit 2", "+ stack.uvm-not-loaded", "- stack.cuda-after-resume", "- reported.error"]),
})
# image-*: nvidia-container-cli refusing an image whose NVIDIA_REQUIRE_* the host does not meet.
REQUIREMENT = ("docker: Error response from daemon: failed to create task for container: failed "
               "to create shim task: OCI runtime create failed: runc create failed: unable to "
               "start container process: error during container init: error running hook #0: "
               "error running hook: exit status 1, stdout: , stderr: Auto-detected mode as "
               "'legacy'\nnvidia-container-cli: requirement error: unsatisfied condition: %s, "
               "please update your driver to a newer version, or use an earlier cuda container: "
               "unknown.")
CASES.update({
    "image-needs-newer-cuda": (
        "docker refuses an image built for CUDA 12.8 on the 550 driver, which supports CUDA 12.4",
        lambda s: s.__setitem__("reported", reported(REQUIREMENT % "cuda>=12.8")),
        ["exit 2", "+ stack.cuda-too-new object=container image", "- reported.error"]),
    "image-requirement-met-here": (
        "the same refusal for cuda>=12.2, which this host's driver supports: the error came from "
        "another host or driver (a warning saying so)",
        lambda s: s.__setitem__("reported", reported(REQUIREMENT % "cuda>=12.2")),
        ["exit 1", "+ stack.cuda-too-new object=container image", "- reported.error"]),
    "image-other-condition": (
        "an image whose unmet condition is not a CUDA version (driver>=560): named as it is, "
        "critical",
        lambda s: s.__setitem__("reported", reported(REQUIREMENT % "driver>=560")),
        ["exit 2", "+ stack.cuda-too-new object=container image", "- reported.error"]),
})
# memlock-*: NCCL's InfiniBand transport unable to register (pin) its buffers (proc.memlock-limit).
IBV = ("node1:48211:48290 [0] misc/ibvwrap.cc:278 NCCL WARN Call to ibv_reg_mr_iova2 failed with "
       "error Cannot allocate memory")


def locked(s, limit):
    for p in s["processes"]["processes"]:
        if p["gpus"]:
            p["memlock_limit"] = limit


CASES.update({
    "memlock-error-low": (
        "NCCL could not register its buffers for InfiniBand; the training processes may lock "
        "8 MiB (a login's default): critical, naming the limit",
        lambda s: (locked(s, 8 * MIB), s.__setitem__("reported", reported(IBV))),
        ["exit 2", "+ proc.memlock-limit object=locked memory", "- reported.error"]),
    "memlock-error-unlimited": (
        "the same error where the processes may lock without limit: not the limit (a warning "
        "naming what else refuses a registration)",
        lambda s: (locked(s, "unlimited"), s.__setitem__("reported", reported(IBV))),
        ["exit 1", "+ proc.memlock-limit object=locked memory", "- reported.error"]),
    "memlock-error-unread": (
        "the error alone, from a snapshot whose limits were not read: a warning saying where to "
        "look",
        lambda s: s.__setitem__("reported", reported(IBV)),
        ["exit 1", "+ proc.memlock-limit object=locked memory", "- reported.error"]),
})
# nccl-*: NCCL unable to set up its sockets (proc.nccl-socket-ifname): the job's
# NCCL_SOCKET_IFNAME against the interfaces up here (host.net_up).
AF_ERROR = ("node1:48211:48290 [0] misc/socket.cc:484 NCCL WARN ncclSocketInit: connecting to "
            "address  with family 0 is neither AF_INET(2) nor AF_INET6(10)")
INTERNAL = ("torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, "
            "internal error - please report this issue to the NCCL developers, NCCL version "
            "2.21.5")
NO_IFACE = "node1:48211:48211 [0] NCCL INFO Bootstrap : no socket interface found"


def ifname(s, value, up):
    for p in s["processes"]["processes"]:
        if p["gpus"]:
            p["nccl"] = {"NCCL_SOCKET_IFNAME": value} if value else {}
    s["host"]["net_up"] = up


CASES.update({
    "nccl-ifname-missing": (
        "the training ranks set NCCL_SOCKET_IFNAME=eth2, this node's interfaces are enp6s0 and "
        "ib0: NCCL connects to an address it never got (critical, one finding for the job)",
        lambda s: (ifname(s, "eth2", "enp6s0 ib0"), s.__setitem__("reported", reported(AF_ERROR))),
        ["exit 2", "+ proc.nccl-socket-ifname object=NCCL_SOCKET_IFNAME pid=48211",
         "- proc.nccl-socket-ifname pid=48212", "- reported.error"]),
    "nccl-ifname-matches": (
        "NCCL's internal error while NCCL_SOCKET_IFNAME=enp (a prefix) matches enp6s0 here: not "
        "this cause on this node, information saying the other nodes were not checked",
        lambda s: (ifname(s, "enp", "enp6s0 ib0"), s.__setitem__("reported", reported(INTERNAL))),
        ["exit 0", "+ proc.nccl-socket-ifname pid=48211", "- reported.error"]),
    "nccl-ifname-excludes-all": (
        "NCCL_SOCKET_IFNAME=^enp,ib (exclude) leaves nothing of enp6s0 and ib0: critical",
        lambda s: (ifname(s, "^enp,ib", "enp6s0 ib0"),
                   s.__setitem__("reported", reported(INTERNAL))),
        ["exit 2", "+ proc.nccl-socket-ifname pid=48211", "- reported.error"]),
    "nccl-no-interface": (
        "NCCL's bootstrap found no interface; no rank restricts them and only lo is up (a "
        "container without a network): critical",
        lambda s: (ifname(s, None, ""), s.__setitem__("reported", reported(NO_IFACE))),
        ["exit 2", "+ proc.nccl-socket-ifname object=NCCL_SOCKET_IFNAME", "- reported.error"]),
})
BASES = {"oom-beside-compositor": COMPOSITOR, "uvm-not-loaded": IDLE}

for name, (story, change, expect) in CASES.items():
    s = copy.deepcopy(BASES.get(name, BASE))
    change(s)
    d = os.path.join(HERE, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "snapshot.json"), "w") as f:
        json.dump(s, f, indent=1)
        f.write("\n")
    with open(os.path.join(d, "expect"), "w") as f:
        f.write("# %s (written by limits-make-cases.py)\n" % story)
        f.write("\n".join(expect) + "\n")
