/* Unit tests of backup files (raft/backup.c): the CRC32C check value, golden
 * header bytes, round trip, every truncation and every flipped byte refused
 * with a message, a newer version refused as such, and the member table a
 * restored state takes from its new cluster file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "raftns/alloc.h"
#include "raftns/backup.h"
#include "raftns/err.h"
#include "raftns/fsm.h"

static void apply_cmd(struct ns_state *s, struct ns_command *c)
{
    assert_int_equal(ns_fsm_apply(s, c, NULL), 0);
    ns_command_close(c);
}

static void sample_state(struct ns_state *s)
{
    assert_int_equal(ns_state_init(s), 0);
    struct ns_command c;
    ns_command_init(&c, NS_CMD_KV_PUT);
    c.u.kv.ns = ns_strdup("ns");
    c.u.kv.key = ns_strdup("key");
    c.u.kv.value = ns_strdup("value");
    apply_cmd(s, &c);
    ns_command_init(&c, NS_CMD_SET_MEMBER);
    c.u.member.id = 7;
    c.u.member.raft_addr = ns_strdup("10.0.0.7:9001");
    c.u.member.client_addr = ns_strdup("10.0.0.7:9876");
    apply_cmd(s, &c);
}

/* A whole file (header + body) of the sample state; caller frees. */
static uint8_t *sample_file(size_t *len, struct ns_buf *body)
{
    struct ns_state s;
    sample_state(&s);
    ns_buf_init(body);
    assert_int_equal(ns_snapshot_encode(&s, body), 0);
    ns_state_close(&s);
    *len = NS_BACKUP_HEADER_LEN + body->len;
    uint8_t *f = malloc(*len);
    assert_non_null(f);
    ns_backup_header_encode(42, 3, body->data, body->len, f);
    memcpy(f + NS_BACKUP_HEADER_LEN, body->data, body->len);
    return f;
}

static void test_crc32c_check_value(void **state)
{
    (void)state;
    /* the standard check value of CRC-32C (RFC 3720, B.4) */
    assert_int_equal(ns_backup_crc32c(0, "123456789", 9), 0xE3069283u);
    /* continuing a CRC is the same as one pass */
    uint32_t part = ns_backup_crc32c(0, "1234", 4);
    assert_int_equal(ns_backup_crc32c(part, "56789", 5), 0xE3069283u);
    assert_int_equal(ns_backup_crc32c(0, "", 0), 0);
}

static void test_golden_header(void **state)
{
    (void)state;
    static const uint8_t body[] = {'a', 'b', 'c'};
    uint8_t h[NS_BACKUP_HEADER_LEN];
    ns_backup_header_encode(0x0102030405060708ull, 9, body, sizeof body, h);
    uint32_t body_crc = ns_backup_crc32c(0, body, sizeof body);
    const uint8_t want_head[36] = {'R',
                                   'N',
                                   'S',
                                   'B',
                                   0,
                                   1,
                                   0,
                                   40,
                                   1,
                                   2,
                                   3,
                                   4,
                                   5,
                                   6,
                                   7,
                                   8,
                                   0,
                                   0,
                                   0,
                                   0,
                                   0,
                                   0,
                                   0,
                                   9,
                                   0,
                                   0,
                                   0,
                                   0,
                                   0,
                                   0,
                                   0,
                                   3,
                                   (uint8_t)(body_crc >> 24),
                                   (uint8_t)(body_crc >> 16),
                                   (uint8_t)(body_crc >> 8),
                                   (uint8_t)body_crc};
    assert_memory_equal(h, want_head, 36);
    /* CRC32C("abc") = 0x364B3FB7 (independent of this code's encoder) */
    assert_int_equal(body_crc, 0x364B3FB7u);
    uint32_t head_crc = ns_backup_crc32c(0, h, 36);
    assert_int_equal(h[36], (uint8_t)(head_crc >> 24));
    assert_int_equal(h[39], (uint8_t)head_crc);

    struct ns_backup_header d;
    char err[128];
    assert_int_equal(ns_backup_header_decode(h, sizeof h, &d, err, sizeof err),
                     0);
    assert_int_equal(d.version, 1);
    assert_true(d.index == 0x0102030405060708ull);
    assert_true(d.term == 9);
    assert_true(d.body_len == 3);
    assert_int_equal(d.body_crc, body_crc);
}

static void test_round_trip(void **state)
{
    (void)state;
    struct ns_buf body;
    size_t len;
    uint8_t *f = sample_file(&len, &body);
    struct ns_backup_header h;
    const uint8_t *b = NULL;
    size_t blen = 0;
    char err[128] = "";
    assert_int_equal(
        ns_backup_file_check(f, len, &h, &b, &blen, err, sizeof err), 0);
    assert_true(h.index == 42 && h.term == 3);
    assert_ptr_equal(b, f + NS_BACKUP_HEADER_LEN);
    assert_int_equal(blen, body.len);
    assert_memory_equal(b, body.data, body.len);
    ns_buf_close(&body);
    free(f);
}

static void test_every_truncation_refused(void **state)
{
    (void)state;
    struct ns_buf body;
    size_t len;
    uint8_t *f = sample_file(&len, &body);
    for (size_t cut = 0; cut < len; cut++) {
        struct ns_backup_header h;
        const uint8_t *b;
        size_t blen;
        char err[128] = "";
        int rv = ns_backup_file_check(f, cut, &h, &b, &blen, err, sizeof err);
        assert_int_equal(rv, NS_EPROTO);
        if (cut >= NS_BACKUP_HEADER_LEN) {
            assert_non_null(strstr(err, "truncated"));
        }
        assert_true(err[0] != '\0');
    }
    /* one byte too many is refused too */
    uint8_t *longer = malloc(len + 1);
    memcpy(longer, f, len);
    longer[len] = 0;
    struct ns_backup_header h;
    const uint8_t *b;
    size_t blen;
    char err[128] = "";
    assert_int_equal(
        ns_backup_file_check(longer, len + 1, &h, &b, &blen, err, sizeof err),
        NS_EPROTO);
    assert_non_null(strstr(err, "unexpected bytes"));
    free(longer);
    ns_buf_close(&body);
    free(f);
}

static void test_every_flipped_byte_refused(void **state)
{
    (void)state;
    struct ns_buf body;
    size_t len;
    uint8_t *f = sample_file(&len, &body);
    for (size_t i = 0; i < len; i++) {
        for (int bit = 0; bit < 8; bit++) {
            f[i] ^= (uint8_t)(1u << bit);
            struct ns_backup_header h;
            const uint8_t *b;
            size_t blen;
            char err[128] = "";
            int rv =
                ns_backup_file_check(f, len, &h, &b, &blen, err, sizeof err);
            assert_true(rv == NS_EPROTO || rv == NS_EVERSION);
            assert_true(err[0] != '\0');
            if (i >= NS_BACKUP_HEADER_LEN) {
                assert_non_null(strstr(err, "damaged body"));
            }
            f[i] ^= (uint8_t)(1u << bit);
        }
    }
    ns_buf_close(&body);
    free(f);
}

static void test_newer_version_and_foreign_file(void **state)
{
    (void)state;
    struct ns_buf body;
    size_t len;
    uint8_t *f = sample_file(&len, &body);
    struct ns_backup_header h;
    char err[128] = "";
    f[5] = 2; /* version 2 */
    assert_int_equal(ns_backup_header_decode(f, len, &h, err, sizeof err),
                     NS_EVERSION);
    assert_non_null(strstr(err, "newer"));
    f[5] = 1;
    /* a raw snapshot (what raft keeps on disk) is not a backup file */
    assert_int_equal(
        ns_backup_header_decode(body.data, body.len, &h, err, sizeof err),
        NS_EPROTO);
    assert_non_null(strstr(err, "not a raftns snapshot file"));
    /* a well-formed header over a body that is not a state */
    static const uint8_t junk[] = "not a state";
    uint8_t g[NS_BACKUP_HEADER_LEN + sizeof junk];
    ns_backup_header_encode(5, 1, junk, sizeof junk, g);
    memcpy(g + NS_BACKUP_HEADER_LEN, junk, sizeof junk);
    const uint8_t *b;
    size_t blen;
    assert_int_equal(
        ns_backup_file_check(g, sizeof g, &h, &b, &blen, err, sizeof err),
        NS_EPROTO);
    assert_non_null(strstr(err, "not a state"));
    ns_buf_close(&body);
    free(f);
}

static void test_rebase_members(void **state)
{
    (void)state;
    struct ns_state s;
    sample_state(&s);
    struct ns_buf kv_before;
    ns_buf_init(&kv_before);
    assert_int_equal(ns_backup_table_encode(&s, NS_BACKUP_TABLE_KV, &kv_before),
                     0);
    struct ns_cluster_node nodes[3] = {
        {3, "127.0.0.1:3", "127.0.0.1:13", NULL, true},
        {1, "127.0.0.1:1", "127.0.0.1:11", "127.0.0.1:21", true},
        {9, "127.0.0.1:9", "127.0.0.1:19", NULL, false},
    };
    struct ns_cluster_config c;
    memset(&c, 0, sizeof c);
    c.nodes = nodes;
    c.n_nodes = 3;
    assert_int_equal(ns_backup_rebase_members(&s, &c), 0);
    assert_int_equal(s.n_members, 2); /* node 9 is not bootstrapped */
    assert_true(s.members[0].id == 1 && s.members[1].id == 3);
    assert_string_equal(s.members[0].http_addr, "127.0.0.1:21");
    assert_null(s.members[1].http_addr);
    assert_string_equal(s.members[1].client_addr, "127.0.0.1:13");
    struct ns_buf kv_after;
    ns_buf_init(&kv_after);
    assert_int_equal(ns_backup_table_encode(&s, NS_BACKUP_TABLE_KV, &kv_after),
                     0);
    assert_int_equal(kv_after.len, kv_before.len);
    assert_memory_equal(kv_after.data, kv_before.data, kv_before.len);
    /* the rebased state still encodes and decodes */
    struct ns_buf enc;
    ns_buf_init(&enc);
    assert_int_equal(ns_snapshot_encode(&s, &enc), 0);
    struct ns_state t;
    assert_int_equal(ns_state_init(&t), 0);
    assert_int_equal(ns_snapshot_decode(&t, enc.data, enc.len), 0);
    assert_int_equal(t.n_members, 2);
    ns_state_close(&t);
    ns_buf_close(&enc);
    ns_buf_close(&kv_after);
    ns_buf_close(&kv_before);
    ns_state_close(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crc32c_check_value),
        cmocka_unit_test(test_golden_header),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_every_truncation_refused),
        cmocka_unit_test(test_every_flipped_byte_refused),
        cmocka_unit_test(test_newer_version_and_foreign_file),
        cmocka_unit_test(test_rebase_members),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
