/*
 * For the unit tests of the data tables (data/NAME.tsv): runs the build's generator,
 * src/data/tsv2c.c, on a table written to a temporary directory, so that a test can check what
 * it refuses. Included after <cmocka.h> by one test file each (the helper is static).
 */
#ifndef GPUDOCTOR_TESTS_TSV2C_RUN_H
#define GPUDOCTOR_TESTS_TSV2C_RUN_H

#include "util/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Runs `gpudoctor-tsv2c KIND` on table; returns its exit status and what it printed in out. */
static int run_tsv2c(const char *kind, const char *table, char *out, size_t size)
{
    char dir[] = TEST_BINARY_DIR "/tsv2c-XXXXXX";
    char *in, *c_out, *cmd;
    FILE *f, *p;
    size_t n;
    int status;

    assert_non_null(mkdtemp(dir));
    in = xasprintf("%s/table.tsv", dir);
    c_out = xasprintf("%s/table.c", dir);
    f = fopen(in, "w");
    assert_non_null(f);
    fputs(table, f);
    fclose(f);
    cmd = xasprintf("'%s/src/data/gpudoctor-tsv2c' %s '%s' '%s' 2>&1", TEST_BINARY_DIR, kind, in,
                    c_out);
    p = popen(cmd, "r");
    assert_non_null(p);
    n = fread(out, 1, size - 1, p);
    out[n] = '\0';
    status = pclose(p);
    unlink(in);
    unlink(c_out);
    rmdir(dir);
    free(in);
    free(c_out);
    free(cmd);
    return status;
}

#endif
