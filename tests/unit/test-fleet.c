/*
 * The fleet's judgement (src/fleet/stats.c, judge.c) on nodes built by hand: the median and the
 * scaled MAD against known values, and one wild value that moves a mean but not them; a node is
 * an outlier on a number only past the modified z-score threshold, only in the direction that is
 * bad, and only by more than the figure's smallest difference; levels and texts by the majority
 * (a missing GPU critical); groups by model and the minimum group size; the exit status; the
 * Prometheus URL as outputs show it, without its password.
 */
#include "fleet/fleet.h"
#include "fleet/http.h"
#include "util/xalloc.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static void test_median_and_mad(void **state)
{
    double a[] = { 5, 1, 3, 2, 4 }, b[] = { 4, 1, 3, 2 }, c[] = { 10, 10, 10, 10, 11, 1000 };
    double med, mad;

    (void)state;
    assert_float_equal(fleet_median(a, 5), 3, 0);
    assert_float_equal(fleet_median(b, 4), 2.5, 0);
    assert_true(isnan(fleet_median(NULL, 0)));
    /* 1..5: deviations 2,1,0,1,2, their median 1, scaled 1.4826 */
    double d[] = { 1, 2, 3, 4, 5 };
    fleet_spread(d, 5, &med, &mad);
    assert_float_equal(med, 3, 0);
    assert_float_equal(mad, 1.4826, 1e-12);
    /* one wild value: the median stays 10, the MAD 0 (most values are exactly the median) */
    fleet_spread(c, 6, &med, &mad);
    assert_float_equal(med, 10, 0);
    assert_float_equal(mad, 0, 0);
}

static const struct rules_config *rules(void)
{
    static struct config c;

    config_init(&c);
    return &c.rules;
}

/* A node of the model with a number for clock, temperature and GPU count, and a driver. */
static struct fleet_node *node(struct fleet *fl, const char *name, const char *model, double clock,
                               double temp, double gpus, const char *driver)
{
    struct fleet_node *n = fleet_add_node(fl, name, name);
    int m;

    n->model = xstrdup(model);
    n->n_gpus = (uint32_t)gpus;
    n->check_status = 0;
    m = fleet_metric_find("clock_sm_busy_mhz");
    n->values[m] = (struct fleet_value){ .known = true, .num = clock, .gpu = 0 };
    m = fleet_metric_find("temp_busy_c");
    n->values[m] = (struct fleet_value){ .known = true, .num = temp, .gpu = 0 };
    m = fleet_metric_find("gpu_count");
    n->values[m] = (struct fleet_value){ .known = true, .num = gpus, .gpu = -1 };
    m = fleet_metric_find("driver_version");
    n->values[m] = (struct fleet_value){ .known = true, .text = xstrdup(driver), .gpu = -1 };
    return n;
}

static const struct fleet_node *find(const struct fleet *fl, const char *name)
{
    for (size_t i = 0; i < fl->n; i++) {
        if (strcmp(fl->nodes[i].name, name) == 0)
            return &fl->nodes[i];
    }
    fail_msg("no node %s", name);
    return NULL;
}

static bool has_reason(const struct fleet_node *n, const char *metric)
{
    int m = fleet_metric_find(metric);

    for (size_t i = 0; i < n->n_reasons; i++) {
        if (n->reasons[i].kind == FLEET_BY_METRIC && n->reasons[i].metric == m)
            return true;
    }
    return false;
}

static void init(struct fleet *fl, size_t min_group)
{
    struct fleet_opts o = { FLEET_DEFAULT_Z, min_group, rules(), NULL, 0, 1 };

    fleet_init(fl, &o);
}

/*
 * Twenty H100 nodes with clocks 1970..1989 MHz and temperatures 60..64 °C. With the nodes
 * test_numbers_by_z_score adds, the clocks' median is 1980 MHz and their MAD 5 x 1.4826 = 7.4;
 * the temperatures' median 62 °C, MAD 1 x 1.4826.
 */
static void twenty(struct fleet *fl)
{
    char name[32];

    for (int i = 0; i < 20; i++) {
        snprintf(name, sizeof(name), "n%02d", i);
        node(fl, name, "H100", 1970 + i, 60 + i % 5, 8, "550.54.15");
    }
}

static void test_numbers_by_z_score(void **state)
{
    struct fleet fl;

    (void)state;
    init(&fl, 5);
    twenty(&fl);
    node(&fl, "slow", "H100", 1410, 62, 8, "550.54.15"); /* far below */
    /* z -5.4, but 40 MHz is less than the figure's smallest difference (50 MHz) */
    node(&fl, "near", "H100", 1940, 62, 8, "550.54.15");
    node(&fl, "fast", "H100", 2600, 62, 8, "550.54.15");   /* far above: not bad */
    node(&fl, "cold", "H100", 1980, 20, 8, "550.54.15");   /* far below: not bad */
    node(&fl, "hot", "H100", 1980, 84, 8, "550.54.15");    /* far above */
    node(&fl, "warm", "H100", 1980, 66, 8, "550.54.15");   /* z 2.7: within */
    node(&fl, "hotter", "H100", 1980, 68, 8, "550.54.15"); /* z 4.0 and 6 °C: out */
    fleet_judge(&fl);
    assert_true(has_reason(find(&fl, "slow"), "clock_sm_busy_mhz"));
    assert_int_equal(find(&fl, "slow")->verdict, FLEET_OUTLIER);
    assert_int_equal(find(&fl, "near")->verdict, FLEET_OK);
    assert_int_equal(find(&fl, "fast")->verdict, FLEET_OK);
    assert_int_equal(find(&fl, "cold")->verdict, FLEET_OK);
    assert_true(has_reason(find(&fl, "hot"), "temp_busy_c"));
    assert_int_equal(find(&fl, "warm")->verdict, FLEET_OK);
    assert_true(has_reason(find(&fl, "hotter"), "temp_busy_c"));
    for (int i = 0; i < 20; i++) {
        if (fl.nodes[i].verdict != FLEET_OK)
            fail_msg("%s flagged (%s)", fl.nodes[i].name,
                     fleet_metrics[fl.nodes[i].reasons[0].metric].name);
    }
    /* the evidence: the group's median beside the node's value */
    {
        const struct fleet_reason *r = &find(&fl, "slow")->reasons[0];

        assert_true(r->z_valid);
        assert_true(r->z < -30);
        assert_true(fabs(r->median - 1980) < 2);
    }
    assert_int_equal(fleet_status(&fl), 1);
    fleet_free(&fl);
}

static void test_levels_and_texts_by_majority(void **state)
{
    struct fleet fl;
    size_t critical;

    (void)state;
    init(&fl, 5);
    twenty(&fl);
    node(&fl, "seven", "H100", 1980, 62, 7, "550.54.15");
    node(&fl, "olddrv", "H100", 1980, 62, 8, "535.104.05");
    fleet_judge(&fl);
    assert_true(has_reason(find(&fl, "seven"), "gpu_count"));
    assert_int_equal(find(&fl, "seven")->severity, SEV_CRITICAL);
    assert_int_equal(find(&fl, "seven")->rank, 1); /* critical first */
    assert_true(has_reason(find(&fl, "olddrv"), "driver_version"));
    assert_int_equal(find(&fl, "olddrv")->severity, SEV_WARNING);
    assert_int_equal(find(&fl, "olddrv")->rank, 2);
    assert_int_equal(fleet_outliers(&fl, &critical), 2);
    assert_int_equal(critical, 1);
    assert_int_equal(fleet_status(&fl), 2);
    fleet_free(&fl);
}

static void test_groups_and_min_group(void **state)
{
    struct fleet fl;

    (void)state;
    init(&fl, 5);
    twenty(&fl);
    /* four A100 nodes, one slow: too few to judge against each other */
    node(&fl, "a0", "A100", 1410, 60, 8, "550.54.15");
    node(&fl, "a1", "A100", 1410, 60, 8, "550.54.15");
    node(&fl, "a2", "A100", 1410, 60, 8, "550.54.15");
    node(&fl, "a3", "A100", 900, 60, 8, "550.54.15");
    fleet_judge(&fl);
    assert_int_equal(fl.n_groups, 2);
    /* not held against the H100 nodes' clocks either */
    assert_int_equal(find(&fl, "a0")->verdict, FLEET_NOT_JUDGED);
    assert_int_equal(find(&fl, "a3")->verdict, FLEET_NOT_JUDGED);
    assert_int_equal(find(&fl, "n00")->verdict, FLEET_OK);
    assert_int_equal(fleet_status(&fl), 0);
    fleet_free(&fl);

    /* a figure only three of the twenty nodes have is not judged, whatever it says */
    init(&fl, 5);
    twenty(&fl);
    for (int i = 0; i < 3; i++) {
        int m = fleet_metric_find("power_limit_w");

        fl.nodes[i].values[m] =
            (struct fleet_value){ .known = true, .num = i == 0 ? 600 : 700, .gpu = 0 };
    }
    fleet_judge(&fl);
    assert_false(has_reason(find(&fl, "n00"), "power_limit_w"));
    assert_int_equal(find(&fl, "n00")->verdict, FLEET_OK);
    fleet_free(&fl);

    init(&fl, 3);
    node(&fl, "a0", "A100", 1410, 60, 8, "550.54.15");
    node(&fl, "a1", "A100", 1411, 60, 8, "550.54.15");
    node(&fl, "a2", "A100", 1409, 60, 8, "550.54.15");
    node(&fl, "a3", "A100", 900, 60, 8, "550.54.15");
    fleet_judge(&fl);
    assert_int_equal(find(&fl, "a3")->verdict, FLEET_OUTLIER);
    assert_int_equal(find(&fl, "a0")->verdict, FLEET_OK);
    fleet_free(&fl);
}

static void test_no_node(void **state)
{
    struct fleet fl;

    (void)state;
    init(&fl, 5);
    fleet_judge(&fl);
    assert_int_equal(fleet_status(&fl), 3);
    fleet_free(&fl);
}

static void test_metric_table(void **state)
{
    (void)state;
    for (size_t m = 0; m < fleet_n_metrics; m++) {
        const struct fleet_metric *mt = &fleet_metrics[m];

        assert_int_equal(fleet_metric_find(mt->name), (int)m);
        assert_non_null(mt->help);
        /* a figure is read from snapshots, or waits for its section: never both, never neither */
        assert_true((mt->from_snapshot != NULL) != (mt->section != NULL));
        if (mt->section)
            assert_null(mt->promql);
    }
    assert_int_equal(fleet_metric_find("no_such_figure"), -1);
}

/* The URL every output shows: no userinfo, whatever '@' the path, query or password hold. */
static void test_url_shown(void **state)
{
    static const char *const cases[][2] = {
        { "http://admin:s3cret@prom:9090/", "http://prom:9090/" },
        { "https://user@prom", "https://prom" },
        { "http://a:p@ss@prom:9090/x?y", "http://prom:9090/x?y" }, /* '@' in the password */
        { "http://prom:9090/path@x", "http://prom:9090/path@x" },  /* '@' in the path */
        { "http://prom?q=a@b", "http://prom?q=a@b" },
        { "http://prom#a@b", "http://prom#a@b" },
        { "http://prom:9090", "http://prom:9090" },
        { "not a url @ all", "not a url @ all" },
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char *shown = fleet_url_shown(cases[i][0]);

        assert_string_equal(shown, cases[i][1]);
        free(shown);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_median_and_mad),
        cmocka_unit_test(test_numbers_by_z_score),
        cmocka_unit_test(test_levels_and_texts_by_majority),
        cmocka_unit_test(test_groups_and_min_group),
        cmocka_unit_test(test_no_node),
        cmocka_unit_test(test_metric_table),
        cmocka_unit_test(test_url_shown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
