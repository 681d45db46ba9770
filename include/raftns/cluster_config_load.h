/* Reading a cluster file (the I/O beside the pure parser of cluster_config.h).
 * Server side: not part of any pure layer. */
#ifndef RAFTNS_CLUSTER_CONFIG_LOAD_H
#define RAFTNS_CLUSTER_CONFIG_LOAD_H

#include <stddef.h>

#include "raftns/cluster_config.h"

/* Reads and parses the file at path (borrowed; at most NS_CLUSTER_FILE_MAX
 * bytes) into c (initialised, empty). As ns_cluster_config_parse, plus NS_EIO
 * (cannot open or read: err says why). */
int ns_cluster_config_load(const char *path, struct ns_cluster_config *c,
                           char *err, size_t errlen);

#endif
