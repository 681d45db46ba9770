/* NamesrvConfig settings (docs/protocol.md §6) as replicated state, Java
 * properties text in and out (318/319), and the blacklist of protected keys
 * (§7). raftns never writes settings to a file: nothing on the wire names a
 * path. Pure. */
#ifndef RAFTNS_CONFIG_H
#define RAFTNS_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raftns/buf.h"

struct ns_prop {
    char *key;   /* owned */
    char *value; /* owned */
};

struct ns_props {
    struct ns_prop *items; /* owned */
    size_t n;
};

void ns_props_init(struct ns_props *p);
void ns_props_close(struct ns_props *p);
/* Adds or replaces key (copies). 0 or NS_ENOMEM. */
int ns_props_set(struct ns_props *p, const char *key, const char *value);
/* Parses java.util.Properties text (key=value, key:value, key value, #/!
 * comments, backslash escapes, \uXXXX, line continuations; bytes read as
 * ISO-8859-1 and stored as UTF-8). Returns 0, NS_EPROTO ("string2Properties
 * error") or NS_ENOMEM. */
int ns_props_parse(const char *text, size_t len, struct ns_props *out);

/* Typed view of the settings the server reads per request or per timer;
 * integers are within their validated range. */
struct ns_settings {
    bool order_message_enable;
    bool return_order_topic_config_to_broker;
    bool support_acting_master;
    bool enable_all_topic_list;
    bool enable_topic_list;
    bool need_wait_for_service;
    int64_t wait_seconds_for_service;
    bool delete_topic_with_broker_registration;
    int64_t scan_not_active_broker_interval_ms;
    int64_t server_channel_max_idle_time_seconds;
};

struct ns_config;

/* All known NamesrvConfig and NettyServerConfig keys with Java's defaults. NULL
 * on OOM. */
struct ns_config *ns_config_create(void);
void ns_config_destroy(struct ns_config *cfg);
const struct ns_settings *ns_config_settings(const struct ns_config *cfg);
/* Borrowed current value of a key, or NULL when unknown. */
const char *ns_config_get(const struct ns_config *cfg, const char *key);
/* True when any key of props is protected (configBlackList entries plus
 * rocketmqHome): 318 answers 16 and changes nothing. */
bool ns_config_is_protected_update(const struct ns_config *cfg,
                                   const struct ns_props *props);
/* Applies an update: known keys whose value parses for the key's type are set;
 * unknown keys and bad values are ignored (it is total: the FSM applies
 * commands logged before validation existed with it). Values outside a key's
 * range are stored as given but ns_config_settings clamps them. Protected keys
 * must be refused before (they are skipped here too), client limit keys are
 * skipped. Start-up files may add unknown keys with allow_new_keys. 0 or
 * NS_ENOMEM. */
int ns_config_update(struct ns_config *cfg, const struct ns_props *props,
                     bool allow_new_keys);
/* Where an update comes from: start-up settings (network, thread pools, paths,
 * this node's client limits) may only be given at start. */
enum ns_config_origin {
    NS_CONFIG_AT_START,   /* --set and the cluster file's namesrv section */
    NS_CONFIG_AT_RUNTIME, /* 318 UPDATE_NAMESRV_CONFIG */
};

/* Checks every key of props (borrowed) against the table of known settings:
 * the key is known, 318 may change it (origin AT_RUNTIME), and the value has
 * the key's type and range (booleans true|false in any case, decimal integers
 * within the key's bounds, strings of bounded length and characters). Returns
 * 0, or NS_EINVAL with errmsg (may be NULL) naming the first offending key and
 * what it allows, e.g. "serverChannelMaxIdleTimeSeconds=1: must be an integer
 * in [30, 86400]". Protected keys (ns_config_is_protected_update) are not
 * special here: 318 refuses them with 16 before calling this. */
int ns_config_validate(const struct ns_props *props,
                       enum ns_config_origin origin, char *errmsg,
                       size_t errmsg_size);
/* True when 318 may change key. */
bool ns_config_is_runtime_key(const char *key);

/* This node's client-port limits: start-up settings that are never
 * replicated (not in the state, the snapshot or the 319 text). */
struct ns_client_limits {
    int64_t max_connections;        /* clientMaxConnections */
    int64_t max_connections_per_ip; /* clientMaxConnectionsPerIp */
    int64_t buffer_budget_bytes;    /* clientBufferBudgetBytes */
};

/* The defaults: 10000 connections, 1000 per source address, 256 MiB. */
void ns_config_client_limits_init(struct ns_client_limits *l);
/* Takes the limit keys of props (borrowed; validated before, values outside
 * their range are clamped); other keys are ignored. */
void ns_config_client_limits_update(struct ns_client_limits *l,
                                    const struct ns_props *props);

/* 319 body: every setting as key=value\n sorted by key. */
int ns_config_encode_properties(const struct ns_config *cfg,
                                struct ns_buf *out);
/* The same with the values of local's keys (borrowed; keys the table does not
 * hold are ignored) in place of the replicated ones: what differs per node,
 * such as the port this node listens on, is shown as this node has it. */
int ns_config_encode_properties_local(const struct ns_config *cfg,
                                      const struct ns_props *local,
                                      struct ns_buf *out);
/* Bumped by every update that changed a value. */
uint64_t ns_config_generation(const struct ns_config *cfg);

/* WARNING: part of the versioned snapshot format. */
int ns_config_encode_state(const struct ns_config *cfg, struct ns_buf *out);
int ns_config_decode_state(struct ns_config *cfg, struct ns_rd *in);

#endif
