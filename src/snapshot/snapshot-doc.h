/* Documentation of the snapshot, generated from its field tables. */
#ifndef GPUDOCTOR_SNAPSHOT_DOC_H
#define GPUDOCTOR_SNAPSHOT_DOC_H

#include <stdio.h>

/* Writes docs/snapshot.md: Markdown describing every key of the snapshot. */
void snapshot_describe(FILE *out);

#endif
