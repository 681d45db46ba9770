/* The node-to-node client: one persistent TCP connection to another node's
 * client port, requests matched by opaque, a timer for timeouts, reconnection
 * on the next request after a failure. It knows nothing about what the
 * requests mean (cluster.c, handle_cluster.c and liveness do). */
#include "net/peer.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/addr.h"
#include "raftns/alloc.h"
#include "raftns/buf.h"
#include "raftns/err.h"
#include "raftns/log.h"
#include "raftns/tls.h"

#define TICK_MS 50
#define CONNECT_TIMEOUT_MS 1000
#define PEER_READ_CHUNK 65536

struct call {
    int32_t opaque;
    uint64_t deadline;
    ns_peer_reply_cb cb;
    void *arg;
    struct call *next;
};

/* One TCP connection; outlives the peer's interest until its close callback. */
struct pconn {
    uv_tcp_t tcp; /* first: the handle is the allocation */
    uv_connect_t creq;
    struct tcp_peer *peer; /* NULL once detached */
    bool connected;
    uint64_t started;
    struct ns_buf rbuf;
    struct ns_tls *tls; /* owned; NULL on a plain connection */
};

struct wreq {
    uv_write_t req;
    uint8_t *data;
};

/* The TCP implementation of struct ns_peer. */
struct tcp_peer {
    struct ns_peer base; /* first: the ops see a struct ns_peer */
    uv_loop_t *loop;
    char *addr;
    struct pconn *conn;
    struct ns_buf out; /* frames waiting for the connection */
    struct call *calls;
    int32_t next_opaque;
    uv_timer_t timer;
    /* Frames queued in one loop turn go out in one write, after the turn's
     * I/O callbacks (flush_check); flush_kick keeps the loop from blocking
     * in poll while frames queued outside them wait. */
    uv_check_t flush_check;
    uv_idle_t flush_kick;
    int open_handles;
    bool closing;
    struct ns_tls_ctx *const *tls_ctx; /* borrowed slot, may be NULL */
    ns_peer_close_cb close_cb;
    void *close_arg;
};

static const struct ns_peer_ops tcp_ops;

int ns_peer_create(uv_loop_t *loop, struct ns_peer **out)
{
    struct tcp_peer *p = ns_calloc(1, sizeof *p);
    if (p == NULL) {
        return NS_ENOMEM;
    }
    p->loop = loop;
    p->next_opaque = 1;
    ns_buf_init(&p->out);
    uv_timer_init(loop, &p->timer);
    p->timer.data = p;
    uv_check_init(loop, &p->flush_check);
    p->flush_check.data = p;
    uv_idle_init(loop, &p->flush_kick);
    p->flush_kick.data = p;
    p->open_handles = 3;
    p->base.ops = &tcp_ops;
    *out = &p->base;
    return 0;
}

static const char *tcp_addr(const struct tcp_peer *p)
{
    return p->addr;
}

void ns_peer_use_tls(struct ns_peer *base, struct ns_tls_ctx *const *slot)
{
    assert(base->ops == &tcp_ops);
    ((struct tcp_peer *)base)->tls_ctx = slot;
}

static bool tcp_is_connected(const struct tcp_peer *p)
{
    return p->conn != NULL && p->conn->connected;
}

static void fail_calls(struct tcp_peer *p, int status)
{
    struct call *c = p->calls;
    p->calls = NULL;
    while (c != NULL) {
        struct call *next = c->next;
        c->cb(c->arg, status, NULL);
        ns_free(c);
        c = next;
    }
}

static void conn_closed(uv_handle_t *h)
{
    struct pconn *pc = h->data;
    ns_buf_close(&pc->rbuf);
    ns_tls_destroy(pc->tls);
    ns_free(pc);
}

/* Drops the connection and fails everything in flight with status. */
static void drop(struct tcp_peer *p, int status)
{
    struct pconn *pc = p->conn;
    if (pc != NULL) {
        p->conn = NULL;
        pc->peer = NULL;
        uv_close((uv_handle_t *)&pc->tcp, conn_closed);
    }
    ns_buf_reset(&p->out);
    fail_calls(p, status);
}

static void write_cb(uv_write_t *req, int status)
{
    struct wreq *w = (struct wreq *)req;
    (void)status; /* a failed write shows up as a read error or a timeout */
    ns_free(w->data);
    ns_free(w);
}

/* Encrypts the queued frames (emptied) and takes every ciphertext byte to send
 * (*data NULL when there is none). 0 or an NS_E* code: drop. */
static int tls_output(struct tcp_peer *p, uint8_t **data, size_t *len)
{
    struct ns_tls *t = p->conn->tls;
    *data = NULL;
    if (p->out.len > 0) {
        int rv = ns_tls_write(t, p->out.data, p->out.len);
        ns_buf_reset(&p->out);
        if (rv != 0) {
            return rv;
        }
    }
    if (ns_tls_pending(t) == 0) {
        return 0;
    }
    struct ns_buf wire;
    ns_buf_init(&wire);
    if (ns_tls_drain(t, &wire) != 0) {
        ns_buf_close(&wire);
        return NS_ENOMEM;
    }
    *data = ns_buf_take(&wire, len);
    return 0;
}

static void flush_out(struct tcp_peer *p)
{
    struct pconn *pc = p->conn;
    if (pc == NULL || !pc->connected ||
        (p->out.len == 0 &&
         (pc->tls == NULL || ns_tls_pending(pc->tls) == 0))) {
        return;
    }
    struct wreq *w = ns_calloc(1, sizeof *w);
    if (w == NULL) {
        return; /* retried at the next request or timeout */
    }
    size_t len = 0;
    if (pc->tls == NULL) {
        w->data = ns_buf_take(&p->out, &len);
    } else {
        int rv = tls_output(p, &w->data, &len);
        if (rv != 0 || w->data == NULL) {
            ns_free(w);
            if (rv != 0) {
                NS_LOG(NS_LOG_WARN, "peer %s: TLS: %s", p->addr,
                       rv == NS_EPROTO ? ns_tls_error(pc->tls)
                                       : ns_strerror(rv));
                drop(p, NS_EIO);
            }
            return;
        }
    }
    uv_buf_t b = uv_buf_init((char *)w->data, (unsigned)len);
    if (uv_write(&w->req, (uv_stream_t *)&pc->tcp, &b, 1, write_cb) != 0) {
        ns_free(w->data);
        ns_free(w);
        drop(p, NS_EIO);
    }
}

static struct call *take_call(struct tcp_peer *p, int32_t opaque)
{
    for (struct call **cc = &p->calls; *cc != NULL; cc = &(*cc)->next) {
        struct call *c = *cc;
        if (c->opaque == opaque) {
            *cc = c->next;
            return c;
        }
    }
    return NULL;
}

/* Handles every whole frame in rbuf. Returns false when the connection must
 * go. */
static bool process_frames(struct pconn *pc)
{
    size_t used = 0;
    bool ok = true;
    while (pc->peer != NULL && used < pc->rbuf.len) {
        size_t flen = 0;
        int rv = ns_frame_check(pc->rbuf.data + used, pc->rbuf.len - used,
                                NS_FRAME_MAX, &flen);
        if (rv == NS_EAGAIN) {
            break;
        }
        struct ns_cmd cmd;
        if (rv != 0 || ns_cmd_decode(pc->rbuf.data + used, flen, &cmd) != 0) {
            ok = false;
            break;
        }
        used += flen;
        if (cmd.flag & NS_FLAG_RESPONSE) {
            struct call *c = take_call(pc->peer, cmd.opaque);
            if (c != NULL) {
                c->cb(c->arg, 0, &cmd);
                ns_free(c);
            }
        }
        ns_cmd_close(&cmd);
    }
    if (used == pc->rbuf.len) {
        ns_buf_reset(&pc->rbuf);
    } else if (used > 0) {
        memmove(pc->rbuf.data, pc->rbuf.data + used, pc->rbuf.len - used);
        pc->rbuf.len -= used;
    }
    return ok;
}

static void alloc_cb(uv_handle_t *h, size_t size, uv_buf_t *buf)
{
    (void)h;
    (void)size;
    buf->base = ns_malloc(PEER_READ_CHUNK);
    buf->len = buf->base != NULL ? PEER_READ_CHUNK : 0;
}

/* Decrypts what arrived into rbuf, reusing the read chunk (the ciphertext is
 * copied by the feed). 0 or an NS_E* code. */
static int tls_input(struct pconn *pc, uint8_t *chunk, size_t n)
{
    int rv = ns_tls_feed(pc->tls, chunk, n);
    size_t got = PEER_READ_CHUNK;
    while (rv == 0 && got == PEER_READ_CHUNK) {
        rv = ns_tls_read(pc->tls, chunk, PEER_READ_CHUNK, &got);
        if (rv == 0 && ns_buf_append(&pc->rbuf, chunk, got) != 0) {
            rv = NS_ENOMEM;
        }
    }
    return rv;
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct pconn *pc = s->data;
    struct tcp_peer *p = pc->peer;
    if (nread > 0 && p != NULL && pc->tls != NULL) {
        int rv = tls_input(pc, (uint8_t *)buf->base, (size_t)nread);
        if (rv != 0) {
            NS_LOG(NS_LOG_WARN, "peer %s: TLS: %s; reconnecting", p->addr,
                   rv == NS_EPROTO ? ns_tls_error(pc->tls) : ns_strerror(rv));
            drop(p, NS_EIO);
        } else if (!process_frames(pc)) {
            NS_LOG(NS_LOG_WARN, "peer %s: bad reply stream; reconnecting",
                   p->addr);
            drop(p, NS_EIO);
        } else if (pc->peer != NULL) {
            flush_out(p); /* handshake records, and frames queued before it */
        }
    } else if (nread > 0 && p != NULL) {
        if (ns_buf_append(&pc->rbuf, buf->base, (size_t)nread) != 0 ||
            !process_frames(pc)) {
            NS_LOG(NS_LOG_WARN, "peer %s: bad reply stream; reconnecting",
                   p->addr);
            drop(p, NS_EIO);
        }
    } else if (nread < 0 && p != NULL) {
        NS_LOG(NS_LOG_INFO, "peer %s: connection closed: %s", p->addr,
               uv_strerror((int)nread));
        drop(p, NS_EIO);
    }
    ns_free(buf->base);
}

/* Starts a client session that verifies the server names the peer's IP. */
static int start_tls(struct tcp_peer *p, struct pconn *pc)
{
    char ip[64];
    snprintf(ip, sizeof ip, "%s", p->addr);
    char *colon = strrchr(ip, ':');
    if (colon != NULL) {
        *colon = '\0';
    }
    return ns_tls_create(*p->tls_ctx, ip, &pc->tls);
}

static void connect_cb(uv_connect_t *req, int status)
{
    struct pconn *pc = req->data;
    struct tcp_peer *p = pc->peer;
    if (p == NULL) {
        return; /* detached: already closing */
    }
    if (status != 0) {
        NS_LOG(NS_LOG_INFO, "peer %s: connect failed: %s", p->addr,
               uv_strerror(status));
        drop(p, NS_EIO);
        return;
    }
    if (p->tls_ctx != NULL && *p->tls_ctx != NULL && start_tls(p, pc) != 0) {
        NS_LOG(NS_LOG_WARN, "peer %s: cannot start TLS", p->addr);
        drop(p, NS_EIO);
        return;
    }
    pc->connected = true;
    uv_tcp_nodelay(&pc->tcp, 1);
    uv_read_start((uv_stream_t *)&pc->tcp, alloc_cb, read_cb);
    flush_out(p);
}

static int ensure_conn(struct tcp_peer *p)
{
    if (p->conn != NULL) {
        return 0;
    }
    struct sockaddr_in sa;
    if (p->addr == NULL || ns_addr_parse_ipv4(p->addr, &sa) != 0) {
        return NS_ENOTFOUND;
    }
    struct pconn *pc = ns_calloc(1, sizeof *pc);
    if (pc == NULL) {
        return NS_ENOMEM;
    }
    ns_buf_init(&pc->rbuf);
    pc->peer = p;
    pc->started = uv_now(p->loop);
    uv_tcp_init(p->loop, &pc->tcp);
    pc->tcp.data = pc;
    pc->creq.data = pc;
    p->conn = pc;
    int rv = uv_tcp_connect(&pc->creq, &pc->tcp, (const struct sockaddr *)&sa,
                            connect_cb);
    if (rv != 0) {
        NS_LOG(NS_LOG_INFO, "peer %s: connect failed: %s", p->addr,
               uv_strerror(rv));
        p->conn = NULL;
        pc->peer = NULL;
        uv_close((uv_handle_t *)&pc->tcp, conn_closed);
        return NS_ENOTFOUND;
    }
    return 0;
}

static int tcp_set_addr(struct tcp_peer *p, const char *addr)
{
    if (addr != NULL && p->addr != NULL && strcmp(addr, p->addr) == 0) {
        return 0;
    }
    char *copy = NULL;
    if (addr != NULL && (copy = ns_strdup(addr)) == NULL) {
        return NS_ENOMEM;
    }
    drop(p, NS_EIO);
    ns_free(p->addr);
    p->addr = copy;
    return 0;
}

static void tick_cb(uv_timer_t *t)
{
    struct tcp_peer *p = t->data;
    uint64_t now = uv_now(p->loop);
    if (p->conn != NULL && !p->conn->connected &&
        now - p->conn->started > CONNECT_TIMEOUT_MS) {
        NS_LOG(NS_LOG_INFO, "peer %s: connect timed out", p->addr);
        drop(p, NS_EIO);
    }
    struct call *expired = NULL;
    struct call **cc = &p->calls;
    while (*cc != NULL) {
        struct call *c = *cc;
        if (c->deadline <= now) {
            *cc = c->next;
            c->next = expired;
            expired = c;
        } else {
            cc = &c->next;
        }
    }
    while (expired != NULL) {
        struct call *c = expired;
        expired = c->next;
        c->cb(c->arg, NS_ETIMEDOUT, NULL);
        ns_free(c);
    }
    if (p->calls == NULL) {
        uv_timer_stop(&p->timer);
    }
}

static void flush_check_cb(uv_check_t *h)
{
    struct tcp_peer *p = h->data;
    uv_check_stop(&p->flush_check);
    uv_idle_stop(&p->flush_kick);
    flush_out(p);
}

static void flush_kick_cb(uv_idle_t *h)
{
    (void)h; /* only keeps poll from blocking until flush_check runs */
}

static int send_frame(struct tcp_peer *p, struct ns_cmd *req)
{
    int rv = ensure_conn(p);
    if (rv != 0) {
        return rv;
    }
    size_t before = p->out.len;
    rv = ns_cmd_encode(req, &p->out);
    if (rv != 0 || p->out.err != 0) {
        p->out.len = before;
        p->out.err = 0;
        return NS_ENOMEM;
    }
    if (!uv_is_active((uv_handle_t *)&p->flush_check)) {
        uv_check_start(&p->flush_check, flush_check_cb);
        uv_idle_start(&p->flush_kick, flush_kick_cb);
    }
    return 0;
}

static int tcp_request(struct tcp_peer *p, struct ns_cmd *req,
                       uint64_t timeout_ms, ns_peer_reply_cb cb, void *arg)
{
    if (p->closing) {
        return NS_ENOTFOUND;
    }
    struct call *c = ns_calloc(1, sizeof *c);
    if (c == NULL) {
        return NS_ENOMEM;
    }
    req->opaque = p->next_opaque++;
    if (p->next_opaque <= 0) {
        p->next_opaque = 1;
    }
    req->flag = 0;
    int rv = send_frame(p, req);
    if (rv != 0) {
        ns_free(c);
        return rv;
    }
    c->opaque = req->opaque;
    c->deadline = uv_now(p->loop) + timeout_ms;
    c->cb = cb;
    c->arg = arg;
    c->next = p->calls;
    p->calls = c;
    if (!uv_is_active((uv_handle_t *)&p->timer)) {
        uv_timer_start(&p->timer, tick_cb, TICK_MS, TICK_MS);
    }
    return 0;
}

static int tcp_oneway(struct tcp_peer *p, struct ns_cmd *req)
{
    if (p->closing) {
        return NS_ENOTFOUND;
    }
    req->opaque = p->next_opaque++;
    if (p->next_opaque <= 0) {
        p->next_opaque = 1;
    }
    req->flag = NS_FLAG_ONEWAY;
    return send_frame(p, req);
}

static void handle_closed(uv_handle_t *h)
{
    struct tcp_peer *p = h->data;
    if (--p->open_handles > 0) {
        return;
    }
    if (p->close_cb != NULL) {
        p->close_cb(p->close_arg);
    }
    ns_free(p);
}

static void tcp_close(struct tcp_peer *p, ns_peer_close_cb cb, void *arg)
{
    if (p == NULL || p->closing) {
        return;
    }
    p->closing = true;
    p->close_cb = cb;
    p->close_arg = arg;
    drop(p, NS_ESHUTDOWN);
    ns_buf_close(&p->out);
    ns_free(p->addr);
    p->addr = NULL;
    uv_close((uv_handle_t *)&p->timer, handle_closed);
    uv_close((uv_handle_t *)&p->flush_check, handle_closed);
    uv_close((uv_handle_t *)&p->flush_kick, handle_closed);
}

/* --- struct ns_peer over TCP, and the calls every implementation answers ---
 */

#define TCP(p) ((struct tcp_peer *)(p))

static int op_set_addr(struct ns_peer *p, const char *addr)
{
    return tcp_set_addr(TCP(p), addr);
}

static const char *op_addr(const struct ns_peer *p)
{
    return tcp_addr((const struct tcp_peer *)p);
}

static bool op_is_connected(const struct ns_peer *p)
{
    return tcp_is_connected((const struct tcp_peer *)p);
}

static int op_request(struct ns_peer *p, struct ns_cmd *req,
                      uint64_t timeout_ms, ns_peer_reply_cb cb, void *arg)
{
    return tcp_request(TCP(p), req, timeout_ms, cb, arg);
}

static int op_oneway(struct ns_peer *p, struct ns_cmd *req)
{
    return tcp_oneway(TCP(p), req);
}

static void op_close(struct ns_peer *p, ns_peer_close_cb cb, void *arg)
{
    tcp_close(TCP(p), cb, arg);
}

static const struct ns_peer_ops tcp_ops = {
    .set_addr = op_set_addr,
    .addr = op_addr,
    .is_connected = op_is_connected,
    .request = op_request,
    .oneway = op_oneway,
    .close = op_close,
};

int ns_peer_set_addr(struct ns_peer *p, const char *addr)
{
    return p->ops->set_addr(p, addr);
}

const char *ns_peer_addr(const struct ns_peer *p)
{
    return p->ops->addr(p);
}

bool ns_peer_is_connected(const struct ns_peer *p)
{
    return p->ops->is_connected(p);
}

int ns_peer_request(struct ns_peer *p, struct ns_cmd *req, uint64_t timeout_ms,
                    ns_peer_reply_cb cb, void *arg)
{
    return p->ops->request(p, req, timeout_ms, cb, arg);
}

int ns_peer_oneway(struct ns_peer *p, struct ns_cmd *req)
{
    return p->ops->oneway(p, req);
}

void ns_peer_close(struct ns_peer *p, ns_peer_close_cb cb, void *arg)
{
    if (p != NULL) {
        p->ops->close(p, cb, arg);
    }
}
