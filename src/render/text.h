/*
 * The text renderer: what a person reads at 3 a.m. A verdict line first, then the findings by
 * rank (title, subject, evidence, fix), the GPU table, the GPU processes, and what could not be
 * checked. Wrapped to the terminal's width (80 columns off a terminal); colour only on terminals
 * unless asked, NO_COLOR respected; ASCII when the locale's character set is not UTF-8.
 */
#ifndef GPUDOCTOR_RENDER_TEXT_H
#define GPUDOCTOR_RENDER_TEXT_H

#include "render/format.h"
#include "rules/rules.h"
#include "snapshot/snapshot.h"

#include <stdbool.h>
#include <stdio.h>

struct render_opts {
    bool color;
    unsigned width; /* columns to wrap prose at */
    bool ascii;     /* write ASCII only: render_out_begin/end convert what the renderers write */
};

/* A choice the user may leave to gpudoctor (auto) or make: --color=WHEN, --ascii. */
enum render_when { RENDER_AUTO, RENDER_ALWAYS, RENDER_NEVER };

#define RENDER_DEFAULT_WIDTH 80
#define RENDER_MIN_WIDTH     40
#define RENDER_MAX_WIDTH     500

/*
 * Render options for text written to out. Colour: always, never, or auto: when out is a
 * terminal, NO_COLOR is unset or empty and TERM is not "dumb". Width: width, or 0 for
 * render_term_width(out). ASCII: always, never, or auto: when the locale's character set is not
 * UTF-8 (render_locale_utf8).
 */
void render_opts_init(struct render_opts *ro, FILE *out, enum render_when color, unsigned width,
                      enum render_when ascii);
/*
 * The width to write out at: the terminal's (TIOCGWINSZ) when out is one, else $COLUMNS when it
 * is a number, else 80; within RENDER_MIN_WIDTH and RENDER_MAX_WIDTH.
 */
unsigned render_term_width(FILE *out);

/*
 * Text for out, converted to ASCII when ro->ascii: render_out_begin returns the stream to render
 * into (out itself, or a memory stream), render_out_end writes what it holds to out, each
 * non-ASCII character replaced (render_ascii). The conversion happens here, at the end, so
 * findings and JSON keep their UTF-8.
 */
struct render_out {
    FILE *out, *mem;
    char *buf;
    size_t len;
};
FILE *render_out_begin(struct render_out *w, FILE *out, const struct render_opts *ro);
void render_out_end(struct render_out *w);

/* ANSI sequences, or "" without colour. */
const char *render_bold(const struct render_opts *ro);
const char *render_red(const struct render_opts *ro);
const char *render_yellow(const struct render_opts *ro);
const char *render_green(const struct render_opts *ro);
const char *render_dim(const struct render_opts *ro);
const char *render_reset(const struct render_opts *ro);

/*
 * A column head of a fixed-width table: its label (marked with N_; printed through _()), its
 * width in display columns and the spaces after it (both unused for the last head, printed as it
 * is), and whether it is aligned right.
 */
struct head_cell {
    const char *label;
    int width, gap;
    bool right;
};

/*
 * The heads on one line in bold, each translation padded to its column by display width; one
 * wider than its column is printed in English (the columns stay aligned).
 */
void render_table_header(FILE *out, const struct render_opts *ro, const struct head_cell *c,
                         size_t n);

/*
 * The verdict, one line without colour: "2 critical, 1 warning — GPU 3 memory held by ...",
 * "healthy — 8 GPUs checked, no problems found", or why nothing could be checked.
 * The caller frees it.
 */
char *render_verdict(const struct snapshot *s, const struct findings *f, bool people);
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
 * first_len), continuation lines indented by indent columns. Counts characters, not bytes.
 */
void render_wrap(FILE *out, const struct render_opts *ro, size_t first_len, size_t indent,
                 const char *text);

#endif
