/* The replicated state machine: the whole state (routes, KV, settings, members)
 * and the one function that changes it. Deterministic: the same commands in the
 * same order give byte-identical snapshots on every node. Pure. */
#ifndef RAFTNS_FSM_H
#define RAFTNS_FSM_H

#include <stddef.h>
#include <stdint.h>

#include "raftns/acl.h"
#include "raftns/command.h"
#include "raftns/config.h"
#include "raftns/controller.h"
#include "raftns/kv.h"
#include "raftns/reqid.h"
#include "raftns/route.h"

struct ns_member {
    uint64_t id;
    char *raft_addr, *client_addr, *http_addr; /* owned */
};

struct ns_state {
    struct ns_route *route;
    struct ns_kv *kv;
    struct ns_config *config;
    struct ns_member *members; /* owned, sorted by id */
    size_t n_members;
    struct ns_acl acl;            /* accounts (ACL_PUT/REMOVE/SEED) */
    struct ns_reqid_table reqids; /* request ids applied (exactly once) */
    struct ns_ctl_table ctl;      /* the broker groups' controller table */
    uint64_t n_applied; /* commands applied since the state was created or
                           restored */
    uint64_t last_checkpoint_digest;
    /* The last VERDICT applied (not in the snapshot, like the field above). */
    uint64_t last_verdict_index, last_verdict_digest;
};

/* 0 or NS_ENOMEM (nothing to close on error). */
int ns_state_init(struct ns_state *s);
void ns_state_close(struct ns_state *s);
/* An estimate of the heap bytes of s's big tables (the route's and the KV
 * store's; the others are small): what decides whether encoding s is worth
 * a fork, and how far apart checkpoints are. O(1). */
size_t ns_state_bytes(const struct ns_state *s);
/* Frees the strings of one member entry (not the entry). */
void ns_state_member_close(struct ns_member *m);

struct ns_apply_result {
    enum ns_command_type type;
    /* A command with a request id that was applied before (DUPLICATE: nothing
     * changed, the fields below answer as its first apply would now) or is
     * refused (STALE: nothing changed). */
    enum ns_reqid_verdict reqid;
    struct ns_register_result reg; /* REGISTER_BROKER */
    int32_t count;                 /* WIPE/ADD_WRITE_PERM: topics touched */
};

void ns_fsm_result_close(struct ns_apply_result *res);

/* Applies one command; never fails for semantic reasons (validation happens
 * before a command is proposed). A command with a request id takes effect at
 * most once (res->reqid). res may be NULL. Returns 0 or NS_ENOMEM (the
 * node must stop: the state may be half-changed). */
int ns_fsm_apply(struct ns_state *s, const struct ns_command *c,
                 struct ns_apply_result *res);
/* Decodes then applies. NS_EPROTO/NS_EVERSION when the bytes are not a command
 * (nothing applied). */
int ns_fsm_apply_bytes(struct ns_state *s, const uint8_t *p, size_t len,
                       struct ns_apply_result *res);

/* A 64-bit digest of the encoded state (FNV-1a over ns_snapshot_encode's
 * payload). */
int ns_snapshot_digest(const struct ns_state *s, uint64_t *out);
/* The same digest of an encoding already made. */
uint64_t ns_snapshot_digest_bytes(const uint8_t *p, size_t len);
/* The digest of bytes that follow others: h is NS_SNAPSHOT_DIGEST_START or
 * what the call over the bytes before them returned. */
#define NS_SNAPSHOT_DIGEST_START 0xcbf29ce484222325ull
uint64_t ns_snapshot_digest_more(uint64_t h, const uint8_t *p, size_t len);

/* Snapshot format. WARNING: persisted and replicated; versioned (u32 magic
 * "RNSS", u16 version), golden-byte tests guard it. Version 1 is written while
 * the account table is empty and was never seeded and no request id was
 * recorded (so such states keep their bytes and digests), version 2 (version
 * 1 + the account table) while no request id was recorded, version 3 (version
 * 2 + the request-id table) otherwise, and version 4 (version 3, its
 * request-id table possibly empty, + the controller table) while the
 * controller table has a group; all are read. */
int ns_snapshot_encode(const struct ns_state *s, struct ns_buf *out);
/* The same encoding of s as it is now, in steps (ns_route_capture_begin):
 * appends to head the bytes before the route's topic table and to tail those
 * after it; the steps of the route's capture *out give the table. 0, NS_EBUSY
 * or NS_ENOMEM (no capture then). */
int ns_snapshot_capture_begin(struct ns_state *s, struct ns_buf *head,
                              struct ns_buf *tail,
                              struct ns_route_capture **out);
/* Replaces s's contents with the snapshot (s must be initialised). 0,
 * NS_EPROTO, NS_EVERSION or NS_ENOMEM; on error s is unchanged. */
int ns_snapshot_decode(struct ns_state *s, const uint8_t *p, size_t len);

#endif
