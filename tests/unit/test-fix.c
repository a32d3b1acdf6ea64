/*
 * Fix lines are pasted into root shells: each is one comment or one command, values go in as
 * quoted words (or not at all), comments stay on their line, and the text report never lets a
 * wrapped comment lose its "#". bash itself judges the lines.
 */
#include "render/json.h"
#include "render/text.h"
#include "rules/rule-impl.h"
#include "util/xalloc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

struct fixture {
    struct snapshot snap;
    struct facts facts;
    struct rule_ctx ctx;
    struct findings out;
    struct finding *f;
};

static void fixture_init(struct fixture *x)
{
    memset(x, 0, sizeof(*x));
    x->facts.snap = &x->snap;
    x->ctx.facts = &x->facts;
    x->ctx.rule = rule_find("host.disk-full");
    assert_non_null(x->ctx.rule);
    x->f = finding_new(&x->ctx, &x->out, -1, -1);
    finding_title(x->f, "a finding");
}

/* Whether bash reads line, alone, as complete and well-formed (bash -n). */
static bool bash_accepts(const char *line)
{
    int fds[2], status;
    pid_t pid;

    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[0], 0);
        close(fds[0]);
        close(fds[1]);
        if (freopen("/dev/null", "w", stderr) == NULL)
            _exit(126);
        execlp("bash", "bash", "-n", (char *)NULL);
        _exit(127);
    }
    close(fds[0]);
    assert_true(write(fds[1], line, strlen(line)) == (ssize_t)strlen(line));
    close(fds[1]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) != 127);
    return WEXITSTATUS(status) == 0;
}

static const char *last_fix(const struct fixture *x)
{
    assert_true(x->f->n_fix > 0);
    return x->f->fix[x->f->n_fix - 1];
}

static void test_comment_start(void **state)
{
    (void)state;
    assert_int_equal(fix_comment_start("kill 5   # why"), 9);
    assert_int_equal(fix_comment_start("# advice"), 0);
    assert_int_equal(fix_comment_start("grep -c '#  x' f   # count"), 19);
    assert_int_equal(fix_comment_start("echo \"a # b\" # c"), 13);
    assert_int_equal(fix_comment_start("echo a\\ #b"), strlen("echo a\\ #b"));
    assert_int_equal(fix_comment_start("echo a#b"), strlen("echo a#b"));
}

static void test_lines_stay_safe(void **state)
{
    struct fixture x;

    (void)state;
    fixture_init(&x);
    /* A value in a comment: printable, on its line. */
    finding_fix(x.f, "kill 5   # once %s confirms", "ali\nce\033[31m");
    assert_string_equal(last_fix(&x), "kill 5   # once ali\\x0ace\\x1b[31m confirms");
    finding_fix(x.f, "# the title says \033]0;owned\a and \xe2\x80\xae");
    assert_string_equal(last_fix(&x), "# the title says \\x1b]0;owned\\x07 and \\xe2\\x80\\xae");
    /* A command that would not paste as the one command it shows becomes a comment. */
    finding_fix(x.f, "du -sh %s   # size", "/data/x\nrm -rf /");
    assert_true(strncmp(last_fix(&x), "# not safe to paste", 19) == 0);
    assert_non_null(strstr(last_fix(&x), "/data/x\\x0arm -rf /"));
    finding_fix(x.f, "echo '%s", "an open quote");
    assert_true(strncmp(last_fix(&x), "# not safe to paste", 19) == 0);
    finding_fix(x.f, "ls /tmp \\");
    assert_true(strncmp(last_fix(&x), "# not safe to paste", 19) == 0);
    finding_fix(x.f, "ls %s", "\xff\xfe");
    assert_true(strncmp(last_fix(&x), "# not safe to paste", 19) == 0);
    /* An ordinary command is left as it is. */
    finding_fix(x.f, "sudo nvidia-smi -i 3 -pl 595   # less heat");
    assert_string_equal(last_fix(&x), "sudo nvidia-smi -i 3 -pl 595   # less heat");
    for (size_t i = 0; i < x.f->n_fix; i++) {
        if (!bash_accepts(x.f->fix[i]))
            fail_msg("bash -n refuses fix line %zu: %s", i, x.f->fix[i]);
    }
    findings_free(&x.out);
}

static void test_fix_arg(void **state)
{
    struct fixture x;
    char *w;

    (void)state;
    fixture_init(&x);
    w = fix_arg(x.f, "mount point", "/data");
    assert_string_equal(w, "/data");
    free(w);
    w = fix_arg(x.f, "mount point", "/data/x;id $(reboot)");
    assert_string_equal(w, "'/data/x;id $(reboot)'");
    free(w);
    assert_int_equal(x.f->n_fix, 0);
    /* Unknown: nothing to say. */
    assert_null(fix_arg(x.f, "mount point", NULL));
    assert_int_equal(x.f->n_fix, 0);
    /* No word can carry it: a comment in the command's place. */
    assert_null(fix_arg(x.f, "mount point", "/data/x\nid"));
    assert_int_equal(x.f->n_fix, 1);
    assert_string_equal(last_fix(&x), "# the mount point \"/data/x\\x0aid\" cannot be put into a "
                                      "command safely: look at it by hand");
    assert_null(fix_arg(x.f, "disk name", "-rf"));
    assert_null(fix_arg(x.f, "disk name", ""));
    assert_int_equal(x.f->n_fix, 3);
    /* Pids: only what Linux can give; -1 and 0 would signal every process. */
    assert_false(fix_pid_ok(-1));
    assert_false(fix_pid_ok(0));
    assert_false(fix_pid_ok(PROC_PID_MAX + 1));
    assert_false(fix_pid_ok(4294967295LL));
    assert_true(fix_pid_ok(1));
    assert_true(fix_pid_ok(PROC_PID_MAX));
    findings_free(&x.out);
}

/* PCI addresses: setpci -s reads '*', an empty part or a missing one as "every device". */
static void test_fix_pci_arg(void **state)
{
    static const char *const good[] = { "0000:91:00.0", "00000000:BA:00.1", "91:00.7",
                                        "10000:e1:1f.3" };
    static const char *const bad[] = { "*",
                                       ".",
                                       "0000:91:00",
                                       "0000:91:*.0",
                                       "0000::00.0",
                                       "91:00",
                                       "0000:91:00.8",
                                       "0000:91:00.0 ",
                                       ":91:00.0",
                                       "0000:9:00.0",
                                       "-s",
                                       "",
                                       "0000:91:00.0;reboot" };
    struct fixture x;
    char *w;

    (void)state;
    fixture_init(&x);
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        w = fix_pci_arg(x.f, good[i]);
        assert_non_null(w);
        assert_string_equal(w, good[i]);
        free(w);
    }
    assert_int_equal(x.f->n_fix, 0);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (fix_pci_arg(x.f, bad[i]) != NULL)
            fail_msg("accepted the PCI address \"%s\"", bad[i]);
        assert_int_equal(x.f->n_fix, i + 1);
        assert_true(strncmp(last_fix(&x), "# ", 2) == 0);
    }
    assert_string_equal(x.f->fix[0], "# \"*\" is not a whole PCI address "
                                     "(DOMAIN:BUS:DEVICE.FUNCTION): no command is given for it");
    assert_null(fix_pci_arg(x.f, NULL));
    /* NVML's 8-digit domain as lspci writes it; a VMD domain is not cut into another device's */
    assert_string_equal(pci_lspci_form("00000000:BA:00.0"), "0000:BA:00.0");
    assert_string_equal(pci_lspci_form("00010000:E1:00.0"), "10000:E1:00.0");
    assert_string_equal(pci_lspci_form("0000:91:00.0"), "0000:91:00.0");
    assert_string_equal(pci_lspci_form("91:00.0"), "91:00.0");
    assert_null(pci_lspci_form(NULL));
    findings_free(&x.out);
}

/* Renders the findings at 80 columns without colour. */
static char *render(const struct findings *f)
{
    struct render_opts ro = { false, 80, false };
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);

    assert_non_null(out);
    render_findings(out, f, &ro);
    assert_int_equal(fclose(out), 0);
    return buf;
}

static void test_text_keeps_comments(void **state)
{
    static const char *const want[] = {
        "          fix: # find what sets it at boot: grep -r -- '-pl' /etc/systemd",
        "               # /etc/rc.local /etc/cron* 2>/dev/null; don't forget the crontabs",
        /* A command and its comment too wide: the comment above, wrapped the same way. */
        "               # what fills it, largest last; a long explanation that does not",
        "               # fit",
        "               sudo du -xh --max-depth=2 '/data/a   # b' 2>/dev/null | sort -h",
        "               iostat -x sda 1 5   # confirm",
    };
    struct fixture x;
    char *text, *line, *save = NULL;
    size_t n = 0;

    (void)state;
    fixture_init(&x);
    finding_fix(x.f, "# find what sets it at boot: grep -r -- '-pl' /etc/systemd /etc/rc.local "
                     "/etc/cron* 2>/dev/null; don't forget the crontabs");
    /* "   # " inside quotes is part of the command, not its comment. */
    finding_fix(x.f,
                "sudo du -xh --max-depth=2 %s 2>/dev/null | sort -h   # what fills it, "
                "largest last; a long explanation that does not fit",
                "'/data/a   # b'");
    finding_fix(x.f, "iostat -x sda 1 5   # confirm");
    text = render(&x.out);
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strstr(line, "fix:") == NULL && n == 0)
            continue;
        if (n >= ARRAY_SIZE(want))
            fail_msg("more lines than expected: %s", line);
        assert_string_equal(line, want[n]);
        /* Each line of the block, pasted alone, is a comment or a complete command. */
        if (!bash_accepts(line + 15))
            fail_msg("bash -n refuses: %s", line + 15);
        n++;
    }
    assert_int_equal(n, ARRAY_SIZE(want));
    free(text);
    findings_free(&x.out);
}

static void test_json_carries_the_same_lines(void **state)
{
    struct fixture x;
    json_t *j, *fix;

    (void)state;
    fixture_init(&x);
    finding_fix(x.f, "du -sh %s   # size of %s", "/data/x\nid", "\033[2J");
    finding_fix(x.f, "iostat -x sda 1 5");
    j = render_finding_json(x.f);
    fix = json_object_get(j, "fix");
    assert_int_equal(json_array_size(fix), 2);
    for (size_t i = 0; i < 2; i++)
        assert_string_equal(json_string_value(json_array_get(fix, i)), x.f->fix[i]);
    assert_true(strncmp(x.f->fix[0], "# not safe to paste", 19) == 0);
    json_decref(j);
    findings_free(&x.out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_comment_start),
        cmocka_unit_test(test_lines_stay_safe),
        cmocka_unit_test(test_fix_arg),
        cmocka_unit_test(test_fix_pci_arg),
        cmocka_unit_test(test_text_keeps_comments),
        cmocka_unit_test(test_json_carries_the_same_lines),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
