/*
 * gpudoctor procs' rows, on snapshots of the scenario corpus: which processes are rows, in which
 * order for each sort key, what each filter keeps, the tree (parents before children, workers
 * under their parent), the table at 80 columns (and the job column when there is room), and the
 * JSON document.
 */
#include "render/procs.h"
#include "rules/config.h"
#include "util/xalloc.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define CORPUS TEST_SOURCE_DIR "/tests/scenarios"

static struct snapshot *load_case(const char *name)
{
    char *path = xasprintf("%s/%s/snapshot.json", CORPUS, name), *cause = NULL;
    struct snapshot *s = snapshot_load(path, &cause);

    if (s == NULL)
        fail_msg("%s: %s", path, cause);
    free(path);
    return s;
}

static void view_of(struct procs_view *v, const struct snapshot *s, const struct procs_filter *f,
                    enum procs_sort sort, bool tree)
{
    struct proc_judgement *j = NULL;
    struct thresholds th;
    size_t n;

    thresholds_init(&th);
    n = rules_judge_procs(s, NULL, &th, &j);
    procs_view_build(v, s, j, n, f, sort, tree);
    free(j);
}

/* The pids of the rows, in order, as "4121 4122 ...". */
static char *pids(const struct procs_view *v)
{
    char *out = xstrdup("");

    for (size_t i = 0; i < v->n; i++) {
        char *next = xasprintf("%s%s%d", out, i ? " " : "", (int)v->rows[i].p->pid);

        free(out);
        out = next;
    }
    return out;
}

static void expect_pids(const struct snapshot *s, const struct procs_filter *f,
                        enum procs_sort sort, bool tree, const char *want)
{
    struct procs_view v;
    char *got;

    view_of(&v, s, f, sort, tree);
    got = pids(&v);
    assert_string_equal(got, want);
    free(got);
    procs_view_free(&v);
}

static void test_sort_orders(void **state)
{
    struct snapshot *s = load_case("stopped-holder");

    (void)state;
    /* 4121 holds 71.2 GiB, each rank 62 GiB, 4122 410 MiB; ties by pid. */
    expect_pids(s, NULL, PROCS_SORT_MEM, false,
                "4121 48211 48212 48213 48215 48216 48217 48218 4122");
    expect_pids(s, NULL, PROCS_SORT_PID, false,
                "4121 4122 48211 48212 48213 48215 48216 48217 48218");
    /* The ranks use 90 % SM and 160 % CPU; the stopped pair nothing. */
    expect_pids(s, NULL, PROCS_SORT_SM, false,
                "48211 48212 48213 48215 48216 48217 48218 4121 4122");
    expect_pids(s, NULL, PROCS_SORT_CPU, false,
                "48211 48212 48213 48215 48216 48217 48218 4121 4122");
    /* Oldest first: the stopped job started 2h13m ago, the ranks 1h ago. */
    expect_pids(s, NULL, PROCS_SORT_AGE, false,
                "4121 4122 48211 48212 48213 48215 48216 48217 48218");
    snapshot_free(s);
}

static void test_filters(void **state)
{
    struct snapshot *s = load_case("stopped-holder");
    struct procs_filter f;
    int32_t gpus[] = { 3, 7 };
    struct proc *p;

    (void)state;
    memset(&f, 0, sizeof(f));
    f.gpus = gpus;
    f.n_gpus = 2;
    expect_pids(s, &f, PROCS_SORT_PID, false, "4121 4122 48218");
    memset(&f, 0, sizeof(f));
    f.user = "alice";
    expect_pids(s, &f, PROCS_SORT_PID, false,
                "4121 4122 48211 48212 48213 48215 48216 48217 48218");
    f.user = "1000";
    expect_pids(s, &f, PROCS_SORT_PID, false,
                "4121 4122 48211 48212 48213 48215 48216 48217 48218");
    f.user = "bob";
    expect_pids(s, &f, PROCS_SORT_PID, false, "");

    /* Put one rank in a container and one in a Slurm job. */
    p = proc_table_find(&s->procs, 48211);
    assert_non_null(p);
    p->valid |= UINT64_C(1) << PROC_S_CGROUP;
    p->container_id = xstrdup("3f2a1b9c0d1e5f60718293a4b5c6d7e8f90123456789abcdef0123456789abcd");
    p->container_runtime = xstrdup("docker");
    p = proc_table_find(&s->procs, 48212);
    assert_non_null(p);
    p->valid |= UINT64_C(1) << PROC_S_CGROUP;
    p->slurm_job_id = xstrdup("4411");
    memset(&f, 0, sizeof(f));
    f.container = "3f2a1b";
    expect_pids(s, &f, PROCS_SORT_PID, false, "48211");
    f.container = "4411";
    expect_pids(s, &f, PROCS_SORT_PID, false, "48212");
    f.container = "441";
    expect_pids(s, &f, PROCS_SORT_PID, false, ""); /* a job id is matched whole */
    snapshot_free(s);
}

static void test_tree(void **state)
{
    struct snapshot *s = load_case("zombie-holder");
    struct procs_view v;
    struct procs_filter f;
    int32_t gpu0 = 0;
    char *got;

    (void)state;
    /* Flat: the GPU processes only. */
    expect_pids(s, NULL, PROCS_SORT_PID, false, "5120 6000");
    /* Tree: the zombie's parent above it (context), its workers below it. */
    view_of(&v, s, NULL, PROCS_SORT_PID, true);
    got = pids(&v);
    assert_string_equal(got, "5100 5120 5121 5122 6000");
    free(got);
    assert_int_equal(v.rows[0].depth, 0);
    assert_false(v.rows[0].gpu_user);
    assert_int_equal(v.rows[1].depth, 1);
    assert_int_equal(v.rows[1].verdict, PROC_VERDICT_DEFUNCT);
    assert_int_equal(v.rows[2].depth, 2);
    assert_false(v.rows[2].gpu_user);
    assert_int_equal(v.n_gpu_users, 2);
    procs_view_free(&v);
    /* Filtered to GPU 0: the zombie and what hangs around it, not carol's job on GPU 1. */
    memset(&f, 0, sizeof(f));
    f.gpus = &gpu0;
    f.n_gpus = 1;
    expect_pids(s, &f, PROCS_SORT_PID, true, "5100 5120 5121 5122");
    snapshot_free(s);
}

static char *table(const struct snapshot *s, bool tree, unsigned width)
{
    struct procs_view v;
    struct render_opts ro = { false, width };
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);

    view_of(&v, s, NULL, PROCS_SORT_MEM, tree);
    procs_render_table(out, &v, s, &ro, width);
    fclose(out);
    procs_view_free(&v);
    return text;
}

/* The longest line, in characters. */
static size_t widest(const char *text)
{
    size_t w = 0, max = 0;

    for (const char *p = text; *p; p++) {
        if (*p == '\n') {
            max = w > max ? w : max;
            w = 0;
        } else if (((unsigned char)*p & 0xC0) != 0x80) {
            w++;
        }
    }
    return w > max ? w : max;
}

static void test_table(void **state)
{
    struct snapshot *s = load_case("stopped-holder");
    struct proc *p;
    char *t;

    (void)state;
    t = table(s, false, 80);
    assert_true(widest(t) <= 80);
    assert_non_null(strstr(t, "    PID USER     GPU    MEMORY  SM%  CPU% S   AGE VERDICT     "
                              "COMMAND\n"));
    assert_non_null(strstr(t, "   4121 alice    3    71.2 GiB   0%    0% T 2h13m stopped     "
                              "python train.py -~\n"));
    assert_non_null(strstr(t, "  48211 alice    0    62.0 GiB  90%  160% S    1h active      "));
    assert_non_null(strstr(t, "\n9 GPU processes holding 506 GiB, 2 stopped.\n'gpudoctor reap' "
                              "shows what it would end.\n"));
    free(t);
    /* Wide: whole commands. */
    t = table(s, false, 200);
    assert_non_null(strstr(t, "stopped     python train.py --lr 3e-4\n"));
    free(t);

    /* A container: its short id in a column where there is room, before the command where not. */
    p = proc_table_find(&s->procs, 48211);
    assert_non_null(p);
    p->valid |= UINT64_C(1) << PROC_S_CGROUP;
    p->container_id = xstrdup("3f2a1b9c0d1e5f60718293a4b5c6d7e8f90123456789abcdef0123456789abcd");
    p->container_runtime = xstrdup("docker");
    t = table(s, false, 120);
    assert_non_null(strstr(t, " JOB          GPU "));
    assert_non_null(strstr(t, "  48211 alice    3f2a1b9c0d1e 0    62.0 GiB"));
    assert_true(widest(t) <= 120);
    free(t);
    t = table(s, false, 80);
    assert_null(strstr(t, " JOB "));
    assert_non_null(strstr(t, "active      [3f2a1b9c0d1e] py~\n"));
    assert_true(widest(t) <= 80);
    free(t);
    snapshot_free(s);

    /* The tree is drawn in the command column. */
    s = load_case("zombie-holder");
    t = table(s, true, 80);
    assert_non_null(strstr(t, "   5120 bob      0    18.0 GiB   0%    0% Z    1h defunct      "
                              "\\_ python\n"));
    assert_non_null(strstr(t, "   5121 bob      -           -    -    0% S    1h -           "
                              "     \\_ python tr~\n"));
    assert_true(widest(t) <= 80);
    free(t);
    snapshot_free(s);
}

static void test_json(void **state)
{
    struct snapshot *s = load_case("zombie-holder");
    struct procs_view v;
    json_t *j, *rows, *r;
    char *dump;

    (void)state;
    view_of(&v, s, NULL, PROCS_SORT_PID, true);
    j = procs_render_json(&v, s);
    assert_string_equal(json_string_value(json_object_get(j, "schema")), "gpudoctor.procs/1");
    assert_int_equal(json_integer_value(json_object_get(j, "window_ms")), 2000);
    assert_true(json_is_true(json_object_get(j, "tree")));
    rows = json_object_get(j, "processes");
    assert_int_equal(json_array_size(rows), 5);
    r = json_array_get(rows, 1);
    assert_int_equal(json_integer_value(json_object_get(r, "pid")), 5120);
    assert_string_equal(json_string_value(json_object_get(r, "verdict")), "defunct");
    assert_string_equal(json_string_value(json_object_get(r, "state")), "Z");
    assert_string_equal(json_string_value(json_object_get(r, "user")), "bob");
    assert_int_equal(json_integer_value(json_object_get(r, "used_bytes")), 19327352832);
    assert_int_equal(json_integer_value(json_object_get(r, "depth")), 1);
    assert_int_equal(json_integer_value(json_object_get(r, "age_ms")), 3600000);
    assert_true(json_is_null(json_object_get(r, "idle_for_min_ms")));
    assert_true(json_is_null(json_object_get(r, "job")));
    assert_int_equal(json_array_size(json_object_get(r, "gpus")), 1);
    assert_int_equal(json_array_size(json_object_get(r, "children")), 2);
    /* A worker: no verdict of its own. */
    r = json_array_get(rows, 2);
    assert_false(json_is_true(json_object_get(r, "gpu_user")));
    assert_true(json_is_null(json_object_get(r, "verdict")));
    dump = json_dumps(json_object_get(j, "collectors"), JSON_COMPACT | JSON_SORT_KEYS);
    assert_non_null(strstr(dump, "\"nvml\":{"));
    assert_non_null(strstr(dump, "\"processes\":{"));
    free(dump);
    json_decref(j);
    procs_view_free(&v);
    snapshot_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sort_orders), cmocka_unit_test(test_filters),
        cmocka_unit_test(test_tree),        cmocka_unit_test(test_table),
        cmocka_unit_test(test_json),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
