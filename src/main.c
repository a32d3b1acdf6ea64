/* gpudoctor: why is this GPU server busy or slow, and what to do about it. */
#include "cmd/cmd.h"
#include "collect/nvml-session.h"
#include "util/fileio.h"
#include "util/i18n.h"
#include "util/xalloc.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

static const struct cmd *const cmd_table[] = {
    &cmd_check, &cmd_explain, &cmd_snapshot,    &cmd_procs,        &cmd_reap,
    &cmd_watch, &cmd_serve,   &cmd_slurm_check, &cmd_slurm_prolog, &cmd_slurm_epilog,
    &cmd_ack,   &cmd_profile, &cmd_fleet,       &cmd_bench,
};

static void usage(FILE *out)
{
    fputs(_("Usage: gpudoctor [COMMAND] [options]\n"
            "\n"
            "Tells why a GPU server is busy or slow, with the evidence and the command that\n"
            "fixes it. Without a command, runs 'check'.\n"
            "\n"
            "Commands:\n"),
          out);
    for (size_t i = 0; i < ARRAY_SIZE(cmd_table); i++)
        fprintf(out, "  %-13s %s\n", cmd_table[i]->name, _(cmd_table[i]->summary));
    fputs(_("\n"
            "Run 'gpudoctor help COMMAND' (or 'gpudoctor COMMAND --help') for a command's\n"
            "options, 'gpudoctor --version' for the version.\n"
            "\n"
            "Exit status: 0 healthy, 1 warning, 2 critical, 3 could not check, 64 usage\n"
            "error.\n"
            "\n"
            "Environment:\n"
            "  GPUDOCTOR_NVML_LIB  NVML library to load instead of libnvidia-ml.so.1\n"
            "  GPUDOCTOR_CONFIG    configuration file instead of /etc/gpudoctor.conf\n"
            "  GPUDOCTOR_STATE_DIR\n"
            "                      state directory ('off': none; docs/state.md)\n"
            "  NO_COLOR            do not colour the output (unless --color=always)\n"
            "  COLUMNS             width of the text off a terminal (default 80)\n"
            "  LC_ALL, LC_CTYPE, LANG\n"
            "                      ASCII output unless their character set is UTF-8\n"
            "  LANGUAGE, LC_MESSAGES\n"
            "                      the language of the text (zh_CN: Chinese; default English)\n"
            "  VIRTUAL_ENV, CONDA_PREFIX\n"
            "                      the Python environment whose PyTorch or TensorFlow build a\n"
            "                      live run reads too (docs/stack.md)\n"),
          out);
}

static const struct cmd *find_cmd(const char *name)
{
    for (size_t i = 0; i < ARRAY_SIZE(cmd_table); i++) {
        if (strcmp(cmd_table[i]->name, name) == 0)
            return cmd_table[i];
    }
    return NULL;
}

static int unknown(const char *name)
{
    fprintf(stderr, _("gpudoctor: unknown command '%s'\n"), name);
    usage(stderr);
    return EXIT_USAGE;
}

/* gpudoctor help [COMMAND] */
static int help(int argc, char **argv)
{
    const struct cmd *c;

    if (argc > 3) {
        fputs(_("gpudoctor help: give one command at most\n"), stderr);
        return EXIT_USAGE;
    }
    if (argc < 3) {
        usage(stdout);
    } else if ((c = find_cmd(argv[2])) != NULL) {
        cmd_usage(c, stdout);
    } else {
        return unknown(argv[2]);
    }
    return cmd_finish_stdout("help") == 0 ? EXIT_HEALTHY : EXIT_UNKNOWN;
}

int main(int argc, char **argv)
{
    const struct cmd *c;
    const char *name = "check";
    char prog[64];

    /* The NVML helper is this program started again by nvml_session_open. */
    if (argc >= 2 && strcmp(argv[1], NVML_SESSION_HELPER_ARG) == 0)
        return nvml_session_helper_main(argc, argv);
    nvml_session_use_own_program();
    /* A closed pipe is a write error the commands see (EPIPE), not a silent death. */
    signal(SIGPIPE, SIG_IGN);
    /* A closed stdout must stay closed, not become the first file or pipe the command opens. */
    file_reserve_std_fds();
    /* The character set and the language of the texts; numbers keep the C locale's '.'. */
    i18n_init();

    if (argc >= 2 && argv[1][0] != '-') {
        if (strcmp(argv[1], "help") == 0)
            return help(argc, argv);
        name = argv[1];
        argc--;
        argv++;
    } else if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return cmd_finish_stdout("help") == 0 ? EXIT_HEALTHY : EXIT_UNKNOWN;
    } else if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
        printf("gpudoctor %s\n", GPUDOCTOR_VERSION);
        return cmd_finish_stdout("version") == 0 ? EXIT_HEALTHY : EXIT_UNKNOWN;
    }
    c = find_cmd(name);
    if (c == NULL)
        return unknown(name);
    /* getopt names argv[0] in its messages: "gpudoctor procs: unrecognized option" */
    snprintf(prog, sizeof(prog), "gpudoctor %s", c->name);
    argv[0] = prog;
    return c->exec(argc, argv);
}
