/*
 * The text renderer: what a person reads at 3 a.m. A verdict line first, then the findings by
 * rank (title, subject, evidence, fix), the GPU table, the GPU processes, and what could not be
 * checked. Readable at 80 columns; colour only on terminals, NO_COLOR respected.
 */
#ifndef GPUDOCTOR_RENDER_TEXT_H
#define GPUDOCTOR_RENDER_TEXT_H

#include "render/format.h"
#include "rules/rules.h"
#include "snapshot.h"

#include <stdbool.h>
#include <stdio.h>

struct render_opts {
    bool color;
    unsigned width; /* columns to wrap prose at */
};

/* Colour when out is a terminal, NO_COLOR is unset or empty, and TERM is not "dumb". */
void render_opts_init(struct render_opts *ro, FILE *out, bool no_color);

/* ANSI sequences, or "" without colour. */
const char *render_bold(const struct render_opts *ro);
const char *render_red(const struct render_opts *ro);
const char *render_yellow(const struct render_opts *ro);
const char *render_green(const struct render_opts *ro);
const char *render_dim(const struct render_opts *ro);
const char *render_reset(const struct render_opts *ro);

/*
 * The verdict, one line without colour: "2 critical, 1 warning — GPU 3 memory held by ...",
 * "healthy — 8 GPUs checked, no problems found", or why nothing could be checked.
 * The caller frees it.
 */
char *render_verdict(const struct snapshot *s, const struct findings *f);
/* "critical", "warning", "healthy" or "unknown": the exit status in words. */
const char *render_status(int exit_code);

/* The whole report. */
void render_report(FILE *out, const struct snapshot *s, const struct findings *f,
                   const struct render_opts *ro);

void render_findings(FILE *out, const struct findings *f, const struct render_opts *ro);
void render_gpu_table(FILE *out, const struct snapshot *s, const struct render_opts *ro);
void render_gpu_processes(FILE *out, const struct snapshot *s, const struct render_opts *ro);
/* What could not be checked (rule skips, grouped) and which collectors fell short. */
void render_not_checked(FILE *out, const struct snapshot *s, const struct findings *f,
                        const struct render_opts *ro);

/*
 * Prints text wrapped at ro->width: the first line after `first` (already printed, of length
 * first_len), continuation lines indented by indent columns.
 */
void render_wrap(FILE *out, const struct render_opts *ro, size_t first_len, size_t indent,
                 const char *text);

#endif
