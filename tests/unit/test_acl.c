/* Unit tests of the ACL module (src/route/acl.c) and the ACL commands in the
 * state machine: signatures against vectors computed independently with
 * Python's hmac/base64 (the strings below were pasted from
 *   base64.b64encode(hmac.new(sk, content, hashlib.sha1).digest())
 * where content = the ext values sorted by key.encode('utf-16-be'), Signature
 * left out, then the body), sorted-key order in UTF-16 code units, body
 * included, Signature excluded, the _UNIQUE_KEY_QUERY rule, CIDR parsing and
 * matching, the account table, FSM apply and seeding, and allocation-failure
 * sweeps. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "raftns/acl.h"
#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/fsm.h"
#include "raftns/remoting.h"

/* A request with ext pairs (NULL-terminated) and a body (borrowed). */
static void make_cmd(struct ns_cmd *c, const char *const *ext, const char *body)
{
    ns_cmd_init(c);
    c->code = 100;
    c->version = 479;
    for (size_t i = 0; ext[i] != NULL; i += 2) {
        assert_int_equal(ns_cmd_ext_set(c, ext[i], ext[i + 1]), 0);
    }
    if (body != NULL) {
        c->body = (const uint8_t *)body;
        c->body_len = strlen(body);
    }
}

static void assert_sig(const char *const *ext, const char *body, const char *sk,
                       const char *want)
{
    struct ns_cmd c;
    char sig[NS_ACL_SIG_LEN + 1];
    make_cmd(&c, ext, body);
    assert_int_equal(ns_acl_sign(&c, sk, false, sig), 0);
    assert_string_equal(sig, want);
    ns_cmd_close(&c);
}

static void test_sign_vectors(void **state)
{
    (void)state;
    /* content "rocketmq2ALIYUNTopicTest": AccessKey < OnsChannel < topic */
    const char *const e1[] = {"topic",     "TopicTest",  "AccessKey",
                              "rocketmq2", "OnsChannel", "ALIYUN",
                              NULL};
    assert_sig(e1, NULL, "12345678", "0XYycYsYUNjJTDiq5JgUg/P0VC4=");
    /* content "akknsv" + body "hello body"; Signature is not signed */
    const char *const e2[] = {"AccessKey", "ak", "Signature", "xxx",
                              "namespace", "ns", "key",       "k",
                              "value",     "v",  NULL};
    assert_sig(e2, "hello body", "sk-2", "Q/JjbiQuW+QubVY2lfoGvX+pOeI=");
    /* changing the Signature field changes nothing */
    const char *const e2b[] = {"AccessKey", "ak", "Signature", "other",
                               "namespace", "ns", "key",       "k",
                               "value",     "v",  NULL};
    assert_sig(e2b, "hello body", "sk-2", "Q/JjbiQuW+QubVY2lfoGvX+pOeI=");
    /* the body counts: without it the content is "akknsv" */
    struct ns_cmd c;
    char sig[NS_ACL_SIG_LEN + 1];
    make_cmd(&c, e2, NULL);
    assert_int_equal(ns_acl_sign(&c, "sk-2", false, sig), 0);
    assert_string_not_equal(sig, "Q/JjbiQuW+QubVY2lfoGvX+pOeI=");
    ns_cmd_close(&c);
}

/* U+1F600 is D83D DE00 in UTF-16, below U+FB01, although its UTF-8 bytes
 * (F0 ..) sort after U+FB01's (EF ..): Java's TreeMap gives "akBA". */
static void test_sign_utf16_order(void **state)
{
    (void)state;
    const char *const e[] = {
        "AccessKey", "ak", "\xEF\xAC\x81", "A", "\xF0\x9F\x98\x80", "B", NULL};
    assert_sig(e, NULL, "sk", "1BAxmDAzf6GqYpNVH9ODHRupPNI=");
    /* byte order would have signed "akAB" */
    struct ns_cmd c;
    char sig[NS_ACL_SIG_LEN + 1];
    make_cmd(&c, e, NULL);
    assert_int_equal(ns_acl_sign(&c, "sk", false, sig), 0);
    assert_string_not_equal(sig, "KMULEb5In+pbMPvj1UIoeJ7Yot0=");
    ns_cmd_close(&c);
}

static struct ns_acl_account account(const char *ak, const char *sk,
                                     enum ns_acl_role role, const char *nets)
{
    struct ns_acl_account a = {(char *)ak, (char *)sk, role, NULL, 0};
    assert_int_equal(ns_acl_nets_parse(nets, &a.nets, &a.n_nets, NULL), 0);
    return a;
}

static enum ns_acl_verdict verify(const struct ns_acl *acl, struct ns_cmd *c,
                                  uint32_t ip)
{
    enum ns_acl_verdict v = NS_ACL_N_VERDICTS;
    const struct ns_acl_account *who = NULL;
    assert_int_equal(ns_acl_verify(acl, c, ip, &who, &v), 0);
    assert_true((v == NS_ACL_OK) == (who != NULL));
    return v;
}

static void test_verify(void **state)
{
    (void)state;
    struct ns_acl acl;
    ns_acl_init(&acl);
    struct ns_acl_account a =
        account("ak", "sk", NS_ACL_ROLE_BROKER, "127.0.0.0/8");
    assert_int_equal(ns_acl_put(&acl, &a), 0);
    ns_free(a.nets);
    uint32_t lo = 0x7F000001u, other = 0x0A000001u;
    struct ns_cmd c;
    /* content "akT" (vX6j...) and "aktrueT" (61IN...) */
    const char *const good[] = {"AccessKey", "ak",
                                "topic",     "T",
                                "Signature", "vX6jW2Q9g11lvMjNC+gReuZ8fTQ=",
                                NULL};
    make_cmd(&c, good, NULL);
    assert_int_equal(verify(&acl, &c, lo), NS_ACL_OK);
    assert_int_equal(verify(&acl, &c, other), NS_ACL_BAD_SOURCE);
    /* tampered field */
    assert_int_equal(ns_cmd_ext_set(&c, "topic", "U"), 0);
    assert_int_equal(verify(&acl, &c, lo), NS_ACL_BAD_SIGNATURE);
    ns_cmd_close(&c);
    /* tampered body */
    make_cmd(&c, good, "x");
    assert_int_equal(verify(&acl, &c, lo), NS_ACL_BAD_SIGNATURE);
    ns_cmd_close(&c);
    /* missing pieces */
    const char *const none[] = {"topic", "T", NULL};
    make_cmd(&c, none, NULL);
    assert_int_equal(verify(&acl, &c, lo), NS_ACL_NO_ACCESS_KEY);
    assert_int_equal(ns_cmd_ext_set(&c, "AccessKey", "ak"), 0);
    assert_int_equal(verify(&acl, &c, lo), NS_ACL_NO_SIGNATURE);
    assert_int_equal(ns_cmd_ext_set(&c, "AccessKey", "nobody"), 0);
    assert_int_equal(ns_cmd_ext_set(&c, "Signature", "x"), 0);
    assert_int_equal(verify(&acl, &c, lo), NS_ACL_UNKNOWN_KEY);
    ns_cmd_close(&c);
    /* _UNIQUE_KEY_QUERY: left out by clients <= 4.9.3 (399), included by
     * newer ones; both accepted, anything else not */
    const char *const uq_old[] = {
        "AccessKey", "ak", "_UNIQUE_KEY_QUERY", "true",
        "topic",     "T",  "Signature",         "vX6jW2Q9g11lvMjNC+gReuZ8fTQ=",
        NULL};
    make_cmd(&c, uq_old, NULL);
    c.version = 399;
    assert_int_equal(verify(&acl, &c, lo), NS_ACL_OK);
    c.version = 479;
    assert_int_equal(verify(&acl, &c, lo), NS_ACL_OK);
    assert_int_equal(
        ns_cmd_ext_set(&c, "Signature", "61INrPr16f5hs9UHLHMFWV/59p4="), 0);
    assert_int_equal(verify(&acl, &c, lo), NS_ACL_OK);
    c.version = 399;
    assert_int_equal(verify(&acl, &c, lo), NS_ACL_OK);
    assert_int_equal(
        ns_cmd_ext_set(&c, "Signature", "61INrPr16f5hs9UHLHMFWV/59p4"), 0);
    assert_int_equal(verify(&acl, &c, lo), NS_ACL_BAD_SIGNATURE);
    ns_cmd_close(&c);
    ns_acl_close(&acl);
}

static void test_networks(void **state)
{
    (void)state;
    struct ns_acl_net n;
    assert_int_equal(ns_acl_net_parse("10.1.2.3/8", &n), 0);
    assert_int_equal(n.addr, 0x0A000000u);
    assert_int_equal(n.prefix, 8);
    assert_true(ns_acl_net_contains(&n, 0x0AFFFFFFu));
    assert_false(ns_acl_net_contains(&n, 0x0B000000u));
    assert_int_equal(ns_acl_net_parse("127.0.0.1", &n), 0);
    assert_int_equal(n.prefix, 32);
    assert_true(ns_acl_net_contains(&n, 0x7F000001u));
    assert_false(ns_acl_net_contains(&n, 0x7F000002u));
    assert_int_equal(ns_acl_net_parse("0.0.0.0/0", &n), 0);
    assert_true(ns_acl_net_contains(&n, 0xFFFFFFFFu));
    assert_int_equal(ns_acl_net_parse("192.168.1.0/23", &n), 0);
    assert_true(ns_acl_net_contains(&n, 0xC0A801FFu));
    assert_true(ns_acl_net_contains(&n, 0xC0A80000u));
    assert_false(ns_acl_net_contains(&n, 0xC0A80200u));
    char text[32];
    ns_acl_net_format(&n, text, sizeof text);
    assert_string_equal(text, "192.168.0.0/23");
    static const char *const bad[] = {
        "",         "1.2.3",      "1.2.3.4/33", "256.1.1.1",
        "1.2.3.4/", "a.b.c.d",    "1.2.3.4 ",   "01234.1.1.1",
        "1..2.3",   "1.2.3.4/8x", "-1.2.3.4",   "1.2.3.4/-1",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(ns_acl_net_parse(bad[i], &n), NS_EINVAL);
    }
    struct ns_acl_net *nets;
    size_t count;
    const char *where = NULL;
    assert_int_equal(
        ns_acl_nets_parse(" 10.0.0.0/8, 127.0.0.1/32,", &nets, &count, NULL),
        0);
    assert_int_equal(count, 2);
    assert_true(ns_acl_nets_allow(nets, count, 0x7F000001u, false));
    assert_false(ns_acl_nets_allow(nets, count, 0x7F000002u, false));
    ns_free(nets);
    assert_int_equal(ns_acl_nets_parse("", &nets, &count, NULL), 0);
    assert_int_equal(count, 0);
    assert_null(nets);
    assert_false(ns_acl_nets_allow(NULL, 0, 1, false));
    assert_true(ns_acl_nets_allow(NULL, 0, 1, true));
    const char *list = "10.0.0.0/8,nope";
    assert_int_equal(ns_acl_nets_parse(list, &nets, &count, &where), NS_EINVAL);
    assert_ptr_equal(where, list + 11);
}

static void test_table(void **state)
{
    (void)state;
    struct ns_acl acl;
    ns_acl_init(&acl);
    const char *keys[] = {"m", "b", "z", "a"};
    for (size_t i = 0; i < 4; i++) {
        struct ns_acl_account a = account(keys[i], "s", NS_ACL_ROLE_READER, "");
        assert_int_equal(ns_acl_put(&acl, &a), 0);
    }
    assert_int_equal(acl.n, 4);
    assert_string_equal(acl.items[0].access_key, "a");
    assert_string_equal(acl.items[3].access_key, "z");
    struct ns_acl_account r =
        account("b", "new", NS_ACL_ROLE_ADMIN, "1.2.3.4/32");
    assert_int_equal(ns_acl_put(&acl, &r), 0); /* replace */
    ns_free(r.nets);
    assert_int_equal(acl.n, 4);
    const struct ns_acl_account *b = ns_acl_find(&acl, "b");
    assert_non_null(b);
    assert_string_equal(b->secret_key, "new");
    assert_int_equal(b->role, NS_ACL_ROLE_ADMIN);
    assert_int_equal(b->n_nets, 1);
    assert_int_equal(ns_acl_remove(&acl, "m"), 0);
    assert_int_equal(ns_acl_remove(&acl, "absent"), 0);
    assert_int_equal(acl.n, 3);
    assert_null(ns_acl_find(&acl, "m"));
    /* state round trip, sorted order enforced on decode */
    struct ns_buf buf;
    ns_buf_init(&buf);
    assert_int_equal(ns_acl_encode_state(&acl, &buf), 0);
    struct ns_acl back;
    ns_acl_init(&back);
    struct ns_rd rd;
    ns_rd_init(&rd, buf.data, buf.len);
    assert_int_equal(ns_acl_decode_state(&back, &rd), 0);
    assert_int_equal(ns_rd_left(&rd), 0);
    assert_int_equal(back.n, 3);
    assert_string_equal(ns_acl_find(&back, "b")->secret_key, "new");
    ns_acl_close(&back);
    ns_buf_close(&buf);
    ns_buf_init(&buf);
    ns_buf_put_u8(&buf, 0);
    ns_buf_put_u32(&buf, 2);
    ns_acl_encode_account(&acl.items[1], &buf);
    ns_acl_encode_account(&acl.items[0], &buf);
    ns_rd_init(&rd, buf.data, buf.len);
    ns_acl_init(&back);
    assert_int_equal(ns_acl_decode_state(&back, &rd), NS_EPROTO);
    ns_acl_close(&back);
    ns_buf_close(&buf);
    /* validation */
    const char *why = NULL;
    struct ns_acl_account v = {"ak", "sk", NS_ACL_ROLE_ADMIN, NULL, 0};
    assert_int_equal(ns_acl_account_validate(&v, &why), 0);
    v.role = NS_ACL_ROLE_NONE;
    assert_int_equal(ns_acl_account_validate(&v, &why), NS_EINVAL);
    v.role = NS_ACL_ROLE_READER;
    v.secret_key = "has space";
    assert_int_equal(ns_acl_account_validate(&v, &why), NS_EINVAL);
    v.secret_key = "";
    assert_int_equal(ns_acl_account_validate(&v, &why), NS_EINVAL);
    enum ns_acl_role role;
    assert_int_equal(ns_acl_role_parse("broker", &role), 0);
    assert_int_equal(role, NS_ACL_ROLE_BROKER);
    assert_int_equal(ns_acl_role_parse("root", &role), NS_EINVAL);
    assert_int_equal(ns_acl_role_parse(NULL, &role), NS_EINVAL);
    ns_acl_close(&acl);
}

static void apply(struct ns_state *s, struct ns_command *c)
{
    assert_int_equal(ns_fsm_apply(s, c, NULL), 0);
    ns_command_close(c);
}

static void seed_cmd(struct ns_command *c, const char *ak)
{
    ns_command_init(c, NS_CMD_ACL_SEED);
    c->u.acl_seed.items = ns_calloc(1, sizeof *c->u.acl_seed.items);
    c->u.acl_seed.items[0] = (struct ns_acl_account){
        ns_strdup(ak), ns_strdup("s"), NS_ACL_ROLE_ADMIN, NULL, 0};
    c->u.acl_seed.n = 1;
}

/* Seeding applies once; a raftnsctl change also ends the seed window. */
static void test_fsm(void **state)
{
    (void)state;
    struct ns_state s;
    assert_int_equal(ns_state_init(&s), 0);
    struct ns_command c;
    seed_cmd(&c, "first");
    apply(&s, &c);
    seed_cmd(&c, "second");
    apply(&s, &c);
    assert_int_equal(s.acl.n, 1);
    assert_non_null(ns_acl_find(&s.acl, "first"));
    ns_command_init(&c, NS_CMD_ACL_REMOVE);
    c.u.acl_remove.access_key = ns_strdup("first");
    apply(&s, &c);
    assert_int_equal(s.acl.n, 0);
    assert_true(s.acl.seeded);
    ns_state_close(&s);

    assert_int_equal(ns_state_init(&s), 0);
    ns_command_init(&c, NS_CMD_ACL_PUT);
    c.u.acl_put = (struct ns_acl_account){ns_strdup("ctl"), ns_strdup("s"),
                                          NS_ACL_ROLE_READER, NULL, 0};
    apply(&s, &c);
    seed_cmd(&c, "late");
    apply(&s, &c);
    assert_int_equal(s.acl.n, 1);
    assert_null(ns_acl_find(&s.acl, "late"));
    ns_state_close(&s);
}

static void test_alloc_failure(void **state)
{
    (void)state;
    const char *const e[] = {"AccessKey", "ak",
                             "topic",     "T",
                             "Signature", "vX6jW2Q9g11lvMjNC+gReuZ8fTQ=",
                             NULL};
    struct ns_acl acl;
    ns_acl_init(&acl);
    struct ns_acl_account a =
        account("ak", "sk", NS_ACL_ROLE_BROKER, "127.0.0.0/8,10.0.0.0/8");
    bool ok = false;
    for (long k = 0; !ok && k < 100; k++) {
        ns_alloc_fail_at(k, 1);
        int rv = ns_acl_put(&acl, &a);
        ns_alloc_fail_at(-1, 0);
        assert_true(rv == 0 || rv == NS_ENOMEM);
        assert_int_equal(acl.n, rv == 0 ? 1 : 0);
        ok = rv == 0;
    }
    assert_true(ok);
    ns_free(a.nets);
    struct ns_cmd c;
    make_cmd(&c, e, NULL);
    ok = false;
    for (long k = 0; !ok && k < 100; k++) {
        enum ns_acl_verdict v = NS_ACL_N_VERDICTS;
        ns_alloc_fail_at(k, 1);
        int rv = ns_acl_verify(&acl, &c, 0x7F000001u, NULL, &v);
        ns_alloc_fail_at(-1, 0);
        assert_true(rv == 0 || rv == NS_ENOMEM);
        ok = rv == 0;
        if (ok) {
            assert_int_equal(v, NS_ACL_OK);
        }
    }
    assert_true(ok);
    ns_cmd_close(&c);
    /* decoding the state */
    struct ns_buf buf;
    ns_buf_init(&buf);
    assert_int_equal(ns_acl_encode_state(&acl, &buf), 0);
    ok = false;
    for (long k = 0; !ok && k < 100; k++) {
        struct ns_acl back;
        struct ns_rd rd;
        ns_acl_init(&back);
        ns_rd_init(&rd, buf.data, buf.len);
        ns_alloc_fail_at(k, 1);
        int rv = ns_acl_decode_state(&back, &rd);
        ns_alloc_fail_at(-1, 0);
        assert_true(rv == 0 || rv == NS_ENOMEM);
        ok = rv == 0;
        ns_acl_close(&back);
    }
    assert_true(ok);
    ns_buf_close(&buf);
    /* applying a seed */
    ok = false;
    for (long k = 0; !ok && k < 100; k++) {
        struct ns_state s;
        struct ns_command cmd;
        assert_int_equal(ns_state_init(&s), 0);
        seed_cmd(&cmd, "x");
        ns_alloc_fail_at(k, 1);
        int rv = ns_fsm_apply(&s, &cmd, NULL);
        ns_alloc_fail_at(-1, 0);
        assert_true(rv == 0 || rv == NS_ENOMEM);
        ok = rv == 0;
        ns_command_close(&cmd);
        ns_state_close(&s);
    }
    assert_true(ok);
    ns_acl_close(&acl);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sign_vectors),
        cmocka_unit_test(test_sign_utf16_order),
        cmocka_unit_test(test_verify),
        cmocka_unit_test(test_networks),
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_fsm),
        cmocka_unit_test(test_alloc_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
