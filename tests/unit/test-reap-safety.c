/*
 * reap's safety checks, one by one: PID 1, kernel threads (by flag, and by parent when the flag
 * is unknown), gpudoctor itself and its ancestors, other users' processes (root without and
 * with --all-users, not root), an unknown owner, the protected list (by command name cut to 15
 * bytes, by executable, by argv[0]; lifted only by naming the pid). Then the guard this process
 * gets, the facts read from a real /proc, and the parsers of --min-mem, --pid and --gpu.
 */
#include "collect/procfs.h"
#include "reap/reap.h"
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

static int32_t ancestors[] = { 900, 800, 1 };

/* root, running as pid 1000 under 900 under 800 under init. */
static void guard(struct reap_guard *g, bool root, bool all_users)
{
    memset(g, 0, sizeof(*g));
    g->self = 1000;
    g->ancestors = ancestors;
    g->n_ancestors = ARRAY_SIZE(ancestors);
    g->uid = root ? 0 : 1001;
    snprintf(g->user, sizeof(g->user), "%s", root ? "root" : "alice");
    g->root = root;
    g->all_users = all_users;
}

/* A plain process of uid: a python training script. */
static void facts(struct reap_facts *f, int32_t pid, uint32_t uid)
{
    memset(f, 0, sizeof(*f));
    f->pid = pid;
    f->ppid = 4000;
    f->state = 'S';
    f->have_flags = true;
    f->have_uid = true;
    f->uid = uid;
    snprintf(f->comm, sizeof(f->comm), "python");
    f->argv0 = (char *)"python";
    f->exe = (char *)"/usr/bin/python3.11";
}

static enum reap_refusal check(const struct reap_guard *g, const struct reap_facts *f, bool named,
                               char *why)
{
    return reap_check(g, f, named, why, NULL, 320);
}

static void test_pid1_and_kernel_threads(void **state)
{
    struct reap_guard g;
    struct reap_facts f;
    char why[320];

    (void)state;
    guard(&g, true, true);
    facts(&f, 1, 0);
    assert_int_equal(check(&g, &f, true, why), REAP_REFUSE_PID1);
    assert_non_null(strstr(why, "PID 1 is init"));
    facts(&f, 0, 0);
    assert_int_equal(check(&g, &f, true, why), REAP_REFUSE_PID1);

    facts(&f, 77, 0);
    f.flags = PROCFS_PF_KTHREAD;
    snprintf(f.comm, sizeof(f.comm), "kworker/0:1");
    assert_int_equal(check(&g, &f, true, why), REAP_REFUSE_KTHREAD);
    assert_non_null(strstr(why, "kworker/0:1"));
    /* No flags (a snapshot): kthreadd is 2, every kernel thread its child. */
    facts(&f, 2, 0);
    f.have_flags = false;
    assert_int_equal(check(&g, &f, true, why), REAP_REFUSE_KTHREAD);
    facts(&f, 78, 0);
    f.have_flags = false;
    f.ppid = 2;
    assert_int_equal(check(&g, &f, true, why), REAP_REFUSE_KTHREAD);
    /* With the flags known, a user process whose parent is 2 is not a kernel thread... */
    facts(&f, 79, 0);
    f.ppid = 2;
    assert_int_equal(check(&g, &f, false, why), REAP_ALLOWED);
    /* ...and the flag wins over anything else. */
    f.flags = PROCFS_PF_KTHREAD | 0x40;
    assert_int_equal(check(&g, &f, false, why), REAP_REFUSE_KTHREAD);
}

static void test_self_and_ancestors(void **state)
{
    struct reap_guard g;
    struct reap_facts f;
    char why[320];

    (void)state;
    guard(&g, true, true);
    facts(&f, 1000, 0);
    assert_int_equal(check(&g, &f, true, why), REAP_REFUSE_SELF);
    facts(&f, 900, 0);
    snprintf(f.comm, sizeof(f.comm), "bash");
    assert_int_equal(check(&g, &f, true, why), REAP_REFUSE_ANCESTOR);
    assert_non_null(strstr(why, "ancestor of this gpudoctor (bash)"));
    facts(&f, 800, 0);
    assert_int_equal(check(&g, &f, true, why), REAP_REFUSE_ANCESTOR);
    facts(&f, 801, 0);
    assert_int_equal(check(&g, &f, true, why), REAP_ALLOWED);
    assert_string_equal(why, "");
}

static void test_owners(void **state)
{
    struct reap_guard g;
    struct reap_facts f;
    char why[320];

    (void)state;
    /* root without --all-users: its own processes only. */
    guard(&g, true, false);
    facts(&f, 5000, 1001);
    f.user = "alice";
    assert_int_equal(check(&g, &f, true, why), REAP_REFUSE_OTHER_USER);
    assert_string_equal(why, "belongs to alice (uid 1001), not to you (root): add --all-users to "
                             "end other users' processes");
    facts(&f, 5000, 0);
    assert_int_equal(check(&g, &f, false, why), REAP_ALLOWED);
    /* root with --all-users: anyone's. */
    guard(&g, true, true);
    facts(&f, 5000, 1001);
    assert_int_equal(check(&g, &f, false, why), REAP_ALLOWED);
    /* Not root: its own only, --all-users or not. */
    guard(&g, false, true);
    facts(&f, 5000, 0);
    assert_int_equal(check(&g, &f, true, why), REAP_REFUSE_OTHER_USER);
    assert_non_null(strstr(why, "belongs to uid 0, not to you (alice): only root, with "
                                "--all-users, ends other users' processes"));
    facts(&f, 5000, 1001);
    assert_int_equal(check(&g, &f, false, why), REAP_ALLOWED);
    /* An owner that could not be read is nobody's to end. */
    facts(&f, 5000, 1001);
    f.have_uid = false;
    assert_int_equal(check(&g, &f, true, why), REAP_REFUSE_OWNER_UNKNOWN);
}

static void test_protected(void **state)
{
    struct reap_guard g;
    struct reap_facts f;
    char why[320];

    (void)state;
    guard(&g, true, true);
    /* The kernel keeps 15 bytes of the name. */
    facts(&f, 6000, 0);
    snprintf(f.comm, sizeof(f.comm), "nvidia-persiste");
    f.exe = NULL;
    f.argv0 = NULL;
    assert_int_equal(check(&g, &f, false, why), REAP_REFUSE_PROTECTED);
    assert_non_null(strstr(why, "protected: nvidia-persistenced ("));
    assert_non_null(strstr(why, "name its pid with --pid"));
    /* Named by pid: the operator means it. */
    assert_int_equal(check(&g, &f, true, why), REAP_ALLOWED);
    /* A 15-byte name is not a prefix match for anything shorter. */
    snprintf(f.comm, sizeof(f.comm), "nvidia-persistX");
    assert_int_equal(check(&g, &f, false, why), REAP_ALLOWED);

    /* By executable: a renamed comm does not hide Xorg. */
    facts(&f, 6001, 0);
    f.exe = (char *)"/usr/lib/xorg/Xorg";
    assert_int_equal(check(&g, &f, false, why), REAP_REFUSE_PROTECTED);
    /* By argv[0] only (exec -a Xorg sleep). */
    facts(&f, 6002, 0);
    f.argv0 = (char *)"Xorg";
    assert_int_equal(check(&g, &f, false, why), REAP_REFUSE_PROTECTED);
    /* Globs: every MPS daemon and containerd shim. */
    facts(&f, 6003, 0);
    snprintf(f.comm, sizeof(f.comm), "containerd-shim");
    assert_int_equal(check(&g, &f, false, why), REAP_REFUSE_PROTECTED);
    facts(&f, 6004, 0);
    f.exe = (char *)"/usr/bin/nvidia-cuda-mps-server";
    assert_non_null(reap_protected_match(&f));
    assert_string_equal(reap_protected_match(&f)->pattern, "nvidia-cuda-mps-*");
    /* The rest of the list: each named one. */
    {
        static const char *const names[] = { "Xwayland",         "gnome-shell",   "nv-hostengine",
                                             "nv-fabricmanager", "nvidia-powerd", "sshd",
                                             "dcgm-exporter",    "slurmstepd",    "gdm-x-session" };

        for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
            facts(&f, 7000, 0);
            f.exe = NULL;
            f.argv0 = (char *)names[i];
            if (reap_protected_match(&f) == NULL)
                fail_msg("%s is not protected", names[i]);
        }
    }
    /* And not what merely looks alike. */
    facts(&f, 7001, 0);
    f.argv0 = (char *)"python";
    snprintf(f.comm, sizeof(f.comm), "pt_main_thread");
    assert_null(reap_protected_match(&f));
    for (size_t i = 0; i < reap_n_protected; i++)
        assert_true(strlen(reap_protected_list[i].why) > 10);
}

static void test_guard_of_this_process(void **state)
{
    struct reap_guard g;

    (void)state;
    reap_guard_init(&g, false);
    assert_int_equal(g.self, (int32_t)getpid());
    assert_true(g.n_ancestors >= 1);
    assert_int_equal(g.ancestors[0], (int32_t)getppid());
    /* The chain climbs to init of this PID namespace (or stops where /proc ends it). */
    for (size_t i = 1; i < g.n_ancestors; i++)
        assert_true(g.ancestors[i] != g.ancestors[i - 1]);
    assert_int_equal(g.uid, (uint32_t)getuid());
    assert_int_equal(g.root, geteuid() == 0);
    reap_guard_free(&g);
}

static void test_facts_of_this_process(void **state)
{
    int proc_fd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    struct reap_facts f;
    char *cause = NULL;

    (void)state;
    assert_true(proc_fd >= 0);
    assert_int_equal(reap_facts_read(proc_fd, (int32_t)getpid(), &f, &cause), 0);
    assert_int_equal(f.pid, (int32_t)getpid());
    assert_int_equal(f.ppid, (int32_t)getppid());
    assert_int_equal(f.state, 'R');
    assert_true(f.start_ticks > 0);
    assert_true(f.have_uid);
    assert_int_equal(f.uid, (uint32_t)geteuid());
    assert_true(f.have_flags);
    assert_int_equal(f.flags & PROCFS_PF_KTHREAD, 0);
    assert_string_equal(f.comm, "test-reap-safet"); /* cut to 15 bytes */
    assert_non_null(f.exe);
    assert_non_null(strstr(f.exe, "test-reap-safety"));
    assert_non_null(strstr(f.argv0, "test-reap-safety"));
    assert_true(f.have_tasks);
    assert_int_equal(f.tasks_live, 1);
    assert_int_equal(f.tasks_d, 0);
    reap_facts_free(&f);
    /* A pid that does not exist. */
    assert_int_equal(reap_facts_read(proc_fd, 4194303, &f, &cause), -ESRCH);
    close(proc_fd);
}

static void test_parse_size(void **state)
{
    uint64_t b = 0;

    (void)state;
    assert_true(reap_parse_size("10G", &b));
    assert_int_equal(b, 10ull << 30);
    assert_true(reap_parse_size("10GiB", &b));
    assert_int_equal(b, 10ull << 30);
    assert_true(reap_parse_size("10gb", &b));
    assert_int_equal(b, 10ull << 30);
    assert_true(reap_parse_size("512M", &b));
    assert_int_equal(b, 512ull << 20);
    assert_true(reap_parse_size("1.5T", &b));
    assert_int_equal(b, 3ull << 39);
    assert_true(reap_parse_size("4096", &b));
    assert_int_equal(b, 4096);
    assert_true(reap_parse_size("0", &b));
    assert_int_equal(b, 0);
    assert_false(reap_parse_size("", &b));
    assert_false(reap_parse_size("G", &b));
    assert_false(reap_parse_size("-1G", &b));
    assert_false(reap_parse_size("10X", &b));
    assert_false(reap_parse_size("10GiBs", &b));
    assert_false(reap_parse_size("1.5", &b));
    assert_false(reap_parse_size("99999999999P", &b));
    assert_false(reap_parse_size("nan", &b));
    assert_false(reap_parse_size(NULL, &b));
}

static void test_parse_ints(void **state)
{
    int32_t *v = NULL;
    size_t n = 0;

    (void)state;
    assert_true(reap_parse_ints("4121,4122", 0, &v, &n));
    assert_true(reap_parse_ints("7", 0, &v, &n));
    assert_int_equal(n, 3);
    assert_int_equal(v[0], 4121);
    assert_int_equal(v[1], 4122);
    assert_int_equal(v[2], 7);
    assert_false(reap_parse_ints("12x", 0, &v, &n));
    assert_false(reap_parse_ints("-3", 0, &v, &n));
    assert_false(reap_parse_ints("", 0, &v, &n));
    assert_false(reap_parse_ints(",", 0, &v, &n));
    assert_false(reap_parse_ints("99999999999", 0, &v, &n));
    free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pid1_and_kernel_threads),
        cmocka_unit_test(test_self_and_ancestors),
        cmocka_unit_test(test_owners),
        cmocka_unit_test(test_protected),
        cmocka_unit_test(test_guard_of_this_process),
        cmocka_unit_test(test_facts_of_this_process),
        cmocka_unit_test(test_parse_size),
        cmocka_unit_test(test_parse_ints),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
