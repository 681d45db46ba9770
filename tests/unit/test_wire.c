/* Unit tests of the peer channel's pure parts (raft/wire_auth.c,
 * raft/wire_check.c): the handshake round trip, golden HELLO bytes, wrong
 * secrets, every byte tampered, truncation, oversize, unterminated and
 * unprintable addresses, replays; the checker on valid messages of every
 * libraft 0.15 type built byte by byte, one table row per violation class,
 * and byte-at-a-time feeding giving the same verdict. The module never
 * allocates (checked), so there is no allocation-failure sweep. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/wire.h"

/* ------------------------------------------------------------------ */
/* handshake */

static const uint8_t KEY[] = "correct horse battery staple";
#define KEY_LEN (sizeof KEY - 1)
static const char *C_ADDR = "127.0.0.1:9001";
static const char *L_ADDR = "127.0.0.1:9002";

struct hs {
    struct ns_wire_auth con, lis;
    uint8_t hello[NS_WIRE_MSG_MAX], chal[NS_WIRE_MSG_MAX],
        resp[NS_WIRE_MSG_MAX];
    size_t hello_len, chal_len, resp_len;
};

static void nonce_fill(uint8_t *n, uint8_t seed)
{
    for (int i = 0; i < NS_WIRE_NONCE_SIZE; i++) {
        n[i] = (uint8_t)(seed + i * 7);
    }
}

static void hs_hello(struct hs *h, const uint8_t *key, size_t key_len,
                     uint8_t seed)
{
    uint8_t nonce[NS_WIRE_NONCE_SIZE];
    nonce_fill(nonce, seed);
    assert_int_equal(ns_wire_auth_connect(&h->con, key, key_len, 1, C_ADDR, 2,
                                          L_ADDR, nonce, h->hello,
                                          sizeof h->hello, &h->hello_len),
                     0);
}

static int hs_accept(struct hs *h, const uint8_t *key, size_t key_len,
                     uint8_t seed)
{
    uint8_t nonce[NS_WIRE_NONCE_SIZE];
    size_t used = 0;
    nonce_fill(nonce, seed);
    int rv = ns_wire_auth_accept(&h->lis, key, key_len, 2, L_ADDR, nonce,
                                 h->hello, h->hello_len, &used, h->chal,
                                 sizeof h->chal, &h->chal_len);
    if (rv == 0) {
        assert_int_equal(used, h->hello_len);
    }
    return rv;
}

static int hs_challenge(struct hs *h)
{
    size_t used = 0;
    int rv = ns_wire_auth_on_challenge(&h->con, h->chal, h->chal_len, &used,
                                       h->resp, sizeof h->resp, &h->resp_len);
    if (rv == 0) {
        assert_int_equal(used, h->chal_len);
    }
    return rv;
}

static int hs_response(struct hs *h)
{
    size_t used = 0;
    return ns_wire_auth_on_response(&h->lis, h->resp, h->resp_len, &used);
}

static void test_round_trip(void **state)
{
    (void)state;
    struct hs h;
    long allocs = ns_alloc_count();
    hs_hello(&h, KEY, KEY_LEN, 1);
    assert_int_equal(hs_accept(&h, KEY, KEY_LEN, 2), 0);
    assert_int_equal(h.lis.connector_id, 1);
    assert_string_equal(h.lis.connector_addr, C_ADDR);
    assert_int_equal(hs_challenge(&h), 0);
    assert_int_equal(h.con.state, NS_WIRE_AUTH_DONE);
    assert_int_equal(hs_response(&h), 0);
    assert_int_equal(h.lis.state, NS_WIRE_AUTH_DONE);
    assert_int_equal(h.hello_len, NS_WIRE_HELLO_FIXED + strlen(C_ADDR));
    assert_int_equal(h.chal_len, NS_WIRE_CHALLENGE_FIXED + strlen(L_ADDR));
    assert_int_equal(h.resp_len, NS_WIRE_RESPONSE_SIZE);
    assert_int_equal(ns_alloc_count(), allocs);
    /* The empty secret is a key like any other, equal on both sides. */
    hs_hello(&h, (const uint8_t *)"", 0, 3);
    assert_int_equal(hs_accept(&h, (const uint8_t *)"", 0, 4), 0);
    assert_int_equal(hs_challenge(&h), 0);
    assert_int_equal(hs_response(&h), 0);
}

/* WARNING: versioned wire format; these bytes must never change. */
static void test_hello_golden(void **state)
{
    (void)state;
    struct hs h;
    hs_hello(&h, KEY, KEY_LEN, 0);
    static const uint8_t head[] = {
        'R', 'N', 'S', 'H', 0, 1, 0, 14, /* magic, v1, addr len */
        0,   0,   0,   0,   0, 0, 0, 1,  /* from id */
        0,   0,   0,   0,   0, 0, 0, 2,  /* to id */
    };
    assert_memory_equal(h.hello, head, sizeof head);
    assert_int_equal(h.hello[24 + 1], 7); /* nonce[1] = 0 + 7 */
    assert_memory_equal(h.hello + NS_WIRE_HELLO_FIXED, C_ADDR, 14);
    assert_int_equal(hs_accept(&h, KEY, KEY_LEN, 9), 0);
    assert_memory_equal(h.chal, "RNSC\0\1\0\16", 8);
    assert_int_equal(hs_challenge(&h), 0);
    assert_memory_equal(h.resp, "RNSR\0\1\0\0", 8);
}

static void test_wrong_secret(void **state)
{
    (void)state;
    struct hs h;
    static const uint8_t other[] = "another secret";
    /* The listener has another secret: the connector refuses its MAC. */
    hs_hello(&h, KEY, KEY_LEN, 1);
    assert_int_equal(hs_accept(&h, other, sizeof other - 1, 2), 0);
    assert_int_equal(hs_challenge(&h), NS_EPERM);
    assert_int_equal(h.con.state, NS_WIRE_AUTH_FAILED);
    assert_non_null(h.con.reason);
    /* A connector that skips verification and answers with its own key is
     * refused by the listener. */
    hs_hello(&h, other, sizeof other - 1, 1);
    assert_int_equal(hs_accept(&h, KEY, KEY_LEN, 2), 0);
    h.con.key = KEY; /* so it accepts the listener, then MACs with "other" */
    h.con.key_len = KEY_LEN;
    assert_int_equal(hs_challenge(&h), 0);
    h.lis.key = other;
    h.lis.key_len = sizeof other - 1;
    assert_int_equal(hs_response(&h), NS_EPERM);
    assert_int_equal(h.lis.state, NS_WIRE_AUTH_FAILED);
}

/* Flipping any single byte of any message keeps the handshake from
 * completing on at least one side. */
static void test_tamper_every_byte(void **state)
{
    (void)state;
    for (int msg = 0; msg < 3; msg++) {
        size_t len = msg == 0   ? NS_WIRE_HELLO_FIXED + strlen(C_ADDR)
                     : msg == 1 ? NS_WIRE_CHALLENGE_FIXED + strlen(L_ADDR)
                                : NS_WIRE_RESPONSE_SIZE;
        for (size_t i = 0; i < len; i++) {
            struct hs h;
            bool done = false;
            hs_hello(&h, KEY, KEY_LEN, 1);
            if (msg == 0) {
                h.hello[i] ^= 0x01;
            }
            if (hs_accept(&h, KEY, KEY_LEN, 2) == 0) {
                if (msg == 1) {
                    h.chal[i] ^= 0x01;
                }
                if (hs_challenge(&h) == 0) {
                    if (msg == 2) {
                        h.resp[i] ^= 0x01;
                    }
                    done = hs_response(&h) == 0;
                }
            }
            if (done) {
                fail_msg("message %d byte %zu tampered, handshake passed", msg,
                         i);
            }
        }
    }
}

static void test_truncated(void **state)
{
    (void)state;
    struct hs h;
    hs_hello(&h, KEY, KEY_LEN, 1);
    size_t full = h.hello_len;
    for (size_t n = 0; n < full; n++) {
        h.hello_len = n;
        assert_int_equal(hs_accept(&h, KEY, KEY_LEN, 2), NS_EAGAIN);
    }
    h.hello_len = full;
    assert_int_equal(hs_accept(&h, KEY, KEY_LEN, 2), 0);
    size_t chal = h.chal_len;
    for (size_t n = 0; n < chal; n++) {
        h.chal_len = n;
        assert_int_equal(hs_challenge(&h), NS_EAGAIN);
    }
    h.chal_len = chal;
    assert_int_equal(hs_challenge(&h), 0);
    size_t resp = h.resp_len;
    for (size_t n = 0; n < resp; n++) {
        h.resp_len = n;
        assert_int_equal(hs_response(&h), NS_EAGAIN);
    }
    h.resp_len = resp;
    assert_int_equal(hs_response(&h), 0);
}

struct hello_case {
    const char *name;
    size_t off; /* byte to set */
    uint8_t value;
    int rv;
};

static void test_bad_hello(void **state)
{
    (void)state;
    static const struct hello_case cases[] = {
        {"legacy libraft handshake (u64 LE 1)", 0, 0x01, NS_EPROTO},
        {"version 2", 5, 2, NS_EVERSION},
        {"address length 65 (oversized)", 7, 65, NS_EPROTO},
        {"address length 0", 7, 0, NS_EPROTO},
        {"address with NUL (unterminated field)", NS_WIRE_HELLO_FIXED + 3, 0,
         NS_EPROTO},
        {"address not printable", NS_WIRE_HELLO_FIXED, 0x7f, NS_EPROTO},
        {"from id 0", 15, 0, NS_EPROTO},
        {"addressed to another id", 23, 3, NS_EPERM},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct hs h;
        hs_hello(&h, KEY, KEY_LEN, 1);
        h.hello[cases[i].off] = cases[i].value;
        int rv = hs_accept(&h, KEY, KEY_LEN, 2);
        if (rv != cases[i].rv) {
            fail_msg("%s: rv %d, want %d", cases[i].name, rv, cases[i].rv);
        }
    }
    /* A wrong magic is refused on its first byte, without waiting. */
    struct hs h;
    h.hello[0] = 0x01;
    h.hello_len = 1;
    assert_int_equal(hs_accept(&h, KEY, KEY_LEN, 2), NS_EPROTO);
    /* An address length announcing more than the maximum message. */
    hs_hello(&h, KEY, KEY_LEN, 1);
    h.hello[6] = 0xff;
    h.hello[7] = 0xff;
    assert_int_equal(hs_accept(&h, KEY, KEY_LEN, 2), NS_EPROTO);
}

static void test_bad_local_args(void **state)
{
    (void)state;
    struct ns_wire_auth a;
    uint8_t nonce[NS_WIRE_NONCE_SIZE] = {0}, out[NS_WIRE_MSG_MAX];
    size_t len = 0;
    char long_addr[NS_WIRE_ADDR_MAX + 2];
    memset(long_addr, '1', sizeof long_addr - 1);
    long_addr[sizeof long_addr - 1] = '\0';
    assert_int_equal(ns_wire_auth_connect(&a, KEY, KEY_LEN, 1, long_addr, 2,
                                          L_ADDR, nonce, out, sizeof out, &len),
                     NS_EINVAL);
    assert_int_equal(ns_wire_auth_connect(&a, KEY, KEY_LEN, 0, C_ADDR, 2,
                                          L_ADDR, nonce, out, sizeof out, &len),
                     NS_EINVAL);
    assert_int_equal(ns_wire_auth_connect(&a, KEY, KEY_LEN, 1, C_ADDR, 2,
                                          L_ADDR, nonce, out, 10, &len),
                     NS_ETOOBIG);
    /* Out of order: a challenge to a connector that sent no HELLO. */
    memset(&a, 0, sizeof a);
    size_t used = 0;
    assert_int_equal(
        ns_wire_auth_on_challenge(&a, out, 0, &used, out, sizeof out, &len),
        NS_EINVAL);
}

/* A recorded handshake does not verify again: the other side's nonce is new.
 */
static void test_replay(void **state)
{
    (void)state;
    struct hs rec, h;
    hs_hello(&rec, KEY, KEY_LEN, 1);
    assert_int_equal(hs_accept(&rec, KEY, KEY_LEN, 2), 0);
    assert_int_equal(hs_challenge(&rec), 0);
    assert_int_equal(hs_response(&rec), 0);
    /* Replayed HELLO + RESPONSE against a listener with a fresh nonce. */
    memcpy(h.hello, rec.hello, rec.hello_len);
    h.hello_len = rec.hello_len;
    assert_int_equal(hs_accept(&h, KEY, KEY_LEN, 77), 0);
    memcpy(h.resp, rec.resp, rec.resp_len);
    h.resp_len = rec.resp_len;
    assert_int_equal(hs_response(&h), NS_EPERM);
    /* Replayed CHALLENGE against a connector with a fresh nonce. */
    hs_hello(&h, KEY, KEY_LEN, 55);
    memcpy(h.chal, rec.chal, rec.chal_len);
    h.chal_len = rec.chal_len;
    assert_int_equal(hs_challenge(&h), NS_EPERM);
    /* The same RESPONSE twice to the same listener: out of order. */
    size_t used = 0;
    assert_int_equal(
        ns_wire_auth_on_response(&rec.lis, rec.resp, rec.resp_len, &used),
        NS_EINVAL);
}

/* ------------------------------------------------------------------ */
/* checker: libraft 0.15 messages built byte by byte */

#define PEER 7
#define BUF_MAX 4096

struct msg {
    uint8_t b[BUF_MAX];
    size_t len;
};

static void put64(struct msg *m, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        m->b[m->len++] = (uint8_t)(v >> (8 * i));
    }
}

static void put8(struct msg *m, uint8_t v)
{
    m->b[m->len++] = v;
}

static void put_zero(struct msg *m, size_t n)
{
    memset(m->b + m->len, 0, n);
    m->len += n;
}

static void preamble(struct msg *m, uint64_t type, uint64_t header_len)
{
    m->len = 0;
    put64(m, type);
    put64(m, header_len);
}

static void request_vote(struct msg *m, uint64_t candidate, uint64_t flags)
{
    preamble(m, 3, 40);
    put64(m, 5);         /* term */
    put64(m, candidate); /* candidate id */
    put64(m, 10);        /* last log index */
    put64(m, 4);         /* last log term */
    put64(m, flags);
}

static void three_words(struct msg *m, uint64_t type, uint64_t third)
{
    preamble(m, type, 24);
    put64(m, 5);
    put64(m, 1);
    put64(m, third);
}

struct ent {
    uint8_t type;
    uint32_t len;
};

static void append_entries(struct msg *m, const struct ent *e, size_t n)
{
    preamble(m, 1, 48 + 16 * n);
    put64(m, 5); /* term */
    put64(m, 9); /* prev index */
    put64(m, 4); /* prev term */
    put64(m, 9); /* commit */
    put64(m, n); /* entries */
    for (size_t i = 0; i < n; i++) {
        put64(m, 5);
        put8(m, e[i].type);
        put8(m, 0xaa); /* unused bytes, never zeroed by libraft */
        put8(m, 0xbb);
        put8(m, 0xcc);
        for (int k = 0; k < 4; k++) {
            put8(m, (uint8_t)(e[i].len >> (8 * k)));
        }
    }
    put64(m, 0xdeadbeef); /* counted, never written by libraft */
    for (size_t i = 0; i < n; i++) {
        for (uint32_t k = 0; k < e[i].len && m->len < BUF_MAX; k++) {
            put8(m, (uint8_t)k);
        }
    }
}

/* A configuration of n servers "127.0.0.1:900<i>" as libraft encodes it:
 * u8 format 1, u64 n (LE, unaligned), n x {u64 id, address NUL, u8 role},
 * padded to 8 with garbage. Returns its padded length. */
static size_t put_conf(struct msg *m, unsigned n, uint8_t role)
{
    size_t start = m->len;
    put8(m, 1);
    put64(m, n);
    for (unsigned i = 0; i < n; i++) {
        put64(m, i + 1);
        char addr[32];
        int len = snprintf(addr, sizeof addr, "127.0.0.1:900%u", i);
        memcpy(m->b + m->len, addr, (size_t)len + 1);
        m->len += (size_t)len + 1;
        put8(m, role);
    }
    while ((m->len - start) % 8 != 0) {
        put8(m, 0x5a);
    }
    return m->len - start;
}

static void install_snapshot(struct msg *m, unsigned n_servers, uint64_t data)
{
    struct msg conf = {.len = 0};
    size_t conf_len = put_conf(&conf, n_servers, 1);
    preamble(m, 5, 56 + conf_len);
    put64(m, 5);        /* term */
    put64(m, 100);      /* last index */
    put64(m, 4);        /* last term */
    put64(m, 90);       /* conf index */
    put64(m, conf_len); /* conf length */
    memcpy(m->b + m->len, conf.b, conf_len);
    m->len += conf_len;
    put64(m, data); /* data length */
    put64(m, 0x77); /* unused */
    for (uint64_t k = 0; k < data && m->len < BUF_MAX; k++) {
        put8(m, (uint8_t)k);
    }
}

static void limits(struct ns_wire_limits *l)
{
    ns_wire_limits_default(l);
    l->max_payload = 1024;
    l->max_entries = 16;
    l->max_entry_len = 256;
    l->max_conf_len = 512;
    l->max_conf_servers = 8;
}

/* Feeds m at once and byte at a time; both must agree. Returns the verdict
 * and the number of forwardable bytes. */
static int check_both(const struct msg *m, size_t *forwarded)
{
    struct ns_wire_limits l;
    struct ns_wire_check c1, c2;
    limits(&l);
    ns_wire_check_init(&c1, &l, PEER);
    ns_wire_check_init(&c2, &l, PEER);
    size_t ok1 = 0, ok2 = 0, n = 0;
    int rv1 = ns_wire_check_feed(&c1, m->b, m->len, &ok1);
    int rv2 = 0;
    for (size_t i = 0; i < m->len && rv2 == 0; i++) {
        rv2 = ns_wire_check_feed(&c2, m->b + i, 1, &n);
        ok2 += n;
    }
    assert_int_equal(rv1, rv2);
    assert_int_equal(ok1, ok2);
    if (rv1 == 0) {
        assert_int_equal(c1.n_messages, c2.n_messages);
        assert_int_equal(c1.state, NS_WIRE_CHECK_PREAMBLE);
    } else {
        assert_string_equal(c1.reason, c2.reason);
        assert_true(ok1 < m->len); /* the offending message never completes */
        size_t again = 99;
        assert_int_not_equal(ns_wire_check_feed(&c1, m->b, 1, &again), 0);
        assert_int_equal(again, 0);
    }
    *forwarded = ok1;
    return rv1;
}

static void test_check_valid(void **state)
{
    (void)state;
    struct msg m, all = {.len = 0};
    size_t fwd;
    const struct ent ents[] = {{1, 16}, {2, 8}, {3, 64}, {1, 256}};
    for (int k = 0; k < 9; k++) {
        switch (k) {
        case 0:
            request_vote(&m, PEER, 0);
            break;
        case 1:
            request_vote(&m, PEER, 3); /* pre-vote, disrupt leader */
            break;
        case 2:
            three_words(&m, 4, 1); /* RequestVoteResult, pre-vote flag */
            break;
        case 3:
            three_words(&m, 2, 12); /* AppendEntriesResult */
            break;
        case 4:
            three_words(&m, 6, 3); /* TimeoutNow */
            break;
        case 5:
            append_entries(&m, NULL, 0); /* heartbeat */
            break;
        case 6:
            append_entries(&m, ents, 4);
            break;
        case 7:
            install_snapshot(&m, 3, 100);
            break;
        default:
            install_snapshot(&m, 8, 1024);
            break;
        }
        if (check_both(&m, &fwd) != 0) {
            fail_msg("valid message %d refused", k);
        }
        assert_int_equal(fwd, m.len);
        if (all.len + m.len <= BUF_MAX) {
            memcpy(all.b + all.len, m.b, m.len);
            all.len += m.len;
        }
    }
    /* Several messages back to back, in one chunk and byte by byte. */
    assert_int_equal(check_both(&all, &fwd), 0);
    struct ns_wire_limits l;
    struct ns_wire_check c;
    limits(&l);
    ns_wire_check_init(&c, &l, PEER);
    assert_int_equal(ns_wire_check_feed(&c, all.b, all.len, &fwd), 0);
    assert_true(c.n_messages >= 5);
}

enum vcase {
    V_TYPE_0,
    V_TYPE_7,
    V_TYPE_HUGE,
    V_RV_LEGACY,
    V_RV_ONE_BYTE,
    V_RVR_LEGACY,
    V_AER_LONG,
    V_TN_ZERO,
    V_AE_GIB_HEADER,
    V_AE_COUNT_MISMATCH,
    V_AE_UINT32_MAX_ENTRIES,
    V_AE_HEADER_ODD,
    V_AE_ENTRY_TYPE_0,
    V_AE_ENTRY_TYPE_4,
    V_AE_ENTRY_LEN_0,
    V_AE_ENTRY_LEN_ODD,
    V_AE_ENTRY_TOO_LONG,
    V_AE_PAYLOAD_TOO_BIG,
    V_RV_OTHER_CANDIDATE,
    V_RV_FLAGS,
    V_RVR_FLAGS,
    V_IS_FORMAT,
    V_IS_ZERO_SERVERS,
    V_IS_TOO_MANY_SERVERS,
    V_IS_UNTERMINATED,
    V_IS_EMPTY_ADDR,
    V_IS_ROLE,
    V_IS_CONF_LEN_MISMATCH,
    V_IS_TRAILING,
    V_IS_DATA_ZERO,
    V_IS_DATA_TOO_BIG,
    V_IS_CONF_TOO_LONG,
    V_IS_SERVER_ID_0,
    V_COUNT,
};

static const char *vname[V_COUNT] = {
    "type 0",
    "type 7",
    "type 2^64-1",
    "RequestVote legacy 32-byte header",
    "RequestVote 1-byte header",
    "RequestVoteResult legacy 16-byte header",
    "AppendEntriesResult 32-byte header",
    "TimeoutNow 0-byte header",
    "AppendEntries 1 GiB header",
    "AppendEntries count != header",
    "AppendEntries 2^32-1 entries in a 96-byte message",
    "AppendEntries header not 48+16n",
    "entry type 0",
    "entry type 4",
    "entry length 0",
    "entry length not a multiple of 8",
    "entry too long",
    "AppendEntries payload over max",
    "RequestVote for another candidate",
    "RequestVote flags",
    "RequestVoteResult flags",
    "InstallSnapshot conf format",
    "InstallSnapshot 0 servers",
    "InstallSnapshot too many servers",
    "InstallSnapshot unterminated address",
    "InstallSnapshot empty address",
    "InstallSnapshot role 3",
    "InstallSnapshot conf length field mismatch",
    "InstallSnapshot conf trailing bytes",
    "InstallSnapshot data length 0",
    "InstallSnapshot data over max",
    "InstallSnapshot conf over max",
    "InstallSnapshot server id 0",
};

static void set64(struct msg *m, size_t off, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        m->b[off + i] = (uint8_t)(v >> (8 * i));
    }
}

static int build_violation(enum vcase v, struct msg *m)
{
    const struct ent one[] = {{1, 16}};
    const struct ent big[] = {{1, 512}};
    const struct ent many[] = {
        {1, 256}, {1, 256}, {1, 256}, {1, 256}, {1, 256}};
    /* Offsets inside an InstallSnapshot: preamble 16, fixed 40. */
    const size_t conf = 16 + 40;
    switch (v) {
    case V_TYPE_0:
        three_words(m, 0, 0);
        return NS_EPROTO;
    case V_TYPE_7:
        three_words(m, 7, 0);
        return NS_EPROTO;
    case V_TYPE_HUGE:
        three_words(m, UINT64_MAX, 0);
        return NS_EPROTO;
    case V_RV_LEGACY:
        request_vote(m, PEER, 0);
        set64(m, 8, 32);
        return NS_EPROTO;
    case V_RV_ONE_BYTE:
        preamble(m, 3, 1);
        put8(m, 0xff);
        return NS_EPROTO;
    case V_RVR_LEGACY:
        three_words(m, 4, 0);
        set64(m, 8, 16);
        return NS_EPROTO;
    case V_AER_LONG:
        three_words(m, 2, 0);
        set64(m, 8, 32);
        return NS_EPROTO;
    case V_TN_ZERO:
        preamble(m, 6, 0);
        return NS_EPROTO;
    case V_AE_GIB_HEADER:
        preamble(m, 1, 1ull << 30);
        put_zero(m, 64);
        return NS_ETOOBIG;
    case V_AE_COUNT_MISMATCH:
        append_entries(m, one, 1);
        set64(m, 16 + 32, 2);
        return NS_EPROTO;
    case V_AE_UINT32_MAX_ENTRIES:
        /* The 96-byte packet that crashed libraft 0.15's decoder. */
        append_entries(m, one, 1);
        set64(m, 16 + 32, UINT32_MAX);
        return NS_EPROTO;
    case V_AE_HEADER_ODD:
        append_entries(m, one, 1);
        set64(m, 8, 48 + 8);
        return NS_EPROTO;
    case V_AE_ENTRY_TYPE_0:
        append_entries(m, one, 1);
        m->b[16 + 40 + 8] = 0;
        return NS_EPROTO;
    case V_AE_ENTRY_TYPE_4:
        append_entries(m, one, 1);
        m->b[16 + 40 + 8] = 4;
        return NS_EPROTO;
    case V_AE_ENTRY_LEN_0: {
        const struct ent e[] = {{1, 0}};
        append_entries(m, e, 1);
        return NS_EPROTO;
    }
    case V_AE_ENTRY_LEN_ODD: {
        const struct ent e[] = {{1, 8}, {1, 13}};
        append_entries(m, e, 2);
        return NS_EPROTO;
    }
    case V_AE_ENTRY_TOO_LONG:
        append_entries(m, big, 1);
        return NS_ETOOBIG;
    case V_AE_PAYLOAD_TOO_BIG:
        append_entries(m, many, 5); /* 1280 > 1024 */
        return NS_ETOOBIG;
    case V_RV_OTHER_CANDIDATE:
        request_vote(m, PEER + 1, 0);
        return NS_EPROTO;
    case V_RV_FLAGS:
        request_vote(m, PEER, 4);
        return NS_EPROTO;
    case V_RVR_FLAGS:
        three_words(m, 4, 2);
        return NS_EPROTO;
    case V_IS_FORMAT:
        install_snapshot(m, 1, 8);
        m->b[conf] = 2;
        return NS_EPROTO;
    case V_IS_ZERO_SERVERS:
        install_snapshot(m, 1, 8);
        set64(m, conf + 1, 0);
        return NS_EPROTO;
    case V_IS_TOO_MANY_SERVERS:
        install_snapshot(m, 9, 8);
        return NS_EPROTO;
    case V_IS_UNTERMINATED:
        /* One server whose address runs to the end of the blob. */
        install_snapshot(m, 1, 8);
        memset(m->b + conf + 1 + 8 + 8, 'A', m->b[16 + 32] - 17u);
        return NS_EPROTO;
    case V_IS_EMPTY_ADDR:
        install_snapshot(m, 1, 8);
        m->b[conf + 1 + 8 + 8] = 0;
        return NS_EPROTO;
    case V_IS_ROLE:
        install_snapshot(m, 1, 8);
        m->b[conf + 1 + 8 + 8 + strlen("127.0.0.1:9000") + 1] = 3;
        return NS_EPROTO;
    case V_IS_CONF_LEN_MISMATCH:
        install_snapshot(m, 1, 8);
        set64(m, 16 + 32, 32);
        return NS_EPROTO;
    case V_IS_TRAILING: {
        /* A 1-server blob announced as 8 bytes longer than its padding. */
        struct msg c = {.len = 0};
        size_t len = put_conf(&c, 1, 1);
        put_zero(&c, 8);
        len += 8;
        preamble(m, 5, 56 + len);
        put64(m, 5);
        put64(m, 100);
        put64(m, 4);
        put64(m, 90);
        put64(m, len);
        memcpy(m->b + m->len, c.b, len);
        m->len += len;
        put64(m, 8);
        put64(m, 0);
        put_zero(m, 8);
        return NS_EPROTO;
    }
    case V_IS_DATA_ZERO:
        install_snapshot(m, 1, 0);
        return NS_EPROTO;
    case V_IS_DATA_TOO_BIG:
        install_snapshot(m, 1, 2048);
        return NS_ETOOBIG;
    case V_IS_CONF_TOO_LONG:
        preamble(m, 5, 56 + 1024);
        put_zero(m, 64);
        return NS_ETOOBIG;
    case V_IS_SERVER_ID_0:
        install_snapshot(m, 1, 8);
        set64(m, conf + 1 + 8, 0);
        return NS_EPROTO;
    default:
        return 0;
    }
}

static void test_check_violations(void **state)
{
    (void)state;
    for (int v = 0; v < V_COUNT; v++) {
        struct msg m;
        size_t fwd = 0;
        int want = build_violation((enum vcase)v, &m);
        int rv = check_both(&m, &fwd);
        if (rv != want) {
            fail_msg("%s: rv %d, want %d", vname[v], rv, want);
        }
    }
}

/* A violation in the second message lets the first one through whole. */
static void test_check_after_valid(void **state)
{
    (void)state;
    struct msg m, bad;
    size_t fwd = 0;
    request_vote(&m, PEER, 0);
    size_t first = m.len;
    build_violation(V_AE_UINT32_MAX_ENTRIES, &bad);
    memcpy(m.b + m.len, bad.b, bad.len);
    m.len += bad.len;
    assert_int_equal(check_both(&m, &fwd), NS_EPROTO);
    assert_true(fwd >= first);
    assert_true(fwd < m.len);
}

/* The defaults admit what raftns and libraft send: 1 GiB, 64 KiB confs. */
static void test_default_limits(void **state)
{
    (void)state;
    struct ns_wire_limits l;
    struct ns_wire_check c;
    struct msg m;
    size_t fwd = 0;
    ns_wire_limits_default(&l);
    assert_int_equal(l.max_payload, 1ull << 30);
    ns_wire_check_init(&c, &l, PEER);
    install_snapshot(&m, 3, 0);
    set64(&m, m.len - 16, 900ull << 20); /* a 900 MiB snapshot */
    assert_int_equal(ns_wire_check_feed(&c, m.b, m.len, &fwd), 0);
    assert_int_equal(c.state, NS_WIRE_CHECK_PAYLOAD);
    assert_int_equal(c.payload_left, 900ull << 20);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_hello_golden),
        cmocka_unit_test(test_wrong_secret),
        cmocka_unit_test(test_tamper_every_byte),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_bad_hello),
        cmocka_unit_test(test_bad_local_args),
        cmocka_unit_test(test_replay),
        cmocka_unit_test(test_check_valid),
        cmocka_unit_test(test_check_violations),
        cmocka_unit_test(test_check_after_valid),
        cmocka_unit_test(test_default_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
