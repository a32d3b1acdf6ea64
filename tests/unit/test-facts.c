/*
 * The facts (src/facts) over every snapshot of the scenario corpus: every process NVML lists on a
 * GPU and every process the fd scan found holding one is a holder of that GPU, once; each holder
 * is in its process's use, whose sums and GPU lists match; lookups find what the tables hold.
 * Then hand-made cases: NVML's memory figure wins over the fd scan's, a history given is the one
 * judged over.
 */
#include "facts/facts.h"
#include "nvml/nvml-abi.h"
#include "util/xalloc.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define CORPUS TEST_SOURCE_DIR "/tests/scenarios"

static const struct facts_holder *holder_of(const struct facts_gpu *v, uint32_t pid)
{
    const struct facts_holder *found = NULL;

    if (v == NULL)
        fail_msg("no such GPU");
    for (size_t k = 0; k < v->n_holders; k++) {
        if (v->holders[k].pid == pid) {
            if (found != NULL)
                fail_msg("GPU %u: pid %u is a holder twice", v->g->index, pid);
            found = &v->holders[k];
        }
    }
    return found;
}

static bool use_has_gpu(const struct facts_use *u, uint32_t idx)
{
    for (size_t i = 0; i < u->n_gpus; i++) {
        if (u->gpus[i] == (int32_t)idx)
            return true;
    }
    return false;
}

/* The invariants of the facts of s; returns how many holders it checked. */
static size_t check_facts(const char *name, const struct snapshot *s)
{
    struct thresholds th;
    struct facts *f;
    size_t n_holders = 0;

    thresholds_init(&th);
    f = facts_create(s, NULL, &th);
    assert_int_equal(f->n_gpus, s->n_gpus);
    assert_int_equal(f->hist->n, s->n_samples);

    /* NVML's lists: each process a holder with NVML's record. */
    for (size_t i = 0; i < s->n_gpus; i++) {
        const struct facts_gpu *v = facts_gpu_find(f, s->gpus[i].index);
        size_t compute = 0;

        assert_ptr_equal(v->g, &s->gpus[i]);
        for (size_t k = 0; k < s->gpus[i].n_procs; k++) {
            const struct facts_holder *h = holder_of(v, s->gpus[i].procs[k].pid);

            if (h == NULL || h->np == NULL)
                fail_msg("%s: pid %u on GPU %u is not a holder", name, s->gpus[i].procs[k].pid,
                         s->gpus[i].index);
        }
        for (size_t k = 0; k < v->n_holders; k++) {
            const struct facts_holder *h = &v->holders[k];
            const struct facts_use *u = facts_use_find(f, (int32_t)h->pid);

            assert_ptr_equal(h->p, facts_proc_find(f, (int32_t)h->pid));
            assert_int_equal(h->type_mask, h->np ? h->np->type_mask : h->pg->type_mask);
            compute += (h->type_mask & (GPU_PROC_COMPUTE | GPU_PROC_MPS)) != 0;
            if (u == NULL || !use_has_gpu(u, v->g->index))
                fail_msg("%s: holder %u of GPU %u is not in its use", name, h->pid, v->g->index);
            n_holders++;
        }
        assert_int_equal(v->n_compute, compute);
    }
    /* The fd scan: each process with a known GPU index a holder with its table entry. */
    for (size_t i = 0; i < s->procs.n_procs; i++) {
        const struct proc *p = &s->procs.procs[i];

        for (size_t k = 0; k < p->n_gpus; k++) {
            const struct facts_gpu *v = facts_gpu_find(f, p->gpus[k].gpu_index);
            const struct facts_holder *h;

            if (!(p->gpus[k].valid & (UINT64_C(1) << PROC_GPU_S_INDEX)) || v == NULL)
                continue;
            h = holder_of(v, (uint32_t)p->pid);
            if (h == NULL || h->pg != &p->gpus[k] || h->p != p)
                fail_msg("%s: pid %d on GPU %u is not a holder with its table entry", name,
                         (int)p->pid, p->gpus[k].gpu_index);
        }
    }
    /* The uses: by pid, GPUs ascending, memory the sum of the holders'. */
    for (size_t i = 0; i < f->n_uses; i++) {
        const struct facts_use *u = &f->uses[i];
        uint64_t sum = 0;
        enum facts_verdict if_idle;

        if (i > 0)
            assert_true(f->uses[i - 1].pid < u->pid);
        assert_ptr_equal(facts_use_find(f, u->pid), u);
        for (size_t k = 0; k < u->n_gpus; k++) {
            const struct facts_holder *h =
                holder_of(facts_gpu_find(f, (uint32_t)u->gpus[k]), (uint32_t)u->pid);

            assert_non_null(h);
            if (k > 0)
                assert_true(u->gpus[k - 1] < u->gpus[k]);
            sum += h->used_valid ? h->used_bytes : 0;
        }
        assert_int_equal(u->used_bytes, sum);
        /* The stored verdict is the verdict function's. */
        assert_int_equal(u->verdict, facts_verdict_of(f, u, &if_idle));
        assert_int_equal(u->if_idle, if_idle);
    }
    /* The pid index finds every process of the table, and nothing else. */
    for (size_t i = 0; i < s->procs.n_procs; i++)
        assert_ptr_equal(facts_proc_find(f, s->procs.procs[i].pid), &s->procs.procs[i]);
    assert_null(facts_proc_find(f, -7));
    assert_null(facts_use_find(f, -7));
    facts_free(f);
    return n_holders;
}

static void test_corpus(void **state)
{
    DIR *d = opendir(CORPUS);
    struct dirent *e;
    size_t holders = 0, cases = 0;

    (void)state;
    assert_non_null(d);
    while ((e = readdir(d)) != NULL) {
        char *path, *cause = NULL;
        struct snapshot *s;

        if (e->d_name[0] == '.')
            continue;
        path = xasprintf("%s/%s/snapshot.json", CORPUS, e->d_name);
        s = snapshot_load(path, &cause);
        free(path);
        free(cause);
        if (s == NULL) /* a live case (scenario.json + root/) has no snapshot */
            continue;
        holders += check_facts(e->d_name, s);
        cases++;
        snapshot_free(s);
    }
    closedir(d);
    /* The loop above judged something: the corpus has many cases and GPU processes. */
    assert_true(cases >= 40);
    assert_true(holders >= 50);
}

static struct snapshot *load_case(const char *name)
{
    char *path = xasprintf("%s/%s/snapshot.json", CORPUS, name), *cause = NULL;
    struct snapshot *s = snapshot_load(path, &cause);

    if (s == NULL)
        fail_msg("%s: %s", path, cause);
    free(path);
    return s;
}

/* NVML's memory figure for a process is the one kept; the fd scan's fills in only without it. */
static void test_nvml_memory_wins(void **state)
{
    struct snapshot *s = load_case("stopped-holder");
    struct proc *p = proc_table_find(&s->procs, 4121);
    struct thresholds th;
    struct gpu_proc *np = NULL;
    struct facts *f;
    const struct facts_holder *h;
    uint32_t gi = 0;

    (void)state;
    if (p == NULL || p->n_gpus == 0)
        fail_msg("stopped-holder: pid 4121 has no GPU in the process table");
    gi = p->gpus[0].gpu_index;
    for (size_t i = 0; i < s->n_gpus; i++) {
        for (size_t k = 0; k < s->gpus[i].n_procs && s->gpus[i].index == gi; k++) {
            if (s->gpus[i].procs[k].pid == 4121)
                np = &s->gpus[i].procs[k];
        }
    }
    if (np == NULL)
        fail_msg("stopped-holder: NVML does not list pid 4121 on GPU %u", gi);
    np->used_bytes = 3 * 1048576ull;
    p->gpus[0].used_bytes = 5 * 1048576ull;
    p->gpus[0].valid |= UINT64_C(1) << PROC_GPU_S_USED;
    thresholds_init(&th);
    f = facts_create(s, NULL, &th);
    h = holder_of(facts_gpu_find(f, gi), 4121);
    if (h == NULL)
        fail_msg("pid 4121 holds no GPU");
    assert_true(h->used_valid);
    assert_int_equal(h->used_bytes, 3 * 1048576ull);
    facts_free(f);

    /* Without NVML's figure, the fd scan's. */
    np->valid &= ~(UINT64_C(1) << GPU_PROC_S_USED);
    f = facts_create(s, NULL, &th);
    h = holder_of(facts_gpu_find(f, gi), 4121);
    if (h == NULL)
        fail_msg("pid 4121 holds no GPU");
    assert_true(h->used_valid);
    assert_int_equal(h->used_bytes, 5 * 1048576ull);
    facts_free(f);
    snapshot_free(s);
}

/* A history given is the one the views are built over; NULL means the snapshot's samples. */
static void test_history(void **state)
{
    struct snapshot *s = load_case("idle-holder");
    struct thresholds th;
    struct history none = { s->samples, 0 };
    struct facts *f;

    (void)state;
    assert_true(s->n_samples >= 2);
    thresholds_init(&th);
    f = facts_create(s, NULL, &th);
    assert_int_equal(f->hist->n, s->n_samples);
    assert_true(facts_has_window(f));
    facts_free(f);
    f = facts_create(s, &none, &th);
    assert_ptr_equal(f->hist, &none);
    assert_false(facts_has_window(f));
    facts_free(f);
    snapshot_free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus),
        cmocka_unit_test(test_nvml_memory_wins),
        cmocka_unit_test(test_history),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
