/* The text renderer: what a person reads at 3 a.m. Readable at 80 columns; colour on terminals. */
#ifndef GPUDOCTOR_RENDER_TEXT_H
#define GPUDOCTOR_RENDER_TEXT_H

#include "snapshot.h"

#include <stdbool.h>
#include <stdio.h>

struct render_opts {
    bool color;
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

/* "71.2 GiB", "512 MiB": binary units, three significant digits. */
void render_bytes(char *buf, size_t size, uint64_t bytes);

void render_gpu_table(FILE *out, const struct snapshot *s, const struct render_opts *ro);
void render_gpu_processes(FILE *out, const struct snapshot *s, const struct render_opts *ro);
/* What could not be collected and why; prints nothing when everything was. */
void render_collectors(FILE *out, const struct snapshot *s, const struct render_opts *ro);

#endif
