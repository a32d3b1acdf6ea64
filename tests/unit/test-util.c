/*
 * Small utilities: number and duration parsing, version comparison, bounded file reads, shell
 * quoting checked against a real shell, opening only a regular file, and the text cleaners
 * (str_sanitize for data, str_excerpt for messages).
 */
#include "util/fileio.h"
#include "util/strutil.h"
#include "util/timeutil.h"
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
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static void test_numbers(void **state)
{
    uint64_t u;
    int64_t i;
    uint32_t u32;
    double d;

    (void)state;
    assert_true(str_to_u64(" 42\n", 10, &u));
    assert_int_equal(u, 42);
    assert_false(str_to_u64("42x", 10, &u));
    assert_false(str_to_u64("-1", 10, &u));
    assert_false(str_to_u64("", 10, &u));
    assert_false(str_to_u64("99999999999999999999", 10, &u));
    assert_true(str_to_u64("0x10de", 0, &u));
    assert_int_equal(u, 0x10de);
    assert_true(str_to_i64("-17", 10, &i));
    assert_int_equal(i, -17);
    assert_false(str_to_u32("4294967296", 10, &u32));
    assert_true(str_to_double("16.0", &d));
    assert_true(d == 16.0);
    assert_false(str_to_double("nan", &d));
}

/* A duration, parsed: its milliseconds, or -1 when refused. */
static int64_t dur(const char *text)
{
    int64_t ms = -7;

    if (!time_parse_duration_ms(text, &ms))
        return -1;
    assert_true(ms >= 0);
    return ms;
}

static void test_durations(void **state)
{
    (void)state;
    assert_int_equal(dur("2s"), 2000);
    assert_int_equal(dur("500ms"), 500);
    assert_int_equal(dur("1.5"), 1500);
    assert_int_equal(dur(" 10 "), 10000);
    assert_int_equal(dur("2m"), 120000);
    assert_int_equal(dur("0"), 0);
    assert_int_equal(dur("0s"), 0);
    assert_int_equal(dur(".5s"), 500);
    /* days, and units together, largest first */
    assert_int_equal(dur("7d"), 7 * 86400000LL);
    assert_int_equal(dur("1h30m"), 5400000);
    assert_int_equal(dur("1d12h"), 36 * 3600000LL);
    assert_int_equal(dur("2m30.5s"), 150500);
    assert_int_equal(dur("1s500ms"), 1500);
    assert_int_equal(dur("1.5h"), 5400000);
    assert_int_equal(dur("1d2h3m4s5ms"), 86400000LL + 2 * 3600000 + 3 * 60000 + 4 * 1000 + 5);
    /* refused: signs, hex, exponents, words, units out of order or twice, a bare number after
     * a unit, blanks inside, a unit alone */
    assert_int_equal(dur("-1s"), -1);
    assert_int_equal(dur("+1s"), -1);
    assert_int_equal(dur("0x10"), -1);
    assert_int_equal(dur("0x10s"), -1);
    assert_int_equal(dur("1e3"), -1);
    assert_int_equal(dur("1e3ms"), -1);
    assert_int_equal(dur("inf"), -1);
    assert_int_equal(dur("nan"), -1);
    assert_int_equal(dur("2 parsecs"), -1);
    assert_int_equal(dur("2parsecs"), -1);
    assert_int_equal(dur("2sec"), -1);
    assert_int_equal(dur(""), -1);
    assert_int_equal(dur("  "), -1);
    assert_int_equal(dur("s"), -1);
    assert_int_equal(dur("."), -1);
    assert_int_equal(dur("1.2.3"), -1);
    assert_int_equal(dur("30m1h"), -1);
    assert_int_equal(dur("1m1m"), -1);
    assert_int_equal(dur("1h30"), -1);
    assert_int_equal(dur("1h 30m"), -1);
    assert_int_equal(dur("1ms1s"), -1);
    assert_int_equal(dur("99999999999999999999d"), -1);
    assert_int_equal(dur("31000y"), -1);
}

/* Every value a file can hold formats as a date or says what it is; never "00.-05Z". */
static void test_format_iso(void **state)
{
    char buf[64];

    (void)state;
    time_format_iso(1796203512345, buf, sizeof(buf));
    assert_string_equal(buf, "2026-12-02T09:25:12.345Z");
    time_format_iso(0, buf, sizeof(buf));
    assert_string_equal(buf, "1970-01-01T00:00:00.000Z");
    time_format_iso(-5, buf, sizeof(buf));
    assert_string_equal(buf, "1969-12-31T23:59:59.995Z");
    time_format_iso(-1000, buf, sizeof(buf));
    assert_string_equal(buf, "1969-12-31T23:59:59.000Z");
    time_format_iso(INT64_MAX, buf, sizeof(buf));
    assert_string_equal(buf, "292278994-08-17T07:12:55.807Z");
    time_format_iso(INT64_MIN, buf, sizeof(buf)); /* no overflow in the flooring */
    assert_null(strstr(buf, ".-"));
    assert_non_null(strstr(buf, ".192Z"));
}

static void test_versions(void **state)
{
    (void)state;
    assert_true(str_version_cmp("535.104.05", "535.43.02") > 0);
    assert_true(str_version_cmp("535.43.02", "535.43.02") == 0);
    assert_true(str_version_cmp("535.43", "535.43.02") < 0);
    assert_true(str_version_cmp("12.4", "12.10") < 0);
    assert_true(str_version_cmp("580.65.06", "575.57.08") > 0);
    assert_int_equal(str_version_major("12.4"), 12);
    assert_int_equal(str_version_major("9"), 9);
    assert_int_equal(str_version_major(NULL), 0);
    assert_int_equal(str_version_major("-1.2"), 0);
    assert_int_equal(str_version_major("v12.4"), 0);
}

static void test_bounded_read(void **state)
{
    char dir[] = "/tmp/gpudoctor-test-XXXXXX", buf[8], *big = NULL;
    int dfd;
    FILE *f;

    (void)state;
    assert_non_null(mkdtemp(dir));
    dfd = open(dir, O_PATH | O_DIRECTORY);
    assert_true(dfd >= 0);
    assert_int_equal(file_read_at(dfd, "missing", buf, sizeof(buf)), -ENOENT);
    {
        char *p = xasprintf("%s/f", dir);

        f = fopen(p, "w");
        assert_non_null(f);
        fputs("1234567", f);
        fclose(f);
        assert_int_equal(file_read_at(dfd, "f", buf, sizeof(buf)), 7);
        assert_string_equal(buf, "1234567");
        f = fopen(p, "a");
        fputs("8", f);
        fclose(f);
        assert_int_equal(file_read_at(dfd, "f", buf, sizeof(buf)), -EFBIG);
        assert_int_equal(file_slurp_at(dfd, "f", 4, &big), -EFBIG);
        assert_null(big);
        assert_int_equal(file_slurp_at(dfd, "f", 1024, &big), 8);
        assert_string_equal(big, "12345678");
        free(big);
        unlink(p);
        free(p);
    }
    close(dfd);
    rmdir(dir);
}

/*
 * file_open_regular_at: a regular file (or a link to one) opens, blocking; a FIFO nobody writes
 * to, a link to one, a directory and a device are refused at once, never waited on.
 * file_open_regular_nofollow_at: the same, and any link is refused (-ELOOP), even to a file.
 */
static void test_open_regular(void **state)
{
    char dir[] = "/tmp/gpudoctor-test-XXXXXX", buf[8];
    int dfd, fd;
    FILE *f;

    (void)state;
    assert_non_null(mkdtemp(dir));
    dfd = open(dir, O_PATH | O_DIRECTORY);
    assert_true(dfd >= 0);
    assert_int_equal(mkfifoat(dfd, "fifo", 0600), 0);
    assert_int_equal(symlinkat("fifo", dfd, "to-fifo"), 0);
    assert_int_equal(symlinkat("/dev/zero", dfd, "to-zero"), 0);
    assert_int_equal(mkdirat(dfd, "sub", 0700), 0);
    {
        char *p = xasprintf("%s/f", dir);

        f = fopen(p, "w");
        assert_non_null(f);
        fputs("{}", f);
        fclose(f);
        free(p);
    }
    assert_int_equal(symlinkat("f", dfd, "to-f"), 0);
    fd = file_open_regular_at(dfd, "f", 0);
    assert_true(fd >= 0);
    assert_int_equal(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
    assert_int_equal(read(fd, buf, sizeof(buf)), 2);
    close(fd);
    fd = file_open_regular_at(dfd, "to-f", 0);
    assert_true(fd >= 0);
    close(fd);
    /* a blocking open of either would wait for a writer: this test would hang, not fail */
    assert_int_equal(file_open_regular_at(dfd, "fifo", 0), -EINVAL);
    assert_int_equal(file_open_regular_at(dfd, "to-fifo", 0), -EINVAL);
    assert_int_equal(file_open_regular_at(dfd, "to-zero", 0), -EINVAL);
    assert_int_equal(file_open_regular_at(dfd, "sub", 0), -EISDIR);
    assert_int_equal(file_open_regular_at(dfd, "missing", 0), -ENOENT);
    /* The flags: a link refused, not followed; another user's file refused. */
    assert_int_equal(file_open_regular_at(dfd, "to-f", FILE_OPEN_NOFOLLOW), -ELOOP);
    assert_int_equal(file_open_regular_at(dfd, "to-fifo", FILE_OPEN_NOFOLLOW), -ELOOP);
    fd = file_open_regular_at(dfd, "f", FILE_OPEN_NOFOLLOW | FILE_OPEN_OWN);
    assert_true(fd >= 0);
    close(fd);
    if (geteuid() == 0) {
        assert_int_equal(fchownat(dfd, "f", 65534, 65534, 0), 0);
        assert_int_equal(file_open_regular_at(dfd, "f", FILE_OPEN_OWN), -EPERM);
        assert_int_equal(file_open_regular_at(dfd, "to-f", FILE_OPEN_OWN), -EPERM);
        fd = file_open_regular_at(dfd, "f", 0);
        assert_true(fd >= 0);
        close(fd);
        /* Not regular is said first, whoever owns it. */
        assert_int_equal(fchownat(dfd, "fifo", 65534, 65534, 0), 0);
        assert_int_equal(file_open_regular_at(dfd, "fifo", FILE_OPEN_OWN), -EINVAL);
    }
    {
        char *why = file_open_regular_why(-ELOOP);

        assert_string_equal(why, "a symbolic link, not followed");
        free(why);
        why = file_open_regular_why(-EISDIR);
        assert_string_equal(why, "not a regular file");
        free(why);
        why = file_open_regular_why(-ENOENT);
        assert_string_equal(why, strerror(ENOENT));
        free(why);
    }
    /* a blocking descriptor comes back, whatever the flags */
    fd = file_open_regular_at(dfd, "f", FILE_OPEN_NOFOLLOW);
    assert_true(fd >= 0);
    assert_int_equal(fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
    close(fd);
    assert_int_equal(file_open_regular_at(dfd, "fifo", FILE_OPEN_NOFOLLOW), -EINVAL);
    assert_int_equal(file_open_regular_at(dfd, "sub", FILE_OPEN_NOFOLLOW), -EISDIR);
    for (const char *const *n =
             (const char *const[]){ "f", "to-f", "fifo", "to-fifo", "to-zero", NULL };
         *n != NULL; n++)
        assert_int_equal(unlinkat(dfd, *n, 0), 0);
    assert_int_equal(unlinkat(dfd, "sub", AT_REMOVEDIR), 0);
    close(dfd);
    assert_int_equal(rmdir(dir), 0);
}

static void test_atomic_write(void **state)
{
    char dir[] = "/tmp/gpudoctor-test-XXXXXX", *cause = NULL, *p, *back = NULL;

    (void)state;
    assert_non_null(mkdtemp(dir));
    p = xasprintf("%s/out.json", dir);
    assert_int_equal(file_write_atomic(p, "{}\n", 3, 0600, &cause), 0);
    assert_int_equal(file_slurp_at(AT_FDCWD, p, 100, &back), 3);
    assert_string_equal(back, "{}\n");
    free(back);
    {
        struct stat st;
        char *link = xasprintf("%s/link.json", dir), *target = xasprintf("%s/target", dir);

        /* The mode asked for, whatever the umask made of the temporary file. */
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0600);
        /* Another user's link (one planted in /tmp) is not followed; root can plant one here. */
        if (geteuid() == 0) {
            FILE *f = fopen(target, "w");

            assert_non_null(f);
            assert_int_equal(fclose(f), 0);
            assert_int_equal(symlink(target, link), 0);
            assert_int_equal(lchown(link, 65534, 65534), 0);
            assert_int_equal(file_write_atomic(link, "{}", 2, 0600, &cause), -1);
            assert_non_null(strstr(cause, "symbolic link of uid 65534"));
            free(cause);
            assert_int_equal(stat(target, &st), 0);
            assert_int_equal(st.st_size, 0); /* nothing written where it points */
            /* Its owner's own link is followed: the file it names is replaced, the link kept. */
            assert_int_equal(lchown(link, 0, 0), 0);
            assert_int_equal(file_write_atomic(link, "{}", 2, 0600, &cause), 0);
            assert_int_equal(stat(target, &st), 0);
            assert_int_equal(st.st_size, 2);
            assert_int_equal(lstat(link, &st), 0);
            assert_true(S_ISLNK(st.st_mode));
            unlink(target);
            unlink(link);
        }
        /* Replacing (serve's textfile): a FIFO at the path is replaced, never opened (which
         * would wait for a reader); a link to one, or to anything but a regular file, is
         * replaced itself, and what it names is left alone. */
        assert_int_equal(mkfifo(target, 0600), 0);
        assert_int_equal(file_replace_atomic(target, "a", 1, 0644, &cause), 0);
        assert_int_equal(stat(target, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(st.st_size, 1);
        unlink(target);
        assert_int_equal(mkfifo(target, 0600), 0);
        assert_int_equal(symlink(target, link), 0);
        assert_int_equal(file_replace_atomic(link, "ab", 2, 0644, &cause), 0);
        assert_int_equal(lstat(link, &st), 0);
        assert_true(S_ISREG(st.st_mode)); /* the link replaced */
        assert_int_equal(st.st_size, 2);
        assert_int_equal(stat(target, &st), 0);
        assert_true(S_ISFIFO(st.st_mode)); /* what it named, untouched */
        unlink(target);
        unlink(link);
        /* A link to a regular file, its caller's own, is replaced itself too: the file it
         * names keeps its content and its mode. */
        {
            FILE *f = fopen(target, "w");

            assert_non_null(f);
            assert_true(fputs("keep", f) >= 0);
            assert_int_equal(fclose(f), 0);
        }
        assert_int_equal(chmod(target, 0600), 0);
        assert_int_equal(symlink(target, link), 0);
        assert_int_equal(file_replace_atomic(link, "abc", 3, 0644, &cause), 0);
        assert_int_equal(lstat(link, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(st.st_size, 3);
        assert_int_equal(st.st_mode & 07777, 0644);
        assert_int_equal(stat(target, &st), 0);
        assert_int_equal(st.st_size, 4);
        assert_int_equal(st.st_mode & 07777, 0600);
        unlink(target);
        unlink(link);
        free(link);
        free(target);
    }
    unlink(p);
    free(p);
    /* A directory that does not exist: an error naming the path, nothing left behind. */
    p = xasprintf("%s/no/such/dir/out.json", dir);
    assert_int_equal(file_write_atomic(p, "{}", 2, 0600, &cause), -1);
    assert_non_null(cause);
    assert_non_null(strstr(cause, "no/such/dir"));
    free(cause);
    free(p);
    assert_int_equal(rmdir(dir), 0);
}

/* The state directory's writer and reader work relative to the directory: a link or a FIFO at
 * the name is replaced itself (nothing it names is opened or written), and the reader takes only
 * the caller's or root's regular file. */
static void test_atomic_write_at(void **state)
{
    char dir[] = "/tmp/gpudoctor-test-XXXXXX", *cause = NULL, *back = NULL, *victim;
    struct stat st;
    int dfd;

    (void)state;
    assert_non_null(mkdtemp(dir));
    dfd = open(dir, O_RDONLY | O_DIRECTORY);
    assert_true(dfd >= 0);
    victim = xasprintf("%s/victim", dir);
    assert_int_equal(file_write_atomic_at(dfd, "victim", victim, "keep", 4, 0644, &cause), 0);
    /* A link at the name: replaced, the file it names untouched; the new file is 0600. */
    assert_int_equal(symlinkat(victim, dfd, "f.json"), 0);
    assert_int_equal(file_slurp_own_text_at(dfd, "f.json", 100, &back), -ELOOP);
    assert_int_equal(file_write_atomic_at(dfd, "f.json", "shown", "{}", 2, 0600, &cause), 0);
    assert_int_equal(fstatat(dfd, "f.json", &st, AT_SYMLINK_NOFOLLOW), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(file_slurp_own_text_at(dfd, "f.json", 100, &back), 2);
    assert_string_equal(back, "{}");
    free(back);
    assert_int_equal(file_slurp_at(dfd, "victim", 100, &back), 4);
    assert_string_equal(back, "keep");
    free(back);
    /* A FIFO: refused by the reader at once (never waited on), replaced by the writer. */
    assert_int_equal(mkfifoat(dfd, "fifo", 0600), 0);
    assert_int_equal(file_slurp_own_text_at(dfd, "fifo", 100, &back), -EINVAL);
    assert_int_equal(file_write_atomic_at(dfd, "fifo", "fifo", "x", 1, 0600, &cause), 0);
    assert_int_equal(fstatat(dfd, "fifo", &st, AT_SYMLINK_NOFOLLOW), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(file_slurp_own_text_at(dfd, ".", 100, &back), -EISDIR);
    if (geteuid() == 0) { /* another user's file is not read */
        assert_int_equal(fchownat(dfd, "fifo", 65534, 65534, AT_SYMLINK_NOFOLLOW), 0);
        assert_int_equal(file_slurp_own_text_at(dfd, "fifo", 100, &back), -EPERM);
    }
    /* A failed write (a directory at the name) says why and leaves no temporary file. */
    assert_int_equal(mkdirat(dfd, "d", 0700), 0);
    assert_int_equal(file_write_atomic_at(dfd, "d", "shown-d", "x", 1, 0600, &cause), -1);
    assert_non_null(strstr(cause, "to shown-d: Is a directory"));
    free(cause);
    {
        DIR *d = fdopendir(dup(dfd));
        struct dirent *e;
        int n = 0;

        assert_non_null(d);
        while ((e = readdir(d)) != NULL)
            n += e->d_name[0] != '.';
        closedir(d);
        assert_int_equal(n, 4); /* victim, f.json, fifo, d */
    }
    close(dfd);
    free(victim);
    victim = xasprintf("rm -rf %s", dir);
    assert_int_equal(system(victim), 0);
    free(victim);
}

/* What sh makes of "printf %s WORD": the word after the shell has parsed it. */
static char *shell_echo(const char *shell, const char *word)
{
    char *cmd = xasprintf("printf %%s %s", word), *out = xmalloc(4096);
    int fds[2];
    size_t n = 0;
    ssize_t r;
    pid_t pid;
    int status;

    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execlp(shell, shell, "-c", cmd, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    while ((r = read(fds[0], out + n, 4095 - n)) > 0)
        n += (size_t)r;
    close(fds[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    out[n] = '\0';
    free(cmd);
    return out;
}

static void test_shell_quote(void **state)
{
    static const char *const words[] = {
        "/data/x;id", "/data/my data", "it's",      "'",  "''", "$(id)", "`id`",  "a\\b",
        "*",          "~root",         "a|b&c>d<e", "#x", "!x", "{a,b}", "\"q\"", "=ls",
        "x=$HOME",    "é ü 日本",      "-rf",       "%1",
    };
    static const char *const refused[] = {
        "",
        "a\nb",
        "a\rb",
        "\033[31m",
        "a\tb",
        "\x7f",
        "\xff",
        "\xc3",
        "\xc2\x9b"
        "31m",
        "a\xe2\x80\xa8"
        "b",
        "\xe2\x80\xae"
        "txt.exe",
    };
    char *q;

    (void)state;
    /* Ordinary words stay bare, so fix lines read as people would type them. */
    q = str_shell_quote("/dev/nvidia3");
    assert_string_equal(q, "/dev/nvidia3");
    free(q);
    q = str_shell_quote("0000:3b:00.0");
    assert_string_equal(q, "0000:3b:00.0");
    free(q);
    q = str_shell_quote("/data/x;id");
    assert_string_equal(q, "'/data/x;id'");
    free(q);
    q = str_shell_quote("it's");
    assert_string_equal(q, "'it'\\''s'");
    free(q);
    /* Every other word comes back from a real shell exactly as it went in. */
    for (size_t i = 0; i < ARRAY_SIZE(words); i++) {
        const char *shells[] = { "sh", "bash" };

        q = str_shell_quote(words[i]);
        assert_non_null(q);
        for (size_t k = 0; k < ARRAY_SIZE(shells); k++) {
            char *back = shell_echo(shells[k], q);

            if (strcmp(back, words[i]) != 0)
                fail_msg("%s made \"%s\" of %s (quoted %s)", shells[k], back, words[i], q);
            free(back);
        }
        free(q);
    }
    for (size_t i = 0; i < ARRAY_SIZE(refused); i++) {
        if (str_shell_quote(refused[i]) != NULL)
            fail_msg("word %zu was quoted, but no one-line word can carry it", i);
        assert_false(str_is_one_line(refused[i], SIZE_MAX) && refused[i][0]);
    }
    assert_true(str_is_one_line("GPU 3 at 95 °C", SIZE_MAX));
    /* Only n bytes count. */
    assert_true(str_is_one_line("ok\n", 2));
}

static void test_sanitize(void **state)
{
    char ok[] = "naïve 日本 🙂 plain";
    char bad[] = "a\033[31mb\x7f"
                 "c\xc2\x9b"
                 "d\xff\xc3"
                 "e\xe0\x80\x80"
                 "f\xed\xa0\x80"
                 "g\r\n\t\x07h";
    char *copy;

    (void)state;
    assert_string_equal(str_sanitize(ok), "naïve 日本 🙂 plain");
    /* ESC, DEL, C1 CSI, invalid, truncated, overlong, surrogate, CR, LF, TAB, BEL: each byte
     * becomes '?', the length is kept */
    assert_string_equal(str_sanitize(bad), "a?[31mb?c??d??e???f???g????h");
    /* Idempotent: what is clean stays as it is. */
    assert_string_equal(str_sanitize(bad), "a?[31mb?c??d??e???f???g????h");
    assert_null(str_sanitize(NULL));
    assert_null(str_sanitized(NULL));
    copy = str_sanitized("x\x1b]0;title\x07y");
    assert_string_equal(copy, "x?]0;title?y");
    free(copy);
    /* A right-to-left override, an isolate and a line separator: each of their bytes too. */
    copy = str_sanitized("kill \xe2\x80\xae"
                         "4121\xe2\x81\xa6"
                         "x\xe2\x80\xa8"
                         "y \xe2\x80\x93 ok");
    assert_string_equal(copy, "kill ???4121???x???y \xe2\x80\x93 ok"); /* an en dash stays */
    free(copy);
}

/* A list of names, each once: whole entries only, bounded. */
static void test_list_add_once(void **state)
{
    char buf[24] = "";

    (void)state;
    str_list_add_once(buf, sizeof(buf), "NODE 4 A1");
    str_list_add_once(buf, sizeof(buf), "A1");
    str_list_add_once(buf, sizeof(buf), "NODE 4 A1");
    str_list_add_once(buf, sizeof(buf), "");
    assert_string_equal(buf, "NODE 4 A1, A1");
    str_list_add_once(buf, sizeof(buf), "A");
    assert_string_equal(buf, "NODE 4 A1, A1, A");
    /* ", B234567" would end past the 24 bytes: left out, the list stays whole. */
    str_list_add_once(buf, sizeof(buf), "B234567");
    assert_string_equal(buf, "NODE 4 A1, A1, A");
    str_list_add_once(buf, sizeof(buf), "B23");
    assert_string_equal(buf, "NODE 4 A1, A1, A, B23");
}

static void test_excerpt(void **state)
{
    char *long_line = xmalloc(900 * 1024 + 1), *e;

    (void)state;
    e = str_excerpt("key\x1b[31m", 40);
    assert_string_equal(e, "key\\x1b[31m");
    free(e);
    /* Cut at the limit, on a character boundary, and said so. */
    e = str_excerpt("abcdef", 4);
    assert_string_equal(e, "abcd...");
    free(e);
    e = str_excerpt("ab日本", 4); /* 日 is 3 bytes: 2 + 3 > 4 */
    assert_string_equal(e, "ab...");
    free(e);
    e = str_excerpt("ab\x1b[2J", 5); /* an escape is shown whole or not at all */
    assert_string_equal(e, "ab...");
    free(e);
    /* A right-to-left override or a line separator in a quoted key is shown, not obeyed. */
    e = str_excerpt("bogus_key\xe2\x80\xae"
                    "x\xe2\x80\xa8",
                    60);
    assert_string_equal(e, "bogus_key\\xe2\\x80\\xaex\\xe2\\x80\\xa8");
    free(e);
    memset(long_line, 'k', 900 * 1024);
    long_line[900 * 1024] = '\0';
    e = str_excerpt(long_line, 60);
    assert_int_equal(strlen(e), 63);
    assert_string_equal(e + 60, "...");
    free(e);
    free(long_line);
}

/* A cut by bytes ("%.12s", a full buffer) that ends inside a character: the piece dropped. */
static void test_utf8_trim(void **state)
{
    static const struct {
        const char *in, *out;
    } cases[] = {
        { "abc", "abc" },
        { "", "" },
        { "ab\xe6\xb1\x89", "ab\xe6\xb1\x89" }, /* a whole character: kept */
        { "ab\xe6\xb1", "ab" },                 /* two bytes of three */
        { "ab\xe6", "ab" },                     /* its first byte only */
        { "\xc3\xa9\xc3", "\xc3\xa9" },         /* "é" then a cut one */
        { "x\xf0\x9f\x99", "x" },               /* three bytes of four */
        { "x\xf0\x9f\x99\x82", "x\xf0\x9f\x99\x82" },
        { "x\x80", "x\x80" }, /* a stray continuation byte is not a cut: left as it is */
    };
    char buf[32];

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(buf, sizeof(buf), "%s", cases[i].in);
        str_utf8_trim(buf);
        if (strcmp(buf, cases[i].out) != 0)
            fail_msg("case %zu: got \"%s\"", i, buf);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_numbers),       cmocka_unit_test(test_durations),
        cmocka_unit_test(test_utf8_trim),     cmocka_unit_test(test_versions),
        cmocka_unit_test(test_bounded_read),  cmocka_unit_test(test_open_regular),
        cmocka_unit_test(test_atomic_write),  cmocka_unit_test(test_atomic_write_at),
        cmocka_unit_test(test_format_iso),    cmocka_unit_test(test_shell_quote),
        cmocka_unit_test(test_sanitize),      cmocka_unit_test(test_excerpt),
        cmocka_unit_test(test_list_add_once),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
