#include "render/text.h"
#include "nvml/nvml-abi.h"
#include "util/xalloc.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void render_opts_init(struct render_opts *ro, FILE *out, bool no_color)
{
    const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");

    ro->color = !no_color && isatty(fileno(out)) && (nc == NULL || *nc == '\0') &&
                !(term != NULL && strcmp(term, "dumb") == 0);
}

#define SGR(name, code)                                                                            \
    const char *render_##name(const struct render_opts *ro)                                        \
    {                                                                                              \
        return ro->color ? "\033[" code "m" : "";                                                  \
    }
SGR(bold, "1")
SGR(red, "1;31")
SGR(yellow, "1;33")
SGR(green, "32")
SGR(dim, "2")
SGR(reset, "0")
#undef SGR

void render_bytes(char *buf, size_t size, uint64_t bytes)
{
    static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
    double v = (double)bytes;
    size_t u = 0;

    while (v >= 1024.0 && u + 1 < ARRAY_SIZE(units)) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, size, "%" PRIu64 " B", bytes);
    else if (v >= 100.0)
        snprintf(buf, size, "%.0f %s", v, units[u]);
    else
        snprintf(buf, size, "%.1f %s", v, units[u]);
}

static void cell_u32(char *buf, size_t size, const struct gpu *g, enum gpu_slot slot, uint32_t v,
                     const char *suffix)
{
    if (gpu_valid(g, slot))
        snprintf(buf, size, "%" PRIu32 "%s", v, suffix);
    else
        snprintf(buf, size, "-");
}

void render_gpu_table(FILE *out, const struct snapshot *s, const struct render_opts *ro)
{
    if (s->n_gpus == 0)
        return;
    fprintf(out, "%sGPU  NAME                   UTIL  MEMORY            TEMP  POWER      PCIE%s\n",
            render_bold(ro), render_reset(ro));
    for (size_t i = 0; i < s->n_gpus; i++) {
        const struct gpu *g = &s->gpus[i];
        char util[16], mem[40], temp[16], power[32], pcie[32], used[16], total[16];
        const char *name = gpu_valid(g, GPU_S_NAME) ? g->name : "?";

        if (g->handle_rc != 0) {
            fprintf(out, "%3" PRIu32 "  %s(not accessible: %s)%s\n", g->index, render_red(ro),
                    nvml_rc_name(g->handle_rc) ? nvml_rc_name(g->handle_rc) : "error",
                    render_reset(ro));
            continue;
        }
        if (strncmp(name, "NVIDIA ", 7) == 0)
            name += 7;
        cell_u32(util, sizeof(util), g, GPU_S_UTIL_GPU, g->util_gpu_pct, "%");
        if (gpu_valid(g, GPU_S_MEM_USED) && gpu_valid(g, GPU_S_MEM_TOTAL)) {
            render_bytes(used, sizeof(used), g->mem_used_bytes);
            render_bytes(total, sizeof(total), g->mem_total_bytes);
            snprintf(mem, sizeof(mem), "%s / %s", used, total);
        } else {
            snprintf(mem, sizeof(mem), "-");
        }
        cell_u32(temp, sizeof(temp), g, GPU_S_TEMP, g->temp_c, "C");
        if (gpu_valid(g, GPU_S_POWER) && gpu_valid(g, GPU_S_POWER_LIMIT))
            snprintf(power, sizeof(power), "%" PRIu32 "/%" PRIu32 " W", g->power_mw / 1000,
                     g->power_limit_mw / 1000);
        else if (gpu_valid(g, GPU_S_POWER))
            snprintf(power, sizeof(power), "%" PRIu32 " W", g->power_mw / 1000);
        else
            snprintf(power, sizeof(power), "-");
        if (gpu_valid(g, GPU_S_PCIE_GEN) && gpu_valid(g, GPU_S_PCIE_WIDTH))
            snprintf(pcie, sizeof(pcie), "Gen%" PRIu32 " x%" PRIu32, g->pcie_gen, g->pcie_width);
        else
            snprintf(pcie, sizeof(pcie), "-");
        fprintf(out, "%3" PRIu32 "  %-22.22s %4s  %-17s %4s  %-10s %s\n", g->index, name, util, mem,
                temp, power, pcie);
    }
}

void render_gpu_processes(FILE *out, const struct snapshot *s, const struct render_opts *ro)
{
    bool header = false;

    for (size_t i = 0; i < s->n_gpus; i++) {
        const struct gpu *g = &s->gpus[i];

        for (size_t k = 0; k < g->n_procs; k++) {
            const struct gpu_proc *p = &g->procs[k];
            const struct proc *hp = proc_table_find(&s->procs, (int32_t)p->pid);
            char mem[16] = "-";

            if (!header) {
                fprintf(out, "%sGPU  PID      MEMORY     STATE  USER      COMMAND%s\n",
                        render_bold(ro), render_reset(ro));
                header = true;
            }
            if (p->valid & (1u << GPU_PROC_S_USED))
                render_bytes(mem, sizeof(mem), p->used_bytes);
            fprintf(out, "%3" PRIu32 "  %-8" PRIu32 " %-10s %-6c %-9.9s %.40s\n", g->index, p->pid,
                    mem, hp && hp->state ? hp->state : '?', hp && hp->user ? hp->user : "?",
                    hp && hp->cmdline ? hp->cmdline : (hp && hp->comm ? hp->comm : "?"));
        }
    }
    if (!header && s->n_gpus > 0)
        fprintf(out, "No processes are using the GPUs.\n");
}

void render_collectors(FILE *out, const struct snapshot *s, const struct render_opts *ro)
{
    bool header = false;

    for (size_t i = 0; i < COLLECTOR__COUNT; i++) {
        const struct collector_status *c = &s->collectors[i];

        if (c->state == CS_OK && c->n_notes == 0)
            continue;
        if (!header) {
            fprintf(out, "%sNot fully checked%s\n", render_bold(ro), render_reset(ro));
            header = true;
        }
        fprintf(out, "  %-11s %s%s%s%s%s\n", collector_names[i], render_dim(ro),
                collector_state_names[c->state], c->detail ? ": " : "", c->detail ? c->detail : "",
                render_reset(ro));
        for (size_t k = 0; k < c->n_notes && k < 5; k++)
            fprintf(out, "              %s\n", c->notes[k]);
        if (c->n_notes > 5)
            fprintf(out, "              (%zu more)\n", c->n_notes - 5);
    }
}
