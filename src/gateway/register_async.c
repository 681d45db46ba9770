/* REGISTER_BROKER bodies that may take long to decode are CRC-checked and
 * decoded on a libuv pool thread, so the loop keeps serving other clients: a
 * JSON body of NS_REGISTER_ASYNC_MIN bytes or more (a 16 MiB body takes ~15
 * ms), and every compressed one (63 KB of zlib can inflate to 64 MiB: ~300
 * ms). The decoder is pure and reads only the request's copy made here. One
 * body is decoded at a time, so raft's disk work always finds a pool thread;
 * the connection reads nothing more meanwhile, so its requests are dispatched
 * and answered in order. A decoded command too large to replicate is refused
 * from here, before it is encoded on the loop. The route check, the proposal
 * and the apply stay on the loop (handle_broker.c). */
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/log.h"
#include "raftns/metrics.h"
#include "cluster/cluster.h"
#include "gateway/gateway_int.h"

#define NS_REGISTER_ASYNC_MIN (256u * 1024u)

struct ns_reg_work {
    uv_work_t work;
    struct ns_gateway *gw;
    struct ns_pending *hold; /* the reply target; conn NULL once it closed */
    struct ns_cmd cmd;       /* copy: version, ext fields, body */
    uint8_t *body;           /* owned, cmd.body */
    bool compressed;
    struct ns_command c; /* header filled on the loop, body off it */
    int rv;
    bool crc_bad;
    size_t command_len; /* encoded size of the decoded command */
    char errmsg[256];
    struct ns_reg_work *next;
};

bool ns_register_async_wanted(const struct ns_cmd *cmd, bool compressed)
{
    if (cmd->body_len == 0) {
        return false;
    }
    return (compressed && cmd->version >= 37) ||
           cmd->body_len >= NS_REGISTER_ASYNC_MIN;
}

static void hold_done(struct ns_pending *p, int status,
                      const struct ns_apply_result *res)
{
    (void)p;
    (void)status;
    (void)res;
}

static void work_free(struct ns_reg_work *w)
{
    ns_command_close(&w->c);
    ns_cmd_close(&w->cmd);
    ns_free(w->body);
    ns_free(w);
}

/* Ends the hold: the connection (if still open) may read again. Returns it. */
static struct ns_conn *release(struct ns_reg_work *w, struct ns_reply_to *to)
{
    struct ns_conn *conn = w->hold->to.conn;
    *to = w->hold->to;
    if (conn != NULL) {
        ns_conn_unhold(conn, w->cmd.body_len);
    }
    ns_pending_finish(w->hold, 0, 0, NULL);
    w->hold = NULL;
    return conn;
}

static void work_cb(uv_work_t *req)
{
    struct ns_reg_work *w = req->data;
    w->crc_bad = ns_handle_broker_check_crc(&w->cmd) != 0;
    if (w->crc_bad) {
        return;
    }
    w->rv = ns_register_decode_body(
        &w->c.u.reg, w->cmd.version, w->compressed, w->cmd.body,
        w->cmd.body_len, w->c.leader_time_ms, w->errmsg, sizeof w->errmsg);
    if (w->rv == 0) {
        /* Measured here: encoding a command too large to replicate (a zlib
         * body inflates to 64 MiB) would stall the loop before it is refused.
         */
        struct ns_buf b;
        ns_buf_init(&b);
        if (ns_command_encode(&w->c, &b) == 0 && b.err == 0) {
            w->command_len = b.len;
        }
        ns_buf_close(&b);
    }
}

static void kick(struct ns_gateway *gw);

static void after_cb(uv_work_t *req, int status)
{
    struct ns_reg_work *w = req->data;
    struct ns_gateway *gw = w->gw;
    struct ns_reply_to to;
    gw->reg_running = NULL;
    struct ns_conn *conn = release(w, &to);
    if (conn != NULL && !gw->stopping && status == 0) {
        struct ns_req r = {.gw = gw, .conn = conn, .cmd = &w->cmd, .to = to};
        int rv;
        if (!w->crc_bad && w->rv == 0 && w->command_len > NS_COMMAND_MAX) {
            ns_metrics_limit(NS_LIMIT_COMMAND_SIZE);
            NS_LOG(NS_LOG_WARN,
                   "conn %llu %s: register refused: a %zu-byte command (at "
                   "most %u bytes)",
                   (unsigned long long)conn->id, conn->peer, w->command_len,
                   (unsigned)NS_COMMAND_MAX);
            rv = ns_reply_write_error(&to, NS_ETOOBIG);
        } else {
            rv = ns_handle_broker_finish(&r, &w->c, w->crc_bad, w->rv,
                                         w->errmsg);
        }
        if (rv != 0) {
            NS_LOG(NS_LOG_WARN, "conn %llu %s: request failed: %s",
                   (unsigned long long)conn->id, conn->peer, ns_strerror(rv));
            ns_conn_close(conn, NULL);
        }
    }
    work_free(w);
    kick(gw);
}

/* Starts the next queued decode whose connection is still open. */
static void kick(struct ns_gateway *gw)
{
    while (gw->reg_running == NULL && gw->reg_queue != NULL) {
        struct ns_reg_work *w = gw->reg_queue;
        gw->reg_queue = w->next;
        if (gw->reg_queue == NULL) {
            gw->reg_queue_tail = NULL;
        }
        struct ns_reply_to to;
        if (w->hold->to.conn == NULL || gw->stopping) {
            release(w, &to);
            work_free(w);
            continue;
        }
        w->work.data = w;
        gw->reg_running = w;
        if (uv_queue_work(gw->loop, &w->work, work_cb, after_cb) != 0) {
            work_cb(&w->work); /* no pool: decode here */
            after_cb(&w->work, 0);
        }
    }
}

/* Drops queued decodes of closed connections: what they hold is freed at once
 * rather than when the queue reaches them. */
static void purge(struct ns_gateway *gw)
{
    struct ns_reg_work **pp = &gw->reg_queue;
    gw->reg_queue_tail = NULL;
    while (*pp != NULL) {
        struct ns_reg_work *w = *pp;
        if (w->hold->to.conn != NULL) {
            gw->reg_queue_tail = w;
            pp = &w->next;
            continue;
        }
        *pp = w->next;
        struct ns_reply_to to;
        release(w, &to);
        work_free(w);
    }
}

static int copy_request(struct ns_reg_work *w, const struct ns_cmd *cmd)
{
    ns_cmd_init(&w->cmd);
    w->cmd.code = cmd->code;
    w->cmd.language = cmd->language;
    w->cmd.version = cmd->version;
    w->cmd.opaque = cmd->opaque;
    w->cmd.ser = cmd->ser;
    for (size_t i = 0; i < cmd->n_ext; i++) {
        if (ns_cmd_ext_set(&w->cmd, cmd->ext[i].key, cmd->ext[i].value) != 0) {
            return NS_ENOMEM;
        }
    }
    w->body = ns_malloc(cmd->body_len);
    if (w->body == NULL) {
        return NS_ENOMEM;
    }
    memcpy(w->body, cmd->body, cmd->body_len);
    w->cmd.body = w->body;
    w->cmd.body_len = cmd->body_len;
    return 0;
}

int ns_register_async_start(struct ns_req *req, bool compressed)
{
    struct ns_gateway *gw = req->gw;
    struct ns_reg_work *w = ns_calloc(1, sizeof *w);
    if (w == NULL) {
        return NS_ENOMEM;
    }
    w->gw = gw;
    w->compressed = compressed;
    ns_command_init(&w->c, NS_CMD_REGISTER_BROKER);
    ns_register_init(&w->c.u.reg);
    w->c.leader_time_ms = ns_clock_wall_ms();
    int rv = copy_request(w, req->cmd);
    if (rv == 0) {
        rv = ns_handle_broker_fill_header(&w->cmd, &w->c.u.reg);
    }
    if (rv != 0) {
        work_free(w);
        return rv;
    }
    /* Paused before the pending attaches, which re-evaluates the flow. */
    ns_conn_hold(req->conn, w->cmd.body_len);
    w->hold = ns_pending_new(req, hold_done);
    if (w->hold == NULL) {
        ns_conn_unhold(req->conn, w->cmd.body_len);
        work_free(w);
        return NS_ENOMEM;
    }
    purge(gw);
    if (gw->reg_queue_tail != NULL) {
        gw->reg_queue_tail->next = w;
    } else {
        gw->reg_queue = w;
    }
    gw->reg_queue_tail = w;
    kick(gw);
    return 0;
}

void ns_register_async_clear(struct ns_gateway *gw)
{
    while (gw->reg_queue != NULL) {
        struct ns_reg_work *w = gw->reg_queue;
        gw->reg_queue = w->next;
        struct ns_reply_to to;
        release(w, &to);
        work_free(w);
    }
    gw->reg_queue_tail = NULL;
}
