/* KV configuration (namespace -> key -> value), replacing Java's kvConfig.json.
 * Pure. */
#ifndef RAFTNS_KV_H
#define RAFTNS_KV_H

#include <stdbool.h>
#include <stdint.h>

#include "raftns/buf.h"

#define NS_KV_ORDER_TOPIC_CONFIG "ORDER_TOPIC_CONFIG"

struct ns_kv;

struct ns_kv *ns_kv_create(void);
void ns_kv_destroy(struct ns_kv *kv);
/* value may be NULL (Java stores null: GET then answers 22, lists omit it). 0
 * or NS_ENOMEM. */
int ns_kv_put(struct ns_kv *kv, const char *ns, const char *key,
              const char *value);
/* Removes the key; the namespace stays (possibly empty). 0 or NS_ENOMEM. */
int ns_kv_delete(struct ns_kv *kv, const char *ns, const char *key);
/* Borrowed value, or NULL when the key is absent or its value is null. */
const char *ns_kv_find(const struct ns_kv *kv, const char *ns, const char *key);
bool ns_kv_has_namespace(const struct ns_kv *kv, const char *ns);
/* {"table":{...}} of one namespace (legacy JSON, sorted keys, null values
 * omitted). */
int ns_kv_encode_namespace(const struct ns_kv *kv, const char *ns,
                           struct ns_buf *out);
/* Bumped by every put/delete. */
uint64_t ns_kv_generation(const struct ns_kv *kv);
size_t ns_kv_n_entries(const struct ns_kv *kv);
/* An estimate of the heap bytes of the entries' keys and values. */
size_t ns_kv_state_bytes(const struct ns_kv *kv);

/* Calls cb for every (ns, key, value) in sorted order (value may be NULL). */
typedef void (*ns_kv_entry_cb)(void *arg, const char *ns, const char *key,
                               const char *value);
void ns_kv_foreach(const struct ns_kv *kv, ns_kv_entry_cb cb, void *arg);

/* WARNING: part of the versioned snapshot format. */
int ns_kv_encode_state(const struct ns_kv *kv, struct ns_buf *out);
int ns_kv_decode_state(struct ns_kv *kv, struct ns_rd *in);

#endif
