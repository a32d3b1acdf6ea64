/*
 * Formatting numbers for people: sizes, durations, GPU lists. Shared by the renderers and by the
 * rules, whose titles carry the key number ("71.2 GiB held by stopped process 4121").
 */
#ifndef GPUDOCTOR_RENDER_FORMAT_H
#define GPUDOCTOR_RENDER_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* "71.2 GiB", "512 MiB": binary units, three significant digits. */
void render_bytes(char *buf, size_t size, uint64_t bytes);
/* "45s", "12m", "2h13m", "3d4h": the two largest units. Negative: "?". */
void render_duration(char *buf, size_t size, double seconds);
/* A command line without the directory of its program: "python train.py", not "/opt/x/python
 * train.py". Returns a pointer into cmd. */
const char *render_command(const char *cmd);
/* "0-3, 5, 7" from sorted, distinct values; "0-3, 5, ..." when they do not all fit in size. */
void render_ranges(char *buf, size_t size, const int32_t *v, size_t n);

/*
 * Whether text for people may be UTF-8: the character set of the locale (LC_ALL, LC_CTYPE, LANG
 * as the C library resolves them once main has called setlocale(LC_CTYPE, "")) is UTF-8.
 * Otherwise the text renderers and watch's view write ASCII (render_ascii).
 */
bool render_locale_utf8(void);

/*
 * One character of UTF-8 text at s (n bytes left): its length in bytes, and the columns it takes
 * on a terminal in *cols (wcwidth: 2 for Chinese and other wide characters, 0 for a combining
 * one). A byte that is not valid UTF-8 in the locale is 1 byte of 1 column; so is every
 * continuation of a character the locale cannot decode (the ASCII fallback's count).
 */
size_t render_char(const char *s, size_t n, size_t *cols);

/* The columns the first n bytes of s take on a terminal (render_char). */
size_t render_width(const char *s, size_t n);
/*
 * text padded with spaces to width display columns, on the left when right is set; text wider
 * than the column is written whole.
 */
void render_cell(FILE *out, const char *text, size_t width, bool right);
/* The same cell into buf (cut short only by size). */
void render_pad(char *buf, size_t size, const char *text, size_t width, bool right);
/* The translation of english, or english itself where the translation is wider than width. */
const char *render_fit(const char *english, size_t width);
/*
 * text cut to at most max display columns, never inside a character; with mark, a cut text ends
 * with '~' (within max).
 */
void render_cut(FILE *out, const char *text, size_t max, bool mark);
/* A table cell of exactly width columns: text cut there (never inside a character), or padded. */
void render_cut_cell(FILE *out, const char *text, size_t width);

/*
 * The next piece of text at p (not a space) that a wrapped line may not split, in bytes, and its
 * columns in *cols: a run of characters up to a space or a newline (an English word), or one wide
 * character (Chinese is written without spaces and may break between any two characters).
 * Closing punctuation stays with what it follows, so no line starts with it.
 */
size_t render_piece(const char *p, size_t *cols);
/*
 * An ASCII copy of UTF-8 text: the characters reports use get ASCII stand-ins ("—" "-",
 * "°" nothing, so "88 °C" reads "88 C", "…" "...", "→" "->", "×" "x"), any other non-ASCII
 * character '?'. The caller frees it.
 */
char *render_ascii(const char *s);
char *render_asciin(const char *s, size_t n);

#endif
