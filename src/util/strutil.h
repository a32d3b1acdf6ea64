/* Small string and number parsing helpers. Every parser checks the whole input. */
#ifndef GPUDOCTOR_STRUTIL_H
#define GPUDOCTOR_STRUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

bool str_starts(const char *s, const char *prefix);
bool str_ends(const char *s, const char *suffix);
/* Removes trailing whitespace in place; returns s. */
char *str_rtrim(char *s);
/* Returns s advanced past leading whitespace. */
const char *str_ltrim(const char *s);

/* Parse all of s (surrounding whitespace allowed) as a number; false on garbage or overflow. */
bool str_to_u64(const char *s, int base, uint64_t *out);
bool str_to_i64(const char *s, int base, int64_t *out);
bool str_to_u32(const char *s, int base, uint32_t *out);
bool str_to_double(const char *s, double *out);

/* Compares dotted version strings numerically ("535.104.05" vs "535.43.02"). */
int str_version_cmp(const char *a, const char *b);

/* The major of a dotted version: 10 of "10.1"; 0 for NULL or text that does not start with a digit.
 */
unsigned long str_version_major(const char *v);

/*
 * Makes s safe for a terminal, a log line and JSON, in place: every byte of a control character
 * (C0 with TAB, CR and LF among them, DEL, and the C1 controls U+0080..U+009F, CSI among them),
 * of a format character that breaks a line or reorders what a terminal shows (U+2028, U+2029,
 * the bidirectional embeddings, overrides and isolates U+202A..U+202E, U+2066..U+2069: a
 * right-to-left override in a process name would make a fix line read other than it runs) and
 * every byte not part of a valid UTF-8 sequence becomes '?'. The length is kept, and a safe
 * string is left as it is. Returns s (NULL stays NULL).
 *
 * The one cleaner for text that becomes data: every string that enters a snapshot, from the live
 * collectors (command lines, user names, cgroup paths, NVML strings, kernel log lines, notes) as
 * from the readers of snapshots and recordings (jfield.c), passes through it, so renderers
 * (text, TUI, JSON, Prometheus, logs, the Slurm reason) print what they are given.
 */
char *str_sanitize(char *s);
/* A new sanitized copy of s, or NULL for NULL. */
char *str_sanitized(const char *s);

/*
 * A copy of s safe for JSON and terminals that still shows what was there: valid UTF-8 is kept,
 * any other byte and every control character becomes "\xNN". For messages that quote input, and
 * for text whose bytes matter (versions read from users' files). The caller frees it.
 */
char *str_printable(const char *s);
char *str_printablen(const char *s, size_t n);
/* The same, and U+2028, U+2029 and the bidirectional controls escaped too (see str_is_one_line):
 * text that must show as the one line it is, such as a comment in a fix. */
char *str_printable_line(const char *s);
/*
 * What a message quotes of untrusted text: str_printable(s), cut on a character boundary to at
 * most max bytes and then ended with "..." when cut (so at most max + 3 bytes), so that a 900 KB
 * line or an escape sequence in a file never reaches the terminal through an error message. The
 * caller frees it.
 */
char *str_excerpt(const char *s, size_t max);
/* Whether s is valid UTF-8 (JSON strings must be). */
bool str_is_utf8(const char *s);
/*
 * Drops an incomplete UTF-8 character from the end of s, as a cut by bytes ("%.12s", a full
 * snprintf buffer) leaves one, so the text stays valid UTF-8 where it was before the cut.
 */
void str_utf8_trim(char *s);
/*
 * Appends item to the comma-separated list ("A1, B2") in buf unless the list holds it already
 * (a whole entry); an item that would not fit is left out. buf starts as "".
 */
void str_list_add_once(char *buf, size_t size, const char *item);

/*
 * Whether s can be shown on one line exactly as it is: valid UTF-8 with no control character
 * (C0, DEL, C1) and no format character that breaks or reorders a line (U+2028, U+2029, the
 * bidirectional embeddings, overrides and isolates). n bytes, or up to the NUL with n SIZE_MAX.
 */
bool str_is_one_line(const char *s, size_t n);

/*
 * s as one word of a POSIX shell command line that people paste into a root shell: bare when
 * every byte is one of [A-Za-z0-9_./:=@%+,-] and it does not start with '=' (zsh expands =cmd),
 * else in single quotes, a ' inside written as '\''. NULL when no word on one line can carry s:
 * it is empty, or not str_is_one_line (a newline would end the command, an escape sequence
 * rewrites the terminal, bytes that are not UTF-8 would not be copied back as they are). Quoting
 * does not stop a word that starts with '-' from being read as an option: callers put "--" first
 * or refuse such values. The caller frees it.
 */
char *str_shell_quote(const char *s);

/* FNV-1a, 64 bits: FNV1A64_INIT, then fnv1a64 over each piece in turn. Not for hostile keys
 * where collisions would matter: a hash table's buckets, a fingerprint of a line. */
#define FNV1A64_INIT UINT64_C(0xcbf29ce484222325)
uint64_t fnv1a64(uint64_t h, const void *p, size_t n);

#endif
