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

/* Re-counts c's buffers, by capacity, in the server's buffer budget
 * (conn_limit.c); a closing connection counts nothing. */
static void account(struct ns_conn *c)
{
    size_t now = ns_conn_is_closing(c)
                     ? 0
                     : c->rbuf.cap + c->out.cap + c->wlen + c->held_bytes;
    c->net->limits.buffered = c->net->limits.buffered - c->acct + now;
    c->acct = now;
}

static void closed_cb(uv_handle_t *h)
{
    struct ns_conn *c = (struct ns_conn *)h;
    ns_conn_set_state(c, NS_CONN_CLOSED);
    ns_buf_close(&c->rbuf);
    ns_buf_close(&c->out);
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

/* Cuts and dispatches whole frames from p[0..len). Returns bytes consumed, or
 * -1 when the connection was closed. */
static long process(struct ns_conn *c, const uint8_t *p, size_t len)
{
    size_t off = 0;
    while (c->state == NS_CONN_OPEN) {
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
        rv = c->net->on_request(c->net->ctx, c, &cmd);
        ns_cmd_close(&cmd);
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

/* Processes what is buffered (after a pause ends, or new bytes arrived). */
static void drain_rbuf(struct ns_conn *c)
{
    long used = process(c, c->rbuf.data, c->rbuf.len);
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
    if (c->rbuf.len == 0 && c->state == NS_CONN_OPEN) {
        long used = process(c, p, n);
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
    if (c->state == NS_CONN_OPEN) {
        drain_rbuf(c);
        account(c);
    }
}

/* Replies queued, or TLS records (handshake, alerts) waiting to be sent. */
static bool has_output(const struct ns_conn *c)
{
    return c->out.len > 0 || (c->tls != NULL && ns_tls_pending(c->tls) > 0);
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
    ns_free(c->wdata);
    c->wdata = NULL;
    c->wlen = 0;
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

static void flush_one(struct ns_conn *c)
{
    if (ns_conn_is_closing(c) || c->wdata != NULL || !has_output(c)) {
        return;
    }
    size_t len = 0;
    if (c->tls != NULL) {
        c->wdata = ns_conn_tls_output(c, &len);
        if (c->wdata == NULL) {
            return;
        }
    } else {
        c->wdata = ns_buf_take(&c->out, &len);
    }
    c->wlen = len;
    account(c);
    if (c->sink != NULL) {
        /* Written at once: what write_cb does after a socket write. */
        c->sink->write(c->sink->arg, c->wdata, len);
        written(c, 0);
        return;
    }
    uv_buf_t b = uv_buf_init((char *)c->wdata, (unsigned)len);
    c->wreq.data = c;
    int rv = uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, write_cb);
    if (rv != 0) {
        ns_conn_close(c, uv_strerror(rv));
    }
}

/* Resumes a paused connection here rather than inside an apply callback, so new
 * requests are never dispatched (and proposed) from within raft's callbacks. */
static void resume(struct ns_conn *c)
{
    ns_conn_set_state(c, NS_CONN_OPEN);
    drain_rbuf(c);
    if (c->state == NS_CONN_OPEN && c->sink == NULL) {
        uv_read_start((uv_stream_t *)&c->tcp, alloc_cb, read_cb);
    }
}

void ns_conn_flush_all(struct ns_net *net)
{
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
}

int ns_conn_queue(struct ns_conn *c, const struct ns_buf *frame)
{
    if (ns_conn_is_closing(c)) {
        return 0;
    }
    if (c->out.len + c->wlen + frame->len > NS_CONN_OUT_MAX) {
        ns_conn_close(c, "unflushed output over the limit (peer not reading)");
        return NS_ETOOBIG;
    }
    if (ns_buf_append(&c->out, frame->data, frame->len) != 0) {
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
                c->out.len + c->wlen >= NS_CONN_OUT_PAUSE;
    if (over && c->state == NS_CONN_OPEN) {
        ns_conn_set_state(c, NS_CONN_PAUSED);
        if (c->sink == NULL) {
            uv_read_stop((uv_stream_t *)&c->tcp);
        }
    } else if (!over && c->state == NS_CONN_PAUSED &&
               c->n_inflight < NS_CONN_MAX_INFLIGHT / 2 &&
               c->out.len + c->wlen < NS_CONN_OUT_PAUSE / 2) {
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
