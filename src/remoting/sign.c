/* HMAC-SHA256 signatures of private requests (raftns/sign.h). The signed bytes
 * are a length-prefixed, unambiguous rendering of the request; the ext fields
 * are taken in byte order of their keys, so the signer's and the verifier's
 * field order on the wire does not matter. It keeps no replay memory. */
#include "raftns/sign.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "raftns/alloc.h"
#include "raftns/decimal.h"
#include "raftns/err.h"

#define SIGN_LABEL "raftns-private-v1"
#define MAC_LEN 32

static int compare_keys(const void *a, const void *b)
{
    const struct ns_ext *x = *(const struct ns_ext *const *)a;
    const struct ns_ext *y = *(const struct ns_ext *const *)b;
    return strcmp(x->key, y->key);
}

static int mac_u32(EVP_MAC_CTX *ctx, uint32_t v)
{
    uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8),
                    (uint8_t)v};
    return EVP_MAC_update(ctx, b, sizeof b);
}

static int mac_bytes(EVP_MAC_CTX *ctx, const void *p, size_t len)
{
    if (len > UINT32_MAX || !mac_u32(ctx, (uint32_t)len)) {
        return 0;
    }
    return len == 0 || EVP_MAC_update(ctx, p, len);
}

/* OpenSSL 3 looks the algorithm up in its provider tables, under locks, on
 * every fetch: one fetch serves the process. A lost race frees its copy. */
static EVP_MAC *hmac_algorithm(void)
{
    static _Atomic(EVP_MAC *) cached;
    EVP_MAC *mac = atomic_load(&cached);
    if (mac != NULL) {
        return mac;
    }
    EVP_MAC *fresh = EVP_MAC_fetch(NULL, "HMAC", NULL);
    if (fresh == NULL) {
        return NULL;
    }
    if (!atomic_compare_exchange_strong(&cached, &mac, fresh)) {
        EVP_MAC_free(fresh);
        return mac;
    }
    return fresh;
}

/* The MAC of: label, code, then for each ext but NS_EXT_SIG and the ACL
 * Signature in key order its key and value, then the body; every piece
 * prefixed by its u32 length. */
static int compute_mac(const struct ns_cmd *c, const void *secret,
                       size_t secret_len, uint8_t out[MAC_LEN])
{
    int rv = NS_ENOMEM;
    const struct ns_ext **sorted = NULL;
    if (c->n_ext > 0) {
        sorted = ns_calloc(c->n_ext, sizeof *sorted);
        if (sorted == NULL) {
            return NS_ENOMEM;
        }
    }
    size_t n = 0;
    for (size_t i = 0; i < c->n_ext; i++) {
        if (strcmp(c->ext[i].key, NS_EXT_SIG) != 0 &&
            strcmp(c->ext[i].key, NS_SIGN_EXT_ACL_SIGNATURE) != 0) {
            sorted[n++] = &c->ext[i];
        }
    }
    if (n > 1) {
        qsort(sorted, n, sizeof *sorted, compare_keys);
    }
    rv = NS_EIO;
    EVP_MAC *mac = hmac_algorithm();
    EVP_MAC_CTX *ctx = mac != NULL ? EVP_MAC_CTX_new(mac) : NULL;
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
        OSSL_PARAM_construct_end()};
    /* HMAC needs a key pointer even for an empty key */
    static const uint8_t empty_key[1];
    const void *key = secret_len > 0 ? secret : empty_key;
    if (ctx == NULL || !EVP_MAC_init(ctx, key, secret_len, params)) {
        goto out;
    }
    int ok = mac_bytes(ctx, SIGN_LABEL, strlen(SIGN_LABEL)) &&
             mac_u32(ctx, (uint32_t)c->code) && mac_u32(ctx, (uint32_t)n);
    for (size_t i = 0; ok && i < n; i++) {
        ok = mac_bytes(ctx, sorted[i]->key, strlen(sorted[i]->key)) &&
             mac_bytes(ctx, sorted[i]->value, strlen(sorted[i]->value));
    }
    ok = ok && mac_bytes(ctx, c->body, c->body_len);
    size_t got = 0;
    if (ok && EVP_MAC_final(ctx, out, &got, MAC_LEN) && got == MAC_LEN) {
        rv = 0;
    }
out:
    EVP_MAC_CTX_free(ctx);
    ns_free(sorted);
    return rv;
}

static void to_hex(const uint8_t *p, size_t len, char *out)
{
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = digits[p[i] >> 4];
        out[2 * i + 1] = digits[p[i] & 15];
    }
    out[2 * len] = '\0';
}

static int hex_value(char ch)
{
    if (ch >= '0' && ch <= '9') {
        return ch - '0';
    }
    if (ch >= 'a' && ch <= 'f') {
        return ch - 'a' + 10;
    }
    return -1;
}

/* Lower-case hex of exactly len bytes: 0, or NS_EPROTO. */
static int from_hex(const char *text, uint8_t *out, size_t len)
{
    if (strlen(text) != 2 * len) {
        return NS_EPROTO;
    }
    for (size_t i = 0; i < len; i++) {
        int hi = hex_value(text[2 * i]);
        int lo = hex_value(text[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            return NS_EPROTO;
        }
        out[i] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
}

int ns_sign_request(struct ns_cmd *c, const void *secret, size_t secret_len,
                    int64_t now_ms, const uint8_t nonce[NS_SIGN_NONCE_LEN])
{
    char ts[24];
    char nonce_hex[2 * NS_SIGN_NONCE_LEN + 1];
    char sig_hex[2 * MAC_LEN + 1];
    uint8_t mac[MAC_LEN];
    snprintf(ts, sizeof ts, "%" PRId64, now_ms);
    to_hex(nonce, NS_SIGN_NONCE_LEN, nonce_hex);
    /* a stale signature must not be part of what is signed */
    int rv = ns_cmd_ext_set(c, NS_EXT_SIG, "");
    rv = rv != 0 ? rv : ns_cmd_ext_set(c, NS_EXT_SIG_TS, ts);
    rv = rv != 0 ? rv : ns_cmd_ext_set(c, NS_EXT_NONCE, nonce_hex);
    rv = rv != 0 ? rv : compute_mac(c, secret, secret_len, mac);
    if (rv != 0) {
        return rv;
    }
    to_hex(mac, MAC_LEN, sig_hex);
    return ns_cmd_ext_set(c, NS_EXT_SIG, sig_hex);
}

static int parse_ts(const char *text, int64_t *out)
{
    if (text == NULL || text[0] == '\0' || strlen(text) > 19) {
        return NS_EPROTO;
    }
    return ns_decimal_parse(text, strlen(text), 0, 0, INT64_MAX, out)
               ? 0
               : NS_EPROTO;
}

int ns_sign_verify(const struct ns_cmd *c, const void *secret,
                   size_t secret_len, int64_t now_ms,
                   uint8_t nonce[NS_SIGN_NONCE_LEN], int64_t *ts_ms,
                   const char **why)
{
    const char *sig_hex = ns_cmd_ext_find(c, NS_EXT_SIG);
    uint8_t want[MAC_LEN], got[MAC_LEN];
    if (sig_hex == NULL) {
        *why = "no signature";
        return NS_EPERM;
    }
    if (from_hex(sig_hex, got, MAC_LEN) != 0 ||
        parse_ts(ns_cmd_ext_find(c, NS_EXT_SIG_TS), ts_ms) != 0 ||
        ns_cmd_ext_find(c, NS_EXT_NONCE) == NULL ||
        from_hex(ns_cmd_ext_find(c, NS_EXT_NONCE), nonce, NS_SIGN_NONCE_LEN) !=
            0) {
        *why = "malformed signature, timestamp or nonce";
        return NS_EPERM;
    }
    int rv = compute_mac(c, secret, secret_len, want);
    if (rv != 0) {
        return rv;
    }
    if (CRYPTO_memcmp(want, got, MAC_LEN) != 0) {
        *why = "signature mismatch (wrong cluster secret or altered request)";
        return NS_EPERM;
    }
    if (*ts_ms < now_ms - NS_SIGN_WINDOW_MS ||
        *ts_ms > now_ms + NS_SIGN_WINDOW_MS) {
        *why = "timestamp outside the accepted window (clock skew or an old "
               "request)";
        return NS_EPERM;
    }
    return 0;
}
