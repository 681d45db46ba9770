/* raftns's raft_uv_transport: the TCP listener and connects, the mutual HMAC
 * handshake of raftns/wire.h before a single byte reaches libraft (with a
 * deadline and a cap on unauthenticated connections), the refusal of ids not
 * in the raft configuration, and the close order. The relay that follows is
 * raft/node/node_relay.c; with raftTls both run inside TLS
 * (raft/node/node_tls.c). It does not judge raft semantics (terms, indexes),
 * and it keeps no memory of peers between connections. */
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

#include "node_transport_int.h"

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

void node_transport_heard(struct transport *t, uint64_t id)
{
    size_t oldest = 0;
    for (size_t i = 0; i < NODE_HEARD_MAX; i++) {
        if (t->heard[i].id == id || t->heard[i].id == 0) {
            oldest = i;
            break;
        }
        oldest = t->heard[i].ms < t->heard[oldest].ms ? i : oldest;
    }
    t->heard[oldest].id = id;
    t->heard[oldest].ms = uv_now(t->loop);
}

uint64_t node_transport_last_heard(const struct raft_uv_transport *iface,
                                   uint64_t id)
{
    const struct transport *t = iface->impl;
    if (t == NULL) { /* a driven node has no transport of its own */
        return 0;
    }
    for (size_t i = 0; i < NODE_HEARD_MAX; i++) {
        if (t->heard[i].id == id) {
            return t->heard[i].ms;
        }
    }
    return 0;
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
        c->remote_ip = in->sin_addr.s_addr;
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
    ns_tls_destroy(c->tls);
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

void node_conn_close(struct conn *c)
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

void node_conn_refuse(struct conn *c, const char *reason)
{
    struct transport *t = c->t;
    if (c->phase == PHASE_CLOSING) {
        return; /* ended (and counted) already */
    }
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
    node_conn_close(c);
}

void node_conn_violation(struct conn *c, const char *reason)
{
    struct transport *t = c->t;
    if (c->phase == PHASE_CLOSING) {
        return;
    }
    t->stats.violations++;
    warn_limited(t, &t->violations,
                 "peer: closing connection %s peer %llu (%s, %s): %s",
                 c->inbound ? "from" : "to", (unsigned long long)c->peer_id,
                 c->peer_addr, c->remote, reason);
    node_conn_close(c);
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
        node_conn_refuse(c, "handshake timed out");
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
        node_conn_refuse(c, "handshake write failed");
    }
}

static int hs_send(struct conn *c, int slot, size_t len)
{
    if (c->tls != NULL) {
        return node_tls_send(c, c->out[slot], len);
    }
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
            node_conn_refuse(c, rv != 0 ? c->auth.reason
                                        : "handshake write failed");
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
        node_conn_refuse(c, c->auth.reason);
        return;
    }
    consume(c, used);
    c->peer_id = c->auth.connector_id;
    memcpy(c->peer_addr, c->auth.connector_addr, sizeof c->peer_addr);
    if (t->closing) {
        node_conn_close(c);
        return;
    }
    const char *why = check_peer(c);
    if (why != NULL) {
        node_conn_refuse(c, why);
        return;
    }
    node_transport_heard(t, c->peer_id);
    node_relay_start(c);
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
        node_conn_refuse(c,
                         rv != 0 ? c->auth.reason : "handshake write failed");
        return;
    }
    consume(c, used);
    node_transport_heard(c->t, c->peer_id); /* it answered our challenge */
    node_relay_start(c);
}

void node_conn_hs_input(struct conn *c, size_t n)
{
    c->hs_len += n;
    if (c->inbound) {
        inbound_progress(c);
    } else {
        outbound_progress(c);
    }
    if (c->phase == PHASE_HANDSHAKE && c->hs_len == sizeof c->hs_buf) {
        node_conn_refuse(c, "handshake message too long");
    }
}

static void hs_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct conn *c = s->data;
    (void)buf;
    if (c->phase != PHASE_HANDSHAKE) {
        return;
    }
    if (nread < 0) {
        node_conn_refuse(c, nread == UV_EOF ? "closed during the handshake"
                                            : uv_strerror((int)nread));
        return;
    }
    node_conn_hs_input(c, (size_t)nread);
}

/* Unauthenticated inbound connections from ip: one source cannot take every
 * slot and lock out a member that reconnects. */
static unsigned handshaking_from(const struct transport *t, uint32_t ip)
{
    unsigned n = 0;
    for (const struct conn *c = t->conns; c != NULL; c = c->next) {
        n += c->handshaking_counted && c->remote_ip == ip;
    }
    return n;
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
        node_conn_close(c);
        return;
    }
    describe_remote(c);
    if (t->n_handshaking >= MAX_HANDSHAKING ||
        handshaking_from(t, c->remote_ip) >= MAX_HANDSHAKING_PER_IP) {
        node_conn_refuse(c, "too many unauthenticated connections");
        return;
    }
    c->handshaking_counted = true;
    t->n_handshaking++;
    if (!fresh_nonce(c)) {
        node_conn_refuse(c, "no randomness for a nonce");
        return;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    uv_timer_start(&c->timer, timer_cb, HANDSHAKE_MS, 0);
    /* The deadline covers a stalled TLS handshake as well. */
    if (t->tls_server != NULL) {
        node_tls_start(c);
    } else {
        uv_read_start((uv_stream_t *)&c->tcp, hs_alloc, hs_read_cb);
    }
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
        node_conn_close(c);
        return;
    }
    describe_remote(c);
    uv_tcp_nodelay(&c->tcp, 1);
    if (!fresh_nonce(c)) {
        node_conn_refuse(c, "no randomness for a nonce");
        return;
    }
    /* Under TLS the HELLO waits in the session until its handshake is done.
     */
    if (t->tls_client != NULL && node_tls_start(c) != 0) {
        return;
    }
    if (ns_wire_auth_connect(&c->auth, t->key, t->key_len, t->id, t->addr,
                             c->peer_id, c->peer_addr, c->nonce, c->out[0],
                             sizeof c->out[0], &out_len) != 0 ||
        hs_send(c, 0, out_len) != 0) {
        node_conn_refuse(c, c->auth.reason != NULL ? c->auth.reason
                                                   : "handshake write failed");
        return;
    }
    if (c->tls == NULL) {
        uv_read_start((uv_stream_t *)&c->tcp, hs_alloc, hs_read_cb);
    }
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
        node_conn_close(c);
        return RAFT_NOCONNECTION;
    }
    if (uv_tcp_connect(&c->connect_req, &c->tcp, (const struct sockaddr *)&sa,
                       connect_cb) != 0) {
        node_conn_close(c); /* no request attached: no callback */
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
        node_conn_close(c);
    }
    /* tr_init always opened the listener, so cb runs later, never inside. */
    uv_close((uv_handle_t *)&t->listener, listener_closed);
}

/* Loads the TLS files into new contexts and swaps them in; connections keep
 * the contexts they started with. 0, NS_EINVAL (logged) or NS_ENOMEM. */
static int load_tls(struct transport *t)
{
    char err[512];
    struct ns_tls_ctx *server = NULL, *client = NULL;
    int rv = node_tls_load(t->tls_files, &server, &client, err, sizeof err);
    if (rv != 0) {
        NS_LOG(NS_LOG_ERROR, "peer: raftTls: %s",
               rv == NS_ENOMEM ? "out of memory loading certificates" : err);
        return rv == NS_ENOMEM ? rv : NS_EINVAL;
    }
    ns_tls_ctx_unref(t->tls_server);
    ns_tls_ctx_unref(t->tls_client);
    t->tls_server = server;
    t->tls_client = client;
    ns_tls_ctx_describe(server, err, sizeof err);
    NS_LOG(NS_LOG_INFO, "peer: raftTls enforcing (TLS 1.3, mutual), %s", err);
    return 0;
}

static void free_tls(struct transport *t)
{
    ns_tls_ctx_unref(t->tls_server);
    ns_tls_ctx_unref(t->tls_client);
    for (int i = 0; i < 3; i++) {
        ns_free(t->tls_files[i]);
    }
}

/* Copies the TLS file names and loads them. 0 (also without TLS), NS_EINVAL
 * (logged) or NS_ENOMEM. */
static int init_tls(struct transport *t,
                    const struct node_transport_config *cfg)
{
    const char *files[3] = {cfg->tls_cert, cfg->tls_key, cfg->tls_ca};
    if (files[0] == NULL && files[1] == NULL && files[2] == NULL) {
        return 0;
    }
    for (int i = 0; i < 3; i++) {
        if (files[i] == NULL || files[i][0] == '\0') {
            NS_LOG(NS_LOG_ERROR, "peer: raftTls needs a certificate, a key "
                                 "and a CA");
            return NS_EINVAL;
        }
        t->tls_files[i] = ns_strdup(files[i]);
        if (t->tls_files[i] == NULL) {
            return NS_ENOMEM;
        }
    }
    return load_tls(t);
}

int node_transport_reload_tls(struct raft_uv_transport *iface)
{
    struct transport *t = iface->impl;
    if (t == NULL || t->tls_server == NULL) {
        return 0;
    }
    int rv = load_tls(t);
    if (rv != 0) {
        NS_LOG(NS_LOG_WARN, "peer: raftTls reload failed; keeping the old "
                            "certificate");
    }
    return rv;
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
    int rv = init_tls(t, cfg);
    if (rv != 0) {
        free_tls(t);
        OPENSSL_cleanse(t->key, t->key_len);
        ns_free(t->key);
        ns_free(t);
        return rv;
    }
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
    free_tls(t);
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
