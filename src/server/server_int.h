/* Private structures shared by the server files (connections, requests, pending
 * replies, liveness). Not a public interface: only src/server/ includes it. */
#ifndef RAFTNS_SERVER_INT_H
#define RAFTNS_SERVER_INT_H

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
#include "raftns/rcbuf.h"
#include "raftns/remoting.h"
#include "raftns/server.h"

#include "net/conn_state.h"
#include "gateway/register_memo.h"

#define NS_CONN_MAX_INFLIGHT                                                   \
    1024 /* pending writes per connection: pause reads */
#define NS_CONN_OUT_PAUSE                                                      \
    (8u * 1024u * 1024u) /* unflushed output that pauses reads */
#define NS_CONN_OUT_MAX                                                        \
    (64u * 1024u * 1024u) /* unflushed output that closes                      \
                           */
#define NS_READ_CHUNK 65536
/* The largest command a write may propose: a follower forwards it in one
 * frame (NS_FRAME_MAX) with room for the request header. */
#define NS_COMMAND_MAX (NS_FRAME_MAX - 65536u)

struct ns_conn;
struct ns_live;
struct ns_tls;

/* A TLS handshake on the client port must finish this long after its first
 * byte. */
#define NS_TLS_HANDSHAKE_MS 10000

/* TLS of the client port and of node-to-node requests (conn_tls.c). */
struct ns_server_tls_state {
    enum ns_tls_mode mode;
    struct ns_tls_ctx *ctx;      /* one reference; NULL when disabled */
    struct ns_tls_ctx *peer_ctx; /* client side: enforcing, or a trust CA */
    char *cert, *key, *trust;    /* owned copies for reloads */
    enum ns_tls_verify client_auth;
    bool http; /* HTTPS on the observer's port (http.c) */
};

struct ns_ip_count;
struct ns_reg_work;
struct ns_held_read;

/* This node's client-port limits and their bookkeeping (conn_limit.c). */
struct ns_conn_limits {
    struct ns_client_limits cfg;
    struct ns_ip_count **buckets; /* open connections per source address */
    size_t
        buffered; /* input and output buffers of all connections (capacity) */
    uint64_t last_log_ms;
    uint64_t n_unlogged; /* refusals since the last logged one */
};

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
};

struct ns_pending;
/* status/res as ns_node_apply_cb. The pending struct is freed after this
 * returns. */
typedef void (*ns_pending_done)(struct ns_pending *p, int status,
                                const struct ns_apply_result *res);

/* A reply that waits for the local FSM to apply a proposed command. */
struct ns_pending {
    struct ns_server *srv;
    struct ns_reply_to to;
    ns_pending_done done;
    struct ns_pending *prev, *next; /* in to.conn's list while attached */
    uint64_t index;                 /* log index of the entry (cluster) */
    void *data; /* owned: the handler's, one block freed with ns_free */
};

/* A shared body queued on a connection, sent after the connection's own output
 * bytes [0, at). */
struct ns_conn_shared {
    size_t at;
    struct ns_rcbuf *body; /* one reference owned */
};

struct ns_conn {
    uv_tcp_t tcp; /* first: the handle is the allocation */
    struct ns_server *srv;
    struct ns_conn *prev, *next; /* server list, least recently active first */
    struct ns_conn *dirty_next;
    uint64_t id;
    char peer[64];
    char ip[48];        /* source address (per-address limit) */
    bool ip_counted;    /* counted in the server's per-address table */
    size_t acct;        /* bytes counted in the server's buffer budget */
    unsigned n_held;    /* requests taken off the loop: reads paused */
    size_t held_bytes;  /* bytes those requests hold */
    struct ns_buf rbuf; /* partial frame bytes */
    struct ns_buf out;  /* encoded replies not yet handed to uv_write */
    /* Shared reply bodies (ns_conn_queue_shared) to send after out's bytes
     * up to their .at: one reference each, owned array. */
    struct ns_conn_shared *shared;
    size_t n_shared, cap_shared;
    size_t shared_bytes; /* their bodies' bytes */
    uv_write_t wreq;
    uint8_t *wdata; /* owned while a write is in flight, else NULL */
    struct ns_conn_shared *wshared; /* the shared bodies of that write */
    size_t n_wshared;
    size_t wlen;
    uint64_t last_active;
    unsigned n_inflight;
    enum ns_conn_state state; /* changed by ns_conn_set_state only */
    bool dirty;               /* in srv->dirty: flushed this loop turn */
    struct ns_tls *tls;    /* owned, NULL for a plain connection (conn_tls.c) */
    uint64_t tls_deadline; /* uv_now by which the TLS handshake must finish */
    struct ns_pending *pending; /* replies waiting for apply */
    struct ns_live *brokers; /* brokers that registered over this connection */
};

/* Broker liveness of this node (liveness.c over liveness_table.c; never
 * replicated). */
struct ns_liveness {
    struct ns_liveness_table t;
    bool leading;      /* took leadership in the table */
    bool fast_pending; /* a broker may be due through the fast path */
    bool in_flight;    /* a report to the leader awaits its answer */
    bool resend_all;   /* a report was lost: send everything again */
    bool reseed;       /* an expiry proposal failed: re-seed from the route */
    uint64_t reported_to; /* leader id the reports go to */
};

/* The ACL gate of a server (acl_gate.c). */
struct ns_acl_gate {
    bool enable;
    bool anonymous_read;
    struct ns_acl_net *broker_nets; /* owned copy */
    size_t n_broker_nets;
    /* the cluster file's accounts (borrowed), seeded once by a leader */
    const struct ns_acl_account *seed;
    size_t n_seed;
    bool seed_inflight;
    /* refusal log rate limit: at most NS_ACL_LOG_BURST lines per second */
    uint64_t log_window_ms;
    unsigned log_in_window;
    uint64_t log_suppressed;
};

struct ns_server {
    uv_loop_t *loop;
    /* What the transport reports upward (set by server.c, so that conn.c
     * knows no handler): one decoded request (non-zero: close the
     * connection), and a connection that is closing (before it is freed). */
    int (*on_request)(struct ns_server *srv, struct ns_conn *c,
                      const struct ns_cmd *cmd);
    void (*on_conn_closed)(struct ns_server *srv, struct ns_conn *c);
    struct ns_waits waits;  /* every wait on the cluster (raftns/waits.h) */
    struct ns_state *state; /* borrowed */
    struct ns_node *node;   /* borrowed */
    char client_addr[64];
    int port;
    uv_tcp_t listener;
    uv_check_t flush_check;
    uv_timer_t scan_timer;
    uv_timer_t idle_timer;
    uv_timer_t fast_timer; /* leader: the next fast-path expiry (liveness.c) */
    int n_open_handles;
    bool started;
    bool stopping;
    bool was_leader;
    bool seeded;
    ns_server_stop_cb stop_cb;
    void *stop_arg;
    struct ns_conn *conn_head, *conn_tail;
    size_t n_conns;
    struct ns_conn *dirty;
    uint64_t next_conn_id;
    uint64_t start_ms;
    struct ns_liveness live;
    struct ns_register_memo_table memo; /* decoded REGISTER_BROKER requests */
    struct ns_observe *observe;         /* borrowed, may be NULL (observe.c) */
    struct ns_cluster *cluster; /* owned: forwarding and peers (cluster.c) */
    struct ns_acl_gate acl;
    struct ns_server_tls_state tls;
    struct ns_conn_limits limits;
    /* REGISTER_BROKER bodies waiting to be decoded off the loop, and the one
     * being decoded (register_async.c) */
    struct ns_reg_work *reg_queue, *reg_queue_tail, *reg_running;
    /* forwarded reads waiting for a leader, and since when (uv_now) no
     * leader is known, 0 while one is (held_read.c) */
    uint8_t scratch[NS_READ_CHUNK];
};

/* A decoded request being dispatched. */
struct ns_req;
typedef int (*ns_handler_fn)(struct ns_req *req);

struct ns_req {
    struct ns_server *srv;
    struct ns_conn *conn;
    const struct ns_cmd *cmd; /* borrowed for the handler call */
    struct ns_reply_to to;
    /* a client's own request: a read this node cannot answer may be handed
     * to the leader (ns_held_read_forward); false once held or forwarded */
    bool may_forward;
};

/* --- conn.c --- */
void ns_conn_accept(struct ns_server *srv);
/* Closes (idempotent); freed in the close callback. reason is logged when
 * non-NULL. */
void ns_conn_close(struct ns_conn *c, const char *reason);
/* Moves c to state to; asserts the change is legal (conn_state.h). */
void ns_conn_set_state(struct ns_conn *c, enum ns_conn_state to);
/* Whether c is closing or closed: it sends and dispatches nothing more. */
static inline bool ns_conn_is_closing(const struct ns_conn *c)
{
    return c->state >= NS_CONN_CLOSING;
}
/* Appends an encoded frame and schedules a flush. 0, or NS_ENOMEM/NS_ETOOBIG
 * (closed). */
int ns_conn_queue(struct ns_conn *c, const struct ns_buf *frame);
/* The same for a frame whose body is shared: head (borrowed) is copied, body
 * (borrowed; the connection takes its own reference) is written from the
 * shared block without a copy (TLS connections and small bodies are
 * copied). */
int ns_conn_queue_shared(struct ns_conn *c, const struct ns_buf *head,
                         struct ns_rcbuf *body);
/* Flushes every connection with pending output (once per loop turn). */
void ns_conn_flush_all(struct ns_server *srv);
/* Closes connections idle longer than idle_ms. */
void ns_conn_sweep_idle(struct ns_server *srv, uint64_t idle_ms);
/* Re-evaluates read pausing after an in-flight request finished. */
void ns_conn_update_flow(struct ns_conn *c);
/* Cuts and dispatches plaintext bytes (borrowed) of a connection, buffering a
 * partial frame; conn_tls.c feeds it what it decrypted. */
void ns_conn_input(struct ns_conn *c, const uint8_t *p, size_t n);

/* --- conn_tls.c: the TLS side of connections --- */
/* Loads the contexts of cfg (NULL = disabled) into srv->tls. 0, NS_EIO
 * (logged) or NS_ENOMEM. */
int ns_conn_tls_init(struct ns_server *srv, const struct ns_server_tls *cfg);
/* SIGHUP: reloads the certificate files; on failure the old ones stay. 0,
 * NS_EIO or NS_ENOMEM. */
int ns_conn_tls_reload(struct ns_server *srv);
void ns_conn_tls_close(struct ns_server *srv);
/* Decides by the first byte of a connection: plain, TLS (c->tls is set) or
 * refused (closed, logged). 0 = go on, -1 = closed. */
int ns_conn_tls_classify(struct ns_conn *c, uint8_t first);
/* Decrypts ciphertext (borrowed) into ns_conn_input; closes c on a TLS
 * failure (logged). */
void ns_conn_tls_input(struct ns_conn *c, const uint8_t *p, size_t n);
/* Encrypts c->out (emptied) and returns every ciphertext byte to send (owned,
 * ns_free) with *len, or NULL when there is none or c was closed. */
uint8_t *ns_conn_tls_output(struct ns_conn *c, size_t *len);
/* Closes the connections whose TLS handshake did not finish within
 * NS_TLS_HANDSHAKE_MS (logged), so a stalled handshake holds no session for
 * the whole idle time. Walks the connections only when TLS is on. */
void ns_conn_tls_sweep_handshakes(struct ns_server *srv);
/* A request of c that holds bytes (counted in the buffer budget) is handled
 * off the loop: c dispatches nothing more until ns_conn_unhold (request order
 * is kept). */
void ns_conn_hold(struct ns_conn *c, size_t bytes);
void ns_conn_unhold(struct ns_conn *c, size_t bytes);

/* --- conn_limit.c --- */
/* Defaults for the zero fields of cfg (borrowed, may be NULL). 0 or
 * NS_ENOMEM. */
int ns_conn_limits_init(struct ns_conn_limits *l,
                        const struct ns_client_limits *cfg);
void ns_conn_limits_close(struct ns_conn_limits *l);
/* Counts a connection from ip when n_conns (this one included) and the
 * address's count allow it: NULL, else the reason (nothing counted, the refusal
 * counted in /metrics). */
const char *ns_conn_limits_admit(struct ns_conn_limits *l, size_t n_conns,
                                 const char *ip);
/* Uncounts a connection that was admitted from ip. */
void ns_conn_limits_release(struct ns_conn_limits *l, const char *ip);
/* Logs a refusal, at most one line a second. */
void ns_conn_limits_log(struct ns_conn_limits *l, uint64_t now_ms,
                        const char *peer, const char *reason);
/* Closes the connections holding the most buffered bytes until the total is
 * within clientBufferBudgetBytes. */
void ns_conn_limits_enforce_budget(struct ns_server *srv);

/* --- dispatch.c --- */
/* Handles one decoded request; non-zero = close the connection. */
int ns_dispatch(struct ns_server *srv, struct ns_conn *conn,
                const struct ns_cmd *cmd);
/* Re-dispatches a request whose ACL check already passed (a read held until
 * this node became ready); it is answered here or refused, never forwarded.
 * served_by as ns_reply_to. */
int ns_dispatch_authorised(struct ns_server *srv, struct ns_conn *conn,
                           const struct ns_cmd *cmd, uint64_t served_by);
/* A read another node forwarded (its client's ACL check passed there): as
 * ns_dispatch_authorised with served_by, and a code that is not a read is
 * refused with code 16. */
int ns_dispatch_forwarded(struct ns_server *srv, struct ns_conn *conn,
                          const struct ns_cmd *cmd, uint64_t served_by);

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
/* Leader tick: proposes the cluster file's accounts if the replicated table
 * was never seeded. */
void ns_acl_gate_seed(struct ns_server *srv);
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
/* A reply whose body is a shared block (borrowed; the connection takes its
 * own reference until the bytes are written): the cached route replies. */
int ns_reply_shared_body(const struct ns_reply_to *to, int32_t code,
                         struct ns_rcbuf *body);
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
/* A proposal the leader makes with no client waiting (expiry); the outcome is
 * logged. 0 or NS_E* (NS_ENOTLEADER on a follower). */
int ns_propose_internal(struct ns_server *srv, const struct ns_command *c);

/* --- pending.c --- */
/* Detaches every pending reply of a closing connection. */
void ns_pending_detach_all(struct ns_conn *c);

/* --- clock.c --- */
/* Wall-clock milliseconds for commands (leader_time_ms) and DataVersion
 * defaults. */
int64_t ns_clock_wall_ms(void);

/* --- liveness.c --- */
int ns_liveness_init(struct ns_liveness *lv);
void ns_liveness_close(struct ns_liveness *lv);
/* Records a registration: deadline = now + timeout, connection = conn
 * (borrowed, may be NULL). 0 or NS_ENOMEM. */
int ns_liveness_register(struct ns_server *srv, const char *cluster,
                         const char *addr, uint64_t now, uint64_t timeout_ms,
                         struct ns_conn *conn);
/* Refreshes a known broker (904, 322); false when unknown. */
bool ns_liveness_touch(struct ns_liveness *lv, const char *cluster,
                       const char *addr, uint64_t now);
void ns_liveness_remove(struct ns_liveness *lv, const char *cluster,
                        const char *addr);
/* Grants every known broker a full timeout from now. */
void ns_liveness_reset_all(struct ns_server *srv, uint64_t now);
/* Adds brokers of the route not yet known, with a full timeout from now. */
int ns_liveness_seed(struct ns_liveness *lv, const struct ns_route *route,
                     uint64_t now);
/* Expiry scan (leader only, every scanNotActiveBrokerInterval) and the close
 * of a connection that registered brokers (report or fast-path expiry). */
void ns_liveness_scan(struct ns_server *srv);
void ns_liveness_conn_closed(struct ns_server *srv, struct ns_conn *conn);
/* Once a second: reports to the leader, fast-path expiry, closing connections
 * of brokers gone from the route. */
void ns_liveness_tick(struct ns_server *srv);
/* Merges a report body from node `from`. 0, NS_EPROTO or NS_ENOMEM. */
int ns_liveness_merge_report(struct ns_server *srv, uint64_t from,
                             const uint8_t *body, size_t len);
/* Counters of this server's table, for metrics. */
uint64_t ns_liveness_n_expired(const struct ns_server *srv); /* all expiries */
uint64_t ns_liveness_n_fast_expired(const struct ns_server *srv); /* closed */
uint64_t ns_liveness_n_merged(const struct ns_server *srv); /* report entries */
size_t ns_liveness_n_brokers(const struct ns_server *srv);  /* tracked */
/* --- handle_liveness.c: NS_CODE_LIVENESS_REPORT --- */
int ns_handle_liveness_report(struct ns_req *req);

/* --- register_async.c --- */
/* True when a REGISTER_BROKER body may take long to decode: it is then
 * decoded off the loop. */
bool ns_register_async_wanted(const struct ns_cmd *cmd, bool compressed);
/* Copies the request, pauses its connection and decodes it (CRC check
 * included) on a pool thread, one at a time; ns_handle_broker_finish then runs
 * on the loop, unless the connection closed meanwhile. 0 or NS_ENOMEM. */
int ns_register_async_start(struct ns_req *req, bool compressed);
/* Frees what is still queued (server destroy). */
void ns_register_async_clear(struct ns_server *srv);
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
int ns_handle_status(struct ns_req *req); /* observe.c */
/* NS_CODE_DIGEST_REPORT (verdict.c), NS_CODE_STATE_FETCH (recovery.c) */
int ns_verdict_handle_digest_report(struct ns_req *req);
int ns_recovery_handle_state_fetch(struct ns_req *req);

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
