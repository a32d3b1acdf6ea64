/* The /proc file parsers: real layouts, hostile names, garbage and truncated input. */
#include "collect/procfs.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* A stat line as Linux 6.x writes it (52 fields). */
#define STAT_TAIL                                                                                  \
    " 18446744073709551615 94000000000000 94000000100000 140720000000000 0 0 0 0 0 0 0 0 0 17 3 "  \
    "0 0 0 0 0 94000000200000 94000000300000 94000000400000 140720000001000 140720000001100 "      \
    "140720000001100 140720000002000 0\n"

static void test_stat_real_line(void **state)
{
    const char *text = "2100 (python) S 1 2100 2100 34816 2100 4194560 125000 0 12 0 720000 36000 "
                       "5 7 20 0 48 0 360000 12884901888 2097152" STAT_TAIL;
    struct procfs_stat st;
    char why[128];

    (void)state;
    assert_int_equal(procfs_parse_stat(text, &st, why, sizeof(why)), 0);
    assert_int_equal(st.pid, 2100);
    assert_string_equal(st.comm, "python");
    assert_int_equal(st.state, 'S');
    assert_int_equal(st.ppid, 1);
    assert_int_equal(st.flags, 4194560);
    assert_int_equal(st.utime_ticks, 720000);
    assert_int_equal(st.stime_ticks, 36000);
    assert_int_equal(st.threads, 48);
    assert_int_equal(st.start_ticks, 360000);
    assert_int_equal(st.rss_pages, 2097152);
}

static void test_stat_hostile_comm(void **state)
{
    /* A name with spaces, ')' and fake fields: the name ends at the LAST ')'. */
    const char *text = "2400 (a) R 9 (b c) S 1 2400 2400 0 -1 4194560 1 0 0 0 200 100 0 0 20 0 3 0 "
                       "400000 1 2" STAT_TAIL;
    const char *empty = "7 () Z 1 7 7 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 5 0 0" STAT_TAIL;
    struct procfs_stat st;
    char why[128];

    (void)state;
    assert_int_equal(procfs_parse_stat(text, &st, why, sizeof(why)), 0);
    assert_string_equal(st.comm, "a) R 9 (b c");
    assert_int_equal(st.state, 'S');
    assert_int_equal(st.ppid, 1);
    assert_int_equal(st.utime_ticks, 200);
    assert_int_equal(st.start_ticks, 400000);
    assert_int_equal(procfs_parse_stat(empty, &st, why, sizeof(why)), 0);
    assert_string_equal(st.comm, "");
    assert_int_equal(st.state, 'Z');
}

static void test_stat_long_and_unsafe_comm(void **state)
{
    char text[512];
    struct procfs_stat st;
    char why[128];

    (void)state;
    /* Kernel workers have names longer than 15 bytes; an escape sequence must not survive. */
    snprintf(text, sizeof(text),
             "9 (kworker/u8:3-events_unbound\033[2J%s) I 2 0 0 0 -1 69238880 0 0 0 0 0 5 0 0 20 0 "
             "1 0 12 0 0" STAT_TAIL,
             "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
    assert_int_equal(procfs_parse_stat(text, &st, why, sizeof(why)), 0);
    assert_int_equal(strlen(st.comm), PROCFS_COMM_MAX - 1);
    assert_true(strncmp(st.comm, "kworker/u8:3-events_unbound?[2J", 31) == 0);
    assert_int_equal(st.state, 'I');
    assert_true(st.flags & PROCFS_PF_KTHREAD);
}

static void test_stat_garbage(void **state)
{
    static const struct {
        const char *text;
        const char *why; /* a part of the message */
    } cases[] = {
        { "", "does not start" },
        { "garbage\n", "does not start" },
        { "12 python S 1", "does not start" },
        { "0 (init) S 1" STAT_TAIL, "does not start" },
        { "99999999999 (x) S 1" STAT_TAIL, "out of range" },
        { "12 (python S 1 2 3\n", "no ')'" },
        { "12 (python)S 1 2\n", "no state" },
        { "12 (python) 1 1 2\n", "no state" },
        { "2501 (trunc) S 1 2501 2501 0 -1 4194560 100", "truncated: ends before field 11" },
        { "2501 (trunc) S 1 2501 2501 0 -1 4194560 100 0 0 0 5 5 0 0 20 0 1 0\n",
          "field 22 (starttime)" },
        { "12 (x) S 1 2 3 0 -1 4194560 1 0 0 0 abc 0 0 0 20 0 1 0 5 0 0" STAT_TAIL,
          "field 14 (utime) is not a number" },
        { "12 (x) S -1 2 3 0 -1 4194560 1 0 0 0 5 0 0 0 20 0 1 0 5 0 0" STAT_TAIL,
          "field 4 (ppid) is negative" },
        { "12 (x) S 1 2 3 0 -1 4194560 1 0 0 0 5 0 0 0 20 0 1 0 99999999999999999999 0 0" STAT_TAIL,
          "field 22 (starttime) is out of range" },
        { "12 (x) S 1 2 3 0 -1 4194560 1 0 0 0 5 0 0 0 20 0 1 0 5x 0 0" STAT_TAIL,
          "field 22 (starttime) is not a number" },
        { "12 (x) S 1  2 3 0 -1 4194560 1 0 0 0 5 0 0 0 20 0 1 0 5 0 0" STAT_TAIL, "field 5" },
    };
    struct procfs_stat st;
    char why[128];

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        int r = procfs_parse_stat(cases[i].text, &st, why, sizeof(why));

        if (r != -EINVAL || strstr(why, cases[i].why) == NULL)
            fail_msg("case %zu: r=%d why=\"%s\", wanted \"%s\"", i, r, why, cases[i].why);
    }
}

static void test_status(void **state)
{
    const char *text = "Name:\tpython\nState:\tS (sleeping)\nTgid:\t3100\n"
                       "Uid:\t1000\t2000\t2000\t2000\nGid:\t1000\t1000\t1000\t1000\n"
                       "NSpid:\t3100\t42\nVmPeak:\t 9000 kB\nVmRSS:\t    4194304 kB\n"
                       "Threads:\t16\nCpus_allowed:\tffff\nCpus_allowed_list:\t0-7,16-23\n";
    const char *deep = "NSpid:\t3300\t77\t5\nUid:\t0\t0\t0\t0\n";
    const char *bad = "Uid:\tabc\t1\t1\t1\nNSpid:\t\nVmRSS:\t12 MB\nThreads:\t-1\n"
                      "Cpus_allowed_list:\t0-3,\033[31m\n";
    const char *cut =
        "Uid:\t1000\t1000\t10"; /* a read cut short keeps the value whole or drops it */
    struct procfs_status st;

    (void)state;
    procfs_parse_status(text, &st);
    assert_true(st.have_uid);
    assert_int_equal(st.uid, 2000); /* the effective one, as ps shows */
    assert_true(st.have_nspid);
    assert_int_equal(st.ns_pid, 42);
    assert_int_equal(st.ns_depth, 1);
    assert_true(st.have_rss);
    assert_int_equal(st.rss_bytes, 4294967296ULL);
    assert_true(st.have_cpus);
    assert_string_equal(st.cpus_allowed, "0-7,16-23");

    procfs_parse_status(deep, &st);
    assert_false(st.have_cpus); /* no line: not read, never "none" */
    assert_int_equal(st.ns_pid, 5);
    assert_int_equal(st.ns_depth, 2);
    assert_int_equal(st.uid, 0);
    assert_false(st.have_rss);

    procfs_parse_status(bad, &st);
    assert_false(st.have_cpus);
    assert_false(st.have_uid);
    assert_false(st.have_nspid);
    assert_false(st.have_rss);

    procfs_parse_status(cut, &st);
    assert_false(st.have_uid);
    procfs_parse_status("", &st);
    assert_false(st.have_uid || st.have_nspid || st.have_rss);
}

/* /proc/<pid>/limits: the soft limit on open files, "unlimited", and what is not that line. */
static void test_nofile(void **state)
{
    uint64_t soft = 7;

    (void)state;
    assert_int_equal(procfs_parse_nofile("Limit                     Soft Limit           Hard "
                                         "Limit           Units     \n"
                                         "Max processes             1030459              1030459 "
                                         "             processes \n"
                                         "Max open files            1024                 1048576 "
                                         "             files     \n",
                                         &soft),
                     1);
    assert_int_equal(soft, 1024);
    assert_int_equal(procfs_parse_nofile("Max open files            unlimited            "
                                         "unlimited            files     \n",
                                         &soft),
                     1);
    assert_true(soft == UINT64_MAX);
    soft = 7;
    assert_int_equal(procfs_parse_nofile("Max open filesystems 3 3 x\n", &soft), 0);
    assert_int_equal(procfs_parse_nofile("Max open files            -1 5 files\n", &soft), 0);
    assert_int_equal(
        procfs_parse_nofile("Max open files            99999999999999999999999 5\n", &soft), 0);
    assert_int_equal(procfs_parse_nofile("Max open files            1024", &soft), 0);
    assert_int_equal(procfs_parse_nofile("", &soft), 0);
    assert_int_equal(soft, 7);
}

static void test_memlock(void **state)
{
    uint64_t soft = 0;

    (void)state;
    assert_int_equal(procfs_parse_memlock("Limit                     Soft Limit           Hard "
                                          "Limit           Units     \n"
                                          "Max open files            1024                 "
                                          "1048576              files     \n"
                                          "Max locked memory         8388608              "
                                          "8388608              bytes     \n",
                                          &soft),
                     1);
    assert_int_equal(soft, 8388608);
    assert_int_equal(procfs_parse_memlock("Max locked memory         unlimited            "
                                          "unlimited            bytes     \n",
                                          &soft),
                     1);
    assert_true(soft == UINT64_MAX);
    /* the open-files line is not the locked-memory one, and a line without its hard limit is
     * cut */
    assert_int_equal(procfs_parse_memlock("Max open files 1024 4096 files\n", &soft), 0);
    assert_int_equal(procfs_parse_memlock("Max locked memory 65536", &soft), 0);
    assert_int_equal(
        procfs_parse_limit("Max locked memoryX 5 5 bytes\n", "Max locked memory", &soft), 0);
}

static void test_cmdline(void **state)
{
    static const char args[] = "python\0train.py\0--lr\0003e-4\0";
    static const char unsafe[] = "python\0-c\0print(\"\033[31m\")\0\377\376\0";
    static const char title[] = "postgres: writer process   "; /* rewritten argv, no NULs */
    char *s;

    (void)state;
    s = procfs_cmdline_join(args, sizeof(args) - 1);
    assert_string_equal(s, "python train.py --lr 3e-4");
    free(s);
    s = procfs_cmdline_join(unsafe, sizeof(unsafe) - 1);
    assert_string_equal(s, "python -c print(\"?[31m\") ??");
    free(s);
    s = procfs_cmdline_join(title, sizeof(title) - 1);
    assert_string_equal(s, title);
    free(s);
    assert_null(procfs_cmdline_join("", 0));
    assert_null(procfs_cmdline_join("\0\0", 2));
}

static void test_environ(void **state)
{
    static const char env[] = "PATH=/bin\0CUDA_VISIBLE_DEVICES_X=9\0XCUDA_VISIBLE_DEVICES=8\0"
                              "CUDA_VISIBLE_DEVICES=0,1\0HOME=/root\0";
    static const char empty_value[] = "CUDA_VISIBLE_DEVICES=\0";
    static const char unterminated[] = "A=1\0CUDA_VISIBLE_DEVICES=\033]0;x\a";
    char *v;

    (void)state;
    assert_int_equal(procfs_environ_find(env, sizeof(env) - 1, "CUDA_VISIBLE_DEVICES", &v), 1);
    assert_string_equal(v, "0,1");
    free(v);
    assert_int_equal(procfs_environ_find(env, sizeof(env) - 1, "NOPE", &v), 0);
    assert_null(v);
    /* "=" with nothing after it: set, to the empty string (which hides every GPU) */
    assert_int_equal(
        procfs_environ_find(empty_value, sizeof(empty_value) - 1, "CUDA_VISIBLE_DEVICES", &v), 1);
    assert_string_equal(v, "");
    free(v);
    assert_int_equal(
        procfs_environ_find(unterminated, sizeof(unterminated) - 1, "CUDA_VISIBLE_DEVICES", &v), 1);
    assert_string_equal(v, "?]0;x?");
    free(v);
    assert_int_equal(procfs_environ_find("", 0, "CUDA_VISIBLE_DEVICES", &v), 0);
}

struct cg_case {
    const char *text;
    const char *path, *runtime, *id, *pod, *job;
};

static void check_cgroup(const struct cg_case *c, size_t i)
{
    struct procfs_cgroup cg;

    if (procfs_parse_cgroup(c->text, &cg) != 0)
        fail_msg("case %zu: not parsed", i);
#define EQ(a, b)                                                                                   \
    do {                                                                                           \
        if (((a) == NULL) != ((b) == NULL) || ((a) && strcmp((a), (b)) != 0))                      \
            fail_msg("case %zu: %s = \"%s\", wanted \"%s\"", i, #a, (a) ? (a) : "(null)",          \
                     (b) ? (b) : "(null)");                                                        \
    } while (0)
    EQ(cg.path, c->path);
    EQ(cg.runtime, c->runtime);
    EQ(cg.container_id, c->id);
    EQ(cg.pod_uid, c->pod);
    EQ(cg.slurm_job_id, c->job);
#undef EQ
    procfs_cgroup_free(&cg);
}

#define ID64  "4f1c2a9be0d3c7a85e6f1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6a"
#define ID64B "9e8d7c6b5a49382716f5e4d3c2b1a09f8e7d6c5b4a3928170f6e5d4c3b2a1908"

static void test_cgroup(void **state)
{
    static const struct cg_case cases[] = {
        /* the host */
        { "0::/user.slice/user-1000.slice/session-3.scope\n",
          "/user.slice/user-1000.slice/session-3.scope", NULL, NULL, NULL, NULL },
        { "0::/\n", "/", NULL, NULL, NULL, NULL },
        /* docker, cgroup v1: /docker/<id>; the v2 line of a hybrid system names nothing */
        { "12:pids:/docker/" ID64 "\n1:name=systemd:/docker/" ID64
          "\n0::/system.slice/containerd.service\n",
          "/docker/" ID64, "docker", ID64, NULL, NULL },
        /* docker, systemd driver */
        { "0::/system.slice/docker-" ID64 ".scope\n", "/system.slice/docker-" ID64 ".scope",
          "docker", ID64, NULL, NULL },
        /* docker in docker: the innermost */
        { "0::/docker/" ID64 "/docker/" ID64B "\n", "/docker/" ID64 "/docker/" ID64B, "docker",
          ID64B, NULL, NULL },
        /* Kubernetes, containerd, systemd driver; the pod UID with '_' becomes '-' */
        { "0::/kubepods.slice/kubepods-burstable.slice/"
          "kubepods-burstable-pod0f5b3c1e_8a2d_4f6b_9c3e_7d1a2b3c4d5e.slice/cri-containerd-" ID64
          ".scope\n",
          "/kubepods.slice/kubepods-burstable.slice/"
          "kubepods-burstable-pod0f5b3c1e_8a2d_4f6b_9c3e_7d1a2b3c4d5e.slice/cri-containerd-" ID64
          ".scope",
          "containerd", ID64, "0f5b3c1e-8a2d-4f6b-9c3e-7d1a2b3c4d5e", NULL },
        /* Guaranteed QoS: no class level */
        { "0::/kubepods.slice/kubepods-pod0f5b3c1e_8a2d_4f6b_9c3e_7d1a2b3c4d5e.slice/crio-" ID64
          ".scope\n",
          "/kubepods.slice/kubepods-pod0f5b3c1e_8a2d_4f6b_9c3e_7d1a2b3c4d5e.slice/crio-" ID64
          ".scope",
          "cri-o", ID64, "0f5b3c1e-8a2d-4f6b-9c3e-7d1a2b3c4d5e", NULL },
        /* Kubernetes, cgroupfs driver: CRI-O, and a bare id (runtime unnamed) */
        { "5:memory:/kubepods/besteffort/pod7c9e6679-7425-40de-944b-e07fc1f90ae7/crio-" ID64 "\n",
          "/kubepods/besteffort/pod7c9e6679-7425-40de-944b-e07fc1f90ae7/crio-" ID64, "cri-o", ID64,
          "7c9e6679-7425-40de-944b-e07fc1f90ae7", NULL },
        { "4:cpu:/kubepods/pod7c9e6679-7425-40de-944b-e07fc1f90ae7/" ID64 "\n",
          "/kubepods/pod7c9e6679-7425-40de-944b-e07fc1f90ae7/" ID64, NULL, ID64,
          "7c9e6679-7425-40de-944b-e07fc1f90ae7", NULL },
        /* the pod's sandbox level only */
        { "0::/kubepods.slice/kubepods-besteffort.slice/"
          "kubepods-besteffort-pod7c9e6679_7425_40de_944b_e07fc1f90ae7.slice\n",
          "/kubepods.slice/kubepods-besteffort.slice/"
          "kubepods-besteffort-pod7c9e6679_7425_40de_944b_e07fc1f90ae7.slice",
          NULL, NULL, "7c9e6679-7425-40de-944b-e07fc1f90ae7", NULL },
        /* podman: rootless (systemd), and its conmon, which is not in the container */
        { "0::/user.slice/user-1001.slice/user@1001.service/user.slice/libpod-" ID64
          ".scope/container\n",
          "/user.slice/user-1001.slice/user@1001.service/user.slice/libpod-" ID64
          ".scope/container",
          "podman", ID64, NULL, NULL },
        { "0::/machine.slice/libpod-conmon-" ID64 ".scope\n",
          "/machine.slice/libpod-conmon-" ID64 ".scope", NULL, NULL, NULL, NULL },
        /* Slurm: v1 under /slurm, v2 under slurmstepd, a named cluster */
        { "4:memory:/slurm/uid_1000/job_4242/step_0/task_0\n0::/\n",
          "/slurm/uid_1000/job_4242/step_0/task_0", NULL, NULL, NULL, "4242" },
        { "0::/system.slice/slurmstepd.scope/job_4243/step_batch/user/task_0\n",
          "/system.slice/slurmstepd.scope/job_4243/step_batch/user/task_0", NULL, NULL, NULL,
          "4243" },
        { "7:devices:/slurm_node17/uid_1000/job_77/step_extern\n",
          "/slurm_node17/uid_1000/job_77/step_extern", NULL, NULL, NULL, "77" },
        /* job_ outside Slurm is just a name */
        { "0::/user.slice/job_42.scope\n", "/user.slice/job_42.scope", NULL, NULL, NULL, NULL },
        /* not container ids: too short, upper case, not hex */
        { "0::/system.slice/docker-abc.scope\n", "/system.slice/docker-abc.scope", NULL, NULL, NULL,
          NULL },
        { "0::/docker/ZZ1c2a9be0d3c7a85e6f1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6a\n",
          "/docker/ZZ1c2a9be0d3c7a85e6f1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f6a", NULL, NULL,
          NULL, NULL },
        /* a path with ':' in it; a garbage line among good ones */
        { "junk\n3:cpu,cpuacct:/a:b\n", "/a:b", NULL, NULL, NULL, NULL },
    };

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
        check_cgroup(&cases[i], i);
}

static void test_cgroup_garbage(void **state)
{
    static const char *const bad[] = { "", "not a cgroup file\n", "x:y:z\n", "1:cpu:relative\n",
                                       "::/\n" };
    struct procfs_cgroup cg;

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
        if (procfs_parse_cgroup(bad[i], &cg) != -EINVAL)
            fail_msg("case %zu parsed", i);
    }
}

static void test_maps(void **state)
{
    const char *text =
        "55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 1 /usr/bin/python3.11\n"
        "7f0000000000-7f0000001000 r--p 00000000 08:01 2   /usr/lib/libcuda.so.550.54.15\n"
        "7f0000001000-7f0000002000 r-xp 00001000 08:01 2   /usr/lib/libcuda.so.550.54.15\n"
        "7f0000003000-7f0000004000 r--p 00000000 08:01 3   /usr/lib/libnvidia-ml.so.1\n"
        "7f0000005000-7f0000006000 r--p 00000000 08:01 4   /opt/my libs/libcudart.so.12.4.127\n"
        "7f0000007000-7f0000008000 r--p 00000000 08:01 5   /w/nvidia/cudnn/lib/libcudnn_ops.so.9\n"
        "7f0000009000-7f000000a000 r--p 00000000 08:01 6   /w/torch/lib/libtorch_cuda.so\n"
        "7f000000b000-7f000000c000 r--p 00000000 08:01 7   /w/torch/lib/libcudart-9335f6a2.so.12\n"
        "7f000000d000-7f000000e000 r--p 00000000 08:01 8   /tmp/libnccl.so.2.21.5 (deleted)\n"
        "7f000000f000-7f0000010000 r--p 00000000 08:01 9   /tf/libtensorflow_framework.so.2\n"
        "7f0000011000-7f0000012000 r--p 00000000 08:01 9   /usr/lib/libcublasLt.so.12\n"
        /* not ours: debugger, NCCL net plugin, a backup copy, a device mapping, anonymous */
        "7f0000013000-7f0000014000 r--p 00000000 08:01 9   /usr/lib/libcudadebugger.so.1\n"
        "7f0000015000-7f0000016000 r--p 00000000 08:01 9   /usr/lib/libnccl-net.so\n"
        "7f0000017000-7f0000018000 r--p 00000000 08:01 9   /usr/lib/libcuda.so.1.bak\n"
        "7f0000019000-7f000001a000 rw-s 00000000 00:05 9   /dev/nvidiactl\n"
        "7f000001b000-7f000001c000 rw-p 00000000 00:00 0 \n"
        "7ffd1c000000-7ffd1c021000 rw-p 00000000 00:00 0                  [stack]\n"
        /* cut by a bounded read: not trusted */
        "7f000001d000-7f000001e000 r--p 00000000 08:01 9   /usr/lib/libcublas.so.1";
    static const struct {
        const char *kind, *path, *version;
    } want[] = {
        { "cuda", "/usr/lib/libcuda.so.550.54.15", "550.54.15" },
        { "nvml", "/usr/lib/libnvidia-ml.so.1", "1" },
        { "cudart", "/opt/my libs/libcudart.so.12.4.127", "12.4.127" },
        { "cudnn", "/w/nvidia/cudnn/lib/libcudnn_ops.so.9", "9" },
        { "torch", "/w/torch/lib/libtorch_cuda.so", NULL },
        { "cudart", "/w/torch/lib/libcudart-9335f6a2.so.12", "12" },
        { "nccl", "/tmp/libnccl.so.2.21.5", "2.21.5" },
        { "tensorflow", "/tf/libtensorflow_framework.so.2", "2" },
        { "cublas", "/usr/lib/libcublasLt.so.12", "12" },
    };
    struct proc_lib *libs = NULL;
    size_t n = 0;

    (void)state;
    procfs_parse_maps(text, &libs, &n);
    assert_int_equal(n, ARRAY_SIZE(want));
    for (size_t i = 0; i < n; i++) {
        assert_string_equal(libs[i].kind, want[i].kind);
        assert_string_equal(libs[i].path, want[i].path);
        if (want[i].version == NULL)
            assert_null(libs[i].version);
        else
            assert_string_equal(libs[i].version, want[i].version);
    }
    /* Parsing more text adds only what is new. */
    procfs_parse_maps("7f-80 r--p 0 0:0 1 /usr/lib/libcuda.so.550.54.15\n", &libs, &n);
    assert_int_equal(n, ARRAY_SIZE(want));
    for (size_t i = 0; i < n; i++) {
        free(libs[i].kind);
        free(libs[i].path);
        free(libs[i].version);
    }
    free(libs);
}

static void test_classify_link(void **state)
{
    static const struct {
        const char *link;
        enum procfs_dev dev;
        uint32_t minor;
    } cases[] = {
        { "/dev/nvidia0", PROCFS_DEV_GPU, 0 },
        { "/dev/nvidia7", PROCFS_DEV_GPU, 7 },
        { "/dev/nvidia15", PROCFS_DEV_GPU, 15 },
        { "/dev/nvidia1 (deleted)", PROCFS_DEV_GPU, 1 },
        { "/dev/nvidiactl", PROCFS_DEV_CTL, 0 },
        { "/dev/nvidia-uvm", PROCFS_DEV_UVM, 0 },
        { "/dev/nvidia-uvm-tools", PROCFS_DEV_UVM, 0 },
        { "/dev/nvidia-modeset", PROCFS_DEV_OTHER, 0 },
        { "/dev/nvidia-caps/nvidia-cap1", PROCFS_DEV_OTHER, 0 },
        { "/dev/nvidia-nvswitch0", PROCFS_DEV_OTHER, 0 },
        { "/dev/nvidia", PROCFS_DEV_NONE, 0 },
        { "/dev/nvidiafoo", PROCFS_DEV_NONE, 0 },
        { "/dev/nvidia007", PROCFS_DEV_NONE, 0 },
        { "/dev/nvidia0x", PROCFS_DEV_NONE, 0 },
        { "/dev/nvidia9999999999", PROCFS_DEV_NONE, 0 },
        { "/dev/nvidia-", PROCFS_DEV_NONE, 0 },
        { "/dev/null", PROCFS_DEV_NONE, 0 },
        { "socket:[12345]", PROCFS_DEV_NONE, 0 },
        { "/home/u/dev/nvidia0", PROCFS_DEV_NONE, 0 },
        { "", PROCFS_DEV_NONE, 0 },
    };

    (void)state;
    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        uint32_t minor = 12345;
        enum procfs_dev d = procfs_classify_link(cases[i].link, &minor);

        if (d != cases[i].dev)
            fail_msg("%s: %d, wanted %d", cases[i].link, (int)d, (int)cases[i].dev);
        if (d == PROCFS_DEV_GPU && minor != cases[i].minor)
            fail_msg("%s: minor %u", cases[i].link, minor);
    }
}

static void test_btime_and_passwd(void **state)
{
    const char *stat = "cpu  1 2 3\ncpu0 1 2 3\nintr 1 2\nbtime 1764662400\nprocesses 5\n";
    const char *passwd = "root:x:0:0:root:/root:/bin/bash\n"
                         "broken line\n"
                         "::5:5::/:/bin/false\n"
                         "alice:x:1000:1000:Alice:/home/alice:/bin/bash\n"
                         "big:x:99999999999:1::/:/bin/false\n"
                         "last:x:1001:1001::/:/bin/sh"; /* no final newline */
    int64_t b = 0;
    char *name;

    (void)state;
    assert_int_equal(procfs_parse_btime(stat, &b), 0);
    assert_int_equal(b, 1764662400);
    assert_int_equal(procfs_parse_btime("cpu 1\n", &b), -EINVAL);
    assert_int_equal(procfs_parse_btime("btime abc\n", &b), -EINVAL);
    assert_int_equal(procfs_parse_btime("xbtime 5\n", &b), -EINVAL);
    assert_int_equal(procfs_parse_btime("btime 0\n", &b), -EINVAL);

    name = procfs_passwd_lookup(passwd, 1000);
    assert_string_equal(name, "alice");
    free(name);
    name = procfs_passwd_lookup(passwd, 1001);
    assert_string_equal(name, "last");
    free(name);
    assert_null(procfs_passwd_lookup(passwd, 5)); /* no name */
    assert_null(procfs_passwd_lookup(passwd, 2000));
    assert_null(procfs_passwd_lookup("", 0));
}

static void test_read_bounded(void **state)
{
    char dir[] = "/tmp/gpudoctor-procfs-XXXXXX", path[64], *out;
    char small[16];
    bool truncated;
    int dfd, fd;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/f", dir);
    fd = open(path, O_WRONLY | O_CREAT, 0600);
    assert_int_equal(write(fd, "0123456789abcdef\n", 17), 17);
    close(fd);
    dfd = open(dir, O_RDONLY | O_DIRECTORY);

    assert_int_equal(procfs_read_bounded(dfd, "f", 100, &out, &truncated), 17);
    assert_false(truncated);
    assert_string_equal(out, "0123456789abcdef\n");
    free(out);
    assert_int_equal(procfs_read_bounded(dfd, "f", 17, &out, &truncated), 17);
    assert_false(truncated);
    free(out);
    assert_int_equal(procfs_read_bounded(dfd, "f", 10, &out, &truncated), 10);
    assert_true(truncated);
    assert_string_equal(out, "0123456789");
    free(out);
    assert_int_equal(procfs_read_bounded(dfd, "missing", 10, &out, &truncated), -ENOENT);
    assert_null(out);

    assert_int_equal(procfs_read_small(dfd, "f", small, sizeof(small)), -EFBIG);
    assert_int_equal(procfs_read_small(dfd, "f", path, sizeof(path)), 17);
    assert_string_equal(path, "0123456789abcdef\n");
    assert_int_equal(procfs_read_small(dfd, "missing", small, sizeof(small)), -ENOENT);

    unlinkat(dfd, "f", 0);
    close(dfd);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stat_real_line),
        cmocka_unit_test(test_stat_hostile_comm),
        cmocka_unit_test(test_stat_long_and_unsafe_comm),
        cmocka_unit_test(test_stat_garbage),
        cmocka_unit_test(test_status),
        cmocka_unit_test(test_nofile),
        cmocka_unit_test(test_memlock),
        cmocka_unit_test(test_cmdline),
        cmocka_unit_test(test_environ),
        cmocka_unit_test(test_cgroup),
        cmocka_unit_test(test_cgroup_garbage),
        cmocka_unit_test(test_maps),
        cmocka_unit_test(test_classify_link),
        cmocka_unit_test(test_btime_and_passwd),
        cmocka_unit_test(test_read_bounded),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
