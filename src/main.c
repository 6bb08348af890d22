/* main.c: `continuo <command>`: dispatch to src/cli/, nothing else. */
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "cli/commands.h"

static const command commands[] = {
    { "demo",     "encode and decode the bundled motif, or continue it with the default model", cmd_demo },
    { "encode",   "MIDI files to performance-event token files",            cmd_encode },
    { "decode",   "a token file back to a MIDI file",                       cmd_decode },
    { "inspect",  "tracks, duration, notes, pedal, tempo and problems of MIDI files", cmd_inspect },
    { "continue", "continue a MIDI primer with the model",                  cmd_continue },
    { "eval",     "negative log-likelihood of MIDI files under the model",  cmd_eval },
    { "bench",    "speed and memory of the engine",                         cmd_bench },
    { "serve",    "the live service: MIDI in, continuation out",            cmd_serve },
    { "ctl",      "talk to a running service",                              cmd_ctl },
    { "doctor",   "check what the service needs here, with a fix for each problem", cmd_doctor },
    { "journal",  "the sessions the service journaled: list them, export one", cmd_journal },
};

static void usage(FILE *fp)
{
    fprintf(fp, "usage: continuo <command> [options]   (continuo <command> --help)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(fp, "  %-9s %s\n", commands[i].name, commands[i].summary);
    fprintf(fp, "  %-9s %s\n  %-9s %s\n", "help", "this list", "version", "print the version");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (strcmp(name, "help") == 0 || cli_is_help(name)) {
        usage(stdout);
        return 0;
    }
    if (strcmp(name, "version") == 0 || strcmp(name, "--version") == 0) {
        printf("continuo %s\n", CONTINUO_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(name, commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "continuo: unknown command '%s'\n", name);
    usage(stderr);
    return 2;
}
