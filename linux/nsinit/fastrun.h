/* moat run through the user's moat serve (fastrun.c). */
#ifndef MOAT_FASTRUN_H
#define MOAT_FASTRUN_H

/* The Upgrade token of POST /v1/cli/run (shell/api/client.CLIRunUpgrade). */
#define MOAT_CLI_UPGRADE "moat-cli-run"

#define MOAT_SERVER_NOTE 768

/* Why MOAT_SERVER was set but not used ("" otherwise); moat_server_quiet
 * when the reason is not worth a note (a terminal). */
extern char moat_server_note[MOAT_SERVER_NOTE];
extern int moat_server_quiet;

/* moat_fastrun returns when the invocation stays in this process. */
void moat_fastrun(int argc, char **argv, char **envp);

#endif
