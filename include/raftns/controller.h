/* The RocketMQ 5 controller's replicated table (docs/controller.md): per
 * broker group, keyed by broker name, the admitted broker ids and addresses,
 * the master and its epoch, the SyncStateSet and its epoch, and the next id to
 * hand out; the five events that change it, applied by one total function;
 * the node-local heartbeat table, the election policy and the leader's
 * decisions over both. Pure: time comes in as now_ms, nothing here does I/O,
 * and nothing here knows the wire (src/gateway/handle_controller.c does). */
#ifndef RAFTNS_CONTROLLER_H
#define RAFTNS_CONTROLLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raftns/buf.h"
#include "raftns/codes.h"

#define NS_CTL_FIRST_ID 1       /* FIRST_BROKER_CONTROLLER_ID */
#define NS_CTL_MAX_GROUPS 65536 /* bounds of a decoded table */
#define NS_CTL_MAX_MEMBERS 1024 /* ids per group (and per event) */
#define NS_CTL_MAX_STR 4096     /* any name, address or check code */
#define NS_CTL_DEFAULT_PRIORITY 2147483647
#define NS_CTL_MAX_BEATS 4096 /* heartbeat entries a node keeps */

struct ns_ctl_member {
    int64_t id;
    char *addr;       /* owned */
    char *check_code; /* owned: registerCheckCode of the apply */
};

struct ns_ctl_group {
    char *broker_name; /* owned: the key */
    char *cluster;     /* owned: from the ApplyBrokerId that created it */
    struct ns_ctl_member *members; /* owned, sorted by id */
    size_t n_members;
    int64_t next_id; /* nextAssignBrokerId */
    bool has_master;
    int64_t master_id;
    int32_t master_epoch;
    int64_t *sync; /* owned, sorted: the SyncStateSet */
    size_t n_sync;
    int32_t sync_epoch;
};

struct ns_ctl_table {
    struct ns_ctl_group *groups; /* owned, sorted by broker_name */
    size_t n;
};

void ns_ctl_table_init(struct ns_ctl_table *t);
void ns_ctl_table_close(struct ns_ctl_table *t);
/* Borrowed group or NULL. */
const struct ns_ctl_group *ns_ctl_find(const struct ns_ctl_table *t,
                                       const char *broker_name);
/* Borrowed member of g or NULL. */
const struct ns_ctl_member *ns_ctl_find_member(const struct ns_ctl_group *g,
                                               int64_t id);
bool ns_ctl_in_sync(const struct ns_ctl_group *g, int64_t id);

/* --- events (the replicated commands NS_CMD_CTL_*) --- */

/* The numbers are Java's EventType ids (4, the read event, is never
 * written). */
enum ns_ctl_event_type {
    NS_CTL_EV_ALTER_SYNC_STATE_SET = 1,
    NS_CTL_EV_APPLY_BROKER_ID = 2,
    NS_CTL_EV_ELECT_MASTER = 3,
    NS_CTL_EV_CLEAN_BROKER_DATA = 5,
    NS_CTL_EV_UPDATE_BROKER_ADDRESS = 6,
};

/* One event; which fields count depends on the type:
 *   ALTER_SYNC_STATE_SET  broker_name, ids (the new set)
 *   APPLY_BROKER_ID       cluster, broker_name, broker_addr, check_code, id
 *   ELECT_MASTER          broker_name, elected, id (when elected)
 *   CLEAN_BROKER_DATA     broker_name, ids (empty: the whole group)
 *   UPDATE_BROKER_ADDRESS cluster, broker_name, broker_addr, id
 * Strings are owned (NULL where unused), ids owned and sorted. */
struct ns_ctl_event {
    char *cluster, *broker_name, *broker_addr, *check_code;
    int64_t id;
    bool elected;
    int64_t *ids;
    size_t n_ids;
};

void ns_ctl_event_close(struct ns_ctl_event *e);
/* WARNING: part of the versioned command format (raft/command.c). Payload per
 * type: ALTER str broker_name, u32 n {u64 id}; APPLY str cluster, str
 * broker_name, str broker_addr, str check_code, u64 id; ELECT str broker_name,
 * u8 elected, u64 id; CLEAN str broker_name, u32 n {u64 id}; UPDATE str
 * cluster, str broker_name, str broker_addr, u64 id. Ids strictly increasing.
 */
void ns_ctl_event_encode(enum ns_ctl_event_type type,
                         const struct ns_ctl_event *e, struct ns_buf *out);
/* Fills e (zeroed first). 0, NS_EPROTO or NS_ENOMEM; on error e needs no
 * close. */
int ns_ctl_event_decode(enum ns_ctl_event_type type, struct ns_rd *in,
                        struct ns_ctl_event *e);

/* Applies one event as docs/controller.md §4 says. Total: an event about an
 * unknown group or id changes nothing. 0 or NS_ENOMEM (t may be
 * half-changed: the node stops). */
int ns_ctl_apply(struct ns_ctl_table *t, enum ns_ctl_event_type type,
                 const struct ns_ctl_event *e);

/* WARNING: part of the versioned snapshot format (raft/snapshot.c): u32 n,
 * per group (sorted by name) str broker_name, str cluster, u64 next_id, u8
 * has_master, u64 master_id, u32 master_epoch, u32 sync_epoch, u32 n_members
 * {u64 id, str addr, str check_code}, u32 n_sync {u64 id}. */
void ns_ctl_encode_state(const struct ns_ctl_table *t, struct ns_buf *out);
/* Fills an empty t. 0, NS_EPROTO or NS_ENOMEM (t empty again). */
int ns_ctl_decode_state(struct ns_ctl_table *t, struct ns_rd *in);

/* --- heartbeats (node-local, never replicated; docs/controller.md §6) --- */

struct ns_ctl_beat {
    char *cluster, *broker_name, *addr; /* owned */
    int64_t id;
    int64_t last_ms, timeout_ms;
    int32_t epoch;
    int64_t max_offset, confirm_offset;
    int32_t priority;
    uint64_t conn_id; /* the connection it came over (0: none) */
};

struct ns_ctl_live {
    struct ns_ctl_beat *items; /* owned, unordered */
    size_t n;
};

/* A heartbeat's fields as received (borrowed strings). Absent values: epoch
 * and offsets -1, timeout 10000, priority NS_CTL_DEFAULT_PRIORITY. */
struct ns_ctl_beat_in {
    const char *cluster, *broker_name, *addr;
    int64_t id;
    int64_t timeout_ms;
    int32_t epoch;
    int64_t max_offset, confirm_offset;
    int32_t priority;
    uint64_t conn_id;
};

void ns_ctl_live_close(struct ns_ctl_live *l);
/* Records a heartbeat at now_ms. Existing entry: time, timeout, priority and
 * connection always refreshed; epoch/offsets only when the epoch is higher,
 * or equal with a higher maxOffset. 0, NS_ETOOBIG (a new entry beyond
 * NS_CTL_MAX_BEATS: nothing recorded) or NS_ENOMEM. */
int ns_ctl_live_beat(struct ns_ctl_live *l, const struct ns_ctl_beat_in *in,
                     int64_t now_ms);
/* Borrowed entry or NULL. */
const struct ns_ctl_beat *ns_ctl_live_find(const struct ns_ctl_live *l,
                                           const char *cluster,
                                           const char *broker_name, int64_t id);
/* An entry exists and last + timeout >= now. */
bool ns_ctl_live_alive(const struct ns_ctl_live *l, const char *cluster,
                       const char *broker_name, int64_t id, int64_t now_ms);
/* Removes entries with now - last > timeout (or, conn_id != 0, those of that
 * connection) and copies the removed ones into *gone (owned by the caller:
 * ns_ctl_live_close). 0 or NS_ENOMEM (nothing removed). */
int ns_ctl_live_expire(struct ns_ctl_live *l, int64_t now_ms, uint64_t conn_id,
                       struct ns_ctl_live *gone);

/* --- election policy (docs/controller.md §5) --- */

struct ns_ctl_candidate {
    int64_t id;
    bool alive;
    int32_t epoch;
    int64_t max_offset;
    int32_t priority;
};

/* Chooses a master among cands (borrowed; the group's members with their
 * liveness): tryElect over the SyncStateSet sync, then, when unclean, over all
 * candidates. Inside one tryElect: only alive candidates count; the current
 * master (has_master) is kept when alive and no preferred id or the preferred
 * is it; a preferred id (has_preferred) is taken if alive, else nothing; else
 * the highest epoch, then highest maxOffset, then lowest priority, then lowest
 * id. Returns true with *out, or false (nobody electable). */
bool ns_ctl_policy_elect(const struct ns_ctl_candidate *cands, size_t n,
                         const int64_t *sync, size_t n_sync, bool unclean,
                         bool has_master, int64_t master, bool has_preferred,
                         int64_t preferred, int64_t *out);

/* --- the leader's decisions (docs/controller.md §5) --- */

/* Decisions answer with the NS_CODE_CONTROLLER_* codes of raftns/codes.h. */

/* What the reply carries besides code and remark; the has_ flags say which
 * ext fields are present. */
struct ns_ctl_reply {
    bool has_master_id;
    int64_t master_id;
    char *master_addr; /* owned, NULL: absent */
    bool has_master_epoch;
    int32_t master_epoch;
    bool has_sync_epoch;
    int32_t sync_epoch;
    bool has_new_sync_epoch;
    int32_t new_sync_epoch;
    bool has_next_id;
    int64_t next_id;
    /* body: a SyncStateSet {set, set_epoch} (has_set), or for ELECT an
     * ElectMasterResponseBody (elect_body: set, and the group's members when
     * with_members) */
    bool has_set, elect_body, with_members;
    int64_t *set; /* owned, sorted */
    size_t n_set;
    int32_t set_epoch;
};

struct ns_ctl_decision {
    int32_t code;     /* 0 or a response code */
    char remark[512]; /* "" = none */
    struct ns_ctl_reply reply;
    bool has_event;
    enum ns_ctl_event_type event_type;
    struct ns_ctl_event event; /* owned when has_event */
    bool notify;               /* a successful election: send 1008 after */
};

void ns_ctl_decision_close(struct ns_ctl_decision *d);

/* What a decision reads besides the table: the node's heartbeats at now_ms
 * and the settings. */
struct ns_ctl_view {
    const struct ns_ctl_table *table;
    const struct ns_ctl_live *live;
    int64_t now_ms;
    bool unclean; /* enableElectUncleanMaster */
};

/* Requests as parsed from the wire (borrowed strings, NULL = absent). */
struct ns_ctl_request {
    const char *cluster, *broker_name, *broker_addr, *check_code;
    bool has_id;
    int64_t id; /* brokerId / appliedBrokerId / masterBrokerId */
    bool has_master_epoch;
    int32_t master_epoch;
    bool designate;
    /* ALTER: the body's set and epoch; CLEAN: the ids (ids_text raw) */
    const int64_t *ids;
    size_t n_ids;
    int32_t set_epoch;
    const char *ids_text; /* CLEAN brokerControllerIdsToClean */
    bool clean_living;
};

/* Each fills *d (zeroed first) with the reply and at most one event. 0 or
 * NS_ENOMEM (d needs a close either way). */
int ns_ctl_decide_next_id(const struct ns_ctl_view *v,
                          const struct ns_ctl_request *r,
                          struct ns_ctl_decision *d); /* 1012 */
int ns_ctl_decide_apply_id(const struct ns_ctl_view *v,
                           const struct ns_ctl_request *r,
                           struct ns_ctl_decision *d); /* 1013 */
int ns_ctl_decide_register(const struct ns_ctl_view *v,
                           const struct ns_ctl_request *r,
                           struct ns_ctl_decision *d); /* 1003 */
int ns_ctl_decide_replica_info(const struct ns_ctl_view *v,
                               const struct ns_ctl_request *r,
                               struct ns_ctl_decision *d); /* 1004 */
/* 1002; r->has_id false or id -1: a controller-triggered election. */
int ns_ctl_decide_elect(const struct ns_ctl_view *v,
                        const struct ns_ctl_request *r,
                        struct ns_ctl_decision *d);
int ns_ctl_decide_alter(const struct ns_ctl_view *v,
                        const struct ns_ctl_request *r,
                        struct ns_ctl_decision *d); /* 1001 */
int ns_ctl_decide_clean(const struct ns_ctl_view *v,
                        const struct ns_ctl_request *r,
                        struct ns_ctl_decision *d); /* 1011 */

#endif
