/* `raftns restore`: builds a new cluster's node from a backup file. */
#ifndef RAFTNS_MAIN_RESTORE_H
#define RAFTNS_MAIN_RESTORE_H

/* argv[0] is "restore". Returns the process's exit status: 0 restored, 1 the
 * data dir could not be written, 2 bad arguments, cluster file or backup file
 * (every error printed, naming the file and what is wrong). */
int ns_restore_main(int argc, char **argv);

#endif
