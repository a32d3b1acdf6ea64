/*
 * The live view's fabric rows, under the GPU table on servers that have them: one for NVLink
 * (links up, the data every link moved per second, errors that appeared since the reading
 * before and the GPU with the most of them) and one for the InfiniBand / RoCE ports (how many are
 * active and the first that is not, traffic each way, errors over the window). Red when a link or
 * a port is down or errors grow.
 */
#include "render/format.h"
#include "util/i18n.h"
#include "watch/tui-internal.h"

#include <inttypes.h>
#include <stdio.h>

int tui_fabric_rows(const struct watch_view *v)
{
    struct watch_nvlink nv;
    struct watch_ib ib;
    int32_t worst;
    int rows = 0;

    if (watch_nvlink_total(v->hist, &nv, &worst))
        rows++;
    if (v->snap != NULL && watch_ib_total(v->snap, &ib))
        rows++;
    return rows;
}

/* "612.3 GiB/s", or "-" when not known. */
static void rate(char *buf, size_t size, bool known, double bytes_per_s)
{
    char b[24];

    if (!known) {
        snprintf(buf, size, "-");
        return;
    }
    render_bytes(b, sizeof(b), bytes_per_s > 0 ? (uint64_t)bytes_per_s : 0);
    snprintf(buf, size, "%s/s", b);
}

/* "+3", or "?" when not known. */
static void errors(char *buf, size_t size, bool known, uint64_t n)
{
    if (known)
        snprintf(buf, size, "+%" PRIu64, n);
    else
        snprintf(buf, size, "?");
}

static void draw_nvlink(struct tui *t, int y, const struct watch_nvlink *nv, int32_t worst)
{
    char traffic[32], errs[24], where[32] = "";
    bool bad = nv->up < nv->known || (nv->errors_known && nv->errors > 0);

    rate(traffic, sizeof(traffic), nv->traffic_known, nv->bytes_per_s);
    errors(errs, sizeof(errs), nv->errors_known, nv->errors);
    if (worst >= 0)
        snprintf(where, sizeof(where), _(" (most on GPU %d)"), (int)worst);
    tui_on(t, 0, A_BOLD);
    tui_put(t, y, 0, 8, "NVLINK", true);
    tui_on(t, bad ? PAIR_RED : 0, bad ? A_BOLD : 0);
    tui_putf(t, y, 8, COLS - 8, true, _("%zu/%zu links up  %s  errors %s%s"), nv->up, nv->known,
             traffic, errs, where);
    tui_on(t, 0, 0);
}

static void draw_ib(struct tui *t, int y, const struct watch_ib *ib)
{
    char rx[32], tx[32], errs[24], down[96] = "";
    bool bad = ib->active < ib->ports || (ib->errors_known && ib->errors > 0);

    rate(rx, sizeof(rx), ib->traffic_known, ib->rx_bytes_per_s);
    rate(tx, sizeof(tx), ib->traffic_known, ib->tx_bytes_per_s);
    errors(errs, sizeof(errs), ib->errors_known, ib->errors);
    if (ib->first_down != NULL) {
        const struct ib_port *p = ib->first_down;

        snprintf(down, sizeof(down), " (%s/%" PRIu32 " %s)", p->device ? p->device : "?", p->port,
                 ib_port_valid(p, IB_S_STATE) && p->state_name ? p->state_name : "?");
    }
    tui_on(t, 0, A_BOLD);
    tui_put(t, y, 0, 8, "IB", true);
    tui_on(t, bad ? PAIR_RED : 0, bad ? A_BOLD : 0);
    tui_putf(t, y, 8, COLS - 8, true, _("%zu/%zu ports active%s  rx %s  tx %s  errors %s"),
             ib->active, ib->ports, down, rx, tx, errs);
    tui_on(t, 0, 0);
}

int tui_draw_fabric(struct tui *t, const struct watch_view *v, int y, int max_rows)
{
    struct watch_nvlink nv;
    struct watch_ib ib;
    int32_t worst;
    int rows = 0;

    if (rows < max_rows && watch_nvlink_total(v->hist, &nv, &worst))
        draw_nvlink(t, y + rows++, &nv, worst);
    if (rows < max_rows && v->snap != NULL && watch_ib_total(v->snap, &ib))
        draw_ib(t, y + rows++, &ib);
    return rows;
}
