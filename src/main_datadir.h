/* Explains at start a data dir whose raft configuration disagrees with the
 * command line: the one-node default started on a 3-node cluster's data dir,
 * a node missing from its dir's configuration, a raft address that moved.
 * It only logs; raft decides what happens. */
#ifndef RAFTNS_MAIN_DATADIR_H
#define RAFTNS_MAIN_DATADIR_H

#include "raftns/node.h"
#include "main_options.h"

/* After ns_node_start (the configuration is loaded). o, dir and node
 * borrowed. */
void ns_main_explain_data_dir(const struct options *o, const char *dir,
                              const struct ns_node *node);

#endif
