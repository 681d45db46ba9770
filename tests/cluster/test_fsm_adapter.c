/* Cluster test: the FSM adapter (raft/fsm_adapter.c) the node and these tests
 * share. The entry framing as golden bytes; then raw entries raft_apply()d on
 * a 3-server raft_fixture: an entry is refused exactly when its length prefix
 * does not fit in it or its bytes are not a command (an unpadded entry whose
 * length fits is applied, as the node applies it), a refused entry marks every
 * server diverged without stalling raft, leaves the proposer's result slot
 * unfilled (the node answers NS_EPROTO), and the on_applied hook runs once per
 * applied entry. */
#include "fixture_util.h"

static struct fx x; /* static: zeroed (P6) */

static void test_entry_encode_golden(void **state)
{
    (void)state;
    static const struct {
        const char *cmd;
        size_t len;
        size_t want_len;
        const uint8_t want[16];
    } rows[] = {
        {"", 0, 8, {0, 0, 0, 0, 0, 0, 0, 0}},
        {"abc", 3, 8, {0, 0, 0, 3, 'a', 'b', 'c', 0}},
        {"abcd", 4, 8, {0, 0, 0, 4, 'a', 'b', 'c', 'd'}},
        {"abcde", 5, 16, {0, 0, 0, 5, 'a', 'b', 'c', 'd', 'e'}},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct raft_buffer b;
        const uint8_t *cmd = NULL;
        size_t len = 99;
        assert_int_equal(ns_fsm_adapter_entry_encode(
                             (const uint8_t *)rows[i].cmd, rows[i].len, &b),
                         0);
        assert_int_equal(b.len, rows[i].want_len);
        assert_memory_equal(b.base, rows[i].want, b.len);
        assert_int_equal(ns_fsm_adapter_entry_decode(&b, &cmd, &len), 0);
        assert_int_equal(len, rows[i].len);
        assert_ptr_equal(cmd, (uint8_t *)b.base + NS_FSM_ADAPTER_ENTRY_PREFIX);
        raft_free(b.base);
    }
    struct raft_buffer b;
    assert_int_equal(ns_fsm_adapter_entry_encode(NULL, (size_t)UINT32_MAX, &b),
                     NS_ENOMEM);
}

static void test_entry_decode_checks(void **state)
{
    (void)state;
    static const struct {
        size_t len;
        uint8_t bytes[16];
        int want;
        size_t want_cmd_len;
    } rows[] = {
        {0, {0}, NS_EPROTO, 0},                 /* no prefix */
        {3, {0, 0, 0}, NS_EPROTO, 0},           /* short prefix */
        {4, {0, 0, 0, 0}, 0, 0},                /* empty command */
        {4, {0, 0, 0, 1}, NS_EPROTO, 0},        /* one byte past the end */
        {9, {0, 0, 0, 5, 1, 2, 3, 4, 5}, 0, 5}, /* unpadded, fits */
        {9, {0, 0, 0, 6, 1, 2, 3, 4, 5}, NS_EPROTO, 0},
        {16, {0, 0, 0, 5, 1, 2, 3, 4, 5}, 0, 5}, /* padding ignored */
        {16, {0, 0, 0, 12}, 0, 12},              /* exactly the entry */
        {16, {0, 0, 0, 13}, NS_EPROTO, 0},
        {16, {0xff, 0xff, 0xff, 0xff}, NS_EPROTO, 0},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        uint8_t copy[16];
        memcpy(copy, rows[i].bytes, sizeof copy);
        struct raft_buffer b = {copy, rows[i].len};
        const uint8_t *cmd = NULL;
        size_t len = 99;
        int rv = ns_fsm_adapter_entry_decode(&b, &cmd, &len);
        if (rv != rows[i].want) {
            fprintf(stderr, "row %zu: %d, want %d\n", i, rv, rows[i].want);
            fail();
        }
        if (rv == 0) {
            assert_int_equal(len, rows[i].want_cmd_len);
            assert_ptr_equal(cmd, copy + NS_FSM_ADAPTER_ENTRY_PREFIX);
        } else {
            assert_null(cmd);
            assert_int_equal(len, 99);
        }
    }
}

/* --- raw entries on a raft_fixture cluster --- */

/* The bytes of KV_PUT ns/key=value (caller closes). */
static void encode_kv(const char *key, const char *value, struct ns_buf *out)
{
    struct ns_command c;
    fx_cmd_kv(&c, "ns", key, value);
    ns_buf_init(out);
    assert_int_equal(ns_command_encode(&c, out), 0);
    ns_command_close(&c);
}

/* A raft_malloc'd entry of exactly len bytes: prefix, then body (n_body
 * bytes, borrowed), zeros after it. */
static struct raft_buffer raw_entry(uint32_t prefix, const uint8_t *body,
                                    size_t n_body, size_t len)
{
    struct raft_buffer b = {raft_malloc(len > 0 ? len : 1), len};
    assert_non_null(b.base);
    uint8_t *e = b.base;
    memset(e, 0, len > 0 ? len : 1);
    uint8_t pfx[4] = {(uint8_t)(prefix >> 24), (uint8_t)(prefix >> 16),
                      (uint8_t)(prefix >> 8), (uint8_t)prefix};
    memcpy(e, pfx, len < 4 ? len : 4);
    if (len > 4) {
        memcpy(e + 4, body, n_body < len - 4 ? n_body : len - 4);
    }
    return b;
}

/* Submits rb on the ready leader; returns the entry's index once every server
 * applied it and its callback ran with status 0. */
static raft_index apply_raw(struct raft_buffer rb)
{
    struct fx_req r;
    unsigned l = fx_wait_leader(&x, 10000);
    assert_true(l < x.n);
    assert_int_equal(fx_submit_entry(&x, l, rb, &r), 0);
    assert_true(raft_fixture_step_until(&x.f, fx_stop_done, &r, 10000));
    assert_int_equal(r.status, 0);
    assert_true(fx_wait_applied_all(&x, r.req.index, 10000));
    return r.req.index;
}

static void setup3(void)
{
    fx_setup(&x, 3, true);
    assert_true(fx_wait_leader(&x, 10000) < 3);
}

/* After a refused entry a well-framed one is still applied everywhere: apply
 * never returned non-zero, which would stall raft on the refused one. */
static void assert_not_stalled(raft_index refused)
{
    struct ns_buf b;
    struct raft_buffer rb;
    encode_kv("after", "1", &b);
    assert_int_equal(ns_fsm_adapter_entry_encode(b.data, b.len, &rb), 0);
    ns_buf_close(&b);
    assert_true(apply_raw(rb) > refused);
    for (unsigned i = 0; i < x.n; i++) {
        assert_string_equal(ns_kv_find(x.s[i].state.kv, "ns", "after"), "1");
    }
}

/* The node frames with padding, but an entry of a length that is not a
 * multiple of 8 and whose prefix fits is a command to the node: applied. */
static void test_unpadded_entry_is_applied(void **state)
{
    (void)state;
    setup3();
    struct ns_buf b;
    char value[16] = "v";
    encode_kv("k", value, &b);
    while ((NS_FSM_ADAPTER_ENTRY_PREFIX + b.len) % 8 == 0) {
        ns_buf_close(&b);
        strcat(value, "v");
        encode_kv("k", value, &b);
    }
    size_t len = NS_FSM_ADAPTER_ENTRY_PREFIX + b.len;
    apply_raw(raw_entry((uint32_t)b.len, b.data, b.len, len));
    ns_buf_close(&b);
    for (unsigned i = 0; i < x.n; i++) {
        const char *v = ns_kv_find(x.s[i].state.kv, "ns", "k");
        assert_non_null(v);
        assert_string_equal(v, value);
        assert_int_equal(x.s[i].fa.first_error, 0);
        assert_false(x.s[i].fa.diverged);
    }
    fx_teardown(&x);
}

/* rb refused on every server: nothing applied, the first error is want, the
 * server is diverged, raft goes on. */
static void refuse(struct raft_buffer rb, int want)
{
    setup3();
    uint64_t before[FX_MAX];
    for (unsigned i = 0; i < x.n; i++) {
        before[i] = x.s[i].fa.n_applies;
    }
    raft_index at = apply_raw(rb);
    for (unsigned i = 0; i < x.n; i++) {
        assert_null(ns_kv_find(x.s[i].state.kv, "ns", "k"));
        assert_int_equal(x.s[i].fa.first_error, want);
        assert_true(x.s[i].fa.diverged);
        assert_int_equal(x.s[i].fa.n_applies, before[i] + 1);
    }
    assert_not_stalled(at);
    fx_teardown(&x);
}

static void test_prefix_past_the_end_is_refused(void **state)
{
    (void)state;
    struct ns_buf b;
    encode_kv("k", "v", &b);
    size_t len = (NS_FSM_ADAPTER_ENTRY_PREFIX + b.len + 7) & ~(size_t)7;
    /* One byte more than the entry holds (padding included). */
    uint32_t prefix = (uint32_t)(len - NS_FSM_ADAPTER_ENTRY_PREFIX + 1);
    struct raft_buffer rb = raw_entry(prefix, b.data, b.len, len);
    ns_buf_close(&b);
    refuse(rb, NS_EPROTO);
}

static void test_short_entry_is_refused(void **state)
{
    (void)state;
    refuse(raw_entry(0, NULL, 0, 3), NS_EPROTO);
}

static void test_bytes_not_a_command_are_refused(void **state)
{
    (void)state;
    static const uint8_t junk[12] = {0xde, 0xad, 0xbe, 0xef, 1, 2,
                                     3,    4,    5,    6,    7, 8};
    /* Framed well; ns_command_decode refuses the first byte's version. */
    refuse(raw_entry(sizeof junk, junk, sizeof junk, 16), NS_EVERSION);
}

/* --- the hooks the node sets --- */

struct hook_rec {
    raft_index want; /* the index whose result the "proposer" wants */
    struct ns_fsm_adapter_result slot;
    unsigned n_find, n_applied;
    bool mark_diverged;
};

static struct ns_fsm_adapter_result *rec_find(void *arg, uint64_t index)
{
    struct hook_rec *h = arg;
    h->n_find++;
    return index == h->want ? &h->slot : NULL;
}

static bool rec_applied(void *arg, uint64_t index, const uint8_t *cmd,
                        size_t len, const struct ns_apply_result *res)
{
    struct hook_rec *h = arg;
    (void)cmd;
    (void)len;
    h->n_applied++;
    if (index == h->want) {
        assert_ptr_equal(res, &h->slot.res);
    }
    return h->mark_diverged;
}

/* Submits rb on the ready leader with the hooks of rec installed on it,
 * waiting for the entry to be applied everywhere. */
static unsigned apply_hooked(struct hook_rec *h, struct raft_buffer rb)
{
    struct fx_req r;
    unsigned l = fx_wait_leader(&x, 10000);
    assert_true(l < x.n);
    x.s[l].fa.hooks = (struct ns_fsm_adapter_hooks){rec_find, rec_applied, h};
    assert_int_equal(fx_submit_entry(&x, l, rb, &r), 0);
    h->want = r.req.index; /* raft_apply gave the entry its index */
    assert_true(raft_fixture_step_until(&x.f, fx_stop_done, &r, 10000));
    assert_int_equal(r.status, 0);
    assert_true(fx_wait_applied_all(&x, r.req.index, 10000));
    return l;
}

static void test_result_slot_filled_only_when_applied(void **state)
{
    (void)state;
    struct hook_rec h = {0};
    struct ns_buf b;
    struct raft_buffer rb;
    setup3();
    encode_kv("k", "v", &b);
    assert_int_equal(ns_fsm_adapter_entry_encode(b.data, b.len, &rb), 0);
    unsigned l = apply_hooked(&h, rb);
    assert_true(h.slot.filled);
    assert_int_equal(h.slot.res.type, NS_CMD_KV_PUT);
    assert_int_equal(h.n_find, 1);
    assert_int_equal(h.n_applied, 1);
    assert_false(x.s[l].fa.diverged);
    ns_fsm_result_close(&h.slot.res);

    /* A refused entry: found, never filled, no on_applied. */
    memset(&h, 0, sizeof h);
    struct raft_buffer bad =
        raw_entry((uint32_t)b.len + 8, b.data, b.len, rb.len);
    ns_buf_close(&b);
    l = apply_hooked(&h, bad);
    assert_int_equal(h.n_find, 1);
    assert_false(h.slot.filled);
    assert_int_equal(h.n_applied, 0);
    assert_true(x.s[l].fa.diverged);
    fx_teardown(&x);
}

static void test_on_applied_marks_diverged(void **state)
{
    (void)state;
    struct hook_rec h = {0};
    struct ns_buf b;
    struct raft_buffer rb;
    setup3();
    h.mark_diverged = true;
    encode_kv("k", "v", &b);
    assert_int_equal(ns_fsm_adapter_entry_encode(b.data, b.len, &rb), 0);
    ns_buf_close(&b);
    unsigned l = apply_hooked(&h, rb);
    assert_true(h.slot.filled); /* applied: the state has it */
    ns_fsm_result_close(&h.slot.res);
    assert_int_equal(h.n_applied, 1);
    assert_true(x.s[l].fa.diverged);
    assert_int_equal(x.s[l].fa.first_error, 0);
    for (unsigned i = 0; i < x.n; i++) {
        assert_string_equal(ns_kv_find(x.s[i].state.kv, "ns", "k"), "v");
        assert_int_equal(x.s[i].fa.diverged, i == l);
    }
    fx_teardown(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_entry_encode_golden),
        cmocka_unit_test(test_entry_decode_checks),
        cmocka_unit_test(test_unpadded_entry_is_applied),
        cmocka_unit_test(test_prefix_past_the_end_is_refused),
        cmocka_unit_test(test_short_entry_is_refused),
        cmocka_unit_test(test_bytes_not_a_command_are_refused),
        cmocka_unit_test(test_result_slot_filled_only_when_applied),
        cmocka_unit_test(test_on_applied_marks_diverged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
