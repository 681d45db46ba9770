/* Tests of the decoded-registration memo (src/gateway/register_memo.c): each
 * owner's table is its own (what one server remembers, marks or drops is not
 * seen by another in the same process), an entry matches only the exact
 * request bytes, and the epoch mark says whether the route check may be
 * skipped. The server's use of it is tests/process/test_register_memo.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../src/gateway/register_memo.h"
#include "raftns/alloc.h"
#include "raftns/err.h"

static const uint8_t BODY[] = "{\"topicConfigSerializeWrapper\":{}}";

static void make_cmd(struct ns_cmd *cmd, const char *addr)
{
    ns_cmd_init(cmd);
    cmd->version = 400;
    assert_int_equal(ns_cmd_ext_set(cmd, "clusterName", "c"), 0);
    assert_int_equal(ns_cmd_ext_set(cmd, "brokerName", "b"), 0);
    assert_int_equal(ns_cmd_ext_set(cmd, "brokerAddr", addr), 0);
    assert_int_equal(ns_cmd_ext_set(cmd, "brokerId", "0"), 0);
    cmd->body = BODY;
    cmd->body_len = sizeof BODY - 1;
}

static void put(struct ns_register_memo_table *t, const struct ns_cmd *cmd,
                uint64_t epoch)
{
    struct ns_register reg;
    ns_register_init(&reg);
    reg.cluster = ns_strdup("c");
    assert_non_null(reg.cluster);
    assert_true(ns_register_memo_put(t, cmd, &reg, epoch, false));
    assert_null(reg.cluster); /* taken */
}

static void tables_are_per_owner(void **state)
{
    (void)state;
    struct ns_register_memo_table a, b;
    struct ns_cmd cmd;
    assert_int_equal(ns_register_memo_init(&a), 0);
    assert_int_equal(ns_register_memo_init(&b), 0);
    make_cmd(&cmd, "10.0.0.1:10911");
    put(&a, &cmd, 7);
    struct ns_register_memo *m = ns_register_memo_find(&a, &cmd);
    assert_non_null(m);
    assert_string_equal(ns_register_memo_reg(m)->cluster, "c");
    assert_null(ns_register_memo_find(&b, &cmd));
    /* b's own entry and its drop leave a's alone */
    put(&b, &cmd, 1);
    assert_true(
        ns_register_memo_is_current(ns_register_memo_find(&b, &cmd), 1, false));
    ns_register_memo_drop(&b, &cmd);
    assert_null(ns_register_memo_find(&b, &cmd));
    m = ns_register_memo_find(&a, &cmd);
    assert_non_null(m);
    assert_true(ns_register_memo_is_current(m, 7, false));
    assert_true(a.bytes > 0);
    assert_int_equal(b.bytes, 0);
    ns_register_memo_close(&b);
    assert_non_null(ns_register_memo_find(&a, &cmd));
    ns_cmd_close(&cmd);
    ns_register_memo_close(&a);
}

static void exact_request_and_epoch(void **state)
{
    (void)state;
    struct ns_register_memo_table t;
    struct ns_cmd cmd, other;
    assert_int_equal(ns_register_memo_init(&t), 0);
    make_cmd(&cmd, "10.0.0.1:10911");
    put(&t, &cmd, 3);
    /* another header field value, another body, another version: no match */
    make_cmd(&other, "10.0.0.2:10911");
    assert_null(ns_register_memo_find(&t, &other));
    ns_cmd_close(&other);
    make_cmd(&other, "10.0.0.1:10911");
    other.body_len--;
    assert_null(ns_register_memo_find(&t, &other));
    other.body_len++;
    other.version = 399;
    assert_null(ns_register_memo_find(&t, &other));
    other.version = 400;
    assert_non_null(ns_register_memo_find(&t, &other));
    ns_cmd_close(&other);
    /* the route check passed at epoch 3 without delete_missing only */
    struct ns_register_memo *m = ns_register_memo_find(&t, &cmd);
    assert_true(ns_register_memo_is_current(m, 3, false));
    assert_false(ns_register_memo_is_current(m, 4, false));
    assert_false(ns_register_memo_is_current(m, 3, true));
    ns_register_memo_mark(m, 4, true);
    assert_true(ns_register_memo_is_current(m, 4, true));
    ns_cmd_close(&cmd);
    ns_register_memo_close(&t);
}

static void init_out_of_memory(void **state)
{
    (void)state;
    struct ns_register_memo_table t;
    ns_alloc_fail_at(0, 1);
    int rv = ns_register_memo_init(&t);
    ns_alloc_fail_at(-1, 0);
    assert_int_equal(rv, NS_ENOMEM);
    ns_register_memo_close(&t); /* harmless */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(tables_are_per_owner),
        cmocka_unit_test(exact_request_and_epoch),
        cmocka_unit_test(init_out_of_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
