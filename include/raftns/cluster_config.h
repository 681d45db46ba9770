/* Cluster files (cluster-configs/NAME.json, cJSON): the members, timeouts and
 * NamesrvConfig settings of one raftns cluster. Parsing only (pure): it
 * validates a buffer and starts nothing; reading the file is
 * cluster_config_load.h. Format in cluster-configs/README.md. */
#ifndef RAFTNS_CLUSTER_CONFIG_H
#define RAFTNS_CLUSTER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raftns/acl.h"
#include "raftns/config.h"

#define NS_CLUSTER_MAX_NODES 64
#define NS_CLUSTER_FILE_MAX (1u << 20) /* bytes */

struct ns_cluster_node {
    uint64_t id;       /* >= 1, unique */
    char *raft_addr;   /* owned; IPv4 a.b.c.d:port (raft 0.15, P8) */
    char *client_addr; /* owned; IPv4 a.b.c.d:port */
    char *http_addr;   /* owned; IPv4 a.b.c.d:port, NULL when absent */
    bool bootstrap;    /* part of the initial voter set */
};

/* The command format versions "commandVersion" may name: those a node with a
 * request id writes (raftns/command.h, which checks that they match). */
#define NS_CLUSTER_COMMAND_VERSION_MIN 2
#define NS_CLUSTER_COMMAND_VERSION_MAX 3

struct ns_cluster_config {
    char *secret;      /* owned; "" when absent */
    char *secret_file; /* owned; NULL when absent; relative to the file */
    unsigned election_timeout_ms; /* 0 = default */
    unsigned heartbeat_ms;        /* 0 = default */
    unsigned snapshot_threshold;  /* 0 = default */
    unsigned snapshot_bytes;      /* "snapshotBytes", 0 = default */
    unsigned fork_state_bytes;    /* "forkStateBytes", 0 = default */
    /* "commandVersion": the newest command format this node writes
     * (raftns/command.h), 0 = the newest it knows */
    unsigned command_version;
    struct ns_cluster_node *nodes; /* owned, in file order */
    size_t n_nodes;
    struct ns_props namesrv; /* NamesrvConfig keys, values as text */
    /* "acl": {"accounts": [...]}: seeded into the replicated table once */
    struct ns_acl_account *acl_accounts; /* owned, validated, unique keys */
    size_t n_acl_accounts;
};

void ns_cluster_config_init(struct ns_cluster_config *c);
void ns_cluster_config_close(struct ns_cluster_config *c);
/* Parses len bytes of JSON into c (initialised, empty). Returns 0, NS_EPROTO
 * (bad JSON or a rule broken: err says which, NUL-terminated in errlen bytes)
 * or NS_ENOMEM. On error c is left empty (close it anyway). */
int ns_cluster_config_parse(const char *text, size_t len,
                            struct ns_cluster_config *c, char *err,
                            size_t errlen);
/* Borrowed node with that id, or NULL. */
const struct ns_cluster_node *
ns_cluster_config_find(const struct ns_cluster_config *c, uint64_t id);
/* True when text is an IPv4 dotted quad with a port 1..65535. */
bool ns_cluster_config_addr_is_ipv4(const char *text);

#endif
