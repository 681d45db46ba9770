/* The TLS engine: OpenSSL contexts loaded from PEM files and sessions over a
 * BIO of two ns_bufs (received ciphertext in, ciphertext to send out, handed
 * to the caller without a copy), every buffer bounded. It knows no transport,
 * no loop and no clock, and never logs: the error text of a context or a
 * session is for the caller to log. */
#include "raftns/tls.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "raftns/alloc.h"
#include "raftns/err.h"

struct ns_tls_ctx {
    SSL_CTX *ssl;     /* owned */
    BIO_METHOD *wire; /* owned: the sessions' BIO over their ns_bufs */
    unsigned refs;
    bool server;
};

struct ns_tls {
    struct ns_tls_ctx *ctx; /* one reference */
    SSL *ssl;               /* owned; owns the BIO */
    struct ns_buf in; /* received ciphertext, read by OpenSSL from in_off */
    size_t in_off;
    struct ns_buf out;   /* ciphertext written by OpenSSL, to drain */
    struct ns_buf plain; /* plaintext waiting for the handshake */
    bool established;
    bool failed;
    bool peer_closed;
    char err[NS_TLS_ERR_LEN];
};

/* The reason of the queued OpenSSL errors: a system error (errno) when there is
 * one, else the most recent. Clears the queue. */
static const char *ssl_reason(char *buf, size_t len)
{
    unsigned long e, last = 0, sys = 0;
    while ((e = ERR_get_error()) != 0) {
        last = e;
        sys = sys == 0 && ERR_SYSTEM_ERROR(e) ? e : sys;
    }
    const char *r = last != 0 ? ERR_reason_error_string(last) : NULL;
    if (sys != 0) {
        snprintf(buf, len, "%s", strerror(ERR_GET_REASON(sys)));
    } else if (r != NULL) {
        snprintf(buf, len, "%s", r);
    } else if (last != 0) {
        ERR_error_string_n(last, buf, len);
    } else {
        snprintf(buf, len, "unknown error");
    }
    return buf;
}

/* The session's BIO: OpenSSL reads t->in and appends to t->out. */
static int wire_write(BIO *b, const char *data, int len)
{
    struct ns_tls *t = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    return ns_buf_append(&t->out, data, (size_t)len) == 0 ? len : -1;
}

static int wire_read(BIO *b, char *data, int len)
{
    struct ns_tls *t = BIO_get_data(b);
    size_t avail = t->in.len - t->in_off;
    BIO_clear_retry_flags(b);
    if (avail == 0) {
        BIO_set_retry_read(b); /* no data yet, not the end of the stream */
        return -1;
    }
    size_t n = avail < (size_t)len ? avail : (size_t)len;
    memcpy(data, t->in.data + t->in_off, n);
    t->in_off += n;
    if (t->in_off == t->in.len) {
        ns_buf_reset(&t->in);
        t->in_off = 0;
    }
    return (int)n;
}

static long wire_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    struct ns_tls *t = BIO_get_data(b);
    (void)num;
    (void)ptr;
    switch (cmd) {
    case BIO_CTRL_FLUSH:
        return 1;
    case BIO_CTRL_PENDING:
        return (long)(t->in.len - t->in_off);
    case BIO_CTRL_WPENDING:
        return (long)t->out.len;
    default:
        return 0;
    }
}

static int wire_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

static int ctx_new(bool server, bool tls13_only, struct ns_tls_ctx **out)
{
    struct ns_tls_ctx *ctx = ns_calloc(1, sizeof *ctx);
    if (ctx == NULL) {
        return NS_ENOMEM;
    }
    ctx->ssl = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
    ctx->wire =
        BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "raftns wire");
    if (ctx->ssl == NULL || ctx->wire == NULL ||
        BIO_meth_set_write(ctx->wire, wire_write) != 1 ||
        BIO_meth_set_read(ctx->wire, wire_read) != 1 ||
        BIO_meth_set_ctrl(ctx->wire, wire_ctrl) != 1 ||
        BIO_meth_set_create(ctx->wire, wire_create) != 1) {
        SSL_CTX_free(ctx->ssl);
        BIO_meth_free(ctx->wire);
        ns_free(ctx);
        ERR_clear_error();
        return NS_ENOMEM;
    }
    ctx->refs = 1;
    ctx->server = server;
    SSL_CTX_set_min_proto_version(ctx->ssl,
                                  tls13_only ? TLS1_3_VERSION : TLS1_2_VERSION);
    SSL_CTX_set_options(ctx->ssl, SSL_OP_NO_RENEGOTIATION);
    SSL_CTX_set_session_cache_mode(ctx->ssl, SSL_SESS_CACHE_OFF);
    /* AES-128-GCM first: as safe here and the cheapest with AES-NI. */
    SSL_CTX_set_ciphersuites(ctx->ssl, "TLS_AES_128_GCM_SHA256:"
                                       "TLS_AES_256_GCM_SHA384:"
                                       "TLS_CHACHA20_POLY1305_SHA256");
    /* Whole records per BIO read instead of header and body apart. */
    SSL_CTX_set_read_ahead(ctx->ssl, 1);
    if (server) {
        SSL_CTX_set_num_tickets(ctx->ssl, 0);
        SSL_CTX_set_options(ctx->ssl, SSL_OP_CIPHER_SERVER_PREFERENCE);
    }
    *out = ctx;
    return 0;
}

/* Loads cert (chain) and key into ctx and checks they belong together. */
static int load_identity(SSL_CTX *ssl, const char *cert, const char *key,
                         char *err, size_t errlen)
{
    char why[128];
    if (SSL_CTX_use_certificate_chain_file(ssl, cert) != 1) {
        ns_errf(err, errlen, "cannot load certificate %s: %s", cert,
                ssl_reason(why, sizeof why));
        return NS_EIO;
    }
    if (key == NULL ||
        SSL_CTX_use_PrivateKey_file(ssl, key, SSL_FILETYPE_PEM) != 1) {
        ns_errf(err, errlen, "cannot load private key %s: %s",
                key != NULL ? key : "(none given)",
                key != NULL ? ssl_reason(why, sizeof why) : "needed");
        return NS_EIO;
    }
    if (SSL_CTX_check_private_key(ssl) != 1) {
        ns_errf(err, errlen, "private key %s does not match certificate %s",
                key, cert);
        ERR_clear_error();
        return NS_EIO;
    }
    return 0;
}

static int load_ca(SSL_CTX *ssl, const char *ca, bool client_list, char *err,
                   size_t errlen)
{
    char why[128];
    if (SSL_CTX_load_verify_locations(ssl, ca, NULL) != 1) {
        ns_errf(err, errlen, "cannot load CA %s: %s", ca,
                ssl_reason(why, sizeof why));
        return NS_EIO;
    }
    if (client_list) {
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(ca);
        if (names == NULL) {
            ns_errf(err, errlen, "no CA certificate in %s", ca);
            ERR_clear_error();
            return NS_EIO;
        }
        SSL_CTX_set_client_CA_list(ssl, names);
    }
    return 0;
}

int ns_tls_ctx_create_server(const struct ns_tls_server_opts *o,
                             struct ns_tls_ctx **out, char *err, size_t errlen)
{
    if (o->cert_path == NULL || o->cert_path[0] == '\0') {
        ns_errf(err, errlen, "no certificate configured");
        return NS_EIO;
    }
    if (o->verify != NS_TLS_VERIFY_NONE &&
        (o->ca_path == NULL || o->ca_path[0] == '\0')) {
        ns_errf(err, errlen,
                "client certificates are verified but no CA is configured");
        return NS_EIO;
    }
    struct ns_tls_ctx *ctx = NULL;
    int rv = ctx_new(true, o->tls13_only, &ctx);
    if (rv != 0) {
        return rv;
    }
    rv = load_identity(ctx->ssl, o->cert_path, o->key_path, err, errlen);
    if (rv == 0 && o->ca_path != NULL && o->ca_path[0] != '\0') {
        rv = load_ca(ctx->ssl, o->ca_path, o->verify != NS_TLS_VERIFY_NONE, err,
                     errlen);
    }
    if (rv != 0) {
        ns_tls_ctx_unref(ctx);
        return rv;
    }
    int mode = SSL_VERIFY_NONE;
    if (o->verify == NS_TLS_VERIFY_OPTIONAL) {
        mode = SSL_VERIFY_PEER;
    } else if (o->verify == NS_TLS_VERIFY_REQUIRE) {
        mode = SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT;
    }
    SSL_CTX_set_verify(ctx->ssl, mode, NULL);
    *out = ctx;
    return 0;
}

int ns_tls_ctx_create_client(const struct ns_tls_client_opts *o,
                             struct ns_tls_ctx **out, char *err, size_t errlen)
{
    struct ns_tls_ctx *ctx = NULL;
    int rv = ctx_new(false, o->tls13_only, &ctx);
    if (rv != 0) {
        return rv;
    }
    if (o->cert_path != NULL && o->cert_path[0] != '\0') {
        rv = load_identity(ctx->ssl, o->cert_path, o->key_path, err, errlen);
    }
    if (rv == 0 && !o->insecure) {
        if (o->ca_path != NULL && o->ca_path[0] != '\0') {
            rv = load_ca(ctx->ssl, o->ca_path, false, err, errlen);
        } else if (SSL_CTX_set_default_verify_paths(ctx->ssl) != 1) {
            ns_errf(err, errlen, "cannot load the system CAs");
            ERR_clear_error();
            rv = NS_EIO;
        }
    }
    if (rv != 0) {
        ns_tls_ctx_unref(ctx);
        return rv;
    }
    SSL_CTX_set_verify(ctx->ssl,
                       o->insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, NULL);
    *out = ctx;
    return 0;
}

struct ns_tls_ctx *ns_tls_ctx_ref(struct ns_tls_ctx *ctx)
{
    ctx->refs++;
    return ctx;
}

void ns_tls_ctx_unref(struct ns_tls_ctx *ctx)
{
    if (ctx == NULL || --ctx->refs > 0) {
        return;
    }
    SSL_CTX_free(ctx->ssl);
    BIO_meth_free(ctx->wire);
    ns_free(ctx);
}

void ns_tls_ctx_describe(const struct ns_tls_ctx *ctx, char *buf, size_t len)
{
    X509 *x = SSL_CTX_get0_certificate(ctx->ssl);
    if (x == NULL) {
        ns_errf(buf, len, "no certificate");
        return;
    }
    char subject[256];
    X509_NAME_oneline(X509_get_subject_name(x), subject, sizeof subject);
    BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
    char *serial = bn != NULL ? BN_bn2hex(bn) : NULL;
    char until[64] = "?";
    BIO *mem = BIO_new(BIO_s_mem());
    if (mem != NULL && ASN1_TIME_print(mem, X509_get0_notAfter(x)) == 1) {
        int n = BIO_read(mem, until, (int)sizeof until - 1);
        until[n > 0 ? n : 0] = '\0';
    }
    ns_errf(buf, len, "%s, serial %s, not after %s", subject,
            serial != NULL ? serial : "?", until);
    BIO_free(mem);
    OPENSSL_free(serial);
    BN_free(bn);
    ERR_clear_error();
}

int ns_tls_create(struct ns_tls_ctx *ctx, const char *peer_name,
                  struct ns_tls **out)
{
    struct ns_tls *t = ns_calloc(1, sizeof *t);
    if (t == NULL) {
        return NS_ENOMEM;
    }
    int rv = NS_ENOMEM;
    ns_buf_init(&t->plain);
    ns_buf_init(&t->in);
    ns_buf_init(&t->out);
    t->ssl = SSL_new(ctx->ssl);
    BIO *wire = BIO_new(ctx->wire);
    if (t->ssl == NULL || wire == NULL) {
        BIO_free(wire);
        goto err_after_t;
    }
    BIO_set_data(wire, t);
    SSL_set_bio(t->ssl, wire, wire); /* one BIO both ways: one reference */
    if (ctx->server) {
        SSL_set_accept_state(t->ssl);
    } else {
        SSL_set_connect_state(t->ssl);
        if (peer_name != NULL && peer_name[0] != '\0' &&
            X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl), peer_name) !=
                1) {
            /* Not an IP address: a DNS name, also sent as SNI. */
            ERR_clear_error();
            if (SSL_set1_host(t->ssl, peer_name) != 1 ||
                SSL_set_tlsext_host_name(t->ssl, peer_name) != 1) {
                rv = NS_EINVAL;
                goto err_after_t;
            }
        }
        /* Writes the ClientHello for the first drain. */
        int r = SSL_do_handshake(t->ssl);
        if (r != 1 && SSL_get_error(t->ssl, r) != SSL_ERROR_WANT_READ) {
            goto err_after_t;
        }
    }
    t->ctx = ns_tls_ctx_ref(ctx);
    *out = t;
    return 0;

err_after_t:
    SSL_free(t->ssl);
    ERR_clear_error();
    ns_buf_close(&t->in);
    ns_buf_close(&t->out);
    ns_free(t);
    return rv;
}

void ns_tls_destroy(struct ns_tls *t)
{
    if (t == NULL) {
        return;
    }
    SSL_free(t->ssl);
    ns_buf_close(&t->plain);
    ns_buf_close(&t->in);
    ns_buf_close(&t->out);
    ns_tls_ctx_unref(t->ctx);
    ERR_clear_error();
    ns_free(t);
}

/* Records why the session failed: a certificate that did not verify, or the
 * OpenSSL reason. */
static int fail(struct ns_tls *t, int ssl_err)
{
    t->failed = true;
    long vr = SSL_get_verify_result(t->ssl);
    char why[128];
    if (vr != X509_V_OK) {
        ns_errf(t->err, sizeof t->err, "certificate verify failed: %s",
                X509_verify_cert_error_string(vr));
        ERR_clear_error();
    } else if (ssl_err == SSL_ERROR_SYSCALL && ERR_peek_last_error() == 0) {
        ns_errf(t->err, sizeof t->err, "unexpected end of stream");
    } else {
        ns_errf(t->err, sizeof t->err, "%s", ssl_reason(why, sizeof why));
    }
    return NS_EPROTO;
}

static int write_through(struct ns_tls *t, const uint8_t *p, size_t len)
{
    size_t done = 0;
    if (len == 0) {
        return 0;
    }
    /* The wire BIO never refuses output, so one call writes everything. */
    int r = SSL_write_ex(t->ssl, p, len, &done);
    return r == 1 ? 0 : fail(t, SSL_get_error(t->ssl, r));
}

/* Drives the handshake and, once it is done, sends queued plaintext. */
static int advance(struct ns_tls *t)
{
    if (t->failed) {
        return NS_EPROTO;
    }
    if (!t->established) {
        int r = SSL_do_handshake(t->ssl);
        if (r != 1) {
            int e = SSL_get_error(t->ssl, r);
            if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
                return 0;
            }
            return fail(t, e);
        }
        t->established = true;
    }
    if (t->plain.len > 0) {
        int rv = write_through(t, t->plain.data, t->plain.len);
        ns_buf_reset(&t->plain);
        return rv;
    }
    return 0;
}

int ns_tls_feed(struct ns_tls *t, const uint8_t *p, size_t len)
{
    if (len == 0) {
        return 0;
    }
    if (t->in.len - t->in_off + len > NS_TLS_IN_MAX) {
        return NS_ETOOBIG;
    }
    if (t->in_off > 0) { /* keep the unread bytes at the front */
        memmove(t->in.data, t->in.data + t->in_off, t->in.len - t->in_off);
        t->in.len -= t->in_off;
        t->in_off = 0;
    }
    return ns_buf_append(&t->in, p, len) == 0 ? 0 : NS_ENOMEM;
}

int ns_tls_read(struct ns_tls *t, uint8_t *buf, size_t cap, size_t *n)
{
    *n = 0;
    int rv = advance(t);
    if (rv != 0 || !t->established) {
        return rv;
    }
    if (t->peer_closed) {
        return NS_ESHUTDOWN;
    }
    size_t got = 0;
    while (got < cap) {
        size_t k = 0;
        int r = SSL_read_ex(t->ssl, buf + got, cap - got, &k);
        if (r == 1) {
            got += k;
            if (SSL_has_pending(t->ssl) == 0 && t->in.len == t->in_off) {
                break; /* all input consumed: skip a read that would fail */
            }
            continue;
        }
        int e = SSL_get_error(t->ssl, r);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
            break;
        }
        if (e == SSL_ERROR_ZERO_RETURN) {
            t->peer_closed = true;
            rv = NS_ESHUTDOWN;
        } else {
            rv = fail(t, e);
        }
        break;
    }
    *n = got;
    /* Bytes decrypted before a failure are delivered; the next call fails. */
    return got > 0 ? 0 : rv;
}

int ns_tls_write(struct ns_tls *t, const uint8_t *p, size_t len)
{
    if (t->failed) {
        return NS_EPROTO;
    }
    if (t->plain.len + t->out.len + len > NS_TLS_OUT_MAX) {
        return NS_ETOOBIG;
    }
    if (t->established && t->plain.len == 0) {
        return write_through(t, p, len);
    }
    if (ns_buf_append(&t->plain, p, len) != 0) {
        return NS_ENOMEM;
    }
    return advance(t);
}

void ns_tls_shutdown(struct ns_tls *t)
{
    if (t->established && !t->failed) {
        SSL_shutdown(t->ssl);
        ERR_clear_error();
    }
}

size_t ns_tls_pending(const struct ns_tls *t)
{
    return t->out.len;
}

int ns_tls_drain(struct ns_tls *t, struct ns_buf *out)
{
    if (t->out.err != 0) {
        return NS_ENOMEM; /* the session failed already: nothing sane to send */
    }
    if (out->len == 0 && out->err == 0) {
        /* Hand the buffer over instead of copying it. */
        ns_buf_close(out);
        *out = t->out;
        ns_buf_init(&t->out);
        return 0;
    }
    int rv = ns_buf_append(out, t->out.data, t->out.len);
    ns_buf_reset(&t->out);
    return rv == 0 ? 0 : NS_ENOMEM;
}

size_t ns_tls_unsent(const struct ns_tls *t)
{
    return t->plain.len;
}

bool ns_tls_is_established(const struct ns_tls *t)
{
    return t->established && !t->failed;
}

bool ns_tls_peer_verified(const struct ns_tls *t)
{
    return t->established && SSL_get0_peer_certificate(t->ssl) != NULL &&
           SSL_get_verify_result(t->ssl) == X509_V_OK;
}

const char *ns_tls_error(const struct ns_tls *t)
{
    return t->err;
}

const char *ns_tls_version(const struct ns_tls *t)
{
    return t->established ? SSL_get_version(t->ssl) : "";
}
