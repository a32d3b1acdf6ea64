/*
 * Writing on the live view's screen: text cut to a number of terminal columns (display columns,
 * not bytes: block characters and "°" are one column, some two), colours that fall back to
 * attributes alone, and the mark of the pane with the focus.
 */
#include "render/text.h"
#include "util/xalloc.h"
#include "watch/tui-internal.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

/*
 * Writes text at (y, x) in at most cols terminal columns (pad: fills the rest with blanks).
 * Counts display columns, not bytes: block characters and "°" are one column, some two.
 */
void tui_put(const struct tui *t, int y, int x, int cols, const char *text, bool pad)
{
    char *own = t->utf8 ? NULL : render_ascii(text); /* not UTF-8: as check does */
    const char *s = own ? own : text;
    mbstate_t ms;
    size_t bytes = 0, len = strlen(s);
    int used = 0;

    if (cols <= 0) {
        free(own);
        return;
    }
    memset(&ms, 0, sizeof(ms));
    while (bytes < len) {
        wchar_t wc;
        size_t n = mbrtowc(&wc, s + bytes, len - bytes, &ms);
        int w;

        if (n == (size_t)-1 || n == (size_t)-2 || n == 0)
            break;
        w = wcwidth(wc);
        if (w < 0)
            w = 1;
        if (used + w > cols)
            break;
        used += w;
        bytes += n;
    }
    mvaddnstr(y, x, s, (int)bytes);
    if (pad) {
        for (; used < cols; used++)
            addch(' ');
    }
    free(own);
}

void tui_putf(const struct tui *t, int y, int x, int cols, bool pad, const char *fmt, ...)
{
    va_list ap;
    char *s;

    va_start(ap, fmt);
    s = xvasprintf(fmt, ap);
    va_end(ap);
    tui_put(t, y, x, cols, s, pad);
    free(s);
}

void tui_on(const struct tui *t, int pair, attr_t extra)
{
    attrset((t->color && pair ? COLOR_PAIR(pair) : 0) | extra);
}

/*
 * A pane's header: reverse video across the screen for the pane with the focus (visible without
 * colour), bold for the other; the title starts with a mark for the focused one.
 */
void tui_pane_header(const struct tui *t, bool focused)
{
    tui_on(t, 0, focused ? A_REVERSE | A_BOLD : A_BOLD);
}

const char *tui_focus_mark(bool focused)
{
    return focused ? "▶" : " ";
}
