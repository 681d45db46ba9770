/* TLS on the client port: the server and node-to-node client contexts with
 * their SIGHUP reload, the first-byte decision of a new connection, and the
 * glue between a connection's bytes and its ns_tls session. The start-up
 * settings are server_tls.c; frame cutting and flow control stay in conn.c;
 * the engine itself is src/tls/tls.c. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/log.h"
#include "net/net_int.h"

#define TLS_RECORD 0x16 /* a TLS handshake record: the ClientHello */

/* Builds both contexts from the stored paths; on failure nothing changes. */
static int load(struct ns_net_tls *st)
{
    char err[512];
    struct ns_tls_ctx *ctx = NULL, *peer = NULL;
    struct ns_tls_server_opts so = {.cert_path = st->cert,
                                    .key_path = st->key,
                                    .ca_path = st->trust,
                                    .verify = st->client_auth};
    int rv = ns_tls_ctx_create_server(&so, &ctx, err, sizeof err);
    /* Node-to-node: verify the other node against the trust CA and show this
     * node's certificate when it asks for one. Permissive with a trust CA
     * speaks TLS too, so nodes can be switched to enforcing one by one. */
    if (rv == 0 && (st->mode == NS_TLS_MODE_ENFORCING || st->trust != NULL)) {
        struct ns_tls_client_opts co = {
            .ca_path = st->trust, .cert_path = st->cert, .key_path = st->key};
        rv = ns_tls_ctx_create_client(&co, &peer, err, sizeof err);
    }
    if (rv != 0) {
        NS_LOG(NS_LOG_ERROR, "tls: %s",
               rv == NS_ENOMEM ? "out of memory loading certificates" : err);
        ns_tls_ctx_unref(ctx);
        return rv;
    }
    ns_tls_ctx_unref(st->ctx);
    ns_tls_ctx_unref(st->peer_ctx);
    st->ctx = ctx;
    st->peer_ctx = peer;
    if (peer != NULL && st->trust == NULL) {
        NS_LOG(NS_LOG_WARN, "tls: enforcing without tlsServerTrustCertPath: "
                            "the other nodes are verified against the system "
                            "CAs");
    }
    ns_tls_ctx_describe(ctx, err, sizeof err);
    NS_LOG(NS_LOG_INFO, "tls: %s, client auth %s, certificate %s",
           st->mode == NS_TLS_MODE_ENFORCING ? "enforcing" : "permissive",
           st->client_auth == NS_TLS_VERIFY_REQUIRE    ? "require"
           : st->client_auth == NS_TLS_VERIFY_OPTIONAL ? "optional"
                                                       : "none",
           err);
    return 0;
}

int ns_conn_tls_init(struct ns_net *net, const struct ns_server_tls *cfg)
{
    struct ns_net_tls *st = &net->tls;
    memset(st, 0, sizeof *st);
    if (cfg == NULL || cfg->mode == NS_TLS_MODE_DISABLED) {
        return 0;
    }
    st->mode = cfg->mode;
    st->client_auth = cfg->client_auth;
    st->http = cfg->http;
    st->cert = ns_strdup(cfg->cert_path);
    st->key = ns_strdup(cfg->key_path);
    st->trust = ns_strdup(cfg->trust_path);
    if (st->cert == NULL || st->key == NULL ||
        (cfg->trust_path != NULL && st->trust == NULL)) {
        ns_conn_tls_close(net);
        return NS_ENOMEM;
    }
    int rv = load(st);
    if (rv != 0) {
        ns_conn_tls_close(net);
        return rv == NS_ENOMEM ? rv : NS_EIO;
    }
    return 0;
}

void ns_conn_tls_close(struct ns_net *net)
{
    struct ns_net_tls *st = &net->tls;
    ns_tls_ctx_unref(st->ctx);
    ns_tls_ctx_unref(st->peer_ctx);
    ns_free(st->cert);
    ns_free(st->key);
    ns_free(st->trust);
    memset(st, 0, sizeof *st);
}

int ns_conn_tls_reload(struct ns_net *net)
{
    if (net->tls.mode == NS_TLS_MODE_DISABLED) {
        NS_LOG(NS_LOG_INFO, "tls: disabled; nothing to reload");
        return 0;
    }
    int rv = load(&net->tls);
    if (rv != 0) {
        NS_LOG(NS_LOG_WARN, "tls: reload failed; keeping the old certificate");
        return rv == NS_ENOMEM ? rv : NS_EIO;
    }
    return 0;
}

int ns_conn_tls_classify(struct ns_conn *c, uint8_t first)
{
    const struct ns_net_tls *st = &c->net->tls;
    bool hello = first == TLS_RECORD;
    const char *refused = NULL;
    if (hello && st->mode == NS_TLS_MODE_DISABLED) {
        refused = "TLS handshake on a plaintext port";
    } else if (!hello && st->mode == NS_TLS_MODE_ENFORCING) {
        refused = "plaintext connection refused (tlsMode enforcing)";
    }
    if (refused != NULL) {
        NS_LOG(NS_LOG_WARN, "conn %llu %s: %s", (unsigned long long)c->id,
               c->peer, refused);
        ns_conn_close(c, NULL);
        return -1;
    }
    if (hello && ns_tls_create(st->ctx, NULL, &c->tls) != 0) {
        ns_conn_close(c, "out of memory starting TLS");
        return -1;
    }
    if (hello) {
        c->tls_deadline = ns_net_now(c->net) + NS_TLS_HANDSHAKE_MS;
    }
    ns_conn_set_state(c, hello ? NS_CONN_HANDSHAKING : NS_CONN_OPEN);
    return 0;
}

void ns_conn_tls_sweep_handshakes(struct ns_net *net)
{
    if (net->tls.mode == NS_TLS_MODE_DISABLED) {
        return;
    }
    uint64_t now = ns_net_now(net);
    struct ns_conn *c = net->conn_head;
    while (c != NULL) {
        struct ns_conn *next = c->next; /* closing unlinks c */
        if (c->state == NS_CONN_HANDSHAKING && c->tls_deadline != 0 &&
            now >= c->tls_deadline && !ns_tls_is_established(c->tls)) {
            NS_LOG(NS_LOG_WARN,
                   "conn %llu %s: TLS handshake not done within %d ms",
                   (unsigned long long)c->id, c->peer, NS_TLS_HANDSHAKE_MS);
            ns_conn_close(c, NULL);
        }
        c = next;
    }
}

/* Sends what the failed session still holds (its alert) if the socket takes it
 * at once, so the client learns why; the close follows right away. */
static void send_alert(struct ns_conn *c)
{
    struct ns_buf wire;
    ns_buf_init(&wire);
    if (c->wdata == NULL && ns_tls_drain(c->tls, &wire) == 0 && wire.len > 0) {
        uv_buf_t b = uv_buf_init((char *)wire.data, (unsigned)wire.len);
        (void)uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    }
    ns_buf_close(&wire);
}

/* HANDSHAKING -> OPEN, once: frames may be cut from now on. */
static void opened(struct ns_conn *c)
{
    if (c->state == NS_CONN_HANDSHAKING) {
        ns_conn_set_state(c, NS_CONN_OPEN);
    }
}

void ns_conn_tls_input(struct ns_conn *c, const uint8_t *p, size_t n)
{
    bool was_up = ns_tls_is_established(c->tls);
    int rv = ns_tls_feed(c->tls, p, n);
    /* The ciphertext is copied: decrypt into the same shared chunk. */
    uint8_t *plain = c->net->scratch;
    size_t got = sizeof c->net->scratch;
    while (rv == 0 && got == sizeof c->net->scratch && !ns_conn_is_closing(c)) {
        rv = ns_tls_read(c->tls, plain, sizeof c->net->scratch, &got);
        if (rv == 0 && got > 0) {
            opened(c); /* plaintext: the handshake is done */
            ns_conn_input(c, plain, got);
        }
    }
    if (ns_conn_is_closing(c)) {
        return;
    }
    if (rv == NS_ESHUTDOWN) {
        ns_conn_close(c, NULL);
    } else if (rv != 0) {
        NS_LOG(NS_LOG_WARN, "conn %llu %s: TLS %s: %s",
               (unsigned long long)c->id, c->peer,
               was_up ? "failed" : "handshake failed",
               rv == NS_EPROTO ? ns_tls_error(c->tls) : ns_strerror(rv));
        send_alert(c);
        ns_conn_close(c, NULL);
    } else if (!was_up && ns_tls_is_established(c->tls)) {
        opened(c);
        NS_LOG(NS_LOG_DEBUG, "conn %llu %s: %s established%s",
               (unsigned long long)c->id, c->peer, ns_tls_version(c->tls),
               ns_tls_peer_verified(c->tls) ? ", client certificate verified"
                                            : "");
    }
}

uint8_t *ns_conn_tls_output(struct ns_conn *c, size_t *len)
{
    *len = 0;
    if (c->out.len > 0) {
        int rv = ns_tls_write(c->tls, c->out.data, c->out.len);
        ns_buf_reset(&c->out);
        if (rv != 0) {
            NS_LOG(NS_LOG_WARN, "conn %llu %s: TLS write: %s",
                   (unsigned long long)c->id, c->peer,
                   rv == NS_EPROTO ? ns_tls_error(c->tls) : ns_strerror(rv));
            ns_conn_close(c, NULL);
            return NULL;
        }
    }
    if (ns_tls_pending(c->tls) == 0) {
        return NULL;
    }
    struct ns_buf wire;
    ns_buf_init(&wire);
    if (ns_tls_drain(c->tls, &wire) != 0) {
        ns_buf_close(&wire);
        ns_conn_close(c, "out of memory encrypting a reply");
        return NULL;
    }
    return ns_buf_take(&wire, len);
}
