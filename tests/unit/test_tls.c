/* The TLS engine in memory: a client and a server session joined by buffers
 * (no sockets). Certificates are generated per run by
 * tests/security/gen_certs.sh into a temp dir that the test removes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/bio.h>
#include <openssl/ssl.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/tls.h"

static char dir[256];

static const char *path(const char *name)
{
    static char bufs[8][512];
    static int next;
    char *b = bufs[next++ % 8];
    snprintf(b, 512, "%s/%s", dir, name);
    return b;
}

static int setup_certs(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/raftns-test-tls-XXXXXX");
    if (mkdtemp(dir) == NULL) {
        return -1;
    }
    char cmd[768];
    snprintf(cmd, sizeof cmd, "%s %s", NS_GEN_CERTS, dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int remove_certs(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static struct ns_tls_ctx *server_ctx(enum ns_tls_verify verify)
{
    struct ns_tls_server_opts o = {.cert_path = path("server.pem"),
                                   .key_path = path("server.key"),
                                   .ca_path = path("ca.pem"),
                                   .verify = verify};
    struct ns_tls_ctx *ctx = NULL;
    char err[256];
    assert_int_equal(ns_tls_ctx_create_server(&o, &ctx, err, sizeof err), 0);
    return ctx;
}

static struct ns_tls_ctx *client_ctx(const char *cert, const char *key)
{
    struct ns_tls_client_opts o = {.ca_path = path("ca.pem"),
                                   .cert_path =
                                       cert != NULL ? path(cert) : NULL,
                                   .key_path = key != NULL ? path(key) : NULL};
    struct ns_tls_ctx *ctx = NULL;
    char err[256];
    assert_int_equal(ns_tls_ctx_create_client(&o, &ctx, err, sizeof err), 0);
    return ctx;
}

struct side {
    struct ns_tls *t;
    struct ns_buf got; /* plaintext received */
    int rv;            /* first non-zero ns_tls_read result */
};

/* Moves ciphertext of a to b and reads b's plaintext; true when bytes moved. */
static bool move(struct side *a, struct side *b)
{
    struct ns_buf wire;
    ns_buf_init(&wire);
    assert_int_equal(ns_tls_drain(a->t, &wire), 0);
    bool moved = wire.len > 0;
    if (moved) {
        assert_int_equal(ns_tls_feed(b->t, wire.data, wire.len), 0);
    }
    ns_buf_close(&wire);
    uint8_t chunk[16384];
    size_t n = 0;
    do {
        int rv = ns_tls_read(b->t, chunk, sizeof chunk, &n);
        if (rv != 0) {
            b->rv = b->rv != 0 ? b->rv : rv;
            break;
        }
        assert_int_equal(ns_buf_append(&b->got, chunk, n), 0);
    } while (n == sizeof chunk);
    return moved;
}

/* Runs both directions until nothing moves (bounded). */
static void pump(struct side *c, struct side *s)
{
    for (int i = 0; i < 1000; i++) {
        bool m1 = move(c, s);
        bool m2 = move(s, c);
        if (!m1 && !m2) {
            return;
        }
    }
    fail_msg("pump did not settle");
}

static void open_pair(struct side *c, struct side *s, struct ns_tls_ctx *cctx,
                      struct ns_tls_ctx *sctx, const char *ip)
{
    memset(c, 0, sizeof *c);
    memset(s, 0, sizeof *s);
    ns_buf_init(&c->got);
    ns_buf_init(&s->got);
    assert_int_equal(ns_tls_create(cctx, ip, &c->t), 0);
    assert_int_equal(ns_tls_create(sctx, NULL, &s->t), 0);
    /* The contexts may go: each session holds a reference. */
    ns_tls_ctx_unref(cctx);
    ns_tls_ctx_unref(sctx);
}

static void close_pair(struct side *c, struct side *s)
{
    ns_tls_destroy(c->t);
    ns_tls_destroy(s->t);
    ns_buf_close(&c->got);
    ns_buf_close(&s->got);
}

static void test_handshake_and_data(void **state)
{
    (void)state;
    struct side c, s;
    open_pair(&c, &s, client_ctx(NULL, NULL), server_ctx(NS_TLS_VERIFY_NONE),
              "127.0.0.1");
    /* Queued before the handshake: sent once it completes. */
    assert_int_equal(ns_tls_write(c.t, (const uint8_t *)"ping", 4), 0);
    assert_int_equal(ns_tls_unsent(c.t), 4);
    pump(&c, &s);
    assert_true(ns_tls_is_established(c.t));
    assert_true(ns_tls_is_established(s.t));
    assert_string_equal(ns_tls_version(c.t), "TLSv1.3");
    assert_false(ns_tls_peer_verified(s.t));
    assert_int_equal(s.got.len, 4);
    assert_memory_equal(s.got.data, "ping", 4);
    assert_int_equal(ns_tls_write(s.t, (const uint8_t *)"pong!", 5), 0);
    pump(&c, &s);
    assert_int_equal(c.got.len, 5);
    assert_memory_equal(c.got.data, "pong!", 5);
    /* A clean close reads as NS_ESHUTDOWN on the other side. */
    ns_tls_shutdown(c.t);
    pump(&c, &s);
    assert_int_equal(s.rv, NS_ESHUTDOWN);
    close_pair(&c, &s);
}

static void test_large_data(void **state)
{
    (void)state;
    struct side c, s;
    open_pair(&c, &s, client_ctx(NULL, NULL), server_ctx(NS_TLS_VERIFY_NONE),
              NULL);
    pump(&c, &s);
    size_t len = 5u << 20;
    uint8_t *big = ns_malloc(len);
    assert_non_null(big);
    for (size_t i = 0; i < len; i++) {
        big[i] = (uint8_t)(i * 2654435761u >> 13);
    }
    /* Written in pieces, moved in bounded steps (the input cap holds). */
    for (size_t off = 0; off < len; off += 700000) {
        size_t n = len - off < 700000 ? len - off : 700000;
        assert_int_equal(ns_tls_write(c.t, big + off, n), 0);
        assert_int_equal(ns_tls_write(s.t, big + off, n), 0);
        pump(&c, &s);
    }
    assert_int_equal(s.got.len, len);
    assert_int_equal(c.got.len, len);
    assert_memory_equal(s.got.data, big, len);
    assert_memory_equal(c.got.data, big, len);
    ns_free(big);
    close_pair(&c, &s);
}

static void test_garbage_is_refused(void **state)
{
    (void)state;
    struct ns_tls_ctx *sctx = server_ctx(NS_TLS_VERIFY_NONE);
    struct ns_tls *t = NULL;
    assert_int_equal(ns_tls_create(sctx, NULL, &t), 0);
    ns_tls_ctx_unref(sctx);
    /* A handshake record header, then junk where the ClientHello should be. */
    uint8_t junk[300] = {0x16, 0x03, 0x01, 0x01, 0x00};
    for (size_t i = 5; i < sizeof junk; i++) {
        junk[i] = (uint8_t)(i * 37);
    }
    assert_int_equal(ns_tls_feed(t, junk, sizeof junk), 0);
    uint8_t out[64];
    size_t n = 1;
    assert_int_equal(ns_tls_read(t, out, sizeof out, &n), NS_EPROTO);
    assert_int_equal(n, 0);
    assert_true(strlen(ns_tls_error(t)) > 0);
    assert_false(ns_tls_is_established(t));
    /* Stays failed. */
    assert_int_equal(ns_tls_write(t, out, 1), NS_EPROTO);
    ns_tls_destroy(t);
}

static void test_input_is_bounded(void **state)
{
    (void)state;
    struct ns_tls_ctx *sctx = server_ctx(NS_TLS_VERIFY_NONE);
    struct ns_tls *t = NULL;
    assert_int_equal(ns_tls_create(sctx, NULL, &t), 0);
    ns_tls_ctx_unref(sctx);
    uint8_t *block = ns_calloc(1, NS_TLS_IN_MAX);
    assert_non_null(block);
    assert_int_equal(ns_tls_feed(t, block, NS_TLS_IN_MAX), 0);
    assert_int_equal(ns_tls_feed(t, block, 1), NS_ETOOBIG);
    ns_free(block);
    ns_tls_destroy(t);
}

static void test_client_auth_required_missing(void **state)
{
    (void)state;
    struct side c, s;
    open_pair(&c, &s, client_ctx(NULL, NULL), server_ctx(NS_TLS_VERIFY_REQUIRE),
              NULL);
    assert_int_equal(ns_tls_write(c.t, (const uint8_t *)"x", 1), 0);
    pump(&c, &s);
    assert_int_equal(s.rv, NS_EPROTO);
    assert_int_equal(s.got.len, 0);
    assert_int_equal(c.rv, NS_EPROTO); /* the alert reached the client */
    assert_false(ns_tls_is_established(s.t));
    close_pair(&c, &s);
}

static void test_client_auth_required_given(void **state)
{
    (void)state;
    struct side c, s;
    open_pair(&c, &s, client_ctx("client.pem", "client.key"),
              server_ctx(NS_TLS_VERIFY_REQUIRE), NULL);
    assert_int_equal(ns_tls_write(c.t, (const uint8_t *)"x", 1), 0);
    pump(&c, &s);
    assert_int_equal(s.rv, 0);
    assert_int_equal(s.got.len, 1);
    assert_true(ns_tls_peer_verified(s.t));
    close_pair(&c, &s);
}

static void test_client_cert_of_another_ca(void **state)
{
    (void)state;
    struct side c, s;
    open_pair(&c, &s, client_ctx("rogue.pem", "rogue.key"),
              server_ctx(NS_TLS_VERIFY_OPTIONAL), NULL);
    assert_int_equal(ns_tls_write(c.t, (const uint8_t *)"x", 1), 0);
    pump(&c, &s);
    assert_int_equal(s.rv, NS_EPROTO);
    assert_non_null(strstr(ns_tls_error(s.t), "certificate"));
    close_pair(&c, &s);
}

static void test_server_name_mismatch(void **state)
{
    (void)state;
    struct side c, s;
    open_pair(&c, &s, client_ctx(NULL, NULL), server_ctx(NS_TLS_VERIFY_NONE),
              "10.1.2.3");
    pump(&c, &s);
    assert_int_equal(c.rv, NS_EPROTO);
    assert_non_null(strstr(ns_tls_error(c.t), "verify failed"));
    close_pair(&c, &s);
}

static void test_bad_files(void **state)
{
    (void)state;
    char err[256];
    struct ns_tls_ctx *ctx = NULL;
    struct ns_tls_server_opts o = {.cert_path = path("missing.pem"),
                                   .key_path = path("server.key")};
    assert_int_equal(ns_tls_ctx_create_server(&o, &ctx, err, sizeof err),
                     NS_EIO);
    assert_non_null(strstr(err, "missing.pem"));
    assert_non_null(strstr(err, "No such file"));
    o.cert_path = path("server.pem");
    o.key_path = path("client.key"); /* another key */
    assert_int_equal(ns_tls_ctx_create_server(&o, &ctx, err, sizeof err),
                     NS_EIO);
    assert_non_null(strstr(err, "client.key"));
    o.key_path = path("server.key");
    o.verify = NS_TLS_VERIFY_REQUIRE; /* no CA */
    assert_int_equal(ns_tls_ctx_create_server(&o, &ctx, err, sizeof err),
                     NS_EIO);
    o.ca_path = path("server.key"); /* not a certificate */
    assert_int_equal(ns_tls_ctx_create_server(&o, &ctx, err, sizeof err),
                     NS_EIO);
    o.ca_path = path("ca.pem");
    assert_int_equal(ns_tls_ctx_create_server(&o, &ctx, err, sizeof err), 0);
    char desc[256];
    ns_tls_ctx_describe(ctx, desc, sizeof desc);
    assert_non_null(strstr(desc, "raftns test server"));
    ns_tls_ctx_unref(ctx);
}

/* One exchange that tolerates failures: true when "ping" arrived. */
/* A ClientHello offering TLS 1.2 at most, made by OpenSSL itself. */
static void tls12_client_hello(struct ns_buf *out)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    assert_non_null(ctx);
    assert_int_equal(SSL_CTX_set_max_proto_version(ctx, TLS1_2_VERSION), 1);
    SSL *ssl = SSL_new(ctx);
    assert_non_null(ssl);
    BIO *rb = BIO_new(BIO_s_mem()), *wb = BIO_new(BIO_s_mem());
    SSL_set_bio(ssl, rb, wb);
    SSL_set_connect_state(ssl);
    assert_int_equal(SSL_do_handshake(ssl), -1); /* waits for the server */
    char *p = NULL;
    long n = BIO_get_mem_data(wb, &p);
    assert_true(n > 0);
    assert_int_equal(ns_buf_append(out, p, (size_t)n), 0);
    SSL_free(ssl);
    SSL_CTX_free(ctx);
}

/* tls13_only (the raft peer port): a TLS 1.2 client is refused, which the
 * default server accepts; two tls13_only ends speak TLS 1.3. */
static void test_tls13_only(void **state)
{
    (void)state;
    struct ns_buf hello;
    ns_buf_init(&hello);
    tls12_client_hello(&hello);
    for (int only = 0; only < 2; only++) {
        struct ns_tls_server_opts o = {.cert_path = path("server.pem"),
                                       .key_path = path("server.key"),
                                       .tls13_only = only == 1};
        struct ns_tls_ctx *ctx = NULL;
        struct ns_tls *t = NULL;
        char err[256];
        uint8_t buf[256];
        size_t n = 0;
        assert_int_equal(ns_tls_ctx_create_server(&o, &ctx, err, sizeof err),
                         0);
        assert_int_equal(ns_tls_create(ctx, NULL, &t), 0);
        ns_tls_ctx_unref(ctx);
        assert_int_equal(ns_tls_feed(t, hello.data, hello.len), 0);
        int rv = ns_tls_read(t, buf, sizeof buf, &n);
        if (only) {
            assert_int_equal(rv, NS_EPROTO);
            assert_non_null(strstr(ns_tls_error(t), "protocol"));
        } else {
            assert_int_equal(rv, 0);
            assert_true(ns_tls_pending(t) > 0); /* its ServerHello */
        }
        ns_tls_destroy(t);
    }
    ns_buf_close(&hello);
    struct ns_tls_server_opts so = {.cert_path = path("server.pem"),
                                    .key_path = path("server.key"),
                                    .ca_path = path("ca.pem"),
                                    .verify = NS_TLS_VERIFY_REQUIRE,
                                    .tls13_only = true};
    struct ns_tls_client_opts co = {.ca_path = path("ca.pem"),
                                    .cert_path = path("server.pem"),
                                    .key_path = path("server.key"),
                                    .tls13_only = true};
    struct ns_tls_ctx *sctx = NULL, *cctx = NULL;
    char err[256];
    assert_int_equal(ns_tls_ctx_create_server(&so, &sctx, err, sizeof err), 0);
    assert_int_equal(ns_tls_ctx_create_client(&co, &cctx, err, sizeof err), 0);
    struct side c, s;
    open_pair(&c, &s, cctx, sctx, "127.0.0.1");
    pump(&c, &s);
    assert_true(ns_tls_is_established(c.t));
    assert_true(ns_tls_peer_verified(s.t));
    assert_string_equal(ns_tls_version(s.t), "TLSv1.3");
    close_pair(&c, &s);
}

static bool try_exchange(struct ns_tls_ctx *cctx, struct ns_tls_ctx *sctx)
{
    struct ns_tls *c = NULL, *s = NULL;
    bool ok = false;
    if (ns_tls_create(cctx, "127.0.0.1", &c) != 0 ||
        ns_tls_create(sctx, NULL, &s) != 0 ||
        ns_tls_write(c, (const uint8_t *)"ping", 4) != 0) {
        goto out;
    }
    struct ns_tls *from[2] = {c, s}, *to[2] = {s, c};
    for (int round = 0; round < 20 && !ok; round++) {
        for (int d = 0; d < 2; d++) {
            struct ns_buf wire;
            ns_buf_init(&wire);
            int rv = ns_tls_drain(from[d], &wire);
            if (rv == 0 && wire.len > 0) {
                rv = ns_tls_feed(to[d], wire.data, wire.len);
            }
            ns_buf_close(&wire);
            uint8_t got[16];
            size_t n = 0;
            if (rv == 0) {
                rv = ns_tls_read(to[d], got, sizeof got, &n);
            }
            if (rv != 0) {
                goto out;
            }
            ok = ok || (d == 0 && n == 4 && memcmp(got, "ping", 4) == 0);
        }
    }
out:
    ns_tls_destroy(c);
    ns_tls_destroy(s);
    return ok;
}

/* The k-th allocation of the engine fails, for every k of one exchange: each
 * ends in a clean error or a success, never a crash or a leak (ASan,
 * valgrind). OpenSSL's own allocations are not hooked. */
static void test_allocation_failures(void **state)
{
    (void)state;
    struct ns_tls_ctx *sctx = server_ctx(NS_TLS_VERIFY_NONE);
    struct ns_tls_ctx *cctx = client_ctx(NULL, NULL);
    long before = ns_alloc_count();
    assert_true(try_exchange(cctx, sctx));
    long n_allocs = ns_alloc_count() - before;
    assert_true(n_allocs > 4);
    int n_failed = 0;
    for (long k = 0; k < n_allocs; k++) {
        ns_alloc_fail_at(k, 0);
        n_failed += try_exchange(cctx, sctx) ? 0 : 1;
        ns_alloc_fail_at(-1, 0);
    }
    assert_true(n_failed > 0);
    assert_true(try_exchange(cctx, sctx));
    ns_tls_ctx_unref(cctx);
    ns_tls_ctx_unref(sctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_handshake_and_data),
        cmocka_unit_test(test_large_data),
        cmocka_unit_test(test_garbage_is_refused),
        cmocka_unit_test(test_input_is_bounded),
        cmocka_unit_test(test_client_auth_required_missing),
        cmocka_unit_test(test_client_auth_required_given),
        cmocka_unit_test(test_client_cert_of_another_ca),
        cmocka_unit_test(test_server_name_mismatch),
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_allocation_failures),
        cmocka_unit_test(test_tls13_only),
    };
    return cmocka_run_group_tests(tests, setup_certs, remove_certs);
}
