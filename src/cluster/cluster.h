/* The cluster room's API (cluster.c, cluster_submit.c, dedup.c, clock.c;
 * docs/ARCHITECTURE.md): the one way to write, the leader connection and the
 * signatures of private requests, the cluster state of a server. It knows no
 * request handler: what it answers goes back through callbacks with plain
 * data, and the gateway turns that into replies. Over net (peer.h) only. */
#ifndef RAFTNS_CLUSTER_H
#define RAFTNS_CLUSTER_H

#include <stdbool.h>
#include <stdint.h>

#include "net/peer.h"
#include "raftns/node.h"
#include "raftns/remoting.h"
#include "raftns/server.h"
#include "raftns/waits.h"

struct ns_cluster;
struct ns_tls_ctx;

/* The largest command a write may propose: a follower forwards it in one
 * frame (NS_FRAME_MAX) with room for the request header. */
#define NS_COMMAND_MAX (NS_FRAME_MAX - 65536u)

/* --- clock.c --- */
/* Wall-clock milliseconds for commands (leader_time_ms) and DataVersion
 * defaults. */
int64_t ns_clock_wall_ms(void);

/* How often the cluster ticks: waiting requests retry, the leader connection
 * is re-aimed, readiness is asked for. */
#define NS_CLUSTER_TICK_MS 50

/* --- waiting for the cluster (docs/waits.md) --- */

/* A request that waits for a leader to be known or to answer (a struct
 * ns_wait, raftns/waits.h): a write with no leader (cluster_submit.c), a read
 * no node could answer yet (gateway/held_read.c), the removal relayed to a new
 * leader (gateway/handle_cluster.c). Every cluster tick and role change takes
 * each off the cluster's wait list and calls its retry once, oldest first;
 * retry finishes the request or waits again (ns_cluster_wait_again). Once the
 * cluster is stopping (ns_cluster_is_stopping), retry must finish it. */
void ns_cluster_wait_again(struct ns_cluster *cl, struct ns_wait *w);
bool ns_cluster_is_stopping(const struct ns_cluster *cl);
/* uv_now since which no leader has been known, or 0 while one is known. */
uint64_t ns_cluster_leaderless_since(const struct ns_cluster *cl);

/* --- the leader connection of a server, signatures (cluster.c) --- */

/* Sends req to the current leader's client address, with this node's id added
 * as ext and signed by the cluster secret (raftns/sign.h). Returns 0 (cb
 * exactly once), NS_ENOTLEADER (no leader known, this node is the leader, or
 * its client address is unknown: cb never runs) or NS_ENOMEM. */
int ns_cluster_leader_request(struct ns_cluster *cl, struct ns_cmd *req,
                              uint64_t timeout_ms, ns_peer_reply_cb cb,
                              void *arg);
/* Same, one-way. */
int ns_cluster_leader_oneway(struct ns_cluster *cl, struct ns_cmd *req);
/* Client address (borrowed) of member id: replicated member table first, then
 * the cluster file; NULL when unknown. */
const char *ns_cluster_client_addr(const struct ns_cluster *cl, uint64_t id);
/* NULL when the private request cmd (borrowed) carries a valid signature
 * (raftns/sign.h) by the cluster secret, within the time window, with a nonce
 * not seen before. Otherwise the reason (static storage): the refusal is
 * counted and logged as a WARN naming conn_id and peer (at most one a second);
 * the caller answers code 16 with it. */
const char *ns_cluster_check_signed(struct ns_cluster *cl,
                                    const struct ns_cmd *cmd, uint64_t conn_id,
                                    const char *peer);
/* Signs req with the cluster secret, a fresh nonce and the wall clock; call it
 * after the last change to req. 0, NS_ENOMEM or NS_EIO. */
int ns_cluster_sign(struct ns_cluster *cl, struct ns_cmd *req);

/* --- cluster.c, cluster_submit.c: the write path and the cluster state --- */

/* Creates the cluster room of a server from its config (borrowed strings are
 * copied) over state, node and waits (borrowed; they outlive it). 0 (*out
 * owned: ns_cluster_stop, then ns_cluster_destroy) or NS_ENOMEM. */
int ns_cluster_create(uv_loop_t *loop, const struct ns_server_config *cfg,
                      struct ns_state *state, struct ns_node *node,
                      const struct ns_waits *waits, struct ns_cluster **out);
/* fn(ctx) runs on every cluster tick and role change, after the members were
 * recorded (the composition root seeds the ACL table from it). */
void ns_cluster_set_tick_hook(struct ns_cluster *cl, void (*fn)(void *ctx),
                              void *ctx);
/* Starts its timer; the leader connection speaks TLS with the context
 * *peer_tls holds when it connects (borrowed slot, outlives cl). */
/* How often the cluster ticks (ns_cluster_on_change): waiting requests
 * retry, the leader connection is re-aimed, readiness is asked for. */
#define NS_CLUSTER_TICK_MS 50

/* For a driven server (ns_server_start_driven): the leader connection comes
 * from peers (borrowed, must outlive cl) and no timer runs; the server calls
 * ns_cluster_on_change every NS_CLUSTER_TICK_MS of its clock. */
struct ns_peer_factory;
void ns_cluster_start_driven(struct ns_cluster *cl,
                             const struct ns_peer_factory *peers);
/* Time comes from clock (borrowed, must outlive cl) instead of the loop. */
struct ns_clock;
void ns_cluster_set_clock(struct ns_cluster *cl, const struct ns_clock *clock);
void ns_cluster_start(struct ns_cluster *cl,
                      struct ns_tls_ctx *const *peer_tls);
/* Fails waiting writes with NS_ESHUTDOWN, closes the peer and the timer; the
 * struct is freed by ns_cluster_destroy after the loop ran the closes. */
void ns_cluster_stop(struct ns_cluster *cl);
void ns_cluster_destroy(struct ns_cluster *cl);
/* Role or leader changed (server watch): re-aims the leader peer, retries
 * waiting writes, asks for the read index, records members. */
void ns_cluster_on_change(struct ns_cluster *cl);
/* Replicates len bytes of an encoded command (borrowed): locally on the
 * leader (de-duplicated against identical pending commands), otherwise
 * forwarded to the leader, waiting at most the write wait for one; cb
 * runs once THIS node applied the entry. A command over NS_COMMAND_MAX bytes
 * is refused at once; one of BIG_COMMAND bytes or more is resent with a growing
 * pause. 0 (cb exactly once, later) or NS_ENOMEM / NS_ESHUTDOWN / NS_ETOOBIG
 * (cb never runs). */
/* Who makes a command: a client's write (any node: stamped with a request id,
 * forwarded to the leader when this node follows, waiting at most
 * the write wait for a leader), or the leader itself (checkpoints,
 * verdicts, members, expiry, the ACL seed: proposed here or refused with
 * NS_ENOTLEADER). */
enum ns_submit_from { NS_SUBMIT_CLIENT, NS_SUBMIT_LEADER };

/* The one way to write (docs/exactly-once.md): encodes c (borrowed) and
 * replicates it; the leader shares one entry between identical pending
 * commands. cb runs once THIS node applied the entry, with its index. A
 * command over NS_COMMAND_MAX bytes is refused at once; one of BIG_COMMAND
 * bytes or more is resent with a growing pause. 0 (cb exactly once, later) or
 * NS_ENOMEM / NS_ESHUTDOWN / NS_ETOOBIG / NS_ENOTLEADER (cb never runs). */
int ns_cluster_submit(struct ns_cluster *cl, const struct ns_command *c,
                      enum ns_submit_from from, ns_node_index_cb cb, void *arg);
/* The leader's half of a forwarded write (FORWARD handler): bytes as the
 * follower encoded them; a resend never shares another id's entry. As
 * ns_cluster_submit. */
int ns_cluster_accept_forward(struct ns_cluster *cl, const uint8_t *bytes,
                              size_t len, bool resend, ns_node_index_cb cb,
                              void *arg);
/* The leader's answer to a FORWARD, as exts of reply (borrowed), read back
 * by the forwarding node (cluster_submit.c): the entry's index and what
 * applying it returned (res borrowed, may be NULL). 0 or NS_ENOMEM. */
int ns_cluster_forward_answer(struct ns_cmd *reply, uint64_t index,
                              const struct ns_apply_result *res);
/* Leader: proposes SET_MEMBER (addresses borrowed; all NULL = remove). cb
 * NULL: the outcome is only logged. As ns_cluster_submit. */
int ns_cluster_propose_member(struct ns_cluster *cl, uint64_t id,
                              const char *raft_addr, const char *client_addr,
                              const char *http_addr, ns_node_index_cb cb,
                              void *arg);

/* --- dedup.c: the de-duplication step (docs/exactly-once.md) --- */

/* Whether the state already holds exactly what registering reg (borrowed)
 * would write (ns_route_is_unchanged_registration under this node's
 * deleteTopicWithBrokerRegistration): 1 with *master filled as the FSM would
 * answer (caller closes it), 0 (nothing filled: it must be written), or
 * NS_ENOMEM (caller closes *master). Any node's heartbeat short-cut and the
 * leader's answer to a forwarded registration ask this; the leader's sharing
 * of identical pending commands is the same step's other half, inside
 * ns_cluster_submit and ns_cluster_accept_forward. */
int ns_dedup_registration_held(const struct ns_cluster *cl,
                               const struct ns_register *reg,
                               struct ns_register_result *master);

uint64_t ns_cluster_self_id(const struct ns_cluster *cl);
const char *ns_cluster_secret(const struct ns_cluster *cl);

#endif
