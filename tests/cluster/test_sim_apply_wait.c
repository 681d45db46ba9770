/* The follower's wait for its own apply (cluster_submit.c forward_reply over
 * ns_node_wait_applied), over the simulated cluster (sim.h): the leader
 * answered a forwarded write, and the follower answers its client only once
 * it applied the entry itself, or with an error when its apply does not come
 * within the wait (raftns/waits.h: "write", and "apply-min" at least after
 * the leader's answer). A slow disk on the follower holds its apply back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sim.h"

static struct sim *setup_with_waits(unsigned n, uint32_t write_ms)
{
    struct sim_opts o = {0};
    o.waits.write_ms = write_ms;
    return sim_fixture_new(n, n, &o);
}

static int setup3(void **state)
{
    *state = setup_with_waits(3, 0);
    return 0;
}

static int setup5(void **state)
{
    *state = setup_with_waits(5, 0);
    return 0;
}

/* a write wait far shorter than the follower's slow disk, longer than the
 * leader's answer */
static int setup3_short(void **state)
{
    *state = setup_with_waits(3, 200);
    return 0;
}

static int setup5_short(void **state)
{
    *state = setup_with_waits(5, 200);
    return 0;
}

/* The follower's disk is slower than the write wait and the apply-min wait
 * together: the leader commits and answers, but the follower does not apply
 * in time. It must not answer SUCCESS for what it has not applied: the
 * client is told the outcome is unknown, and the write still takes effect on
 * every node. */
static void test_apply_slower_than_the_wait_is_no_success(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    unsigned fo = sim_follower(s, l, 0);
    raft_fixture_set_disk_latency(&s->f, fo, 6000);
    struct sim_client *c = sim_client(s, fo);
    int32_t op = sim_send_kv_put(c, "slow", "v1");
    struct ns_cmd reply;
    struct sim_reply *r = sim_wait_reply(c, op, 20000, &reply);
    assert_non_null(r);
    if (reply.code == NS_CODE_SUCCESS) {
        fail_msg("SUCCESS at applied index %llu, before the follower applied "
                 "the write (its value: %s)",
                 (unsigned long long)r->applied,
                 sim_kv(s, fo, "slow") != NULL ? sim_kv(s, fo, "slow")
                                               : "none");
    }
    assert_int_equal(reply.code, NS_CODE_SYSTEM_ERROR);
    ns_cmd_close(&reply);
    assert_null(sim_kv(s, fo, "slow"));
    assert_non_null(sim_kv(s, l, "slow"));
    raft_fixture_set_disk_latency(&s->f, fo, 10);
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        sim_assert_kv(s, i, "slow", "v1");
        assert_int_equal(sim_n_applied(s, i, NS_CMD_KV_PUT, true), 1);
    }
}

/* The leader's answer comes close to the end of a short write wait, and the
 * follower's slow disk applies the entry after that end but within the
 * apply-min wait that follows the answer: the follower waits for its apply
 * and answers SUCCESS with the entry applied. */
static void test_apply_after_the_write_wait_within_apply_min(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    unsigned fo = sim_follower(s, l, 0);
    raft_fixture_set_disk_latency(&s->f, fo, 500);
    struct sim_client *c = sim_client(s, fo);
    uint64_t start = sim_now(s);
    int32_t op = sim_send_kv_put(c, "k", "v1");
    struct ns_cmd reply;
    struct sim_reply *r = sim_wait_reply(c, op, 20000, &reply);
    assert_non_null(r);
    if (reply.code != NS_CODE_SUCCESS) {
        fail_msg("reply code %d (%s) after %llu ms", (int)reply.code,
                 reply.remark != NULL ? reply.remark : "",
                 (unsigned long long)(sim_now(s) - start));
    }
    ns_cmd_close(&reply);
    /* answered after the 200 ms write wait, once applied here */
    assert_true(sim_now(s) - start > 200);
    sim_assert_kv(s, fo, "k", "v1");
    assert_true(r->applied >= ns_node_last_applied(s->nodes[l].node));
}

#define BOTH(test, s3, s5)                                                     \
    cmocka_unit_test_setup_teardown(test, s3, sim_fixture_teardown),           \
        cmocka_unit_test_setup_teardown(test, s5, sim_fixture_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        BOTH(test_apply_slower_than_the_wait_is_no_success, setup3, setup5),
        BOTH(test_apply_after_the_write_wait_within_apply_min, setup3_short,
             setup5_short),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
