/* raftns's raft_uv_transport: TCP with the mutual HMAC handshake of
 * raftns/wire.h before a single byte reaches libraft, a refusal of ids not in
 * the raft configuration, then a relay through a socketpair whose one end
 * libraft reads as a uv_pipe_t, with every inbound byte passed through the
 * message checker. It does not judge raft semantics (terms, indexes), and it
 * keeps no memory of peers between connections. */
#include "node_transport.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/log.h"
#include "raftns/wire.h"

#define HANDSHAKE_MS 2000     /* TCP connect plus handshake */
#define MAX_HANDSHAKING 32    /* unauthenticated inbound connections */
#define CHUNK_SIZE 65536      /* relay read size */
#define HIGH_WATER (4u << 20) /* stop reading a side above this queue */
#define LOW_WATER (1u << 20)  /* and resume below this */
#define LOG_INTERVAL_MS 1000  /* refusal/violation warnings, at most one */

enum { DIR_IN = 0, DIR_OUT = 1 }; /* net -> raft, raft -> net */
enum { PHASE_HANDSHAKE, PHASE_RELAY, PHASE_CLOSING };

struct limiter {
    uint64_t last_ms;
    uint64_t suppressed;
};

struct transport {
    struct raft_uv_transport *iface;
    uv_loop_t *loop;
    uint64_t id;
    char addr[NS_WIRE_ADDR_MAX + 1];
    uint8_t *key;
    size_t key_len;
    struct ns_wire_limits limits;
    node_transport_member_fn find_member;
    void *member_arg;
    struct sockaddr_in self_sa; /* our raft address; outbound source too */
    uv_tcp_t listener;
    bool listener_inited;
    bool listener_open; /* close callback not yet run */
    raft_uv_accept_cb accept_cb;
    struct conn *conns;
    unsigned n_handshaking;
    bool closing;
    raft_uv_transport_close_cb close_cb;
    struct limiter refusals;
    struct limiter violations;
    struct ns_node_peer_stats stats;
};

struct conn {
    struct transport *t;
    struct conn *prev, *next;
    bool inbound;
    bool handshaking_counted;
    bool pipe_inited;
    bool tcp_paused, pipe_paused;
    int phase;
    int n_handles;
    uv_tcp_t tcp;
    uv_timer_t timer;
    uv_pipe_t pipe; /* our end of the socketpair */
    uv_connect_t connect_req;
    uv_write_t hs_write[2];
    struct raft_uv_connect *req; /* outbound: until its callback */
    uint64_t peer_id;
    char peer_addr[NS_WIRE_ADDR_MAX + 1];
    char remote[64]; /* ip:port of the socket, for logs */
    struct ns_wire_auth auth;
    int hs_step; /* inbound: 0 wants HELLO, 1 wants RESPONSE */
    uint8_t nonce[NS_WIRE_NONCE_SIZE];
    uint8_t hs_buf[NS_WIRE_MSG_MAX];
    size_t hs_len;
    uint8_t out[2][NS_WIRE_MSG_MAX];
    struct ns_wire_check check;
    size_t queued[2];
};

/* One relay read, then the write that carries it. */
struct chunk {
    uv_write_t req;
    struct conn *c;
    int dir;
    size_t len;
    char data[CHUNK_SIZE];
};

static void warn_limited(struct transport *t, struct limiter *l,
                         const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void warn_limited(struct transport *t, struct limiter *l,
                         const char *fmt, ...)
{
    uint64_t now = uv_now(t->loop);
    if (l->last_ms != 0 && now - l->last_ms < LOG_INTERVAL_MS) {
        l->suppressed++;
        return;
    }
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (l->suppressed > 0) {
        NS_LOG(NS_LOG_WARN, "%s (%llu similar in the last interval)", line,
               (unsigned long long)l->suppressed);
    } else {
        NS_LOG(NS_LOG_WARN, "%s", line);
    }
    l->last_ms = now;
    l->suppressed = 0;
}

static int parse_addr(const char *address, struct sockaddr_in *sa)
{
    char host[64];
    const char *colon = strrchr(address, ':');
    size_t len = colon != NULL ? (size_t)(colon - address) : strlen(address);
    int port = colon != NULL ? atoi(colon + 1) : 8080; /* as libraft 0.15 */
    if (len == 0 || len >= sizeof host || port <= 0 || port > 65535) {
        return NS_EINVAL;
    }
    memcpy(host, address, len);
    host[len] = '\0';
    return uv_ip4_addr(host, port, sa) == 0 ? 0 : NS_EINVAL;
}

static void describe_remote(struct conn *c)
{
    struct sockaddr_storage ss;
    int len = sizeof ss;
    char ip[48] = "?";
    int port = 0;
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) == 0 &&
        ss.ss_family == AF_INET) {
        struct sockaddr_in *in = (struct sockaddr_in *)&ss;
        uv_ip4_name(in, ip, sizeof ip);
        port = ntohs(in->sin_port);
    }
    snprintf(c->remote, sizeof c->remote, "%s:%d", ip, port);
}

/* --- life cycle of a connection --- */

static void maybe_closed(struct transport *t)
{
    if (t->closing && t->conns == NULL && !t->listener_open &&
        t->close_cb != NULL) {
        raft_uv_transport_close_cb cb = t->close_cb;
        t->close_cb = NULL;
        cb(t->iface);
    }
}

static void conn_free(struct conn *c)
{
    struct transport *t = c->t;
    if (c->prev != NULL) {
        c->prev->next = c->next;
    } else {
        t->conns = c->next;
    }
    if (c->next != NULL) {
        c->next->prev = c->prev;
    }
    if (c->handshaking_counted) {
        t->n_handshaking--;
    }
    struct raft_uv_connect *req = c->req;
    ns_free(c);
    if (req != NULL) {
        req->cb(req, NULL, t->closing ? RAFT_CANCELED : RAFT_NOCONNECTION);
    }
    maybe_closed(t);
}

static void handle_closed(uv_handle_t *h)
{
    struct conn *c = h->data;
    if (--c->n_handles == 0) {
        conn_free(c);
    }
}

/* Closes every handle of c; it is freed (and an outbound request called back
 * with a failure) once they are all closed. */
static void conn_close(struct conn *c)
{
    if (c->phase == PHASE_CLOSING) {
        return;
    }
    c->phase = PHASE_CLOSING;
    uv_close((uv_handle_t *)&c->tcp, handle_closed);
    uv_close((uv_handle_t *)&c->timer, handle_closed);
    if (c->pipe_inited) {
        uv_close((uv_handle_t *)&c->pipe, handle_closed);
    }
}

static void refuse(struct conn *c, const char *reason)
{
    struct transport *t = c->t;
    t->stats.refused++;
    if (c->inbound) {
        warn_limited(t, &t->refusals,
                     "peer: refused connection from %s (claims id %llu, "
                     "%s): %s",
                     c->remote, (unsigned long long)c->auth.connector_id,
                     c->auth.connector_addr[0] != '\0' ? c->auth.connector_addr
                                                       : "?",
                     reason);
    } else {
        warn_limited(t, &t->refusals,
                     "peer: handshake with %llu at %s failed: %s",
                     (unsigned long long)c->peer_id, c->peer_addr, reason);
    }
    conn_close(c);
}

static void violation(struct conn *c, const char *reason)
{
    struct transport *t = c->t;
    t->stats.violations++;
    warn_limited(t, &t->violations,
                 "peer: closing connection %s peer %llu (%s, %s): %s",
                 c->inbound ? "from" : "to", (unsigned long long)c->peer_id,
                 c->peer_addr, c->remote, reason);
    conn_close(c);
}

static struct conn *conn_create(struct transport *t, bool inbound)
{
    struct conn *c = ns_calloc(1, sizeof *c);
    if (c == NULL) {
        return NULL;
    }
    c->t = t;
    c->inbound = inbound;
    c->phase = PHASE_HANDSHAKE;
    uv_tcp_init(t->loop, &c->tcp);
    uv_timer_init(t->loop, &c->timer);
    c->tcp.data = c;
    c->timer.data = c;
    c->pipe.data = c;
    c->n_handles = 2;
    c->next = t->conns;
    if (t->conns != NULL) {
        t->conns->prev = c;
    }
    t->conns = c;
    return c;
}

static void timer_cb(uv_timer_t *timer)
{
    struct conn *c = timer->data;
    if (c->phase == PHASE_HANDSHAKE) {
        refuse(c, "handshake timed out");
    }
}

/* --- relay --- */

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

static void pause_source(struct conn *c, int dir, bool pause)
{
    bool *paused = dir == DIR_IN ? &c->tcp_paused : &c->pipe_paused;
    if (*paused == pause || c->phase != PHASE_RELAY) {
        return;
    }
    *paused = pause;
    if (pause) {
        uv_read_stop(source_of(c, dir));
    } else {
        uv_read_start(source_of(c, dir), relay_alloc,
                      dir == DIR_IN ? relay_in_cb : relay_out_cb);
    }
}

static void relay_write_cb(uv_write_t *req, int status)
{
    struct chunk *k = req->data;
    struct conn *c = k->c;
    c->queued[k->dir] -= k->len;
    int dir = k->dir;
    ns_free(k);
    if (status < 0) {
        conn_close(c);
        return;
    }
    if (c->queued[dir] < LOW_WATER) {
        pause_source(c, dir, false);
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
        conn_close(c);
        return;
    }
    c->queued[dir] += len;
    if (c->queued[dir] > HIGH_WATER) {
        pause_source(c, dir, true);
    }
}

/* Checks len inbound bytes in k (taken) and forwards them to libraft. */
static void forward_in(struct conn *c, struct chunk *k, size_t len)
{
    size_t n_ok = 0;
    if (!c->inbound) {
        ns_free(k);
        violation(c, "bytes from the listener on an outbound connection");
        return;
    }
    if (ns_wire_check_feed(&c->check, (const uint8_t *)k->data, len, &n_ok) !=
        0) {
        ns_free(k); /* the verdict ends the connection: nothing more passes */
        violation(c, c->check.reason);
        return;
    }
    relay_write(c, k, DIR_IN, len);
}

static void relay_read(struct conn *c, int dir, ssize_t nread,
                       const uv_buf_t *buf)
{
    if (nread > 0 && c->phase == PHASE_RELAY) {
        if (dir == DIR_IN) {
            forward_in(c, chunk_of(buf), (size_t)nread);
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
        conn_close(c);
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

/* The handshake succeeded: the socketpair, libraft's end handed over, and the
 * relay started. */
static void start_relay(struct conn *c)
{
    struct transport *t = c->t;
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
                   fds) != 0) {
        refuse(c, "socketpair failed");
        return;
    }
    uv_pipe_init(t->loop, &c->pipe, 0);
    c->pipe_inited = true;
    c->n_handles++;
    if (uv_pipe_open(&c->pipe, fds[0]) != 0) {
        close(fds[0]);
        close(fds[1]);
        refuse(c, "uv_pipe_open failed");
        return;
    }
    uv_pipe_t *rp = raft_malloc(sizeof *rp); /* libraft frees it */
    if (rp == NULL) {
        close(fds[1]);
        refuse(c, "out of memory");
        return;
    }
    uv_pipe_init(t->loop, rp, 0);
    if (uv_pipe_open(rp, fds[1]) != 0) {
        close(fds[1]);
        uv_close((uv_handle_t *)rp, free_raft_pipe);
        refuse(c, "uv_pipe_open failed");
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
    /* libuv >= 1.38 refuses uv_read_start on a reading stream (EALREADY). */
    uv_read_stop((uv_stream_t *)&c->tcp);
    uv_read_start((uv_stream_t *)&c->tcp, relay_alloc, relay_in_cb);
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
            conn_close(c);
            return;
        }
        memcpy(k->data, c->hs_buf, c->hs_len);
        forward_in(c, k, c->hs_len);
        c->hs_len = 0;
    }
}

/* --- handshake --- */

static void hs_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct conn *c = h->data;
    (void)suggested;
    buf->base = (char *)c->hs_buf + c->hs_len;
    buf->len = sizeof c->hs_buf - c->hs_len;
}

static void hs_write_cb(uv_write_t *req, int status)
{
    struct conn *c = req->data;
    if (status < 0 && c->phase != PHASE_CLOSING) {
        refuse(c, "handshake write failed");
    }
}

static int hs_send(struct conn *c, int slot, size_t len)
{
    uv_buf_t b = uv_buf_init((char *)c->out[slot], (unsigned)len);
    c->hs_write[slot].data = c;
    return uv_write(&c->hs_write[slot], (uv_stream_t *)&c->tcp, &b, 1,
                    hs_write_cb);
}

static void consume(struct conn *c, size_t used)
{
    memmove(c->hs_buf, c->hs_buf + used, c->hs_len - used);
    c->hs_len -= used;
}

static bool fresh_nonce(struct conn *c)
{
    return RAND_bytes(c->nonce, sizeof c->nonce) == 1;
}

static bool same_ip(const struct sockaddr_in *a, const struct sockaddr_in *b)
{
    return a->sin_addr.s_addr == b->sin_addr.s_addr;
}

/* After the peer proved the secret: it must be a member other than us, speak
 * with the address the configuration has for it, and connect from that
 * address's IP (peers bind their outbound source to it), so a holder of the
 * secret elsewhere cannot pose as a member. NULL or the refusal's reason. */
static const char *check_peer(struct conn *c)
{
    struct transport *t = c->t;
    char conf_addr[NS_WIRE_ADDR_MAX + 1];
    struct sockaddr_in conf_sa, remote;
    int len = sizeof remote;
    if (c->peer_id == t->id) {
        return "peer claims this node's own id";
    }
    if (t->find_member == NULL) {
        return NULL;
    }
    if (!t->find_member(t->member_arg, c->peer_id, conf_addr,
                        sizeof conf_addr)) {
        return "id not in the raft configuration";
    }
    if (conf_addr[0] == '\0') {
        return NULL; /* configuration still empty: a joining node */
    }
    if (strcmp(conf_addr, c->peer_addr) != 0) {
        return "address differs from the configured one for this id";
    }
    if (parse_addr(conf_addr, &conf_sa) != 0 ||
        uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&remote, &len) != 0 ||
        remote.sin_family != AF_INET || !same_ip(&remote, &conf_sa)) {
        return "source IP differs from the configured address for this id";
    }
    return NULL;
}

/* Listener side: HELLO, then RESPONSE, then the membership check. */
static void inbound_progress(struct conn *c)
{
    struct transport *t = c->t;
    size_t used = 0, out_len = 0;
    int rv;
    if (c->hs_step == 0) {
        rv = ns_wire_auth_accept(&c->auth, t->key, t->key_len, t->id, t->addr,
                                 c->nonce, c->hs_buf, c->hs_len, &used,
                                 c->out[0], sizeof c->out[0], &out_len);
        if (rv == NS_EAGAIN) {
            return;
        }
        if (rv != 0 || hs_send(c, 0, out_len) != 0) {
            refuse(c, rv != 0 ? c->auth.reason : "handshake write failed");
            return;
        }
        consume(c, used);
        c->hs_step = 1;
    }
    rv = ns_wire_auth_on_response(&c->auth, c->hs_buf, c->hs_len, &used);
    if (rv == NS_EAGAIN) {
        return;
    }
    if (rv != 0) {
        refuse(c, c->auth.reason);
        return;
    }
    consume(c, used);
    c->peer_id = c->auth.connector_id;
    memcpy(c->peer_addr, c->auth.connector_addr, sizeof c->peer_addr);
    if (t->closing) {
        conn_close(c);
        return;
    }
    const char *why = check_peer(c);
    if (why != NULL) {
        refuse(c, why);
        return;
    }
    start_relay(c);
}

/* Connector side: CHALLENGE, then RESPONSE and the relay. */
static void outbound_progress(struct conn *c)
{
    size_t used = 0, out_len = 0;
    int rv = ns_wire_auth_on_challenge(&c->auth, c->hs_buf, c->hs_len, &used,
                                       c->out[1], sizeof c->out[1], &out_len);
    if (rv == NS_EAGAIN) {
        return;
    }
    if (rv != 0 || hs_send(c, 1, out_len) != 0) {
        refuse(c, rv != 0 ? c->auth.reason : "handshake write failed");
        return;
    }
    consume(c, used);
    start_relay(c);
}

static void hs_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct conn *c = s->data;
    (void)buf;
    if (c->phase != PHASE_HANDSHAKE) {
        return;
    }
    if (nread < 0) {
        refuse(c, nread == UV_EOF ? "closed during the handshake"
                                  : uv_strerror((int)nread));
        return;
    }
    c->hs_len += (size_t)nread;
    if (c->inbound) {
        inbound_progress(c);
    } else {
        outbound_progress(c);
    }
    if (c->phase == PHASE_HANDSHAKE && c->hs_len == sizeof c->hs_buf) {
        refuse(c, "handshake message too long");
    }
}

static void listen_cb(uv_stream_t *server, int status)
{
    struct transport *t = server->data;
    if (status != 0 || t->closing) {
        return;
    }
    struct conn *c = conn_create(t, true);
    if (c == NULL) {
        NS_LOG(NS_LOG_WARN, "peer: out of memory accepting a connection");
        return;
    }
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
        conn_close(c);
        return;
    }
    describe_remote(c);
    if (t->n_handshaking >= MAX_HANDSHAKING) {
        refuse(c, "too many unauthenticated connections");
        return;
    }
    c->handshaking_counted = true;
    t->n_handshaking++;
    if (!fresh_nonce(c)) {
        refuse(c, "no randomness for a nonce");
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    uv_timer_start(&c->timer, timer_cb, HANDSHAKE_MS, 0);
    uv_read_start((uv_stream_t *)&c->tcp, hs_alloc, hs_read_cb);
}

static void connect_cb(uv_connect_t *req, int status)
{
    struct conn *c = req->data;
    struct transport *t = c->t;
    size_t out_len = 0;
    if (c->phase != PHASE_HANDSHAKE) {
        return;
    }
    if (status != 0) {
        /* A peer that is down is routine: no warning, libraft retries. */
        NS_LOG(NS_LOG_DEBUG, "peer: connect to %llu (%s): %s",
               (unsigned long long)c->peer_id, c->peer_addr,
               uv_strerror(status));
        conn_close(c);
        return;
    }
    describe_remote(c);
    uv_tcp_nodelay(&c->tcp, 1);
    if (!fresh_nonce(c)) {
        refuse(c, "no randomness for a nonce");
        return;
    }
    if (ns_wire_auth_connect(&c->auth, t->key, t->key_len, t->id, t->addr,
                             c->peer_id, c->peer_addr, c->nonce, c->out[0],
                             sizeof c->out[0], &out_len) != 0 ||
        hs_send(c, 0, out_len) != 0) {
        refuse(c, c->auth.reason != NULL ? c->auth.reason
                                         : "handshake write failed");
        return;
    }
    uv_read_start((uv_stream_t *)&c->tcp, hs_alloc, hs_read_cb);
}

/* --- the raft_uv_transport vtable --- */

static int tr_init(struct raft_uv_transport *iface, raft_id id,
                   const char *address)
{
    struct transport *t = iface->impl;
    if (strlen(address) > NS_WIRE_ADDR_MAX) {
        snprintf(iface->errmsg, sizeof iface->errmsg,
                 "raft address longer than %d bytes", NS_WIRE_ADDR_MAX);
        return RAFT_INVALID;
    }
    if (parse_addr(address, &t->self_sa) != 0) {
        snprintf(iface->errmsg, sizeof iface->errmsg, "bad raft address %s",
                 address);
        return RAFT_INVALID;
    }
    t->id = id;
    snprintf(t->addr, sizeof t->addr, "%s", address);
    uv_tcp_init(t->loop, &t->listener);
    t->listener.data = t;
    t->listener_inited = true;
    t->listener_open = true;
    return 0;
}

static int tr_listen(struct raft_uv_transport *iface, raft_uv_accept_cb cb)
{
    struct transport *t = iface->impl;
    t->accept_cb = cb;
    int rv = uv_tcp_bind(&t->listener, (const struct sockaddr *)&t->self_sa, 0);
    if (rv == 0) {
        rv = uv_listen((uv_stream_t *)&t->listener, 128, listen_cb);
    }
    if (rv != 0) {
        snprintf(iface->errmsg, sizeof iface->errmsg, "listen on %s: %s",
                 t->addr, uv_strerror(rv));
        return RAFT_IOERR;
    }
    return 0;
}

static int tr_connect(struct raft_uv_transport *iface,
                      struct raft_uv_connect *req, raft_id id,
                      const char *address, raft_uv_connect_cb cb)
{
    struct transport *t = iface->impl;
    struct sockaddr_in sa;
    if (t->closing || strlen(address) > NS_WIRE_ADDR_MAX ||
        parse_addr(address, &sa) != 0) {
        return RAFT_NOCONNECTION;
    }
    struct conn *c = conn_create(t, false);
    if (c == NULL) {
        return RAFT_NOMEM;
    }
    c->peer_id = id;
    snprintf(c->peer_addr, sizeof c->peer_addr, "%s", address);
    c->connect_req.data = c;
    /* Connect from our own raft IP: listeners check the source (check_peer).
     */
    struct sockaddr_in src = t->self_sa;
    src.sin_port = 0;
    if (uv_tcp_bind(&c->tcp, (const struct sockaddr *)&src, 0) != 0) {
        conn_close(c);
        return RAFT_NOCONNECTION;
    }
    if (uv_tcp_connect(&c->connect_req, &c->tcp, (const struct sockaddr *)&sa,
                       connect_cb) != 0) {
        conn_close(c); /* no request attached: no callback */
        return RAFT_NOCONNECTION;
    }
    req->cb = cb;
    c->req = req;
    uv_timer_start(&c->timer, timer_cb, HANDSHAKE_MS, 0);
    return 0;
}

static void listener_closed(uv_handle_t *h)
{
    struct transport *t = h->data;
    t->listener_open = false;
    maybe_closed(t);
}

static void tr_close(struct raft_uv_transport *iface,
                     raft_uv_transport_close_cb cb)
{
    struct transport *t = iface->impl;
    t->closing = true;
    t->close_cb = cb;
    for (struct conn *c = t->conns; c != NULL; c = c->next) {
        conn_close(c);
    }
    /* tr_init always opened the listener, so cb runs later, never inside. */
    uv_close((uv_handle_t *)&t->listener, listener_closed);
}

int node_transport_init(struct raft_uv_transport *iface, uv_loop_t *loop,
                        const struct node_transport_config *cfg)
{
    struct transport *t = ns_calloc(1, sizeof *t);
    const char *secret = cfg->secret != NULL ? cfg->secret : "";
    if (t == NULL) {
        return NS_ENOMEM;
    }
    t->key_len = strlen(secret);
    t->key = ns_malloc(t->key_len + 1);
    if (t->key == NULL) {
        ns_free(t);
        return NS_ENOMEM;
    }
    memcpy(t->key, secret, t->key_len + 1);
    t->iface = iface;
    t->loop = loop;
    ns_wire_limits_default(&t->limits);
    if (cfg->max_message != 0) {
        t->limits.max_payload = cfg->max_message;
    }
    t->find_member = cfg->find_member;
    t->member_arg = cfg->member_arg;
    memset(iface, 0, sizeof *iface);
    iface->impl = t;
    iface->init = tr_init;
    iface->listen = tr_listen;
    iface->connect = tr_connect;
    iface->close = tr_close;
    return 0;
}

void node_transport_free(struct raft_uv_transport *iface)
{
    struct transport *t = iface->impl;
    if (t == NULL) {
        return;
    }
    /* Freed only when libraft never used it or closed it and the loop ran
     * until every handle was closed. */
    if (t->listener_inited && t->listener_open) {
        NS_LOG(NS_LOG_ERROR, "peer: transport freed while open; leaking it");
        return;
    }
    OPENSSL_cleanse(t->key, t->key_len);
    ns_free(t->key);
    ns_free(t);
    iface->impl = NULL;
}

void node_transport_stats(const struct raft_uv_transport *iface,
                          struct ns_node_peer_stats *out)
{
    const struct transport *t = iface->impl;
    if (t == NULL) {
        memset(out, 0, sizeof *out);
        return;
    }
    *out = t->stats;
}
