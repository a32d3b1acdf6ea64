#include "util/i18n.h"
#include "util/xalloc.h"

#include <ctype.h>
#include <langinfo.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>

#ifndef GPUDOCTOR_LOCALEDIR
#define GPUDOCTOR_LOCALEDIR "/usr/share/locale"
#endif

static bool active;

void i18n_init(void)
{
    const char *cs, *dir = getenv("GPUDOCTOR_LOCALEDIR");

    setlocale(LC_CTYPE, "");
    setlocale(LC_MESSAGES, "");
    cs = nl_langinfo(CODESET);
    if (cs == NULL || (strcmp(cs, "UTF-8") != 0 && strcmp(cs, "utf8") != 0)) {
        /* Not UTF-8: the English, which the renderers can reduce to ASCII. */
        setlocale(LC_MESSAGES, "C");
        return;
    }
    bindtextdomain(I18N_DOMAIN, dir != NULL && *dir ? dir : GPUDOCTOR_LOCALEDIR);
    bind_textdomain_codeset(I18N_DOMAIN, "UTF-8");
    /* The catalogue's own language, or "" for the English: its header names it. */
    active = strcmp(dgettext(I18N_DOMAIN, ""), "") != 0 &&
             strstr(dgettext(I18N_DOMAIN, ""), "Language: en") == NULL;
}

void i18n_off(void)
{
    setlocale(LC_MESSAGES, "C"); /* gettext ignores LANGUAGE under the C locale */
    active = false;
}

bool i18n_active(void)
{
    return active;
}

const char *i18n_language(void)
{
    static char tag[32];
    const char *h, *p;
    size_t n = 0;

    if (!active)
        return "en";
    if (tag[0])
        return tag;
    h = dgettext(I18N_DOMAIN, "");
    p = strstr(h, "\nLanguage: ");
    if (p == NULL && strncmp(h, "Language: ", 10) == 0)
        p = h - 1;
    if (p == NULL)
        return "en";
    /* "zh_CN", "zh_CN.UTF-8", "sr@latin": letters and digits, '_' as '-', up to the rest */
    for (p += 11; n + 1 < sizeof(tag) && (isalnum((unsigned char)*p) || *p == '_'); p++)
        tag[n++] = *p == '_' ? '-' : *p;
    tag[n] = '\0';
    return n ? tag : "en";
}

const char *i18n_pgettext(const char *ctx_s, const char *s)
{
    const char *t = dgettext(I18N_DOMAIN, ctx_s);

    /* gettext hands back its argument when there is no translation: the context must not show */
    return t == ctx_s ? s : t;
}

char *i18n_vformat_both(char **l, const char *fmt, va_list ap)
{
    va_list aq;
    char *en;

    va_copy(aq, ap);
    en = xvasprintf(fmt, ap);
    *l = i18n_vformat(fmt, aq);
    va_end(aq);
    return en;
}

char *i18n_vformat(const char *fmt, va_list ap)
{
    if (!active || _(fmt) == fmt)
        return NULL;
    return xvasprintf(_(fmt), ap);
}
