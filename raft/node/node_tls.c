/* raftTls: TLS 1.3 with mutual certificates between a raft peer connection's
 * TCP socket and everything else of it (the HMAC handshake of node_transport.c
 * and then the relay with its message checker, which both see plaintext),
 * driving an ns_tls session (src/tls) over the uv stream. It decides nothing
 * about membership and checks no raft message; the TLS engine itself does no
 * I/O. */
#include <stdio.h>
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/buf.h"
#include "raftns/err.h"
#include "raftns/tls.h"

#include "node_transport_int.h"

/* Ciphertext handed to one uv_write. */
struct tls_write {
    uv_write_t req;
    struct conn *c;
    uint8_t *data; /* owned */
    size_t cost;   /* counted in c->queued[DIR_OUT] */
};

int node_tls_load(char *const files[3], struct ns_tls_ctx **server,
                  struct ns_tls_ctx **client, char *err, size_t errlen)
{
    struct ns_tls_server_opts so = {.cert_path = files[0],
                                    .key_path = files[1],
                                    .ca_path = files[2],
                                    .verify = NS_TLS_VERIFY_REQUIRE,
                                    .tls13_only = true};
    struct ns_tls_client_opts co = {.ca_path = files[2],
                                    .cert_path = files[0],
                                    .key_path = files[1],
                                    .tls13_only = true};
    *server = NULL;
    *client = NULL;
    int rv = ns_tls_ctx_create_server(&so, server, err, errlen);
    if (rv == 0) {
        rv = ns_tls_ctx_create_client(&co, client, err, errlen);
    }
    if (rv != 0) {
        ns_tls_ctx_unref(*server);
        *server = NULL;
    }
    return rv;
}

size_t node_tls_buffered(const struct conn *c)
{
    return c->tls != NULL ? ns_tls_pending(c->tls) + ns_tls_unsent(c->tls) : 0;
}

/* The session failed: its alert goes out if the socket takes it at once, and
 * the connection is refused with the OpenSSL reason. */
static void tls_failed(struct conn *c, int rv)
{
    char why[NS_TLS_ERR_LEN + 16];
    struct ns_buf wire;
    ns_buf_init(&wire);
    if (ns_tls_drain(c->tls, &wire) == 0 && wire.len > 0) {
        uv_buf_t b = uv_buf_init((char *)wire.data, (unsigned)wire.len);
        (void)uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    }
    ns_buf_close(&wire);
    snprintf(why, sizeof why, "TLS: %s",
             rv == NS_EPROTO ? ns_tls_error(c->tls) : ns_strerror(rv));
    node_conn_refuse(c, why);
}

static void tls_write_cb(uv_write_t *req, int status)
{
    struct tls_write *w = req->data;
    struct conn *c = w->c;
    c->queued[DIR_OUT] -= w->cost;
    ns_free(w->data);
    ns_free(w);
    if (status < 0) {
        if (c->phase == PHASE_HANDSHAKE) {
            node_conn_refuse(c, "handshake write failed");
        }
        node_conn_close(c);
        return;
    }
    if (c->queued[DIR_OUT] + node_tls_buffered(c) < LOW_WATER) {
        node_relay_pause(c, DIR_OUT, false);
    }
}

/* Writes the ciphertext the session has ready to the socket. 0, or c is
 * closing. */
static int flush(struct conn *c)
{
    if (c->phase == PHASE_CLOSING) {
        return NS_ESHUTDOWN;
    }
    if (ns_tls_pending(c->tls) == 0) {
        return 0;
    }
    struct ns_buf wire;
    ns_buf_init(&wire);
    struct tls_write *w = ns_malloc(sizeof *w);
    if (w == NULL || ns_tls_drain(c->tls, &wire) != 0) {
        ns_free(w);
        ns_buf_close(&wire);
        node_conn_close(c);
        return NS_ENOMEM;
    }
    size_t len = 0;
    w->data = ns_buf_take(&wire, &len);
    w->c = c;
    w->cost = sizeof *w + len;
    w->req.data = w;
    uv_buf_t b = uv_buf_init((char *)w->data, (unsigned)len);
    if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &b, 1, tls_write_cb) != 0) {
        ns_free(w->data);
        ns_free(w);
        node_conn_close(c);
        return NS_EIO;
    }
    /* The engine's own buffers count too: it may hold plaintext waiting for
     * the handshake and ciphertext not yet handed over. */
    c->queued[DIR_OUT] += w->cost;
    if (c->queued[DIR_OUT] + node_tls_buffered(c) > HIGH_WATER) {
        node_relay_pause(c, DIR_OUT, true);
    }
    return 0;
}

int node_tls_send(struct conn *c, const uint8_t *p, size_t len)
{
    int rv = ns_tls_write(c->tls, p, len);
    if (rv != 0) {
        tls_failed(c, rv);
        return rv;
    }
    return flush(c);
}

/* Decrypts everything the session can give: into the handshake buffer while
 * the HMAC handshake runs (it bounds the handshake), then chunk by chunk
 * through the checker. 0, NS_EPROTO, NS_ESHUTDOWN (close_notify) or an
 * NS_E* code. */
static int deliver(struct conn *c)
{
    size_t n = 0;
    int rv = 0;
    while (rv == 0 && c->phase != PHASE_CLOSING) {
        if (c->phase == PHASE_HANDSHAKE) {
            size_t cap = sizeof c->hs_buf - c->hs_len;
            rv = ns_tls_read(c->tls, c->hs_buf + c->hs_len, cap, &n);
            if (rv == 0 && n > 0) {
                node_conn_hs_input(c, n); /* may start the relay */
            }
            if (n < cap) {
                break; /* nothing more decrypted for now */
            }
            continue;
        }
        struct chunk *k = ns_malloc(sizeof *k);
        if (k == NULL) {
            return NS_ENOMEM;
        }
        rv = ns_tls_read(c->tls, (uint8_t *)k->data, sizeof k->data, &n);
        if (rv == 0 && n > 0) {
            node_relay_forward_in(c, k, n);
        } else {
            ns_free(k);
        }
        if (n < sizeof k->data) {
            break;
        }
    }
    return rv;
}

static void tls_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct conn *c = h->data;
    (void)suggested;
    /* Shared: ns_tls_feed copies before the next read can come. */
    buf->base = (char *)c->t->scratch;
    buf->len = sizeof c->t->scratch;
}

static void tls_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct conn *c = s->data;
    if (c->phase == PHASE_CLOSING || nread == 0) {
        return;
    }
    int rv = nread < 0 ? (int)nread
                       : ns_tls_feed(c->tls, (const uint8_t *)buf->base,
                                     (size_t)nread);
    if (rv == 0) {
        rv = deliver(c);
    }
    if (c->phase == PHASE_CLOSING) {
        return;
    }
    if (rv == 0) {
        flush(c);
    } else if (nread >= 0 && rv != NS_ESHUTDOWN) {
        tls_failed(c, rv);
    } else if (c->phase == PHASE_RELAY) {
        node_conn_close(c); /* an end as in the plain relay: libraft redials */
    } else {
        node_conn_refuse(c, nread >= 0 || nread == UV_EOF
                                ? "closed during the handshake"
                                : uv_strerror((int)nread));
    }
}

void node_tls_read_start(struct conn *c)
{
    uv_read_start((uv_stream_t *)&c->tcp, tls_alloc, tls_read_cb);
}

int node_tls_start(struct conn *c)
{
    struct transport *t = c->t;
    char host[NS_WIRE_ADDR_MAX + 1];
    const char *name = NULL;
    if (!c->inbound) {
        /* Verify the listener against the IP this node dialed. */
        snprintf(host, sizeof host, "%s", c->peer_addr);
        char *colon = strrchr(host, ':');
        if (colon != NULL) {
            *colon = '\0';
        }
        name = host;
    }
    int rv = ns_tls_create(c->inbound ? t->tls_server : t->tls_client, name,
                           &c->tls);
    if (rv != 0) {
        node_conn_refuse(c, rv == NS_EINVAL ? "TLS: unusable peer address"
                                            : "TLS: out of memory");
        return rv;
    }
    node_tls_read_start(c);
    return flush(c); /* the ClientHello */
}
