/* The peer handshake of include/raftns/wire.h: encoding, decoding and the
 * HMAC-SHA256 mutual challenge-response over the cluster secret. Pure: the
 * nonces are inputs and no byte is read or written here; it is not the
 * transport (raft/node/node_transport.c) and knows nothing of the raft
 * configuration. */
#include "raftns/wire.h"

#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "raftns/err.h"

#define MAGIC_HELLO "RNSH"
#define MAGIC_CHALLENGE "RNSC"
#define MAGIC_RESPONSE "RNSR"
#define LABEL_SERVER "raftns-server"
#define LABEL_CLIENT "raftns-client"
/* label, NUL, version, two ids, two length-prefixed addresses, two nonces */
#define TRANSCRIPT_MAX                                                         \
    (16 + 1 + 2 + 8 + 8 + 2 * (2 + NS_WIRE_ADDR_MAX) + 2 * NS_WIRE_NONCE_SIZE)

static void put_u16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t)(v >> (56 - 8 * i));
    }
}

static uint16_t get_u16(const uint8_t *p)
{
    return (uint16_t)((unsigned)p[0] << 8 | p[1]);
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) {
        v = v << 8 | p[i];
    }
    return v;
}

static bool is_valid_addr(const char *s, size_t len)
{
    if (len == 0 || len > NS_WIRE_ADDR_MAX) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        if (s[i] < 0x21 || s[i] > 0x7e) {
            return false;
        }
    }
    return true;
}

static int fail(struct ns_wire_auth *a, int rv, const char *reason)
{
    a->state = NS_WIRE_AUTH_FAILED;
    a->reason = reason;
    return rv;
}

/* Computes the MAC of one side over the handshake's transcript. Returns 0 or
 * NS_EPROTO when the HMAC cannot be computed (never expected). */
static int compute_mac(const struct ns_wire_auth *a, const char *label,
                       uint8_t mac[NS_WIRE_MAC_SIZE])
{
    uint8_t t[TRANSCRIPT_MAX];
    size_t n = 0;
    size_t label_len = strlen(label);
    size_t ca = strlen(a->connector_addr);
    size_t la = strlen(a->listener_addr);
    memcpy(t, label, label_len + 1);
    n += label_len + 1;
    put_u16(t + n, NS_WIRE_VERSION);
    n += 2;
    put_u64(t + n, a->connector_id);
    n += 8;
    put_u64(t + n, a->listener_id);
    n += 8;
    put_u16(t + n, (uint16_t)ca);
    n += 2;
    memcpy(t + n, a->connector_addr, ca);
    n += ca;
    put_u16(t + n, (uint16_t)la);
    n += 2;
    memcpy(t + n, a->listener_addr, la);
    n += la;
    memcpy(t + n, a->connector_nonce, NS_WIRE_NONCE_SIZE);
    n += NS_WIRE_NONCE_SIZE;
    memcpy(t + n, a->listener_nonce, NS_WIRE_NONCE_SIZE);
    n += NS_WIRE_NONCE_SIZE;
    /* HMAC with a zero-length key needs a non-NULL pointer. */
    static const uint8_t empty_key[1] = {0};
    const uint8_t *key = a->key_len > 0 ? a->key : empty_key;
    unsigned mac_len = 0;
    if (HMAC(EVP_sha256(), key, (int)a->key_len, t, n, mac, &mac_len) == NULL ||
        mac_len != NS_WIRE_MAC_SIZE) {
        return NS_EPROTO;
    }
    return 0;
}

/* Checks magic and version of a message header. */
static int check_head(struct ns_wire_auth *a, const uint8_t *buf,
                      const char *magic)
{
    if (memcmp(buf, magic, 4) != 0) {
        return fail(a, NS_EPROTO, "bad handshake magic");
    }
    if (get_u16(buf + 4) != NS_WIRE_VERSION) {
        return fail(a, NS_EVERSION, "unsupported handshake version");
    }
    return 0;
}

int ns_wire_auth_connect(struct ns_wire_auth *a, const uint8_t *key,
                         size_t key_len, uint64_t self_id,
                         const char *self_addr, uint64_t peer_id,
                         const char *peer_addr, const uint8_t *nonce,
                         uint8_t *out, size_t cap, size_t *out_len)
{
    memset(a, 0, sizeof *a);
    a->key = key;
    a->key_len = key_len;
    a->is_connector = true;
    size_t self_len = strnlen(self_addr, NS_WIRE_ADDR_MAX + 1);
    size_t peer_len = strnlen(peer_addr, NS_WIRE_ADDR_MAX + 1);
    if (self_id == 0 || peer_id == 0 || !is_valid_addr(self_addr, self_len) ||
        !is_valid_addr(peer_addr, peer_len)) {
        return fail(a, NS_EINVAL, "bad local id or address");
    }
    if (cap < NS_WIRE_HELLO_FIXED + self_len) {
        return fail(a, NS_ETOOBIG, "handshake buffer too small");
    }
    a->connector_id = self_id;
    a->listener_id = peer_id;
    memcpy(a->connector_addr, self_addr, self_len);
    memcpy(a->listener_addr, peer_addr, peer_len);
    memcpy(a->connector_nonce, nonce, NS_WIRE_NONCE_SIZE);
    memcpy(out, MAGIC_HELLO, 4);
    put_u16(out + 4, NS_WIRE_VERSION);
    put_u16(out + 6, (uint16_t)self_len);
    put_u64(out + 8, self_id);
    put_u64(out + 16, peer_id);
    memcpy(out + 24, nonce, NS_WIRE_NONCE_SIZE);
    memcpy(out + NS_WIRE_HELLO_FIXED, self_addr, self_len);
    *out_len = NS_WIRE_HELLO_FIXED + self_len;
    a->state = NS_WIRE_AUTH_SENT_HELLO;
    return 0;
}

int ns_wire_auth_accept(struct ns_wire_auth *a, const uint8_t *key,
                        size_t key_len, uint64_t self_id, const char *self_addr,
                        const uint8_t *nonce, const uint8_t *buf, size_t len,
                        size_t *used, uint8_t *out, size_t cap, size_t *out_len)
{
    if (len < NS_WIRE_HELLO_FIXED) {
        /* Refuse a wrong magic as soon as it shows, not after 56 bytes. */
        if (memcmp(buf, MAGIC_HELLO, len < 4 ? len : 4) != 0) {
            memset(a, 0, sizeof *a);
            return fail(a, NS_EPROTO, "bad handshake magic");
        }
        return NS_EAGAIN;
    }
    memset(a, 0, sizeof *a);
    a->key = key;
    a->key_len = key_len;
    int rv = check_head(a, buf, MAGIC_HELLO);
    if (rv != 0) {
        return rv;
    }
    size_t addr_len = get_u16(buf + 6);
    if (addr_len == 0 || addr_len > NS_WIRE_ADDR_MAX) {
        return fail(a, NS_EPROTO, "handshake address length out of range");
    }
    if (len < NS_WIRE_HELLO_FIXED + addr_len) {
        return NS_EAGAIN;
    }
    const char *addr = (const char *)buf + NS_WIRE_HELLO_FIXED;
    if (!is_valid_addr(addr, addr_len)) {
        return fail(a, NS_EPROTO, "handshake address not printable");
    }
    a->connector_id = get_u64(buf + 8);
    if (a->connector_id == 0) {
        return fail(a, NS_EPROTO, "handshake id 0");
    }
    if (get_u64(buf + 16) != self_id) {
        return fail(a, NS_EPERM, "handshake addressed to another id");
    }
    size_t self_len = strnlen(self_addr, NS_WIRE_ADDR_MAX + 1);
    if (self_id == 0 || !is_valid_addr(self_addr, self_len)) {
        return fail(a, NS_EINVAL, "bad local id or address");
    }
    if (cap < NS_WIRE_CHALLENGE_FIXED + self_len) {
        return fail(a, NS_ETOOBIG, "handshake buffer too small");
    }
    a->listener_id = self_id;
    memcpy(a->connector_addr, addr, addr_len);
    memcpy(a->listener_addr, self_addr, self_len);
    memcpy(a->connector_nonce, buf + 24, NS_WIRE_NONCE_SIZE);
    memcpy(a->listener_nonce, nonce, NS_WIRE_NONCE_SIZE);
    uint8_t mac[NS_WIRE_MAC_SIZE];
    if (compute_mac(a, LABEL_SERVER, mac) != 0) {
        return fail(a, NS_EPROTO, "hmac failed");
    }
    memcpy(out, MAGIC_CHALLENGE, 4);
    put_u16(out + 4, NS_WIRE_VERSION);
    put_u16(out + 6, (uint16_t)self_len);
    put_u64(out + 8, self_id);
    memcpy(out + 16, nonce, NS_WIRE_NONCE_SIZE);
    memcpy(out + 16 + NS_WIRE_NONCE_SIZE, mac, NS_WIRE_MAC_SIZE);
    memcpy(out + NS_WIRE_CHALLENGE_FIXED, self_addr, self_len);
    *out_len = NS_WIRE_CHALLENGE_FIXED + self_len;
    *used = NS_WIRE_HELLO_FIXED + addr_len;
    a->state = NS_WIRE_AUTH_SENT_CHALLENGE;
    return 0;
}

int ns_wire_auth_on_challenge(struct ns_wire_auth *a, const uint8_t *buf,
                              size_t len, size_t *used, uint8_t *out,
                              size_t cap, size_t *out_len)
{
    if (a->state != NS_WIRE_AUTH_SENT_HELLO) {
        return fail(a, NS_EINVAL, "handshake out of order");
    }
    if (len < NS_WIRE_CHALLENGE_FIXED) {
        if (memcmp(buf, MAGIC_CHALLENGE, len < 4 ? len : 4) != 0) {
            return fail(a, NS_EPROTO, "bad handshake magic");
        }
        return NS_EAGAIN;
    }
    int rv = check_head(a, buf, MAGIC_CHALLENGE);
    if (rv != 0) {
        return rv;
    }
    size_t addr_len = get_u16(buf + 6);
    if (addr_len == 0 || addr_len > NS_WIRE_ADDR_MAX) {
        return fail(a, NS_EPROTO, "handshake address length out of range");
    }
    if (len < NS_WIRE_CHALLENGE_FIXED + addr_len) {
        return NS_EAGAIN;
    }
    const char *addr = (const char *)buf + NS_WIRE_CHALLENGE_FIXED;
    if (get_u64(buf + 8) != a->listener_id) {
        return fail(a, NS_EPERM, "peer answered with another id");
    }
    if (addr_len != strlen(a->listener_addr) ||
        memcmp(addr, a->listener_addr, addr_len) != 0) {
        return fail(a, NS_EPERM, "peer answered with another address");
    }
    if (cap < NS_WIRE_RESPONSE_SIZE) {
        return fail(a, NS_ETOOBIG, "handshake buffer too small");
    }
    memcpy(a->listener_nonce, buf + 16, NS_WIRE_NONCE_SIZE);
    uint8_t mac[NS_WIRE_MAC_SIZE];
    if (compute_mac(a, LABEL_SERVER, mac) != 0) {
        return fail(a, NS_EPROTO, "hmac failed");
    }
    if (CRYPTO_memcmp(mac, buf + 16 + NS_WIRE_NONCE_SIZE, sizeof mac) != 0) {
        return fail(a, NS_EPERM, "peer's MAC does not verify (wrong secret?)");
    }
    if (compute_mac(a, LABEL_CLIENT, mac) != 0) {
        return fail(a, NS_EPROTO, "hmac failed");
    }
    memcpy(out, MAGIC_RESPONSE, 4);
    put_u16(out + 4, NS_WIRE_VERSION);
    put_u16(out + 6, 0);
    memcpy(out + 8, mac, NS_WIRE_MAC_SIZE);
    *out_len = NS_WIRE_RESPONSE_SIZE;
    *used = NS_WIRE_CHALLENGE_FIXED + addr_len;
    a->state = NS_WIRE_AUTH_DONE;
    return 0;
}

int ns_wire_auth_on_response(struct ns_wire_auth *a, const uint8_t *buf,
                             size_t len, size_t *used)
{
    if (a->state != NS_WIRE_AUTH_SENT_CHALLENGE) {
        return fail(a, NS_EINVAL, "handshake out of order");
    }
    if (len < NS_WIRE_RESPONSE_SIZE) {
        if (memcmp(buf, MAGIC_RESPONSE, len < 4 ? len : 4) != 0) {
            return fail(a, NS_EPROTO, "bad handshake magic");
        }
        return NS_EAGAIN;
    }
    int rv = check_head(a, buf, MAGIC_RESPONSE);
    if (rv != 0) {
        return rv;
    }
    if (get_u16(buf + 6) != 0) {
        return fail(a, NS_EPROTO, "handshake reserved field not zero");
    }
    uint8_t mac[NS_WIRE_MAC_SIZE];
    if (compute_mac(a, LABEL_CLIENT, mac) != 0) {
        return fail(a, NS_EPROTO, "hmac failed");
    }
    if (CRYPTO_memcmp(mac, buf + 8, sizeof mac) != 0) {
        return fail(a, NS_EPERM, "peer's MAC does not verify (wrong secret?)");
    }
    *used = NS_WIRE_RESPONSE_SIZE;
    a->state = NS_WIRE_AUTH_DONE;
    return 0;
}
