/*
 * Translations for people, through GNU gettext (po/, docs/i18n.md). Text for people goes through
 * _() (or N_() where a table holds it and the reader translates); what machines read (--json,
 * /metrics, snapshots, rule ids, fix commands) never does.
 */
#ifndef GPUDOCTOR_I18N_H
#define GPUDOCTOR_I18N_H

#include "util/xalloc.h"

#include <libintl.h>
#include <stdarg.h>
#include <stdbool.h>

#define I18N_DOMAIN "gpudoctor"
#define _(s)        dgettext(I18N_DOMAIN, s)
#define N_(s)       s
/* The form of "one"/"many" the reader's language wants for n ("%zu reboot", "%zu reboots"). */
#define P_(one, many, n) dngettext(I18N_DOMAIN, one, many, n)
/* The translation for people, the English for machines (--json keeps it). */
#define L_(people, s) ((people) ? _(s) : (s))
/*
 * _(s) in a context (the .po's msgctxt), for a word that must read differently from the same
 * English elsewhere: C_("Xid category", "memory") is not bench's "memory".
 */
#define C_(ctx, s) i18n_pgettext(ctx "\004" s, s)
const char *i18n_pgettext(const char *ctx_s, const char *s);

/*
 * Takes the character set (LC_CTYPE) and the language (LC_MESSAGES, LANGUAGE) from the
 * environment; numbers and times keep the C locale. Translations are used only where the
 * character set is UTF-8 (every catalogue is written in it). The catalogues are looked for in
 * $GPUDOCTOR_LOCALEDIR when set (the build tree's tests), else in the install's locale directory.
 */
void i18n_init(void);

/*
 * English from here on, whatever the locale: for a command whose output is a log or is read by
 * another program (serve's stderr, slurm-*, watch --plain), once its options are checked (its
 * --help and usage errors keep the language). Causes formed by lower layers through _() (a file
 * that cannot be written, a state directory) then stay English in its log lines.
 */
void i18n_off(void);

/* Whether a translation other than the English is in use (then findings keep both texts). */
bool i18n_active(void);

/*
 * The language of the text for people as a BCP 47 tag, for HTML's lang attribute: the
 * catalogue's own ("zh-CN" from its header's "Language: zh_CN") when a translation is in use,
 * "en" otherwise.
 */
const char *i18n_language(void);

/*
 * The translation of fmt formatted with ap (the caller frees it), or NULL when no translation is
 * in use or fmt has none: for text kept in both languages, the English for machines beside this.
 * msgfmt --check holds every translation's conversions to its msgid's (tests/e2e/i18n.sh).
 */
char *i18n_vformat(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));
/*
 * Both texts of a line kept in both languages: fmt formatted with ap in English (returned), and
 * its translation in *l (i18n_vformat: NULL when none is in use). The caller frees both.
 */
char *i18n_vformat_both(char **l, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

/*
 * The two texts a line kept in both languages wants, from one format: fmt with en_args (in
 * parentheses), and, when a translation is in use, its translation with l_args, whose words went
 * through _() (NULL otherwise):
 *     finding_evidence_take(f, TWICE("parent %d is %s", (pid, word), (pid, _(word))));
 * po/update-pot.sh extracts fmt.
 */
#define TWICE_ARGS(...) __VA_ARGS__
#define TWICE(fmt, en_args, l_args)                                                                \
    xasprintf(fmt, TWICE_ARGS en_args),                                                            \
        (i18n_active() ? xasprintf(_(fmt), TWICE_ARGS l_args) : NULL)
/*
 * TWICE for a line about n things: one's format when n is 1, many's otherwise, and the
 * translation's plural form for n (P_):
 *     collector_note_take(c, TWICE_N("%zu line was cut", "%zu lines were cut", n, (n), (n)));
 * po/update-pot.sh extracts both formats as one plural message.
 */
#define TWICE_N(one, many, n, en_args, l_args)                                                     \
    xasprintf((n) == 1 ? (one) : (many), TWICE_ARGS en_args),                                      \
        (i18n_active() ? xasprintf(P_(one, many, n), TWICE_ARGS l_args) : NULL)

#endif
