/*
 * The state collector: the past as the state file remembers it (src/state/), read into the
 * snapshot's "state" section, so that rules see it as evidence like any other and `check --from`
 * judges with the past it was captured with. It is not a row of the collector table: the file is
 * this machine's gpudoctor's memory, not part of the tree --root names, and it is read after the
 * collection because merging it needs the boot id the host collector read.
 */
#include "collect/collect.h"
#include "state/state.h"

void collect_state(struct snapshot *s, const char *dir)
{
    state_info_free(&s->state);
    state_load(dir, &s->state);
}
