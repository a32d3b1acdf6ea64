#include "util/i18n.h"
#include "util/xalloc.h"

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

bool i18n_active(void)
{
    return active;
}

char *i18n_vformat(const char *fmt, va_list ap)
{
    if (!active || _(fmt) == fmt)
        return NULL;
    return xvasprintf(_(fmt), ap);
}
