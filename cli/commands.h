/* cli/commands.h - the subcommands of the tether command; main.c dispatches to them.
 * Each takes the arguments after its name (argv[0] is the subcommand name) and returns the exit
 * status. Each folder that provides a subcommand declares it here. */
#ifndef TETHER_COMMANDS_H
#define TETHER_COMMANDS_H

int tether__cmd_launch(int argc, char **argv);   /* launcher/ */
int tether__cmd_check(int argc, char **argv);    /* launcher/ (issue: remote launch and check) */
int tether__cmd_config(int argc, char **argv);   /* config_tool/ */
int tether__cmd_hostfile(int argc, char **argv); /* config_tool/: `tether hostfile check F` */
int tether__cmd_bench(int argc, char **argv);    /* bench/ */

#endif
