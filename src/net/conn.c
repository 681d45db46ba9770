/* Client connections: accept, read and cut frames, queue encoded replies and
 * flush them once per loop turn, flow control, idle close. A connection's
 * lifecycle is one state (conn_state.h), changed only by ns_conn_set_state.
 * One allocation per connection (the uv_tcp_t is embedded), freed only in the
 * close callback. Request meaning lives in dispatch.c. */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/log.h"
#include "raftns/tls.h"
#include "net/net_int.h"

void ns_conn_set_state(struct ns_conn *c, enum ns_conn_state to)
{
    assert(ns_conn_state_is_legal(c->state, to));
    c->state = to;
}

static void list_unlink(struct ns_net *net, struct ns_conn *c)
{
    if (c->prev != NULL) {
        c->prev->next = c->next;
    } else {
        net->conn_head = c->next;
    }
    if (c->next != NULL) {
        c->next->prev = c->prev;
    } else {
        net->conn_tail = c->prev;
    }
    c->prev = c->next = NULL;
}

static void list_append(struct ns_net *net, struct ns_conn *c)
{
    c->prev = net->conn_tail;
    c->next = NULL;
    if (net->conn_tail != NULL) {
        net->conn_tail->next = c;
    } else {
        net->conn_head = c;
    }
    net->conn_tail = c;
}

/* Moves c to the most-recently-active end, so the idle sweep reads from the
 * head only. */
static void mark_active(struct ns_conn *c)
{
    c->last_active = ns_net_now(c->net);
    if (!ns_conn_is_closing(c) && c->net->conn_tail != c) {
        list_unlink(c->net, c);
        list_append(c->net, c);
    }
}

static void mark_dirty(struct ns_conn *c)
{
    if (!c->dirty) {
        c->dirty = true;
        c->dirty_next = c->net->dirty;
        c->net->dirty = c;
    }
}

/* --- fair scheduling: the backlog --- */

static void backlog_unlink(struct ns_net *net, struct ns_conn *c)
{
    if (!c->deferred) {
        return;
    }
    if (c->backlog_prev != NULL) {
        c->backlog_prev->backlog_next = c->backlog_next;
    } else {
        net->backlog_head = c->backlog_next;
    }
    if (c->backlog_next != NULL) {
        c->backlog_next->backlog_prev = c->backlog_prev;
    } else {
        net->backlog_tail = c->backlog_prev;
    }
    c->backlog_prev = c->backlog_next = NULL;
    c->deferred = false;
}

static void idle_cb(uv_idle_t *h)
{
    (void)h; /* only there so that the loop polls without blocking */
}

/* c holds whole frames it may not dispatch now: it waits at the back of the
 * backlog (still reading, up to NS_CONN_BACKLOG_READ_MAX buffered: stopping
 * and restarting reads would cost two syscalls per turn), and the loop keeps
 * turning until it is served. */
static void defer(struct ns_conn *c)
{
    struct ns_net *net = c->net;
    if (c->deferred) {
        return;
    }
    c->deferred = true;
    c->backlog_next = NULL;
    c->backlog_prev = net->backlog_tail;
    if (net->backlog_tail != NULL) {
        net->backlog_tail->backlog_next = c;
    } else {
        net->backlog_head = c;
    }
    net->backlog_tail = c;
    if (net->idle_inited && !uv_is_active((uv_handle_t *)&net->idle)) {
        uv_idle_start(&net->idle, idle_cb);
    }
}

/* Whether c may dispatch one more ordinary request now: within the turn's
 * budget and its own share of this visit, and (outside a backlog visit) only
 * when nobody is waiting before it. */
static bool may_dispatch(const struct ns_conn *c, unsigned served, bool visit)
{
    const struct ns_net *net = c->net;
    if (net->turn_spent >= NS_NET_TURN_BUDGET ||
        served >= NS_CONN_TURN_REQUESTS) {
        return false;
    }
    return visit || net->backlog_head == NULL;
}

/* Bodies below this are copied into the output: a separate write buffer costs
 * more than the copy. */
#define SHARED_MIN_BYTES 4096

/* A written output buffer up to this capacity is kept for the next replies:
 * allocating and freeing one per flush moved the heap's top (brk) on nearly
 * every write of a pipelining client. */
#define SPARE_MAX_BYTES (256u * 1024u)

/* Bytes queued or being written. */
static size_t out_bytes(const struct ns_conn *c)
{
    return c->out.len + c->shared_bytes + c->wlen;
}

/* Re-counts c's buffers, by capacity, in the server's buffer budget
 * (conn_limit.c); a closing connection counts nothing. Shared bodies count
 * in full: this connection's reference may be the one keeping them. */
static void account(struct ns_conn *c)
{
    size_t now = ns_conn_is_closing(c)
                     ? 0
                     : c->rbuf.cap + c->out.cap + c->spare.cap +
                           c->shared_bytes + c->wlen + c->held_bytes;
    c->net->limits.buffered = c->net->limits.buffered - c->acct + now;
    c->acct = now;
}

static void release_shared(struct ns_conn_shared *v, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ns_rcbuf_unref(v[i].body);
    }
    ns_free(v);
}

static void closed_cb(uv_handle_t *h)
{
    struct ns_conn *c = (struct ns_conn *)h;
    ns_conn_set_state(c, NS_CONN_CLOSED);
    ns_buf_close(&c->rbuf);
    ns_buf_close(&c->out);
    ns_buf_close(&c->spare);
    release_shared(c->shared, c->n_shared);
    release_shared(c->wshared, c->n_wshared);
    ns_tls_destroy(c->tls);
    ns_free(c->wdata);
    ns_free(c);
}

void ns_conn_close(struct ns_conn *c, const char *reason)
{
    struct ns_net *net = c->net;
    if (ns_conn_is_closing(c)) {
        return;
    }
    ns_conn_set_state(c, NS_CONN_CLOSING);
    if (reason != NULL) {
        NS_LOG(NS_LOG_INFO, "conn %llu %s: closing: %s",
               (unsigned long long)c->id, c->peer, reason);
    }
    list_unlink(net, c);
    backlog_unlink(net, c);
    net->n_conns--;
    account(c);
    if (c->ip_counted) {
        ns_conn_limits_release(&net->limits, c->ip);
    }
    net->on_conn_closed(net->ctx, c);
    if (c->dirty) {
        struct ns_conn **pp = &net->dirty;
        while (*pp != c) {
            pp = &(*pp)->dirty_next;
        }
        *pp = c->dirty_next;
        c->dirty = false;
    }
    if (c->sink != NULL) {
        c->sink->closed(c->sink->arg, c);
        return;
    }
    uv_close((uv_handle_t *)&c->tcp, closed_cb);
}

void ns_conn_free_sink(struct ns_conn *c)
{
    assert(c->sink != NULL && c->state == NS_CONN_CLOSING);
    closed_cb((uv_handle_t *)&c->tcp);
}

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct ns_conn *c = (struct ns_conn *)h;
    (void)suggested;
    /* One shared chunk: libuv calls read_cb right after alloc_cb on this
     * thread, and the bytes are consumed or copied to the connection before the
     * next alloc. */
    buf->base = (char *)c->net->scratch;
    buf->len = sizeof c->net->scratch;
}

/* Cuts and dispatches whole frames from p[0..len) while the connection may
 * (may_dispatch; visit: it is being served from the backlog), deferring it
 * at the first ordinary request it may not. Returns bytes consumed, or -1
 * when the connection was closed. */
static long process(struct ns_conn *c, const uint8_t *p, size_t len, bool visit)
{
    size_t off = 0;
    unsigned served = 0;
    while (c->state == NS_CONN_OPEN && !c->deferred) {
        size_t frame_len = 0;
        int rv = ns_frame_check(p + off, len - off, NS_FRAME_MAX, &frame_len);
        if (rv == NS_EAGAIN) {
            break;
        }
        if (rv != 0) {
            NS_LOG(NS_LOG_WARN, "conn %llu %s: bad frame: %s",
                   (unsigned long long)c->id, c->peer,
                   rv == NS_ETOOBIG ? "frame over 16 MiB" : ns_strerror(rv));
            ns_conn_close(c, NULL);
            return -1;
        }
        struct ns_cmd cmd;
        rv = ns_cmd_decode(p + off, frame_len, &cmd);
        if (rv != 0) {
            NS_LOG(NS_LOG_WARN, "conn %llu %s: bad frame: header: %s",
                   (unsigned long long)c->id, c->peer, ns_strerror(rv));
            ns_conn_close(c, NULL);
            return -1;
        }
        /* Broker liveness (the on_request owner decides: net knows no
         * handler) is never held back behind other clients' requests. */
        bool urgent =
            c->net->is_urgent != NULL && c->net->is_urgent(c->net->ctx, &cmd);
        if (!urgent && !may_dispatch(c, served, visit)) {
            ns_cmd_close(&cmd); /* decoded again when its turn comes */
            defer(c);
            break;
        }
        rv = c->net->on_request(c->net->ctx, c, &cmd);
        ns_cmd_close(&cmd);
        if (!urgent) {
            c->net->turn_spent++;
            served++;
        }
        off += frame_len;
        if (rv != 0) {
            NS_LOG(NS_LOG_WARN, "conn %llu %s: request failed: %s",
                   (unsigned long long)c->id, c->peer, ns_strerror(rv));
            ns_conn_close(c, NULL);
            return -1;
        }
    }
    return ns_conn_is_closing(c) ? -1 : (long)off;
}

/* Processes what is buffered (after a pause ends, new bytes arrived, or its
 * turn in the backlog came: visit). */
static void drain_rbuf(struct ns_conn *c, bool visit)
{
    long used = process(c, c->rbuf.data, c->rbuf.len, visit);
    if (used < 0) {
        return;
    }
    if ((size_t)used == c->rbuf.len && c->rbuf.cap > NS_READ_CHUNK) {
        ns_buf_close(&c->rbuf); /* a big frame's buffer is not kept */
    } else if ((size_t)used == c->rbuf.len) {
        ns_buf_reset(&c->rbuf);
    } else if (used > 0) {
        memmove(c->rbuf.data, c->rbuf.data + used, c->rbuf.len - (size_t)used);
        c->rbuf.len -= (size_t)used;
    }
}

void ns_conn_input(struct ns_conn *c, const uint8_t *p, size_t n)
{
    assert(c->state != NS_CONN_NEW && c->state != NS_CONN_HANDSHAKING);
    mark_active(c);
    if (c->rbuf.len == 0 && c->state == NS_CONN_OPEN && !c->deferred) {
        long used = process(c, p, n, false);
        if (used < 0) {
            return;
        }
        p += used;
        n -= (size_t)used;
        if (n == 0) {
            return;
        }
    }
    /* Keep the rest (a partial frame or bytes read while paused): grows with
     * bytes actually received only. */
    if (ns_buf_append(&c->rbuf, p, n) != 0) {
        ns_conn_close(c, "out of memory buffering input");
        return;
    }
    account(c);
    ns_conn_limits_enforce_budget(c->net);
    if (c->state == NS_CONN_OPEN && !c->deferred) {
        drain_rbuf(c, false);
        account(c);
    } else if (c->deferred && !c->backlog_full &&
               c->rbuf.len >= NS_CONN_BACKLOG_READ_MAX) {
        c->backlog_full = true;
        if (c->sink == NULL) {
            uv_read_stop((uv_stream_t *)&c->tcp);
        }
    }
}

/* Replies queued, or TLS records (handshake, alerts) waiting to be sent. */
static bool has_output(const struct ns_conn *c)
{
    return c->out.len > 0 || c->n_shared > 0 ||
           (c->tls != NULL && ns_tls_pending(c->tls) > 0);
}

static void read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct ns_conn *c = (struct ns_conn *)s;
    if (nread == 0 || ns_conn_is_closing(c)) {
        return;
    }
    if (nread < 0) {
        ns_conn_close(c, nread == UV_EOF ? NULL : uv_strerror((int)nread));
        return;
    }
    const uint8_t *p = (const uint8_t *)buf->base;
    size_t n = (size_t)nread;
    if (c->state == NS_CONN_NEW) {
        if (ns_conn_tls_classify(c, p[0]) != 0) {
            return;
        }
    }
    if (c->tls == NULL) {
        ns_conn_input(c, p, n);
        return;
    }
    mark_active(c);
    ns_conn_tls_input(c, p, n);
    if (!ns_conn_is_closing(c) && has_output(c)) {
        mark_dirty(c);
    }
}

/* The write in flight is done (a socket's write callback, or a sink that
 * took the bytes at once). */
static void written(struct ns_conn *c, int status)
{
    if (c->tls == NULL && c->spare.data == NULL && c->wcap <= SPARE_MAX_BYTES) {
        c->spare.data = c->wdata;
        c->spare.cap = c->wcap;
    } else {
        ns_free(c->wdata);
    }
    c->wdata = NULL;
    c->wlen = 0;
    release_shared(c->wshared, c->n_wshared);
    c->wshared = NULL;
    c->n_wshared = 0;
    account(c);
    if (ns_conn_is_closing(c)) {
        return;
    }
    if (status != 0) {
        ns_conn_close(c, uv_strerror(status));
        return;
    }
    mark_active(c);
    if (has_output(c)) {
        mark_dirty(c);
    }
    ns_conn_update_flow(c);
}

static void write_cb(uv_write_t *w, int status)
{
    written(w->data, status);
}

/* Hands out and the shared bodies to one uv_write: the output's own bytes
 * between the bodies, each body from its shared block. */
static int write_plain(struct ns_conn *c)
{
    uv_buf_t small[9];
    uv_buf_t *bufs = small;
    size_t n_bufs = 0, prev = 0, len = 0;
    int rv;

    if (2 * c->n_shared + 1 > sizeof small / sizeof small[0]) {
        bufs = ns_malloc((2 * c->n_shared + 1) * sizeof(*bufs));
        if (bufs == NULL) {
            return UV_ENOMEM;
        }
    }
    c->wcap = c->out.cap;
    c->wdata = ns_buf_take(&c->out, &len);
    if (c->spare.data != NULL) {
        c->out = c->spare; /* empty, its memory kept */
        ns_buf_init(&c->spare);
    }
    for (size_t i = 0; i < c->n_shared; i++) {
        const struct ns_conn_shared *sh = &c->shared[i];
        if (sh->at > prev) {
            bufs[n_bufs++] =
                uv_buf_init((char *)c->wdata + prev, (unsigned)(sh->at - prev));
        }
        bufs[n_bufs++] =
            uv_buf_init((char *)sh->body->data, (unsigned)sh->body->len);
        prev = sh->at;
    }
    if (len > prev) {
        bufs[n_bufs++] =
            uv_buf_init((char *)c->wdata + prev, (unsigned)(len - prev));
    }
    c->wlen = len + c->shared_bytes;
    c->wshared = c->shared;
    c->n_wshared = c->n_shared;
    c->shared = NULL;
    c->n_shared = c->cap_shared = 0;
    c->shared_bytes = 0;
    account(c);
    if (c->sink != NULL) {
        /* Written at once: what write_cb does after a socket write. */
        for (size_t i = 0; i < n_bufs; i++) {
            c->sink->write(c->sink->arg, (const uint8_t *)bufs[i].base,
                           bufs[i].len);
        }
        if (bufs != small) {
            ns_free(bufs);
        }
        written(c, 0);
        return 0;
    }
    c->wreq.data = c;
    /* uv_write copies the array of buffers, not the bytes. */
    rv = uv_write(&c->wreq, (uv_stream_t *)&c->tcp, bufs, (unsigned)n_bufs,
                  write_cb);
    if (bufs != small) {
        ns_free(bufs);
    }
    return rv;
}

static void flush_one(struct ns_conn *c)
{
    if (ns_conn_is_closing(c) || c->wdata != NULL || !has_output(c)) {
        return;
    }
    int rv;
    if (c->tls != NULL) {
        size_t len = 0;
        c->wdata = ns_conn_tls_output(c, &len);
        if (c->wdata == NULL) {
            return;
        }
        c->wlen = len;
        account(c);
        if (c->sink != NULL) {
            c->sink->write(c->sink->arg, c->wdata, len);
            written(c, 0);
            return;
        }
        uv_buf_t b = uv_buf_init((char *)c->wdata, (unsigned)len);
        c->wreq.data = c;
        rv = uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, write_cb);
    } else {
        rv = write_plain(c);
    }
    if (rv != 0) {
        ns_conn_close(c, uv_strerror(rv));
    }
}

/* Resumes a paused connection here rather than inside an apply callback, so new
 * requests are never dispatched (and proposed) from within raft's callbacks. */
static void resume(struct ns_conn *c)
{
    ns_conn_set_state(c, NS_CONN_OPEN);
    drain_rbuf(c, false);
    if (c->state == NS_CONN_OPEN) { /* a deferred one reads on, too */
        c->backlog_full = false;
    }
    if (c->state == NS_CONN_OPEN && c->sink == NULL) {
        uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb);
    }
}

/* Serves the backlog from its head, each connection up to its share, until
 * the turn's budget is spent; one that still has whole frames goes to the
 * back. Each connection present at the start is visited at most once. */
static void serve_backlog(struct ns_net *net)
{
    struct ns_conn *last = net->backlog_tail;
    while (net->backlog_head != NULL && net->turn_spent < NS_NET_TURN_BUDGET) {
        struct ns_conn *c = net->backlog_head;
        backlog_unlink(net, c);
        if (c->state == NS_CONN_OPEN) {
            drain_rbuf(c, true);
            account(c);
            if (c->state == NS_CONN_OPEN && !c->deferred && c->backlog_full) {
                c->backlog_full = false;
                if (c->sink == NULL) {
                    uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb);
                }
            }
        }
        /* a paused one resumes (and drains) through RESUMING instead */
        if (c == last) {
            break;
        }
    }
    if (net->backlog_head == NULL && net->idle_inited) {
        uv_idle_stop(&net->idle);
    }
}

void ns_conn_flush_all(struct ns_net *net)
{
    serve_backlog(net);
    while (net->dirty != NULL) {
        struct ns_conn *c = net->dirty;
        net->dirty = c->dirty_next;
        c->dirty = false;
        c->dirty_next = NULL;
        if (c->state == NS_CONN_RESUMING) {
            resume(c);
        }
        flush_one(c);
    }
    net->turn_spent = 0; /* the replies counted when queued are written */
}

int ns_conn_queue(struct ns_conn *c, const struct ns_buf *frame)
{
    if (ns_conn_is_closing(c)) {
        return 0;
    }
    if (out_bytes(c) + frame->len > NS_CONN_OUT_MAX) {
        ns_conn_close(c, "unflushed output over the limit (peer not reading)");
        return NS_ETOOBIG;
    }
    if (ns_buf_append(&c->out, frame->data, frame->len) != 0) {
        ns_conn_close(c, "out of memory queueing a reply");
        return NS_ENOMEM;
    }
    c->net->turn_spent += frame->len / NS_NET_TURN_UNIT_BYTES;
    account(c);
    ns_conn_limits_enforce_budget(c->net);
    if (ns_conn_is_closing(c)) {
        return NS_ETOOBIG;
    }
    mark_dirty(c);
    ns_conn_update_flow(c);
    return 0;
}

int ns_conn_queue_shared(struct ns_conn *c, const struct ns_buf *head,
                         struct ns_rcbuf *body)
{
    if (ns_conn_is_closing(c)) {
        return 0;
    }
    c->net->turn_spent += (head->len + body->len) / NS_NET_TURN_UNIT_BYTES;
    if (out_bytes(c) + head->len + body->len > NS_CONN_OUT_MAX) {
        ns_conn_close(c, "unflushed output over the limit (peer not reading)");
        return NS_ETOOBIG;
    }
    if (c->tls != NULL || body->len < SHARED_MIN_BYTES) {
        if (ns_buf_append(&c->out, head->data, head->len) == 0) {
            ns_buf_append(&c->out, body->data, body->len);
        }
    } else {
        if (c->n_shared == c->cap_shared) {
            size_t cap = c->cap_shared ? 2 * c->cap_shared : 8;
            void *p = ns_realloc(c->shared, cap * sizeof(*c->shared));
            if (p == NULL) {
                ns_conn_close(c, "out of memory queueing a reply");
                return NS_ENOMEM;
            }
            c->shared = p;
            c->cap_shared = cap;
        }
        if (ns_buf_append(&c->out, head->data, head->len) == 0) {
            c->shared[c->n_shared].at = c->out.len;
            c->shared[c->n_shared].body = ns_rcbuf_ref(body);
            c->n_shared++;
            c->shared_bytes += body->len;
        }
    }
    if (c->out.err != 0) {
        ns_conn_close(c, "out of memory queueing a reply");
        return NS_ENOMEM;
    }
    account(c);
    ns_conn_limits_enforce_budget(c->net);
    if (ns_conn_is_closing(c)) {
        return NS_ETOOBIG;
    }
    mark_dirty(c);
    ns_conn_update_flow(c);
    return 0;
}

void ns_conn_update_flow(struct ns_conn *c)
{
    if (ns_conn_is_closing(c)) {
        return;
    }
    bool over = c->n_inflight >= NS_CONN_MAX_INFLIGHT || c->n_held > 0 ||
                out_bytes(c) >= NS_CONN_OUT_PAUSE;
    if (over && c->state == NS_CONN_OPEN) {
        ns_conn_set_state(c, NS_CONN_PAUSED);
        if (c->sink == NULL) {
            uv_read_stop((uv_stream_t *)&c->tcp);
        }
    } else if (!over && c->state == NS_CONN_PAUSED &&
               c->n_inflight < NS_CONN_MAX_INFLIGHT / 2 &&
               out_bytes(c) < NS_CONN_OUT_PAUSE / 2) {
        ns_conn_set_state(c, NS_CONN_RESUMING);
        mark_dirty(c);
    }
}

void ns_conn_hold(struct ns_conn *c, size_t bytes)
{
    c->n_held++;
    c->held_bytes += bytes;
    account(c);
    ns_conn_update_flow(c);
}

void ns_conn_unhold(struct ns_conn *c, size_t bytes)
{
    c->n_held--;
    c->held_bytes -= bytes;
    account(c);
    ns_conn_update_flow(c);
}

static void describe_peer(struct ns_conn *c)
{
    struct sockaddr_storage ss;
    int len = sizeof ss;
    char ip[48] = "?";
    int port = 0;
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) == 0) {
        if (ss.ss_family == AF_INET) {
            struct sockaddr_in *in = (struct sockaddr_in *)&ss;
            uv_ip4_name(in, ip, sizeof ip);
            port = ntohs(in->sin_port);
        } else if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
            uv_ip6_name(in6, ip, sizeof ip);
            port = ntohs(in6->sin6_port);
        }
    }
    snprintf(c->peer, sizeof c->peer, "%s:%d", ip, port);
    snprintf(c->ip, sizeof c->ip, "%s", ip);
}

void ns_conn_accept(struct ns_net *net)
{
    struct ns_conn *c = ns_calloc(1, sizeof *c);
    if (c == NULL) {
        NS_LOG(NS_LOG_ERROR, "accept: out of memory");
        return;
    }
    c->net = net;
    c->state = NS_CONN_NEW;
    uv_tcp_init(net->loop, &c->tcp);
    c->id = ++net->next_conn_id;
    ns_buf_init(&c->rbuf);
    ns_buf_init(&c->out);
    list_append(net, c);
    net->n_conns++;
    int rv = uv_accept((uv_stream_t *)&net->listener, (uv_stream_t *)&c->tcp);
    if (rv == 0) {
        uv_tcp_nodelay(&c->tcp, 1);
        describe_peer(c);
        const char *over =
            ns_conn_limits_admit(&net->limits, net->n_conns, c->ip);
        if (over != NULL) {
            ns_conn_limits_log(&net->limits, ns_net_now(net), c->peer, over);
            ns_conn_close(c, NULL);
            return;
        }
        c->ip_counted = true;
        rv = uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb);
    }
    if (rv != 0) {
        ns_conn_close(c, uv_strerror(rv));
        return;
    }
    c->last_active = ns_net_now(net);
    NS_LOG(NS_LOG_DEBUG, "conn %llu %s: accepted", (unsigned long long)c->id,
           c->peer);
}

int ns_conn_open_sink(struct ns_net *net, const char *peer,
                      const struct ns_conn_sink *sink, struct ns_conn **out)
{
    struct ns_conn *c = ns_calloc(1, sizeof *c);
    if (c == NULL) {
        return NS_ENOMEM;
    }
    c->net = net;
    c->sink = sink;
    c->state = NS_CONN_NEW;
    c->id = ++net->next_conn_id;
    ns_buf_init(&c->rbuf);
    ns_buf_init(&c->out);
    snprintf(c->peer, sizeof c->peer, "%s", peer);
    snprintf(c->ip, sizeof c->ip, "%s", peer);
    list_append(net, c);
    net->n_conns++;
    ns_conn_set_state(c, NS_CONN_OPEN); /* plaintext: no first byte to read */
    c->last_active = ns_net_now(net);
    *out = c;
    return 0;
}

void ns_conn_sweep_idle(struct ns_net *net, uint64_t idle_ms)
{
    uint64_t now = ns_net_now(net);
    while (net->conn_head != NULL &&
           net->conn_head->last_active + idle_ms <= now) {
        ns_conn_close(net->conn_head, "idle");
    }
}
