/* libFuzzer driver over the peer channel's pure parts (raftns/wire.h): the
 * first byte picks the listener's handshake decoder (HELLO then RESPONSE), the
 * connector's (CHALLENGE) or the raft message checker; the checker is fed the
 * input whole and again in chunks of a size taken from the second byte, and
 * the two verdicts must agree. Any disagreement or bound broken aborts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "raftns/err.h"
#include "raftns/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t KEY[] = "fuzz-secret";

static void fuzz_listener(const uint8_t *p, size_t n)
{
    struct ns_wire_auth a;
    uint8_t nonce[NS_WIRE_NONCE_SIZE] = {1};
    uint8_t out[NS_WIRE_MSG_MAX];
    size_t used = 0, out_len = 0;
    int rv = ns_wire_auth_accept(&a, KEY, sizeof KEY - 1, 2, "127.0.0.1:9002",
                                 nonce, p, n, &used, out, sizeof out, &out_len);
    if (rv != 0) {
        return;
    }
    if (used > n || out_len > sizeof out || a.connector_id == 0 ||
        strlen(a.connector_addr) > NS_WIRE_ADDR_MAX) {
        abort();
    }
    size_t rest = 0;
    rv = ns_wire_auth_on_response(&a, p + used, n - used, &rest);
    if (rv == 0 && (rest != NS_WIRE_RESPONSE_SIZE || rest > n - used)) {
        abort();
    }
}

static void fuzz_connector(const uint8_t *p, size_t n)
{
    struct ns_wire_auth a;
    uint8_t nonce[NS_WIRE_NONCE_SIZE] = {2};
    uint8_t out[NS_WIRE_MSG_MAX];
    size_t used = 0, out_len = 0;
    if (ns_wire_auth_connect(&a, KEY, sizeof KEY - 1, 1, "127.0.0.1:9001", 2,
                             "127.0.0.1:9002", nonce, out, sizeof out,
                             &out_len) != 0) {
        abort();
    }
    int rv =
        ns_wire_auth_on_challenge(&a, p, n, &used, out, sizeof out, &out_len);
    if (rv == 0 && (used > n || out_len != NS_WIRE_RESPONSE_SIZE)) {
        abort();
    }
}

static void fuzz_checker(const uint8_t *p, size_t n, size_t chunk)
{
    struct ns_wire_limits l;
    struct ns_wire_check c1, c2;
    ns_wire_limits_default(&l);
    l.max_payload = 1u << 20; /* small enough for inputs to reach it */
    l.max_entries = 64;
    l.max_entry_len = 4096;
    l.max_conf_len = 1024;
    l.max_conf_servers = 8;
    ns_wire_check_init(&c1, &l, 7);
    ns_wire_check_init(&c2, &l, 7);
    size_t ok1 = 0, ok2 = 0, got = 0;
    int rv1 = ns_wire_check_feed(&c1, p, n, &ok1);
    int rv2 = 0;
    for (size_t i = 0; i < n && rv2 == 0; i += chunk) {
        size_t len = n - i < chunk ? n - i : chunk;
        rv2 = ns_wire_check_feed(&c2, p + i, len, &got);
        ok2 += got;
    }
    if (rv1 != rv2 || ok1 != ok2 || ok1 > n) {
        abort();
    }
    if (rv1 != 0 && (c1.reason == NULL || c2.reason == NULL ||
                     strcmp(c1.reason, c2.reason) != 0 || ok1 == n)) {
        abort();
    }
    if (rv1 == 0 && (ok1 != n || c1.n_messages != c2.n_messages)) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) {
        return 0;
    }
    switch (data[0] % 3) {
    case 0:
        fuzz_listener(data + 2, size - 2);
        break;
    case 1:
        fuzz_connector(data + 2, size - 2);
        break;
    default:
        fuzz_checker(data + 2, size - 2, (size_t)data[1] % 17 + 1);
        break;
    }
    return 0;
}
