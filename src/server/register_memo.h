/* A memo of decoded REGISTER_BROKER requests, so that a broker's unchanged
 * re-registration (its heartbeat) is not decoded again. Not a public
 * interface: only src/server/ includes it. */
#ifndef RAFTNS_SERVER_REGISTER_MEMO_H
#define RAFTNS_SERVER_REGISTER_MEMO_H

#include "raftns/remoting.h"
#include "raftns/route.h"

struct ns_register_memo;

/* The entry remembering exactly this request (same version, same header
 * fields that decoding and the CRC check read, same body bytes), borrowed
 * until the next put or drop; or NULL. */
struct ns_register_memo *ns_register_memo_find(const struct ns_cmd *cmd);
/* Its decoded registration (borrowed from the entry). */
const struct ns_register *
ns_register_memo_reg(const struct ns_register_memo *m);
/* True when the entry was found unchanged against the route at route epoch
 * epoch (ns_route_epoch) with the same deleteTopicWithBrokerRegistration: the
 * route check would give the same answer again. */
bool ns_register_memo_is_current(const struct ns_register_memo *m,
                                 uint64_t epoch, bool delete_missing);
/* Records that the route check passed at epoch with delete_missing. */
void ns_register_memo_mark(struct ns_register_memo *m, uint64_t epoch,
                           bool delete_missing);
/* Remembers *reg as the decode of cmd, whose body CRC (if any) was checked,
 * found unchanged at epoch with delete_missing; takes *reg (re-initialised)
 * when it returns true. False when the request is too large to remember (*reg
 * untouched). */
bool ns_register_memo_put(const struct ns_cmd *cmd, struct ns_register *reg,
                          uint64_t epoch, bool delete_missing);
/* Forgets what was remembered for cmd. */
void ns_register_memo_drop(const struct ns_cmd *cmd);
/* Forgets every remembered registration (server shutdown). */
void ns_register_memo_clear(void);

#endif
