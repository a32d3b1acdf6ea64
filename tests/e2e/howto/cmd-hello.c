/*
 * gpudoctor hello: says hello. The example command of docs/architecture.md ("How to add a
 * command"); tests/e2e/howto.sh adds it to a copy of the tree.
 */
#include "cmd/cmd.h"

#include <getopt.h>
#include <stdio.h>

enum { OPT_NAME = OPT__COMMON_END };

static const struct cmd_option options[] = {
    { "name", OPT_NAME, required_argument, "WHO", "whom to greet (default: world)" },
    { NULL, 0, 0, NULL, NULL },
};

static int option(void *ctx, int key, char *arg)
{
    const char **who = ctx;

    if (key == OPT_NAME)
        *who = arg;
    return 0;
}

static int exec(int argc, char **argv)
{
    struct cmd_front f;
    const char *who = "world";
    int rc;

    rc = cmd_front_parse(&f, &cmd_hello, argc, argv, option, &who);
    if (rc == CMD_GO) {
        printf("hello, %s\n", who);
        rc = cmd_finish_stdout("hello") == 0 ? EXIT_HEALTHY : EXIT_UNKNOWN;
    }
    cmd_front_free(&f);
    return rc;
}

const struct cmd cmd_hello = {
    .name = "hello",
    .synopsis = "[--name WHO]",
    .summary = "say hello (the example command of docs/architecture.md)",
    .about = "Say hello.\n",
    .options = options,
    .epilogue = "Exit status: 0 said hello, 3 could not write it, 64 usage error.\n",
    .exec = exec,
};
