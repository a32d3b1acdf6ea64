/*
 * The NVML session against the real simulator library: answers, deadlines, a helper that dies,
 * and closing. Skipped when the simulator is not built.
 */
#include "collect/nvml-session.h"
#include "nvml/nvml-abi.h"
#include "util/timeutil.h"
#include "util/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#define SIM_LIB TEST_BINARY_DIR "/sim/libnvidia-ml.so.1"

static char scenario_path[64];

static const char scenario_base[] =
    "{\"schema\": \"gpudoctor.scenario/1\", \"system\": {\"driver_version\": \"550.54.15\"},"
    " \"gpus\": [{\"index\": 0, \"name\": \"GPU zero\", \"temp_c\": 61, \"power_mw\": 250000,"
    "             \"processes\": [{\"pid\": 77, \"used_bytes\": 4096}] %s},"
    "            {\"index\": 1, \"name\": \"GPU one\", \"temp_c\": 62 %s}] %s}";

/* Writes a scenario (the base with extra keys on GPU 0, GPU 1 and the top level) and names it. */
static void use_scenario(const char *gpu0, const char *gpu1, const char *top)
{
    FILE *f;
    int fd;

    if (scenario_path[0] != '\0')
        unlink(scenario_path); /* a test may write more than one */
    snprintf(scenario_path, sizeof(scenario_path), "/tmp/test-nvml-session-XXXXXX");
    fd = mkstemp(scenario_path);
    assert_true(fd >= 0);
    f = fdopen(fd, "w");
    assert_non_null(f);
    fprintf(f, scenario_base, gpu0, gpu1, top);
    assert_int_equal(fclose(f), 0);
    setenv("NVML_SIM_SCENARIO", scenario_path, 1);
    setenv("NVML_SIM_QUIET", "1", 1);
}

static int teardown(void **state)
{
    (void)state;
    if (scenario_path[0] != '\0')
        unlink(scenario_path);
    scenario_path[0] = '\0';
    return 0;
}

static int setup(void **state)
{
    (void)state;
    if (access(SIM_LIB, R_OK) != 0) {
        print_message("simulator not built: %s\n", SIM_LIB);
        skip();
    }
    return 0;
}

static void free_gpus(struct gpu *g, size_t n)
{
    for (size_t i = 0; i < n; i++)
        gpu_free(&g[i]);
    free(g);
}

/* The helper is gone: not a process of ours any more (reaped, not a zombie). */
static void assert_reaped(pid_t pid)
{
    assert_true(pid > 0);
    assert_int_equal(waitpid(pid, NULL, WNOHANG), -1);
    assert_int_equal(errno, ECHILD);
}

static void test_full_and_samples(void **state)
{
    struct nvml_system sys;
    struct nvml_session *ss;
    struct gpu *gpus = NULL;
    size_t n = 0;
    char *hung = NULL, *cause = NULL;
    pid_t pid;

    (void)state;
    use_scenario("", "", "");
    ss = nvml_session_open(SIM_LIB, &cause);
    assert_non_null(ss);
    pid = nvml_session_pid(ss);
    assert_true(pid > 0);
    assert_int_equal(nvml_session_full(ss, time_mono_ms() + 5000, &sys, &gpus, &n, &hung, &cause),
                     NVML_SESSION_OK);
    assert_null(hung);
    assert_null(cause);
    assert_int_equal(sys.init_rc, 0);
    assert_string_equal(sys.driver_version, "550.54.15");
    assert_int_equal(sys.device_count, 2);
    assert_int_equal(sys.process_stride, 24);
    assert_int_equal(n, 2);
    assert_string_equal(gpus[0].name, "GPU zero");
    assert_int_equal(gpus[0].temp_c, 61);
    assert_int_equal(gpus[0].power_mw, 250000);
    assert_int_equal(gpus[1].rc[GPU_S_POWER], NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(gpus[0].n_procs, 1);
    assert_int_equal(gpus[0].procs[0].pid, 77);
    assert_int_equal(gpus[0].procs[0].used_bytes, 4096);
    free_gpus(gpus, n);
    nvml_system_free(&sys);

    /* samples: the same helper, dynamic fields only */
    for (int i = 0; i < 3; i++) {
        assert_int_equal(nvml_session_sample(ss, time_mono_ms() + 5000, &gpus, &n, &hung, &cause),
                         NVML_SESSION_OK);
        assert_int_equal(nvml_session_pid(ss), pid);
        assert_int_equal(n, 2);
        assert_null(gpus[0].name);
        assert_int_equal(gpus[0].rc[GPU_S_NAME], JF_RC_NOT_COLLECTED);
        assert_int_equal(gpus[0].temp_c, 61);
        assert_int_equal(gpus[1].temp_c, 62);
        assert_int_equal(gpus[0].procs[0].used_bytes, 4096);
        free_gpus(gpus, n);
    }
    nvml_session_close(ss, time_mono_ms() + 2000);
    assert_reaped(pid);
    assert_int_equal(nvml_session_reap(), 0);
}

static void test_timeout(void **state)
{
    struct nvml_system sys;
    struct nvml_session *ss;
    struct gpu *gpus = (struct gpu *)&sys;
    size_t n = 5;
    char *hung = NULL, *cause = NULL;
    int64_t t0;
    pid_t pid;

    (void)state;
    use_scenario("", ", \"hang\": [\"nvmlDeviceGetTemperature\"]", "");
    ss = nvml_session_open(SIM_LIB, &cause);
    assert_non_null(ss);
    pid = nvml_session_pid(ss);
    t0 = time_mono_ms();
    assert_int_equal(nvml_session_full(ss, t0 + 400, &sys, &gpus, &n, &hung, &cause),
                     NVML_SESSION_TIMEOUT);
    /* on time: the deadline plus the kill, never the hang */
    assert_true(time_mono_ms() - t0 >= 400);
    assert_true(time_mono_ms() - t0 < 1000);
    assert_string_equal(hung, "nvmlDeviceGetTemperatureV on GPU 1");
    assert_string_equal(cause, "nvmlDeviceGetTemperatureV on GPU 1 did not answer within 0.4 s");
    assert_null(gpus);
    assert_int_equal(n, 0);
    assert_int_equal(nvml_session_pid(ss), 0);
    assert_reaped(pid);
    free(hung);
    free(cause);

    /* the session stays ended: the same answer at once */
    t0 = time_mono_ms();
    assert_int_equal(nvml_session_sample(ss, t0 + 5000, &gpus, &n, &hung, &cause),
                     NVML_SESSION_TIMEOUT);
    assert_true(time_mono_ms() - t0 < 100);
    assert_string_equal(hung, "nvmlDeviceGetTemperatureV on GPU 1");
    assert_string_equal(cause, "nvmlDeviceGetTemperatureV on GPU 1 did not answer within 0.4 s");
    free(hung);
    free(cause);
    nvml_session_close(ss, time_mono_ms() + 1000);
    assert_int_equal(nvml_session_reap(), 0);
}

static void test_timeout_in_init(void **state)
{
    struct nvml_system sys;
    struct nvml_session *ss;
    struct gpu *gpus = NULL;
    size_t n = 0;
    char *hung = NULL, *cause = NULL;

    (void)state;
    use_scenario("", "", ", \"hang\": [\"nvmlInit\"]");
    ss = nvml_session_open(SIM_LIB, &cause);
    assert_non_null(ss);
    assert_int_equal(nvml_session_full(ss, time_mono_ms() + 300, &sys, &gpus, &n, &hung, &cause),
                     NVML_SESSION_TIMEOUT);
    assert_string_equal(hung, "nvmlInit_v2");
    free(hung);
    free(cause);
    nvml_session_close(ss, time_mono_ms() + 1000);
}

/* A delay within the deadline is only slow. */
static void test_delay(void **state)
{
    struct nvml_system sys;
    struct nvml_session *ss;
    struct gpu *gpus = NULL;
    size_t n = 0;
    char *hung = NULL, *cause = NULL;
    int64_t t0 = time_mono_ms();

    (void)state;
    use_scenario(", \"delays_ms\": {\"nvmlDeviceGetPowerUsage\": 300}", "", "");
    ss = nvml_session_open(SIM_LIB, &cause);
    assert_non_null(ss);
    assert_int_equal(nvml_session_full(ss, t0 + 3000, &sys, &gpus, &n, &hung, &cause),
                     NVML_SESSION_OK);
    assert_true(time_mono_ms() - t0 >= 300);
    assert_int_equal(gpus[0].power_mw, 250000);
    free_gpus(gpus, n);
    nvml_system_free(&sys);
    nvml_session_close(ss, time_mono_ms() + 1000);
}

/* The helper dies in the middle of a call: said with the signal and the call. */
static void test_helper_killed(void **state)
{
    struct nvml_system sys;
    struct nvml_session *ss;
    struct gpu *gpus = NULL;
    size_t n = 0;
    char *hung = NULL, *cause = NULL;
    pid_t pid, killer;

    (void)state;
    use_scenario(", \"delays_ms\": {\"nvmlDeviceGetPowerUsage\": 2000}", "", "");
    ss = nvml_session_open(SIM_LIB, &cause);
    assert_non_null(ss);
    pid = nvml_session_pid(ss);
    killer = fork();
    assert_true(killer >= 0);
    if (killer == 0) {
        time_sleep_ms(500);
        /* SIGILL, a library built for a newer CPU: an AddressSanitizer build's helper program
         * would catch SIGSEGV itself, report, and exit with status 1 */
        kill(pid, SIGILL);
        _exit(0);
    }
    assert_int_equal(nvml_session_full(ss, time_mono_ms() + 5000, &sys, &gpus, &n, &hung, &cause),
                     NVML_SESSION_FAILED);
    assert_int_equal(waitpid(killer, NULL, 0), killer);
    assert_null(hung);
    assert_string_equal(cause, "the NVML helper process was killed by signal 4 (Illegal "
                               "instruction) during nvmlDeviceGetPowerUsage on GPU 0");
    assert_null(gpus);
    assert_reaped(pid);
    free(cause);
    nvml_session_close(ss, time_mono_ms() + 1000);
}

/* A helper that is gone before the request: no SIGPIPE, a plain failure. */
static void test_helper_gone(void **state)
{
    struct nvml_session *ss;
    struct gpu *gpus = NULL;
    size_t n = 0;
    char *hung = NULL, *cause = NULL;
    pid_t pid;

    (void)state;
    use_scenario("", "", "");
    signal(SIGPIPE, SIG_DFL); /* would kill this test if the session wrote into a dead pipe */
    ss = nvml_session_open(SIM_LIB, &cause);
    assert_non_null(ss);
    pid = nvml_session_pid(ss);
    kill(pid, SIGKILL);
    time_sleep_ms(100);
    assert_int_equal(nvml_session_sample(ss, time_mono_ms() + 2000, &gpus, &n, &hung, &cause),
                     NVML_SESSION_FAILED);
    assert_string_equal(cause, "the NVML helper process was killed by signal 9 (Killed)");
    assert_reaped(pid);
    free(cause);
    nvml_session_close(ss, time_mono_ms() + 1000);
}

/* No library: the session works, and the answer says the library is missing. */
static void test_no_library(void **state)
{
    struct nvml_system sys;
    struct nvml_session *ss;
    struct gpu *gpus = NULL;
    size_t n = 0;
    char *hung = NULL, *cause = NULL;

    (void)state;
    ss = nvml_session_open("/nonexistent/libnvidia-ml.so.1", &cause);
    assert_non_null(ss);
    assert_int_equal(nvml_session_full(ss, time_mono_ms() + 2000, &sys, &gpus, &n, &hung, &cause),
                     NVML_SESSION_OK);
    assert_int_equal(sys.load_error, NVML_ERROR_LIBRARY_NOT_FOUND);
    assert_string_equal(sys.library, "/nonexistent/libnvidia-ml.so.1");
    assert_int_equal(sys.init_rc, JF_RC_NOT_COLLECTED);
    assert_int_equal(n, 0);
    free(gpus);
    nvml_system_free(&sys);
    /* sampling an uninitialised library gives no GPU, not an error */
    assert_int_equal(nvml_session_sample(ss, time_mono_ms() + 2000, &gpus, &n, &hung, &cause),
                     NVML_SESSION_OK);
    assert_int_equal(n, 0);
    free(gpus);
    nvml_session_close(ss, time_mono_ms() + 1000);
}

/* Closing a helper stuck in a call: it is killed at the deadline, close does not wait longer. */
static void test_close_stuck(void **state)
{
    struct nvml_system sys;
    struct nvml_session *ss;
    struct gpu *gpus = NULL;
    size_t n = 0;
    char *hung = NULL, *cause = NULL;
    int64_t t0;
    pid_t pid;

    (void)state;
    use_scenario("", "", ", \"hang\": [\"nvmlShutdown\"]");
    ss = nvml_session_open(SIM_LIB, &cause);
    assert_non_null(ss);
    pid = nvml_session_pid(ss);
    assert_int_equal(nvml_session_full(ss, time_mono_ms() + 5000, &sys, &gpus, &n, &hung, &cause),
                     NVML_SESSION_OK);
    free_gpus(gpus, n);
    nvml_system_free(&sys);
    t0 = time_mono_ms();
    nvml_session_close(ss, t0 + 300);
    assert_true(time_mono_ms() - t0 >= 300);
    assert_true(time_mono_ms() - t0 < 800);
    assert_reaped(pid);
}

/* Runs a full request on a malformed scenario, whose simulator prints its error on stderr. */
static void full_on_malformed(void)
{
    struct nvml_system sys;
    struct nvml_session *ss;
    struct gpu *gpus = NULL;
    size_t n = 0;
    char *hung = NULL, *cause = NULL;

    use_scenario(", \"temp_c\": \"hot\"", "", "");
    unsetenv("NVML_SIM_QUIET");
    ss = nvml_session_open(SIM_LIB, &cause);
    assert_non_null(ss);
    assert_int_equal(nvml_session_full(ss, time_mono_ms() + 2000, &sys, &gpus, &n, &hung, &cause),
                     NVML_SESSION_OK);
    assert_int_equal(sys.init_rc, NVML_ERROR_UNKNOWN);
    free(gpus);
    nvml_system_free(&sys);
    nvml_session_close(ss, time_mono_ms() + 1000);
}

/* What the helper prints reaches our stderr. */
static void test_output_forwarded(void **state)
{
    int saved = dup(STDERR_FILENO), p[2];
    char buf[4096];
    ssize_t len;

    (void)state;
    assert_int_equal(pipe(p), 0);
    dup2(p[1], STDERR_FILENO);
    close(p[1]);
    full_on_malformed();
    dup2(saved, STDERR_FILENO);
    close(saved);
    len = read(p[0], buf, sizeof(buf) - 1);
    close(p[0]);
    assert_true(len > 0);
    buf[len] = '\0';
    assert_non_null(strstr(buf, "NVML simulator: "));
    assert_non_null(strstr(buf, scenario_path));
}

/* A stderr nobody reads neither kills us (SIGPIPE) nor blocks us. */
static void test_output_nobody_reads(void **state)
{
    int saved = dup(STDERR_FILENO), p[2];
    char fill[4096];
    int64_t t0;

    (void)state;
    signal(SIGPIPE, SIG_DFL);
    /* a reader that went away */
    assert_int_equal(pipe(p), 0);
    dup2(p[1], STDERR_FILENO);
    close(p[1]);
    close(p[0]);
    full_on_malformed();
    /* a reader that never reads, its pipe full */
    assert_int_equal(pipe(p), 0);
    fcntl(p[1], F_SETFL, O_NONBLOCK);
    memset(fill, 'x', sizeof(fill));
    while (write(p[1], fill, sizeof(fill)) > 0)
        ;
    fcntl(p[1], F_SETFL, 0);
    dup2(p[1], STDERR_FILENO);
    close(p[1]);
    t0 = time_mono_ms();
    full_on_malformed();
    assert_true(time_mono_ms() - t0 < 1500);
    dup2(saved, STDERR_FILENO);
    close(saved);
    close(p[0]);
}

/*
 * Reads /proc/PID/cmdline with its NULs as spaces. A process in the middle of execve can show an
 * empty one for a moment: that reads as "".
 */
static void read_cmdline(pid_t pid, char *buf, size_t size)
{
    char path[64];
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "/proc/%ld/cmdline", (long)pid);
    fd = open(path, O_RDONLY);
    assert_true(fd >= 0);
    n = read(fd, buf, size - 1);
    close(fd);
    assert_true(n >= 0);
    for (ssize_t i = 0; i < n; i++)
        buf[i] = buf[i] == '\0' ? ' ' : buf[i];
    buf[n] = '\0';
}

/*
 * With a helper program and another thread the helper is this binary started again (a fresh
 * process image, so no lock another thread held at fork time); otherwise the fork itself (the
 * same command line).
 */
static void test_helper_image(void **state)
{
    struct nvml_session *ss;
    char *cause = NULL, mine[512], helper[512], want[512];
    pid_t pid;

    (void)state;
    use_scenario("", "", "");
    ss = nvml_session_open(SIM_LIB, &cause);
    assert_non_null(ss);
    pid = nvml_session_pid(ss);
    read_cmdline(getpid(), mine, sizeof(mine));
    /* execve may not have happened yet: the fork's command line is ours until it does */
    for (int i = 0; i < 200; i++) {
        read_cmdline(pid, helper, sizeof(helper));
        if (*helper != '\0' && strcmp(helper, mine) != 0)
            break;
        time_sleep_ms(5);
    }
    if (*(const bool *)*state) {
        snprintf(want, sizeof(want), "gpudoctor-nvml " NVML_SESSION_HELPER_ARG " %ld %s ",
                 (long)getpid(), SIM_LIB);
        assert_string_equal(helper, want);
    } else {
        assert_string_equal(helper, mine);
    }
    nvml_session_close(ss, time_mono_ms() + 2000);
    assert_reaped(pid);
}

static int fork_mode(void **state)
{
    static const bool no = false;

    *state = (void *)&no;
    return 0;
}

/* A thread that waits until the group ends: serve's and watch's are what make the fork unsafe. */
static int idle_pipe[2] = { -1, -1 };
static pthread_t idle_thread;

static void *idle_main(void *arg)
{
    char c;

    (void)arg;
    while (read(idle_pipe[0], &c, 1) < 0 && errno == EINTR)
        ;
    return NULL;
}

/*
 * Every test again with the helper program, as gpudoctor runs it (its main calls the same), in a
 * process with another thread: a process with one thread lets the fork be the helper.
 */
static int program_mode(void **state)
{
    static const bool yes = true;

    nvml_session_use_own_program();
    if (pipe(idle_pipe) != 0 || pthread_create(&idle_thread, NULL, idle_main, NULL) != 0)
        return -1;
    *state = (void *)&yes;
    return 0;
}

static int program_mode_end(void **state)
{
    (void)state;
    close(idle_pipe[1]);
    pthread_join(idle_thread, NULL);
    close(idle_pipe[0]);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], NVML_SESSION_HELPER_ARG) == 0)
        return nvml_session_helper_main(argc, argv);

    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_helper_image, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_and_samples, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeout_in_init, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delay, setup, teardown),
        cmocka_unit_test_setup_teardown(test_helper_killed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_helper_gone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_library, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_stuck, setup, teardown),
        cmocka_unit_test_setup_teardown(test_output_forwarded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_output_nobody_reads, setup, teardown),
    };

    int failed = cmocka_run_group_tests_name("fork", tests, fork_mode, NULL);

    return failed +
           cmocka_run_group_tests_name("helper program", tests, program_mode, program_mode_end);
}
