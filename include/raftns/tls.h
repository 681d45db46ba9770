/* A TLS engine over OpenSSL memory BIOs: contexts (server or client, loaded
 * from PEM files) and sessions that turn received ciphertext into plaintext and
 * queued plaintext into ciphertext to send. It never touches a socket, a loop
 * or a clock, and it does not log: callers own the transport (conn.c, peer.c,
 * raftnsctl, raftns-bench, the raft relay) and log the error text it returns.
 */
#ifndef RAFTNS_TLS_H
#define RAFTNS_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raftns/buf.h"

/* Unprocessed ciphertext a session holds before ns_tls_feed refuses. */
#define NS_TLS_IN_MAX (1u << 20)
/* Plaintext queued plus ciphertext not yet drained before ns_tls_write
 * refuses (a frame is at most 16 MiB; callers bound their output tighter). */
#define NS_TLS_OUT_MAX (80u << 20)
#define NS_TLS_ERR_LEN 160

/* Client certificates a server asks for (Java: tls.server.need.client.auth). */
enum ns_tls_verify {
    NS_TLS_VERIFY_NONE,     /* never asked */
    NS_TLS_VERIFY_OPTIONAL, /* asked; checked against the CA when sent */
    NS_TLS_VERIFY_REQUIRE,  /* a handshake without a valid one fails */
};

struct ns_tls_server_opts {
    const char *cert_path;     /* borrowed; PEM chain, leaf first */
    const char *key_path;      /* borrowed; PEM private key of the leaf */
    const char *ca_path;       /* borrowed, may be NULL: CA for client certs */
    enum ns_tls_verify verify; /* OPTIONAL and REQUIRE need ca_path */
    bool tls13_only;           /* TLS 1.3 minimum (the raft peer port) */
};

struct ns_tls_client_opts {
    const char *ca_path;   /* borrowed; NULL = the system's default CAs */
    const char *cert_path; /* borrowed, may be NULL: presented when asked */
    const char *key_path;  /* borrowed; needed with cert_path */
    bool insecure;         /* no server verification at all */
    bool tls13_only;       /* TLS 1.3 minimum (the raft peer port) */
};

struct ns_tls_ctx;
struct ns_tls;

/* Loads a server context: TLS 1.2 minimum (1.3 with tls13_only), 1.3
 * preferred, no session tickets. Returns 0 (*out owned: ns_tls_ctx_unref),
 * NS_EIO (a file is missing, unreadable or not PEM, the key does not match the
 * certificate, or the CA is needed and absent: err says which, NUL-terminated
 * in errlen bytes) or NS_ENOMEM. */
int ns_tls_ctx_create_server(const struct ns_tls_server_opts *o,
                             struct ns_tls_ctx **out, char *err, size_t errlen);
/* Loads a client context; as ns_tls_ctx_create_server. */
int ns_tls_ctx_create_client(const struct ns_tls_client_opts *o,
                             struct ns_tls_ctx **out, char *err, size_t errlen);
/* Adds a reference (returns ctx). Sessions hold one each, so a context
 * replaced at run time lives until its last session is destroyed. */
struct ns_tls_ctx *ns_tls_ctx_ref(struct ns_tls_ctx *ctx);
/* Drops a reference; the last one frees. NULL is a no-op. */
void ns_tls_ctx_unref(struct ns_tls_ctx *ctx);
/* Writes "subject, serial, not after" of the context's own certificate (or
 * "no certificate") into buf (NUL-terminated, truncated to len). */
void ns_tls_ctx_describe(const struct ns_tls_ctx *ctx, char *buf, size_t len);

/* Starts a session on ctx (a reference is taken). A client session verifies
 * that the server's certificate names peer_name (borrowed: an IPv4 or IPv6
 * address, else a DNS name also sent as SNI; NULL = the chain only) and has
 * its ClientHello ready for the first drain. Returns 0 (*out owned:
 * ns_tls_destroy), NS_EINVAL (an unusable name) or NS_ENOMEM. */
int ns_tls_create(struct ns_tls_ctx *ctx, const char *peer_name,
                  struct ns_tls **out);
void ns_tls_destroy(struct ns_tls *t);

/* Takes len bytes of ciphertext from the transport (copied). 0, NS_ETOOBIG
 * (more than NS_TLS_IN_MAX unread: close) or NS_ENOMEM. */
int ns_tls_feed(struct ns_tls *t, const uint8_t *p, size_t len);
/* Advances the handshake, sends queued plaintext once it completed, and
 * decrypts into buf[0..cap). Returns 0 with *n bytes (0 = nothing more until
 * the next feed; call again while *n == cap), NS_EPROTO (handshake or record
 * failure, bad certificate: ns_tls_error says why; drain once more to send the
 * alert, then close) or NS_ESHUTDOWN (the peer sent close_notify). */
int ns_tls_read(struct ns_tls *t, uint8_t *buf, size_t cap, size_t *n);
/* Queues len bytes of plaintext (copied); they are encrypted at once after
 * the handshake, before it they wait. 0, NS_ETOOBIG (over NS_TLS_OUT_MAX),
 * NS_EPROTO (the session failed) or NS_ENOMEM. */
int ns_tls_write(struct ns_tls *t, const uint8_t *p, size_t len);
/* Queues a close_notify alert (then drain). */
void ns_tls_shutdown(struct ns_tls *t);
/* Ciphertext bytes waiting to be drained. */
size_t ns_tls_pending(const struct ns_tls *t);
/* Appends every waiting ciphertext byte to out. 0 or NS_ENOMEM. */
int ns_tls_drain(struct ns_tls *t, struct ns_buf *out);
/* Plaintext bytes queued and not yet encrypted (waiting for the handshake). */
size_t ns_tls_unsent(const struct ns_tls *t);

bool ns_tls_is_established(const struct ns_tls *t);
/* True when the peer presented a certificate that verified. */
bool ns_tls_peer_verified(const struct ns_tls *t);
/* Borrowed text of the last failure ("" when none). */
const char *ns_tls_error(const struct ns_tls *t);
/* Borrowed protocol name once established ("TLSv1.3"), else "". */
const char *ns_tls_version(const struct ns_tls *t);

#endif
