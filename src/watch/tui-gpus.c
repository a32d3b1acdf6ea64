/*
 * The live view's GPU table: per GPU utilisation, memory and temperature with history graphs as
 * wide as the terminal allows, power, SM clock and the throttle reasons, coloured by how serious
 * they are; "... N more GPUs" when the terminal is too short for all of them.
 */
#include "render/format.h"
#include "util/i18n.h"
#include "util/xalloc.h"
#include "watch/graph.h"
#include "watch/tui-internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The values of one GPU field over the last n readings, NaN where it was not valid. */
static void series(const struct history *h, size_t pos, uint32_t idx, enum gpu_slot slot,
                   double (*get)(const struct gpu *), double *out, size_t n)
{
    size_t from = h->n > n ? h->n - n : 0;

    for (size_t k = from; k < h->n; k++) {
        const struct sample *smp = &h->samples[k];
        const struct gpu *g =
            pos < smp->n_gpus && smp->gpus[pos].index == idx ? &smp->gpus[pos] : NULL;

        for (size_t i = 0; g == NULL && i < smp->n_gpus; i++) {
            if (smp->gpus[i].index == idx)
                g = &smp->gpus[i];
        }
        out[k - from] = g && g->handle_rc == 0 && g->rc[slot] == 0 ? get(g) : NAN;
    }
}

static double get_util(const struct gpu *g)
{
    return g->util_gpu_pct;
}

static double get_mem(const struct gpu *g)
{
    return (double)g->mem_used_bytes;
}

static double get_temp(const struct gpu *g)
{
    return g->temp_c;
}

/*
 * Cuts a comma-separated list to width at a comma, keeping whole items, with ",+" when there is
 * room to say more follow: "hwthermal" or "hwthermal,+", never "hwthermal,th". The most serious
 * item comes first, so it is the one kept.
 */
static void fit_list(char *list, size_t width)
{
    size_t keep = 0;

    if (strlen(list) <= width)
        return;
    for (const char *c = list; (c = strchr(c, ',')) != NULL && (size_t)(c - list) <= width; c++)
        keep = (size_t)(c - list);
    if (keep == 0)
        list[width] = '\0'; /* the first item alone is too long */
    else if (keep + 2 <= width)
        strcpy(list + keep, ",+");
    else
        list[keep] = '\0';
}

/* Graph widths for the GPU table at this width: utilisation, memory, temperature. */
static void graph_widths(int cols, int *gu, int *gm, int *gt)
{
    int spare = cols - 80;

    *gu = 10 + (spare > 0 ? spare * 2 / 5 : 0);
    *gm = 10 + (spare > 0 ? spare * 2 / 5 : 0);
    *gt = 6 + (spare > 0 ? spare / 5 : 0);
}

int tui_draw_gpus(struct tui *t, const struct watch_view *v, int y, int max_rows)
{
    const struct history *h = v->hist;
    const struct sample *last = h->n ? &h->samples[h->n - 1] : NULL;
    int gu, gm, gt, x, rows = 0;
    double *vals;
    char *buf;

    graph_widths(COLS, &gu, &gm, &gt);
    vals = xcalloc((size_t)(gu > gm ? gu : gm) + (size_t)gt + 1, sizeof(*vals));
    buf = xmalloc((size_t)(gu + gm + gt) * 4 + 64);
    /* The header at the columns the rows below use. */
    tui_on(t, 0, A_BOLD);
    /* TRANSLATORS: watch's GPU table heads; each must fit its column (3, 4, 6, 4, 5, 6). */
    tui_put(t, y, 0, COLS, render_fit(N_("GPU"), 3), true);
    x = 4;
    tui_put(t, y, x, 4, render_fit(N_("UTIL"), 4), false);
    x += 5 + gu + 1;
    tui_put(t, y, x, 6, render_fit(N_("MEMORY"), 6), false);
    x += 14 + gm + 1;
    tui_put(t, y, x, 4, render_fit(N_("TEMP"), 4), false);
    x += 6 + gt + 1;
    tui_put(t, y, x, 5, render_fit(N_("POWER"), 5), false);
    x += 6;
    tui_put(t, y, x, 6, render_fit(N_("SM MHz"), 6), false);
    x += 7;
    tui_put(t, y, x, COLS - x, _("THROTTLE"), false);
    tui_on(t, 0, 0);
    rows++;
    for (size_t i = 0; last && i < last->n_gpus && rows < max_rows; i++) {
        const struct gpu *g = &last->gpus[i];
        const struct gpu *st = v->snap ? snapshot_gpu(v->snap, g->index) : NULL;
        char num[48], thr[64];
        double total = st && gpu_valid(st, GPU_S_MEM_TOTAL) ? (double)st->mem_total_bytes : NAN;
        double hot = st && gpu_valid(st, GPU_S_TEMP_SLOWDOWN) ? st->temp_slowdown_c : 90;

        if (rows == max_rows - 1 && i + 1 < last->n_gpus) {
            tui_on(t, PAIR_DIM, A_DIM);
            tui_putf(t, y + rows, 0, COLS, true, "... %zu more GPUs (a taller terminal shows them)",
                     last->n_gpus - i);
            tui_on(t, 0, 0);
            rows++;
            break;
        }
        x = 0;
        tui_putf(t, y + rows, x, 4, true, "%3" PRIu32, g->index);
        x += 4;
        if (g->handle_rc != 0) {
            tui_on(t, PAIR_RED, A_BOLD);
            tui_put(t, y + rows, x, COLS - x, "GPU lost: NVML cannot reach it", true);
            tui_on(t, 0, 0);
            rows++;
            continue;
        }
        /* Utilisation. */
        if (gpu_valid(g, GPU_S_UTIL_GPU))
            snprintf(num, sizeof(num), "%3" PRIu32 "%%", g->util_gpu_pct);
        else
            snprintf(num, sizeof(num), "  -");
        tui_put(t, y + rows, x, 5, num, true);
        x += 5;
        series(h, i, g->index, GPU_S_UTIL_GPU, get_util, vals, (size_t)gu);
        graph_render(buf, (size_t)gu * 4 + 1, vals, h->n < (size_t)gu ? h->n : (size_t)gu, 0, 100,
                     (size_t)gu, t->utf8);
        tui_on(t, PAIR_GREEN, 0);
        tui_put(t, y + rows, x, gu, buf, true);
        tui_on(t, 0, 0);
        x += gu + 1;
        /* Memory. */
        if (gpu_valid(g, GPU_S_MEM_USED)) {
            char b[16];

            render_bytes(b, sizeof(b), g->mem_used_bytes);
            if (!isnan(total) && total > 0)
                snprintf(num, sizeof(num), "%8s %3.0f%%", b,
                         (double)g->mem_used_bytes * 100 / total);
            else
                snprintf(num, sizeof(num), "%8s", b);
        } else {
            snprintf(num, sizeof(num), "       -");
        }
        tui_put(t, y + rows, x, 14, num, true);
        x += 14;
        series(h, i, g->index, GPU_S_MEM_USED, get_mem, vals, (size_t)gm);
        graph_render(buf, (size_t)gm * 4 + 1, vals, h->n < (size_t)gm ? h->n : (size_t)gm, 0,
                     isnan(total) ? 1 : total, (size_t)gm, t->utf8);
        tui_on(t, PAIR_CYAN, 0);
        tui_put(t, y + rows, x, gm, buf, true);
        tui_on(t, 0, 0);
        x += gm + 1;
        /* Temperature. */
        if (gpu_valid(g, GPU_S_TEMP))
            snprintf(num, sizeof(num), "%3" PRIu32 "°C", g->temp_c);
        else
            snprintf(num, sizeof(num), "   - ");
        if (gpu_valid(g, GPU_S_TEMP) && g->temp_c + 5 >= hot)
            tui_on(t, PAIR_RED, A_BOLD);
        tui_put(t, y + rows, x, 6, num, true);
        tui_on(t, 0, 0);
        x += 6;
        series(h, i, g->index, GPU_S_TEMP, get_temp, vals, (size_t)gt);
        graph_render(buf, (size_t)gt * 4 + 1, vals, h->n < (size_t)gt ? h->n : (size_t)gt, 20, hot,
                     (size_t)gt, t->utf8);
        tui_on(t, PAIR_YELLOW, 0);
        tui_put(t, y + rows, x, gt, buf, true);
        tui_on(t, 0, 0);
        x += gt + 1;
        /* Power, SM clock, throttle reasons. */
        if (gpu_valid(g, GPU_S_POWER))
            snprintf(num, sizeof(num), "%4.0fW", g->power_mw / 1000.0);
        else
            snprintf(num, sizeof(num), "    -");
        tui_put(t, y + rows, x, 6, num, true);
        x += 6;
        if (gpu_valid(g, GPU_S_CLOCK_SM))
            snprintf(num, sizeof(num), "%5" PRIu32, g->clock_sm_mhz);
        else
            snprintf(num, sizeof(num), "    -");
        tui_put(t, y + rows, x, 6, num, true);
        x += 6;
        watch_reason_codes(thr, sizeof(thr), g, true);
        if (strstr(thr, "hw") || strstr(thr, "brake"))
            tui_on(t, PAIR_RED, A_BOLD);
        else if (strstr(thr, "thermal") || strstr(thr, "pcap"))
            tui_on(t, PAIR_YELLOW, 0);
        fit_list(thr, COLS > x ? (size_t)(COLS - x) : 0);
        tui_put(t, y + rows, x, COLS - x, thr, true);
        tui_on(t, 0, 0);
        rows++;
    }
    if (last && last->n_gpus == 0) {
        tui_on(t, PAIR_DIM, A_DIM);
        tui_put(t, y + rows, 0, COLS, "  no GPU seen: see the findings below", true);
        tui_on(t, 0, 0);
        rows++;
    }
    free(vals);
    free(buf);
    return rows;
}
