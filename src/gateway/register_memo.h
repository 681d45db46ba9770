/* A memo of decoded REGISTER_BROKER requests, so that a broker's unchanged
 * re-registration (its heartbeat) is not decoded again. Each server owns one
 * table (its epochs are those of that server's route), in its
 * gateway (gateway.h). Only src/gateway/ uses it. */
#ifndef RAFTNS_GATEWAY_REGISTER_MEMO_H
#define RAFTNS_GATEWAY_REGISTER_MEMO_H

#include "raftns/remoting.h"
#include "raftns/route.h"

struct ns_register_memo;

/* The table: direct-mapped slots, bounded in entries and bytes. */
struct ns_register_memo_table {
    struct ns_register_memo *slots; /* owned, NS_REGISTER_MEMO_SLOTS */
    size_t bytes;                   /* charged by the used slots */
};

#define NS_REGISTER_MEMO_SLOTS 1024u

/* 0 or NS_ENOMEM (nothing to close then). */
int ns_register_memo_init(struct ns_register_memo_table *t);
/* Forgets every remembered registration and frees the table. */
void ns_register_memo_close(struct ns_register_memo_table *t);

/* The entry of t remembering exactly this request (same version, same header
 * fields that decoding and the CRC check read, same body bytes), borrowed
 * until the next put or drop on t; or NULL. */
struct ns_register_memo *ns_register_memo_find(struct ns_register_memo_table *t,
                                               const struct ns_cmd *cmd);
/* Its decoded registration (borrowed from the entry). */
const struct ns_register *
ns_register_memo_reg(const struct ns_register_memo *m);
/* True when the entry was found unchanged against the route at route epoch
 * epoch (ns_route_epoch of the owner's route) with the same
 * deleteTopicWithBrokerRegistration: the route check would give the same answer
 * again. */
bool ns_register_memo_is_current(const struct ns_register_memo *m,
                                 uint64_t epoch, bool delete_missing);
/* Records that the route check passed at epoch with delete_missing. */
void ns_register_memo_mark(struct ns_register_memo *m, uint64_t epoch,
                           bool delete_missing);
/* Remembers *reg as the decode of cmd, whose body CRC (if any) was checked,
 * found unchanged at epoch with delete_missing; takes *reg (re-initialised)
 * when it returns true. False when the request is too large to remember (*reg
 * untouched). */
bool ns_register_memo_put(struct ns_register_memo_table *t,
                          const struct ns_cmd *cmd, struct ns_register *reg,
                          uint64_t epoch, bool delete_missing);
/* Forgets what t remembered for cmd. */
void ns_register_memo_drop(struct ns_register_memo_table *t,
                           const struct ns_cmd *cmd);

#endif
