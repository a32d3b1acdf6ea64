/* gpudoctor: why is this GPU server busy or slow, and what to do about it. */
#include "cmd/cmd.h"
#include "util/fileio.h"
#include "util/xalloc.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

static const struct cmd *const cmd_table[] = {
    &cmd_check, &cmd_explain, &cmd_snapshot, &cmd_procs,
    &cmd_reap,  &cmd_watch,   &cmd_serve,    &cmd_slurm_check,
};

static void usage(FILE *out)
{
    fputs("Usage: gpudoctor [COMMAND] [options]\n"
          "\n"
          "Tells why a GPU server is busy or slow, with the evidence and the command that\n"
          "fixes it. Without a command, runs 'check'.\n"
          "\n"
          "Commands:\n",
          out);
    for (size_t i = 0; i < ARRAY_SIZE(cmd_table); i++)
        fprintf(out, "  %-12s %s\n", cmd_table[i]->name, cmd_table[i]->summary);
    fputs("\n"
          "Run 'gpudoctor COMMAND --help' for a command's options.\n"
          "\n"
          "Exit status: 0 healthy, 1 warning, 2 critical, 3 could not check, 64 usage\n"
          "error.\n"
          "\n"
          "Environment:\n"
          "  GPUDOCTOR_NVML_LIB  NVML library to load instead of libnvidia-ml.so.1\n"
          "  NO_COLOR            do not colour the output\n",
          out);
}

int main(int argc, char **argv)
{
    const char *name = "check";

    /* A closed pipe is reported as a write error by the command, not a silent death. */
    signal(SIGPIPE, SIG_IGN);
    /* A closed stdout must stay closed, not become the first file or pipe the command opens. */
    file_reserve_std_fds();

    if (argc >= 2 && argv[1][0] != '-') {
        name = argv[1];
        argc--;
        argv++;
    } else if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return EXIT_HEALTHY;
    } else if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
        printf("gpudoctor %s\n", GPUDOCTOR_VERSION);
        return EXIT_HEALTHY;
    }
    if (strcmp(name, "help") == 0) {
        usage(stdout);
        return EXIT_HEALTHY;
    }
    for (size_t i = 0; i < ARRAY_SIZE(cmd_table); i++) {
        if (strcmp(cmd_table[i]->name, name) == 0) {
            char prog[64];

            /* getopt names argv[0] in its messages: "gpudoctor procs: unrecognized option" */
            snprintf(prog, sizeof(prog), "gpudoctor %s", cmd_table[i]->name);
            argv[0] = prog;
            return cmd_table[i]->exec(argc, argv);
        }
    }
    fprintf(stderr, "gpudoctor: unknown command '%s'\n", name);
    usage(stderr);
    return EXIT_USAGE;
}
