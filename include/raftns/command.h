/* Replicated commands: every mutation of the state is one of these, encoded as
 * a versioned binary record and applied by ns_fsm_apply. Pure.
 *
 * WARNING: the encoding is a persisted and replicated format (raft log). Never
 * change the meaning of an existing version or type; add a new version or type
 * instead, and keep the golden-byte tests passing. Layout: u8 format version,
 * u8 type, u64 leader_time_ms, then (versions 2 and 3) the request id as u64
 * origin, u64 run, u64 seq, then the type's payload (u32-length-prefixed
 * strings, big-endian integers). Version 1 is written for commands without a
 * request id, so their bytes never changed. Version 3 differs from 2 only in
 * REGISTER_BROKER's topics, which it writes compactly
 * (raft/command_topics.c); only registrations are written in it. */
#ifndef RAFTNS_COMMAND_H
#define RAFTNS_COMMAND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raftns/acl.h"
#include "raftns/buf.h"
#include "raftns/config.h"
#include "raftns/controller.h"
#include "raftns/reqid.h"
#include "raftns/route.h"

#define NS_COMMAND_VERSION_PLAIN 1   /* no request id */
#define NS_COMMAND_VERSION_REQID 2   /* with a request id */
#define NS_COMMAND_VERSION_COMPACT 3 /* and compact registration topics */
#define NS_COMMAND_VERSION 3         /* the newest this code reads */
#define NS_COMMAND_MAX_SIZE (64u * 1024u * 1024u)

enum ns_command_type {
    NS_CMD_REGISTER_BROKER = 1,
    NS_CMD_UNREGISTER_BROKERS = 2,
    NS_CMD_EXPIRE_BROKERS = 3,
    NS_CMD_KV_PUT = 4,
    NS_CMD_KV_DELETE = 5,
    NS_CMD_WIPE_WRITE_PERM = 6,
    NS_CMD_ADD_WRITE_PERM = 7,
    NS_CMD_DELETE_TOPIC = 8,
    NS_CMD_REGISTER_TOPIC = 9,
    NS_CMD_UPDATE_CONFIG = 10,
    NS_CMD_CHECKPOINT = 11,
    NS_CMD_SET_MEMBER = 12,
    NS_CMD_ACL_PUT = 13,    /* add or replace an account */
    NS_CMD_ACL_REMOVE = 14, /* remove an account */
    NS_CMD_ACL_SEED = 15,   /* the cluster file's accounts, once */
    NS_CMD_VERDICT = 16,    /* the majority digest of a checkpoint */
    /* The controller's five events (raftns/controller.h), decided on the
     * leader: payload ns_ctl_event_encode of the matching event type. */
    NS_CMD_CTL_ALTER_SYNC_STATE_SET = 17,
    NS_CMD_CTL_APPLY_BROKER_ID = 18,
    NS_CMD_CTL_ELECT_MASTER = 19,
    NS_CMD_CTL_CLEAN_BROKER_DATA = 20,
    NS_CMD_CTL_UPDATE_BROKER_ADDRESS = 21,
    /* EXPIRE_BROKERS guarded by what the leader saw (regs_seen per broker) */
    NS_CMD_EXPIRE_BROKERS_SEEN = 22,
};

/* The controller event of a NS_CMD_CTL_* type, 0 for any other type. */
enum ns_ctl_event_type ns_command_ctl_event(enum ns_command_type type);

#define NS_VERDICT_MAX_IDS 64 /* voters named in one VERDICT */

struct ns_command {
    uint8_t version; /* as decoded; the encoding follows reqid */
    enum ns_command_type type;
    int64_t leader_time_ms;
    struct ns_reqid reqid; /* origin 0: none */
    union {
        struct ns_register reg; /* REGISTER_BROKER */
        struct {
            struct ns_broker_ref *refs; /* owned */
            size_t n;
            /* EXPIRE_BROKERS_SEEN: owned, n counts (else NULL), each the
             * broker's ns_route_broker_regs when the leader decided */
            uint64_t *regs_seen;
        } brokers; /* UNREGISTER_BROKERS, EXPIRE_BROKERS(_SEEN) */
        struct {
            char *ns, *key, *value; /* owned; value may be NULL */
        } kv;                       /* KV_PUT, KV_DELETE */
        struct {
            char *broker_name; /* owned */
        } perm;                /* WIPE_WRITE_PERM, ADD_WRITE_PERM */
        struct {
            char *topic, *cluster; /* owned; cluster may be NULL */
        } topic_delete;
        struct {
            char *topic;               /* owned */
            struct ns_queue_data *qds; /* owned */
            size_t n;
        } topic_register;
        struct ns_props config; /* UPDATE_CONFIG */
        struct {
            uint64_t index;  /* applied index the digest belongs to */
            uint64_t digest; /* leader's state digest at that index */
        } checkpoint;
        struct {
            uint64_t index;  /* the CHECKPOINT entry the digests belong to */
            uint64_t digest; /* the digest a majority of voters reported */
            uint64_t *agree; /* owned: voters that reported it */
            size_t n_agree;
            uint64_t *dissent; /* owned: voters that reported another */
            size_t n_dissent;
        } verdict;
        struct {
            uint64_t id;
            char *raft_addr, *client_addr,
                *http_addr; /* owned; all NULL = remove */
        } member;
        struct ns_acl_account acl_put; /* ACL_PUT (owned) */
        struct {
            char *access_key; /* owned */
        } acl_remove;
        struct {
            struct ns_acl_account *items; /* owned */
            size_t n;
        } acl_seed;
        struct ns_ctl_event ctl; /* NS_CMD_CTL_* (owned) */
    } u;
};

/* True for the command types a client request can produce on any node (and so
 * may be forwarded to the leader); false for those only the leader creates
 * (expiry, checkpoints, membership records). */
bool ns_command_is_client_write(enum ns_command_type type);

/* The type of an encoded command without decoding it: 0 when p is too short
 * or not of a known format version. */
int ns_command_peek_type(const uint8_t *p, size_t len);

/* Whether two encoded commands (borrowed) are the same write but for the
 * leader time and, with any_id, the request id: the leader's de-duplication
 * of identical pending commands (src/cluster/dedup.c) compares with it, so
 * that the byte layout stays this file's. */
bool ns_command_same_write(const uint8_t *a, size_t a_len, const uint8_t *b,
                           size_t b_len, bool any_id);

/* Zeroes c and sets version and type. */
void ns_command_init(struct ns_command *c, enum ns_command_type type);
void ns_command_close(struct ns_command *c);
/* Appends the encoding in the newest version. 0 or the buffer's error. */
int ns_command_encode(const struct ns_command *c, struct ns_buf *out);
/* The same in at most version max_version, for a cluster whose nodes do not
 * all read the newest yet. A command without a request id is version 1, one
 * with an id version 2, or 3 for a REGISTER_BROKER when max_version allows. */
int ns_command_encode_as(const struct ns_command *c, uint8_t max_version,
                         struct ns_buf *out);
/* Decodes one command; strings are copied. Returns 0, NS_EPROTO (truncated,
 * trailing bytes, unknown type), NS_EVERSION (format version from the future)
 * or NS_ENOMEM; on error out needs no close. */
int ns_command_decode(const uint8_t *p, size_t len, struct ns_command *out);

#endif
