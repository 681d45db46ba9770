/* Unit tests of private-request signatures (src/remoting/sign.c) and the
 * replay memory (src/remoting/replay.c): signatures equal goldens computed
 * independently (Python hmac/hashlib, the recipe in tests/process/nsclient.py
 * sign_private), any altered field, body, code, secret or an old timestamp is
 * refused, nonces are refused twice within the window and forgotten after it,
 * the replay bound answers busy, and allocation failures are clean. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/replay.h"
#include "raftns/sign.h"

#define SECRET "0123456789abcdef-secret"
#define TS 1767225600000LL

static const uint8_t NONCE_A[NS_SIGN_NONCE_LEN] = {
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
static const uint8_t BODY[] = {0x01, 0x04, 'b', 'o', 'd', 'y'};

/* Python: sig(9001, {"raftnsFrom": "2", "raftnsTs": "1767225600000",
 * "raftnsNonce": "000102030405060708090a0b0c0d0e0f"}, b"\x01\x04body",
 * "0123456789abcdef-secret") */
#define GOLDEN_FORWARD                                                         \
    "ea6f760589173f62e884a23618a0b5e745581b3a227e80589bbebc7b3567b304"
/* Python: sig(9003, {"raftnsTs": "1767225600000", "raftnsNonce":
 * "ffeeddccbbaa99887766554433221100"}, b"", same secret) */
#define GOLDEN_MEMBER_LIST                                                     \
    "85f495f26ae9c7711e820ce0c24a9a25e2c8e64708ade7e07b3f7a3fcd6ef9a6"

static void forward_request(struct ns_cmd *c)
{
    ns_cmd_init(c);
    c->code = 9001;
    c->body = BODY;
    c->body_len = sizeof BODY;
    assert_int_equal(ns_cmd_ext_set(c, "raftnsFrom", "2"), 0);
}

static int verify(const struct ns_cmd *c, const char *secret, int64_t now,
                  const char **why)
{
    uint8_t nonce[NS_SIGN_NONCE_LEN];
    int64_t ts = 0;
    *why = NULL;
    return ns_sign_verify(c, secret, strlen(secret), now, nonce, &ts, why);
}

static void test_signature_matches_independent_goldens(void **state)
{
    (void)state;
    struct ns_cmd c;
    forward_request(&c);
    assert_int_equal(ns_sign_request(&c, SECRET, strlen(SECRET), TS, NONCE_A),
                     0);
    assert_string_equal(ns_cmd_ext_find(&c, NS_EXT_SIG), GOLDEN_FORWARD);
    assert_string_equal(ns_cmd_ext_find(&c, NS_EXT_SIG_TS), "1767225600000");
    assert_string_equal(ns_cmd_ext_find(&c, NS_EXT_NONCE),
                        "000102030405060708090a0b0c0d0e0f");
    ns_cmd_close(&c);

    uint8_t nonce_b[NS_SIGN_NONCE_LEN];
    for (size_t i = 0; i < sizeof nonce_b; i++) {
        nonce_b[i] = (uint8_t)(0xff - 0x11 * i);
    }
    ns_cmd_init(&c);
    c.code = 9003;
    assert_int_equal(ns_sign_request(&c, SECRET, strlen(SECRET), TS, nonce_b),
                     0);
    assert_string_equal(ns_cmd_ext_find(&c, NS_EXT_SIG), GOLDEN_MEMBER_LIST);
    ns_cmd_close(&c);
}

static void test_field_order_does_not_matter(void **state)
{
    (void)state;
    /* the same fields set in the other order on the wire verify alike */
    struct ns_cmd c;
    ns_cmd_init(&c);
    c.code = 9001;
    c.body = BODY;
    c.body_len = sizeof BODY;
    assert_int_equal(ns_cmd_ext_set(&c, NS_EXT_SIG, GOLDEN_FORWARD), 0);
    assert_int_equal(
        ns_cmd_ext_set(&c, NS_EXT_NONCE, "000102030405060708090a0b0c0d0e0f"),
        0);
    assert_int_equal(ns_cmd_ext_set(&c, NS_EXT_SIG_TS, "1767225600000"), 0);
    assert_int_equal(ns_cmd_ext_set(&c, "raftnsFrom", "2"), 0);
    const char *why;
    assert_int_equal(verify(&c, SECRET, TS, &why), 0);
    ns_cmd_close(&c);
}

static void test_every_alteration_is_refused(void **state)
{
    (void)state;
    const char *why;
    for (int variant = 0; variant < 9; variant++) {
        struct ns_cmd c;
        forward_request(&c);
        assert_int_equal(
            ns_sign_request(&c, SECRET, strlen(SECRET), TS, NONCE_A), 0);
        const char *secret = SECRET;
        int64_t now = TS;
        static const uint8_t other_body[] = {0x01, 0x04, 'b', 'o', 'd', 'Y'};
        switch (variant) {
        case 0:
            assert_int_equal(verify(&c, secret, now, &why), 0);
            ns_cmd_close(&c);
            continue;
        case 1:
            c.code = 9004;
            break;
        case 2:
            c.body = other_body;
            break;
        case 3:
            assert_int_equal(ns_cmd_ext_set(&c, "raftnsFrom", "3"), 0);
            break;
        case 4:
            assert_int_equal(ns_cmd_ext_set(&c, "extra", "x"), 0);
            break;
        case 5:
            secret = "0123456789abcdef-secreT";
            break;
        case 6:
            now = TS + NS_SIGN_WINDOW_MS + 1; /* too old */
            break;
        case 7:
            now = TS - NS_SIGN_WINDOW_MS - 1; /* from the future */
            break;
        case 8:
            assert_int_equal(ns_cmd_ext_set(&c, NS_EXT_NONCE,
                                            "000102030405060708090a0b0c0d0e0e"),
                             0);
            break;
        }
        assert_int_equal(verify(&c, secret, now, &why), NS_EPERM);
        assert_non_null(why);
        ns_cmd_close(&c);
    }
}

static void test_missing_or_malformed_fields(void **state)
{
    (void)state;
    static const char *const bad[][2] = {
        {NS_EXT_SIG, "zz"},
        {NS_EXT_SIG, GOLDEN_FORWARD "00"},
        {NS_EXT_SIG_TS, ""},
        {NS_EXT_SIG_TS, "-5"},
        {NS_EXT_SIG_TS, "99999999999999999999"},
        {NS_EXT_NONCE, "0001"},
        {NS_EXT_NONCE, "G00102030405060708090a0b0c0d0e0f"},
    };
    const char *why;
    struct ns_cmd c;
    forward_request(&c);
    assert_int_equal(verify(&c, SECRET, TS, &why), NS_EPERM);
    assert_string_equal(why, "no signature");
    ns_cmd_close(&c);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        forward_request(&c);
        assert_int_equal(
            ns_sign_request(&c, SECRET, strlen(SECRET), TS, NONCE_A), 0);
        assert_int_equal(ns_cmd_ext_set(&c, bad[i][0], bad[i][1]), 0);
        assert_int_equal(verify(&c, SECRET, TS, &why), NS_EPERM);
        ns_cmd_close(&c);
    }
}

static void test_sign_allocation_failures(void **state)
{
    (void)state;
    bool ok = false;
    for (long k = 0; k < 64 && !ok; k++) {
        struct ns_cmd c;
        forward_request(&c);
        ns_alloc_fail_at(k, 1);
        int rv = ns_sign_request(&c, SECRET, strlen(SECRET), TS, NONCE_A);
        const char *why = NULL;
        if (rv == 0) {
            rv = verify(&c, SECRET, TS, &why);
        }
        ns_alloc_fail_at(-1, 0);
        assert_true(rv == 0 || rv == NS_ENOMEM);
        ok = rv == 0;
        ns_cmd_close(&c);
    }
    assert_true(ok);
}

static void nonce_of(uint32_t i, uint8_t out[NS_SIGN_NONCE_LEN])
{
    memset(out, 0x5a, NS_SIGN_NONCE_LEN);
    memcpy(out, &i, sizeof i);
}

static void test_replay_refused_within_window(void **state)
{
    (void)state;
    struct ns_replay r;
    ns_replay_init(&r, 0, NS_SIGN_WINDOW_MS);
    uint8_t n[NS_SIGN_NONCE_LEN];
    for (uint32_t i = 0; i < 5000; i++) {
        nonce_of(i, n);
        assert_int_equal(ns_replay_check(&r, n, TS, TS), 0);
    }
    for (uint32_t i = 0; i < 5000; i++) {
        nonce_of(i, n);
        assert_int_equal(ns_replay_check(&r, n, TS, TS + 1000), NS_EPERM);
    }
    /* once its timestamp left the window the nonce is forgotten (a request
     * that old fails the timestamp check before it gets here) */
    nonce_of(7, n);
    assert_int_equal(ns_replay_check(&r, n, TS + 2 * NS_SIGN_WINDOW_MS,
                                     TS + 2 * NS_SIGN_WINDOW_MS),
                     0);
    assert_int_equal(ns_replay_check(&r, n, TS + 2 * NS_SIGN_WINDOW_MS,
                                     TS + 2 * NS_SIGN_WINDOW_MS),
                     NS_EPERM);
    ns_replay_close(&r);
}

static void test_replay_memory_is_bounded(void **state)
{
    (void)state;
    struct ns_replay r;
    ns_replay_init(&r, 3000, NS_SIGN_WINDOW_MS);
    uint8_t n[NS_SIGN_NONCE_LEN];
    uint32_t i = 0;
    int rv = 0;
    for (; i < 100000 && rv == 0; i++) {
        nonce_of(i, n);
        rv = ns_replay_check(&r, n, TS, TS);
    }
    assert_int_equal(rv, NS_EBUSY);
    assert_true(i > 3000 && i < 6200); /* refused near the bound, not before */
    assert_true(r.n_slots <= 4 * 4096);
    /* after the window the same memory serves new nonces again */
    int64_t later = TS + 2 * NS_SIGN_WINDOW_MS;
    for (uint32_t j = 0; j < 2000; j++) {
        nonce_of(200000 + j, n);
        assert_int_equal(ns_replay_check(&r, n, later, later), 0);
    }
    ns_replay_close(&r);
}

static void test_replay_allocation_failures(void **state)
{
    (void)state;
    bool ok = false;
    for (long k = 0; k < 16 && !ok; k++) {
        struct ns_replay r;
        ns_replay_init(&r, 0, NS_SIGN_WINDOW_MS);
        uint8_t n[NS_SIGN_NONCE_LEN];
        int rv = 0;
        ns_alloc_fail_at(k, 1);
        for (uint32_t i = 0; i < 3000 && rv == 0; i++) {
            nonce_of(i, n);
            rv = ns_replay_check(&r, n, TS, TS);
        }
        ns_alloc_fail_at(-1, 0);
        assert_true(rv == 0 || rv == NS_ENOMEM);
        ok = rv == 0;
        ns_replay_close(&r);
    }
    assert_true(ok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_signature_matches_independent_goldens),
        cmocka_unit_test(test_field_order_does_not_matter),
        cmocka_unit_test(test_every_alteration_is_refused),
        cmocka_unit_test(test_missing_or_malformed_fields),
        cmocka_unit_test(test_sign_allocation_failures),
        cmocka_unit_test(test_replay_refused_within_window),
        cmocka_unit_test(test_replay_memory_is_bounded),
        cmocka_unit_test(test_replay_allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
