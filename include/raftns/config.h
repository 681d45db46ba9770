/* NamesrvConfig settings (PROTOCOL.md §6) as replicated state, Java properties
 * text in and out (318/319), and the blacklist of protected keys (§7). raftns
 * never writes settings to a file: nothing on the wire names a path. Pure. */
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

/* Typed view of the settings the server reads per request or per timer. */
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
 * unknown keys and bad values are ignored. Protected keys must be refused
 * before (they are skipped here too). Start-up files may add unknown keys with
 * allow_new_keys. 0 or NS_ENOMEM. */
int ns_config_update(struct ns_config *cfg, const struct ns_props *props,
                     bool allow_new_keys);
/* 319 body: every setting as key=value\n sorted by key. */
int ns_config_encode_properties(const struct ns_config *cfg,
                                struct ns_buf *out);
/* Bumped by every update that changed a value. */
uint64_t ns_config_generation(const struct ns_config *cfg);

/* WARNING: part of the versioned snapshot format. */
int ns_config_encode_state(const struct ns_config *cfg, struct ns_buf *out);
int ns_config_decode_state(struct ns_config *cfg, struct ns_rd *in);

#endif
