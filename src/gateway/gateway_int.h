/* Private to the gateway room (src/gateway/): a request being dispatched, its
 * reply target, the pending replies that wait for apply, and what dispatch,
 * the gates and the handlers call of each other. No other folder includes
 * it; the room's offer to the composition root is gateway.h. */
#ifndef RAFTNS_GATEWAY_INT_H
#define RAFTNS_GATEWAY_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "raftns/buf.h"
#include "raftns/command.h"
#include "raftns/config.h"
#include "raftns/fsm.h"
#include "raftns/liveness_table.h"
#include "raftns/node.h"
#include "raftns/remoting.h"
#include "raftns/server.h"

#include "cluster/cluster.h"
#include "gateway/gateway.h"
#include "liveness/liveness.h"
#include "net/net.h"

struct ns_held_read;

/* Where a reply goes; conn is NULL once the connection closed. */
struct ns_reply_to {
    struct ns_conn *conn; /* borrowed */
    int32_t opaque;
    int32_t req_code;
    int32_t req_version;
    enum ns_serialize ser;
    bool oneway;
    uint64_t start_ns; /* uv_hrtime at dispatch, 0 = not counted (metrics) */
    /* non-zero: another node forwarded this read (NS_CODE_READ_FORWARD); the
     * reply carries NS_EXT_SERVED_BY with this id (reply.c) */
    uint64_t served_by;
    const struct ns_waits *waits; /* borrowed: the gateway's (remarks) */
};

struct ns_pending;
/* status/res as ns_node_apply_cb. The pending struct is freed after this
 * returns. */
typedef void (*ns_pending_done)(struct ns_pending *p, int status,
                                const struct ns_apply_result *res);

/* A reply that waits for the local FSM to apply a proposed command. */
struct ns_pending {
    struct ns_gateway *gw;
    struct ns_reply_to to;
    ns_pending_done done;
    struct ns_pending *prev, *next; /* in to.conn's list while attached */
    uint64_t index;                 /* log index of the entry (cluster) */
    void *data; /* owned: the handler's, one block freed with ns_free */
};

/* A decoded request being dispatched. */
struct ns_req;
typedef int (*ns_handler_fn)(struct ns_req *req);

struct ns_req {
    struct ns_gateway *gw;
    struct ns_conn *conn;
    const struct ns_cmd *cmd; /* borrowed for the handler call */
    struct ns_reply_to to;
    /* a client's own request: a read this node cannot answer may be handed
     * to the leader (ns_held_read_forward); false once held or forwarded */
    bool may_forward;
};

/* Re-dispatches a request whose ACL check already passed (a read held until
 * this node became ready); it is answered here or refused, never forwarded.
 * served_by as ns_reply_to. */
int ns_dispatch_authorised(struct ns_gateway *gw, struct ns_conn *conn,
                           const struct ns_cmd *cmd, uint64_t served_by);
/* A read another node forwarded (its client's ACL check passed there): as
 * ns_dispatch_authorised with served_by, and a code that is not a read is
 * refused with code 16. */
int ns_dispatch_forwarded(struct ns_gateway *gw, struct ns_conn *conn,
                          const struct ns_cmd *cmd, uint64_t served_by);

/* --- handle_cluster.c: the private codes (codes.h) --- */
int ns_handle_private(struct ns_req *req);
/* True when the private request req is signed by the cluster secret
 * (ns_cluster_check_signed); otherwise it was answered with code 16 and the
 * reason, and the caller returns 0. */
bool ns_handle_private_is_signed(struct ns_req *req);

/* --- held_read.c --- */
/* Dispatch gate for reads with raftnsConsistent=true: true when the request
 * was taken over (a copy goes to handler later, once the leader's read index
 * was applied here). */
bool ns_held_read_consistent(struct ns_req *req, ns_handler_fn handler);
/* A read this node cannot answer from its own state (refusal says why, a
 * static string): held and sent to the leader (NS_CODE_READ_FORWARD), whose
 * answer is relayed; retried on every cluster tick while no leader answers,
 * for at most the read-forward wait (counted from the loss of the leader when
 * none is known), then answered with code 1 and refusal, as without forwarding.
 * local_when_ready: answered here instead once this node is ready and not
 * diverged. A oneway request is dropped. Returns 0, or non-zero to close the
 * connection. */
int ns_held_read_forward(struct ns_req *req, const char *refusal,
                         bool local_when_ready);
/* NS_CODE_READ_FORWARD on the receiving node (a signed private request). */
int ns_held_read_serve(struct ns_req *req);

/* --- acl_gate.c --- */
/* Copies cfg->acl and the cluster file's accounts reference. 0 or NS_ENOMEM. */
int ns_acl_gate_init(struct ns_acl_gate *g, const struct ns_server_config *cfg);
void ns_acl_gate_close(struct ns_acl_gate *g);
/* Checks req against the role it needs (NS_ACL_ROLE_READER for reads). True
 * when it may go on; otherwise it was answered with code 16 (a remark naming
 * what was missing), logged (rate-limited) and counted. Always true when ACL
 * is off. */
bool ns_acl_gate_allows(struct ns_req *req, enum ns_acl_role need);
/* --- handle_acl.c: NS_CODE_ACL_UPDATE, NS_CODE_ACL_LIST --- */
int ns_handle_acl_update(struct ns_req *req);
int ns_handle_acl_list(struct ns_req *req);

/* --- reply.c --- */
/* Starts a reply (code, flag 1, opaque, JAVA, server version, request's
 * serialize type). */
void ns_reply_init(struct ns_cmd *reply, const struct ns_reply_to *to,
                   int32_t code);
/* Encodes and queues reply (then closes it). Nothing is sent for oneway or
 * closed targets. Returns 0 or NS_ENOMEM. */
int ns_reply_send(const struct ns_reply_to *to, struct ns_cmd *reply);
/* The SYSTEM_ERROR reply Java's processor wrapper sends when a handler throws
 * (docs/compat.md): code 1, remark = the exception text (borrowed), JSON
 * whatever the request's type, no extFields. */
int ns_reply_exception(const struct ns_reply_to *to, const char *remark);
/* A reply with only a code and a remark (borrowed, may be NULL). */
int ns_reply_simple(const struct ns_reply_to *to, int32_t code,
                    const char *remark);
/* A reply whose remark is formatted (no length limit). */
int ns_reply_remarkf(const struct ns_reply_to *to, int32_t code,
                     const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Answers code 0 with the body in b (borrowed; NS_ENOMEM when b has an error or
 * rv != 0). */
int ns_reply_buf(const struct ns_reply_to *to, int rv, const struct ns_buf *b);
/* A reply with a body (borrowed bytes). */
int ns_reply_body(const struct ns_reply_to *to, int32_t code,
                  const uint8_t *body, size_t len);
/* SYSTEM_ERROR for a failed proposal, with a remark naming the cause. */
int ns_reply_write_error(const struct ns_reply_to *to, int status);

/* --- propose.c --- */
/* Encodes c and proposes it; the reply goes to req->to from done. *out (may be
 * NULL) is the pending record for handler data. Returns 0 (done runs exactly
 * once) or an NS_E* code. */
int ns_propose(struct ns_req *req, const struct ns_command *c,
               ns_pending_done done, struct ns_pending **out);
/* A done callback that answers SUCCESS (or the write error). */
void ns_propose_simple_done(struct ns_pending *p, int status,
                            const struct ns_apply_result *res);
/* Proposes c and answers SUCCESS once applied; a refused proposal is answered
 * with the write error (NS_ENOMEM is returned instead: close). */
int ns_propose_simple(struct ns_req *req, const struct ns_command *c);

/* --- handle_liveness.c: NS_CODE_LIVENESS_REPORT --- */
int ns_handle_liveness_report(struct ns_req *req);
int ns_handle_broker_liveness(struct ns_req *req);

/* --- register_async.c --- */
/* True when a REGISTER_BROKER body may take long to decode: it is then
 * decoded off the loop. */
bool ns_register_async_wanted(const struct ns_cmd *cmd, bool compressed);
/* Copies the request, pauses its connection and decodes it (CRC check
 * included) on a pool thread, one at a time; ns_handle_broker_finish then runs
 * on the loop, unless the connection closed meanwhile. 0 or NS_ENOMEM. */
int ns_register_async_start(struct ns_req *req, bool compressed);
/* Frees what is still queued (server destroy). */
void ns_register_async_clear(struct ns_gateway *gw);
/* --- handle_broker.c, for register_async.c --- */
int ns_handle_broker_fill_header(const struct ns_cmd *cmd,
                                 struct ns_register *reg);
/* 0 when the bodyCrc32 ext field is absent, 0 or matches the body. */
int ns_handle_broker_check_crc(const struct ns_cmd *cmd);
/* The rest of a registration once its body is decoded (rv, errmsg as
 * ns_register_decode_body; crc_bad: the CRC did not match): the refusal, the
 * heartbeat short-cut or the proposal. c is borrowed. Non-zero = close. */
int ns_handle_broker_finish(struct ns_req *req, struct ns_command *c,
                            bool crc_bad, int rv, const char *errmsg);

/* --- handlers (handle_*.c) --- */
int ns_handle_put_kv(struct ns_req *req);
int ns_handle_get_kv(struct ns_req *req);
int ns_handle_delete_kv(struct ns_req *req);
int ns_handle_kvlist(struct ns_req *req);
int ns_handle_register_broker(struct ns_req *req);
int ns_handle_unregister_broker(struct ns_req *req);
int ns_handle_query_data_version(struct ns_req *req);
int ns_handle_broker_heartbeat(struct ns_req *req);
/* --- handle_controller.c: the controller codes (docs/controller.md §3) --- */
int ns_handle_controller_heartbeat(struct ns_req *req);     /* 904 */
int ns_handle_controller_metadata(struct ns_req *req);      /* 1005 */
int ns_handle_controller_get_config(struct ns_req *req);    /* 1010 */
int ns_handle_controller_update_config(struct ns_req *req); /* 1009 */
/* 1001-1004, 1006, 1011-1013 */
int ns_handle_controller_queued(struct ns_req *req);
int ns_handle_route(struct ns_req *req);
int ns_handle_cluster_info(struct ns_req *req);
int ns_handle_all_topics(struct ns_req *req);
int ns_handle_topics_by_cluster(struct ns_req *req);
int ns_handle_system_topics(struct ns_req *req);
int ns_handle_unit_topics(struct ns_req *req);
int ns_handle_unit_sub_topics(struct ns_req *req);
int ns_handle_unit_sub_ununit_topics(struct ns_req *req);
int ns_handle_member_group(struct ns_req *req);
int ns_handle_wipe_write_perm(struct ns_req *req);
int ns_handle_add_write_perm(struct ns_req *req);
int ns_handle_delete_topic(struct ns_req *req);
int ns_handle_register_topic(struct ns_req *req);
int ns_handle_update_config(struct ns_req *req);
int ns_handle_get_config(struct ns_req *req);
int ns_handle_status(struct ns_req *req);
/* --- handle_integrity.c: NS_CODE_DIGEST_REPORT, NS_CODE_STATE_FETCH --- */
int ns_handle_digest_report(struct ns_req *req);
int ns_handle_state_fetch(struct ns_req *req);

/* --- pending.c: reply targets that survive a connection close --- */

/* A pending reply for req attached to its connection (detached if it closes).
 * NULL on NS_ENOMEM. Finish it exactly once. */
struct ns_pending *ns_pending_new(struct ns_req *req, ns_pending_done done);
/* Sets p->index, runs p->done, detaches and frees p (and p->data with
 * ns_free). */
void ns_pending_finish(struct ns_pending *p, int status, uint64_t index,
                       const struct ns_apply_result *res);
/* Detaches and frees a pending reply that never started (done is not run). */
void ns_pending_drop(struct ns_pending *p);

#endif
