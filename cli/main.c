/* cli/main.c - the tether command's entry point: finds the subcommand in a table and runs it. */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "tether.h"
#include "tools/argv0.h"

typedef struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} subcommand;

/* Each folder that provides a subcommand adds its line here (declared in commands.h). */
static const subcommand subcommands[] = {
    {"launch", tether__cmd_launch, "start a job's ranks, wired together"},
    {"check", tether__cmd_check, "what this machine or every host has; how fast the links are"},
    {"config", tether__cmd_config, "find the Thunderbolt cables, set them up, write the hostfile"},
    {"hostfile", tether__cmd_hostfile, "check a hostfile: `tether hostfile check FILE`"},
    {"bench", tether__cmd_bench,
     "time the collectives (run under tether launch), nccl-tests style"},
};
#define NSUBCOMMANDS (sizeof subcommands / sizeof subcommands[0])

static void usage(FILE *f)
{
    fprintf(f, "usage: tether COMMAND [ARGS...]\n\ncommands:\n");
    for (size_t i = 0; i < NSUBCOMMANDS; i++)
        fprintf(f, "  %-10s %s\n", subcommands[i].name, subcommands[i].summary);
    fprintf(f, "\n'tether COMMAND --help' describes a command; 'tether --version' prints the "
               "version.\n");
}

int main(int argc, char **argv)
{
    if (argc > 0 && argv[0] && *argv[0])
        tether__argv0 = argv[0];
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("tether %s\n", TETHER_VERSION_STRING);
        return 0;
    }
    for (size_t i = 0; i < NSUBCOMMANDS; i++)
        if (strcmp(argv[1], subcommands[i].name) == 0)
            return subcommands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "tether: unknown command '%s' (run 'tether --help' for the list)\n", argv[1]);
    return 2;
}
