/* main.c: `continuo <command>`: dispatch to src/cli/, nothing else. */
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "cli/commands.h"

static const command commands[] = {
    { .name = "demo", .run = cmd_demo,
      .summary = "encode and decode the bundled motif, or continue it with the default model" },
    { .name = "encode", .run = cmd_encode,
      .summary = "MIDI files to performance-event token files" },
    { .name = "decode", .run = cmd_decode,
      .summary = "a token file back to a MIDI file" },
    { .name = "inspect", .run = cmd_inspect,
      .summary = "tracks, duration, notes, pedal, tempo and problems of MIDI files" },
    { .name = "continue", .run = cmd_continue,
      .summary = "continue a MIDI primer with the model" },
    { .name = "eval", .run = cmd_eval,
      .summary = "negative log-likelihood of MIDI files under the model" },
    { .name = "bench", .run = cmd_bench,
      .summary = "speed and memory of the engine" },
    { .name = "serve", .run = cmd_serve,
      .summary = "the live service: MIDI in, continuation out" },
    { .name = "ctl", .run = cmd_ctl,
      .summary = "talk to a running service" },
    { .name = "doctor", .run = cmd_doctor,
      .summary = "check what the service needs here, with a fix for each problem" },
    { .name = "journal", .run = cmd_journal,
      .summary = "the sessions the service journaled: list them, export one" },
    { .name = "adapt", .run = cmd_adapt,
      .summary = "fine-tune the model on the player's sessions; keep it if it fits better" },
    { .name = "view", .run = cmd_view,
      .summary = "a local page that shows the service live: notes, attention, knobs, takes" },
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
