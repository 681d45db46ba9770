/* Held reads (docs/design.md §6, docs/readiness.md): a raftnsConsistent=true
 * read is a gate of dispatch: a copy of the request waits for the leader's read
 * index to be applied here, then goes to its handler; a read this node cannot
 * answer from its own state (not ready, diverged) is handed whole to the
 * leader (NS_CODE_READ_FORWARD) as re-encoded bytes, answered there, and the
 * answer relayed. It answers only the failures of a hold, never a read
 * itself. */
#include <stdio.h>
#include <string.h>

#include "cluster/cluster.h"
#include "gateway/gateway_int.h"
#include "raftns/alloc.h"
#include "raftns/codes.h"
#include "raftns/err.h"
#include "raftns/log.h"
#include "raftns/metrics.h"

/* A forwarded read gives up after the read-forward wait without an answer:
 * below the 3 s request timeout of stock clients (Java's and ali-ons'), so
 * that the client still gets the refusal it got before forwarding, and in
 * time to ask another name server. Without a leader it waits at most until
 * that long after the node lost its leader (an election takes one or two
 * election timeouts), so a node left without a quorum refuses at once rather
 * than each read late. */
/* Reads are small: a request over this is refused rather than copied to the
 * leader (and could not fit its frame limit inside a forward). */
#define FORWARD_MAX_BYTES (1024u * 1024u)

/* A held request (p->data of its pending reply, freed with it). */
struct ns_held_read {
    struct ns_pending *p;
    struct ns_wait wait;   /* for a leader to answer */
    const char *refusal;   /* static: the answer when nobody answers */
    bool local_when_ready; /* answered here once this node is ready */
    uint64_t deadline;     /* uv_now */
    size_t len;
    uint8_t bytes[]; /* the request, re-encoded */
};

/* Re-encodes req's request into a pending reply whose done is done. NULL when
 * out of memory (nothing held). */
static struct ns_held_read *hold(struct ns_req *req, ns_pending_done done)
{
    struct ns_buf b;
    ns_buf_init(&b);
    if (ns_cmd_encode(req->cmd, &b) != 0 || b.err != 0) {
        ns_buf_close(&b);
        return NULL;
    }
    struct ns_held_read *h = ns_calloc(1, sizeof *h + b.len);
    struct ns_pending *p = h != NULL ? ns_pending_new(req, done) : NULL;
    if (p == NULL) {
        ns_free(h);
        ns_buf_close(&b);
        return NULL;
    }
    h->p = p;
    h->len = b.len;
    memcpy(h->bytes, b.data, b.len);
    ns_buf_close(&b);
    p->data = h; /* freed with p */
    return h;
}

/* Runs the held request through dispatch again, on this node (it became
 * ready). The reply names p->to.served_by when the request came from another
 * node. */
static void run_again(struct ns_pending *p)
{
    struct ns_conn *conn = p->to.conn;
    struct ns_held_read *h = p->data;
    if (conn == NULL || ns_conn_is_closing(conn)) {
        return;
    }
    struct ns_cmd cmd;
    if (ns_cmd_decode(h->bytes, h->len, &cmd) != 0) {
        ns_reply_simple(&p->to, NS_CODE_SYSTEM_ERROR, "out of memory");
        return;
    }
    int rv = ns_dispatch_authorised(p->gw, conn, &cmd, p->to.served_by);
    ns_cmd_close(&cmd);
    if (rv != 0) {
        ns_conn_close(conn, "error answering a held read");
    }
}

/* --- raftnsConsistent=true reads: hold, confirm with the leader, answer --- */

/* A consistent read waiting (p->data): the request copied, its handler. */
struct consistent_read {
    struct ns_cmd cmd;
    ns_handler_fn handler;
};

static void answer_confirmed(struct ns_pending *p, struct consistent_read *k)
{
    struct ns_conn *conn = p->to.conn;
    if (conn == NULL || ns_conn_is_closing(conn)) {
        return;
    }
    if (ns_node_is_diverged(p->gw->node)) {
        ns_reply_simple(&p->to, 1, "not ready: this node's state diverged");
        return;
    }
    struct ns_req req = {.gw = p->gw, .conn = conn, .cmd = &k->cmd};
    req.to = p->to;
    if (k->handler(&req) != 0) {
        ns_conn_close(conn, "error answering a consistent read");
    }
}

static void consistent_done(struct ns_pending *p, int status,
                            const struct ns_apply_result *res)
{
    (void)res;
    struct consistent_read *k = p->data;
    if (status != 0) {
        ns_reply_remarkf(&p->to, NS_CODE_SYSTEM_ERROR,
                         "raftns: consistent read not confirmed by a leader: "
                         "%s",
                         ns_strerror(status));
    } else {
        answer_confirmed(p, k); /* from local state, applied to the index */
    }
    ns_cmd_close(&k->cmd);
}

static void consistent_applied(void *arg, int status)
{
    ns_pending_finish(arg, status, 0, NULL);
}

static void consistent_index(void *arg, int status, uint64_t index)
{
    struct ns_pending *p = arg;
#ifdef RAFTNS_BREAK_READ_NO_WAIT
    index = 0; /* TEST-ONLY MUTANT: a consistent read does not wait */
#endif
    if (status == 0) {
        status = ns_node_wait_applied(p->gw->node, index,
                                      p->gw->waits->consistent_read_ms,
                                      consistent_applied, p);
        if (status == 0) {
            return;
        }
    }
    ns_pending_finish(p, status, 0, NULL);
}

static void consistent_reply(void *arg, int status, const struct ns_cmd *reply)
{
    int64_t index = 0;
    if (status == 0 &&
        (reply->code != NS_CODE_SUCCESS ||
         !ns_cmd_ext_int64(reply, NS_EXT_INDEX, &index) || index < 0)) {
        status = NS_ENOTLEADER;
    }
    consistent_index(arg, status, (uint64_t)index);
}

bool ns_held_read_consistent(struct ns_req *req, ns_handler_fn handler)
{
    bool want = false;
    if (!ns_cmd_ext_bool(req->cmd, NS_EXT_CONSISTENT, &want) || !want) {
        return false;
    }
    struct consistent_read *k = ns_malloc(sizeof *k);
    if (k == NULL || ns_cmd_copy(req->cmd, &k->cmd) != 0) {
        ns_free(k);
        return false; /* answered unconfirmed rather than not at all */
    }
    k->handler = handler;
    struct ns_pending *p = ns_pending_new(req, consistent_done);
    if (p == NULL) {
        ns_cmd_close(&k->cmd);
        ns_free(k);
        return false;
    }
    p->data = k; /* freed with p, its copy closed by consistent_done */
    int rv;
    if (ns_node_is_leader(req->gw->node)) {
        rv = ns_node_read_index(req->gw->node, consistent_index, p);
    } else {
        struct ns_cmd ri;
        ns_cmd_init(&ri);
        ri.code = NS_CODE_READ_INDEX;
        ri.language = NS_LANG_OTHER;
        rv = ns_cluster_leader_request(req->gw->cluster, &ri,
                                       req->gw->waits->consistent_read_ms,
                                       consistent_reply, p);
        ns_cmd_close(&ri);
    }
    if (rv != 0) {
        ns_pending_finish(p, rv, 0, NULL);
    }
    return true;
}

/* --- reads this node cannot answer: to the leader, relayed back --- */

static void forward_done(struct ns_pending *p, int status,
                         const struct ns_apply_result *res)
{
    (void)res;
    struct ns_held_read *h = p->data;
    if (status != 0) {
        ns_reply_simple(&p->to, NS_CODE_SYSTEM_ERROR, h->refusal);
    }
}

/* The answering node's reply, as it is, to this node's client. */
static void relay(struct ns_pending *p, const struct ns_cmd *reply)
{
    struct ns_cmd out;
    ns_reply_init(&out, &p->to, reply->code);
    out.language = reply->language;
    out.version = reply->version;
    int rv = reply->remark != NULL ? ns_cmd_set_remark(&out, reply->remark) : 0;
    for (size_t i = 0; rv == 0 && i < reply->n_ext; i++) {
        rv = ns_cmd_ext_set(&out, reply->ext[i].key, reply->ext[i].value);
    }
    out.has_ext = reply->has_ext || out.n_ext > 0;
    out.body = reply->body;
    out.body_len = reply->body_len;
    if (rv != 0) {
        ns_cmd_close(&out);
        ns_reply_simple(&p->to, NS_CODE_SYSTEM_ERROR, "out of memory");
        return;
    }
    ns_reply_send(&p->to, &out);
}

static void forward_send(struct ns_held_read *h);

static bool stopping(const struct ns_gateway *gw)
{
    return gw->stopping || ns_cluster_is_stopping(gw->cluster);
}

/* Until the next cluster tick, or answered now when the deadline passed. */
static void wait_for_leader(struct ns_held_read *h)
{
    struct ns_gateway *gw = h->p->gw;
    if (stopping(gw) || h->p->to.conn == NULL ||
        ns_gateway_now(gw) >= h->deadline) {
        ns_pending_finish(h->p, stopping(gw) ? NS_ESHUTDOWN : NS_ETIMEDOUT, 0,
                          NULL);
        return;
    }
    ns_cluster_wait_again(gw->cluster, &h->wait);
}

static void forward_reply(void *arg, int status, const struct ns_cmd *reply)
{
    struct ns_held_read *h = arg;
    /* Only a node that answered from its own state names itself; anything
     * else (not ready there, not the leader any more, lost) is tried again. */
    if (status == 0 && ns_cmd_ext_find(reply, NS_EXT_SERVED_BY) != NULL) {
        relay(h->p, reply);
        ns_metrics_read_forwarded();
        ns_pending_finish(h->p, 0, 0, NULL);
        return;
    }
    wait_for_leader(h);
}

static void forward_send(struct ns_held_read *h)
{
    struct ns_pending *p = h->p;
    struct ns_gateway *gw = p->gw;
    struct ns_node *node = gw->node;
    if (!stopping(gw) && h->local_when_ready && ns_node_is_ready(node) &&
        !ns_node_is_diverged(node)) {
        run_again(p);
        ns_pending_finish(p, 0, 0, NULL);
        return;
    }
    uint64_t now = ns_gateway_now(gw);
    uint64_t leader = ns_node_leader_id(node);
    if (!h->local_when_ready && leader == ns_node_id(node)) {
        ns_pending_finish(p, NS_ENOTLEADER, 0, NULL); /* nobody to ask */
        return;
    }
    if (!stopping(gw) && now < h->deadline && leader != 0 &&
        leader != ns_node_id(node)) {
        struct ns_cmd fwd;
        ns_cmd_init(&fwd);
        fwd.code = NS_CODE_READ_FORWARD;
        fwd.language = NS_LANG_OTHER;
        fwd.body = h->bytes;
        fwd.body_len = h->len;
        int rv = ns_cluster_leader_request(gw->cluster, &fwd, h->deadline - now,
                                           forward_reply, h);
        ns_cmd_close(&fwd);
        if (rv == 0) {
            return;
        }
    }
    wait_for_leader(h);
}

static void held_retry(void *data)
{
    forward_send(data);
}

int ns_held_read_forward(struct ns_req *req, const char *refusal,
                         bool local_when_ready)
{
    if (req->to.oneway) {
        return 0; /* nobody waits for an answer */
    }
    struct ns_held_read *h = hold(req, forward_done);
    if (h == NULL) {
        return ns_reply_simple(&req->to, NS_CODE_SYSTEM_ERROR, refusal);
    }
    struct ns_gateway *gw = req->gw;
    uint64_t now = ns_gateway_now(gw);
    uint64_t since = now;
    uint64_t lost = ns_cluster_leaderless_since(gw->cluster);
    if (ns_node_leader_id(gw->node) == 0 && lost != 0) {
        since = lost;
    }
    h->wait.retry = held_retry;
    h->wait.data = h;
    h->refusal = refusal;
    h->local_when_ready = local_when_ready;
    h->deadline = since + gw->waits->read_forward_ms;
    if (h->len > FORWARD_MAX_BYTES) {
        ns_pending_finish(h->p, NS_ETOOBIG, 0, NULL);
        return 0;
    }
    NS_LOG(NS_LOG_DEBUG, "conn %llu %s: code %d opaque %d: %s; to the leader",
           (unsigned long long)req->conn->id, req->conn->peer,
           (int)req->cmd->code, (int)req->cmd->opaque, refusal);
    forward_send(h);
    return 0;
}

int ns_held_read_serve(struct ns_req *req)
{
    struct ns_gateway *gw = req->gw;
    if (!ns_node_is_ready(gw->node) || ns_node_is_diverged(gw->node)) {
        return ns_reply_simple(&req->to, NS_CODE_SYSTEM_ERROR,
                               "raftns: not ready to answer a forwarded read");
    }
    size_t flen = 0;
    struct ns_cmd inner;
    if (ns_frame_check(req->cmd->body, req->cmd->body_len, NS_FRAME_MAX,
                       &flen) != 0 ||
        flen != req->cmd->body_len ||
        ns_cmd_decode(req->cmd->body, req->cmd->body_len, &inner) != 0) {
        NS_LOG(NS_LOG_WARN, "conn %llu %s: forwarded read does not decode",
               (unsigned long long)req->conn->id, req->conn->peer);
        return ns_reply_simple(&req->to, NS_CODE_SYSTEM_ERROR,
                               "raftns: forwarded read does not decode");
    }
    /* answered on this connection as the forward's own reply */
    inner.opaque = req->cmd->opaque;
    inner.flag = 0;
    int rv = ns_dispatch_forwarded(gw, req->conn, &inner, ns_node_id(gw->node));
    ns_cmd_close(&inner);
    return rv;
}
