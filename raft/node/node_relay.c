/* The relay of an authenticated raft peer connection: a socketpair whose one
 * end libraft reads as a uv_pipe_t, every inbound TCP byte passed through the
 * message checker (raftns/wire.h) before it is written to the pipe, outbound
 * pipe bytes written to TCP (through the TLS session with raftTls,
 * node_tls.c), with backpressure both ways. It does no handshake and judges
 * nothing the checker does not. */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "raftns/alloc.h"
#include "raftns/log.h"
#include "raftns/wire.h"

#include "node_transport_int.h"

static void relay_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)h;
    (void)suggested;
    struct chunk *k = ns_malloc(sizeof *k);
    buf->base = k != NULL ? k->data : NULL;
    buf->len = k != NULL ? sizeof k->data : 0;
}

static struct chunk *chunk_of(const uv_buf_t *buf)
{
    return (struct chunk *)(void *)(buf->base - offsetof(struct chunk, data));
}

static uv_stream_t *source_of(struct conn *c, int dir)
{
    return dir == DIR_IN ? (uv_stream_t *)&c->tcp : (uv_stream_t *)&c->pipe;
}

static void relay_in_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void relay_out_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

void node_relay_pause(struct conn *c, int dir, bool pause)
{
    bool *paused = dir == DIR_IN ? &c->tcp_paused : &c->pipe_paused;
    if (*paused == pause || c->phase != PHASE_RELAY) {
        return;
    }
    *paused = pause;
    if (pause) {
        c->t->stats.pauses++;
        uv_read_stop(source_of(c, dir));
    } else if (dir == DIR_IN && c->tls != NULL) {
        node_tls_read_start(c);
    } else {
        uv_read_start(source_of(c, dir), relay_alloc,
                      dir == DIR_IN ? relay_in_cb : relay_out_cb);
    }
}

static void relay_write_cb(uv_write_t *req, int status)
{
    struct chunk *k = req->data;
    struct conn *c = k->c;
    c->queued[k->dir] -= sizeof *k;
    int dir = k->dir;
    ns_free(k);
    if (status < 0) {
        node_conn_close(c);
        return;
    }
    if (c->queued[dir] < LOW_WATER) {
        node_relay_pause(c, dir, false);
    }
}

/* Writes k (taken) towards the other side of dir. */
static void relay_write(struct conn *c, struct chunk *k, int dir, size_t len)
{
    uv_stream_t *dst =
        dir == DIR_IN ? (uv_stream_t *)&c->pipe : (uv_stream_t *)&c->tcp;
    uv_buf_t b = uv_buf_init(k->data, (unsigned)len);
    k->req.data = k;
    k->c = c;
    k->dir = dir;
    k->len = len;
    if (uv_write(&k->req, dst, &b, 1, relay_write_cb) != 0) {
        ns_free(k);
        node_conn_close(c);
        return;
    }
    /* Count the memory held, not the bytes: many small reads cost a chunk
     * each, so this bounds a connection's buffers at HIGH_WATER per side. */
    c->queued[dir] += sizeof *k;
    if (c->queued[dir] > HIGH_WATER) {
        node_relay_pause(c, dir, true);
    }
}

void node_relay_forward_in(struct conn *c, struct chunk *k, size_t len)
{
    size_t n_ok = 0;
    node_transport_heard(c->t, c->peer_id);
    if (!c->inbound) {
        ns_free(k);
        node_conn_violation(
            c, "bytes from the listener on an outbound connection");
        return;
    }
#ifdef RAFTNS_MUTANT_RAFT_UNCHECKED
    (void)n_ok; /* the mutant: every byte reaches libraft unchecked */
#else
    if (ns_wire_check_feed(&c->check, (const uint8_t *)k->data, len, &n_ok) !=
        0) {
        ns_free(k); /* the verdict ends the connection: nothing more passes */
        node_conn_violation(c, c->check.reason);
        return;
    }
#endif
    relay_write(c, k, DIR_IN, len);
}

static void relay_read(struct conn *c, int dir, ssize_t nread,
                       const uv_buf_t *buf)
{
    if (nread > 0 && c->phase == PHASE_RELAY) {
        if (dir == DIR_IN) {
            node_relay_forward_in(c, chunk_of(buf), (size_t)nread);
        } else if (c->tls != NULL) {
            /* The session copies (and counts) what it encrypts. */
            node_tls_send(c, (const uint8_t *)buf->base, (size_t)nread);
            ns_free(chunk_of(buf));
        } else {
            relay_write(c, chunk_of(buf), DIR_OUT, (size_t)nread);
        }
        return;
    }
    if (buf->base != NULL) {
        ns_free(chunk_of(buf));
    }
    if (nread < 0) {
        /* EOF or an error on either side ends both: libraft reconnects. */
        node_conn_close(c);
    }
}

static void relay_in_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    relay_read(s->data, DIR_IN, nread, buf);
}

static void relay_out_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    relay_read(s->data, DIR_OUT, nread, buf);
}

static void free_raft_pipe(uv_handle_t *h)
{
    raft_free(h);
}

void node_relay_start(struct conn *c)
{
    struct transport *t = c->t;
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
                   fds) != 0) {
        node_conn_refuse(c, "socketpair failed");
        return;
    }
    uv_pipe_init(t->loop, &c->pipe, 0);
    c->pipe_inited = true;
    c->n_handles++;
    if (uv_pipe_open(&c->pipe, fds[0]) != 0) {
        close(fds[0]);
        close(fds[1]);
        node_conn_refuse(c, "uv_pipe_open failed");
        return;
    }
    uv_pipe_t *rp = raft_malloc(sizeof *rp); /* libraft frees it */
    if (rp == NULL) {
        close(fds[1]);
        node_conn_refuse(c, "out of memory");
        return;
    }
    uv_pipe_init(t->loop, rp, 0);
    if (uv_pipe_open(rp, fds[1]) != 0) {
        close(fds[1]);
        uv_close((uv_handle_t *)rp, free_raft_pipe);
        node_conn_refuse(c, "uv_pipe_open failed");
        return;
    }
    uv_timer_stop(&c->timer);
    if (c->handshaking_counted) {
        c->handshaking_counted = false;
        t->n_handshaking--;
    }
    c->phase = PHASE_RELAY;
    ns_wire_check_init(&c->check, &t->limits, c->peer_id);
    uv_read_start((uv_stream_t *)&c->pipe, relay_alloc, relay_out_cb);
    if (c->tls == NULL) { /* a TLS socket goes on reading through the session */
        /* libuv >= 1.38 refuses uv_read_start on a reading stream. */
        uv_read_stop((uv_stream_t *)&c->tcp);
        uv_read_start((uv_stream_t *)&c->tcp, relay_alloc, relay_in_cb);
    }
    if (c->inbound) {
        t->stats.accepted++;
        NS_LOG(NS_LOG_INFO, "peer: accepted %llu (%s) from %s",
               (unsigned long long)c->peer_id, c->peer_addr, c->remote);
        t->accept_cb(t->iface, c->peer_id, c->peer_addr, (uv_stream_t *)rp);
    } else {
        struct raft_uv_connect *req = c->req;
        c->req = NULL;
        t->stats.connected++;
        NS_LOG(NS_LOG_DEBUG, "peer: connected to %llu (%s)",
               (unsigned long long)c->peer_id, c->peer_addr);
        req->cb(req, (uv_stream_t *)rp, 0);
    }
    /* Bytes that arrived behind the handshake are raft traffic. */
    if (c->hs_len > 0 && c->phase == PHASE_RELAY) {
        struct chunk *k = ns_malloc(sizeof *k);
        if (k == NULL) {
            node_conn_close(c);
            return;
        }
        memcpy(k->data, c->hs_buf, c->hs_len);
        node_relay_forward_in(c, k, c->hs_len);
        c->hs_len = 0;
    }
}
