/* raftns's command line, cluster file and start-up settings: argv, the cluster
 * file, the cluster secret, the node-local ACL, TLS and limit settings. It
 * reads files and prints errors; it starts nothing (src/main.c does). */
#ifndef RAFTNS_MAIN_OPTIONS_H
#define RAFTNS_MAIN_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>

#include "raftns/cluster_config.h"
#include "raftns/config.h"
#include "raftns/server.h"

struct options {
    const char *config_path;
    unsigned long long id;
    bool id_given;
    bool check_config;    /* --check-config: validate config_path, exit */
    const char *log_file; /* --log-file, else stderr */
    bool log_json;        /* --log-format json */
    const char *data_dir;
    const char *client_addr;
    const char *raft_addr;
    const char *http_addr;
    unsigned election_ms;
    unsigned checkpoint_entries, checkpoint_ms; /* 0 = defaults (metrics.h) */
    unsigned heartbeat_ms;
    unsigned snapshot_threshold;
    struct ns_props sets;
    struct ns_cluster_config cluster; /* from --config */
    bool insecure_dev;                /* weak or empty secrets allowed */
    char *secret;                     /* owned: the one this node uses */
    /* node-local ACL settings, taken out of the namesrv keys and --set */
    const char *acl_text[3]; /* borrowed: aclEnable, aclAnonymousRead,
                                aclBrokerNetworks */
    struct ns_acl_settings acl;
    struct ns_acl_net *acl_nets;    /* owned */
    struct ns_props settings;       /* file's namesrv keys, then --set */
    struct ns_server_tls tls;       /* borrows from settings */
    struct ns_client_limits limits; /* from the namesrv keys, then --set */
    struct ns_waits waits;          /* defaults, then --wait */
};

/* Fills o (zeroed by the caller, id = 1) from argv, the cluster file and the
 * settings. Returns 0 (o owned: ns_options_close), 1 (help, version or a
 * passed --check-config printed: exit 0) or 2 (an error printed: exit 2); on 1
 * and 2 o needs no close. Opens the --log-file first (main_log.h). */
int ns_options_load(struct options *o, int argc, char **argv);
void ns_options_close(struct options *o);
/* The data dir: --data-dir, else ./raftns-data/<id>. */
void ns_options_data_dir(const struct options *o, char *dir, size_t len);
/* Applies the replicated settings of all (borrowed) to cfg: everything but
 * the node-local TLS and ACL keys. 0 or NS_ENOMEM. */
int ns_options_apply_settings(struct ns_config *cfg,
                              const struct ns_props *all);

#endif
