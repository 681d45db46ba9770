/* How often the leader checkpoints the state digest (docs/divergence.md),
 * over the simulated cluster (sim.h) with a CHECKPOINT due every 4 commands:
 * a small state is checkpointed at that count, a big one no sooner than 1 ms
 * per NS_CHECKPOINT_GAP_BYTES_PER_MS bytes of state after the last, so
 * that its digests cannot take the loop over when writes come fast. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cluster/integrity.h"
#include "sim.h"

#define WRITES 40
#define BIG_TOPICS 20000

static int setup3_ckpt(void **state)
{
    struct sim_opts o = {.checkpoint_entries = 4};
    *state = sim_fixture_new(3, 3, &o);
    return 0;
}

/* WRITES PUT_KVs through the leader, one after another: the CHECKPOINT
 * entries the leader applied meanwhile, and the virtual ms it took. */
static unsigned checkpoints_during_writes(struct sim *s, unsigned l,
                                          uint64_t *took_ms)
{
    struct sim_client *c = sim_client(s, l);
    unsigned before = sim_n_applied(s, l, NS_CMD_CHECKPOINT, false);
    uint64_t t0 = sim_now(s);
    for (int i = 0; i < WRITES; i++) {
        char v[16];
        snprintf(v, sizeof v, "v%d", i);
        sim_expect_code(c, sim_send_kv_put(c, "k", v), NS_CODE_SUCCESS);
    }
    *took_ms = sim_now(s) - t0;
    return sim_n_applied(s, l, NS_CMD_CHECKPOINT, false) - before;
}

static void test_small_state_checkpoints_by_count(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    uint64_t took = 0;
    unsigned n = checkpoints_during_writes(s, l, &took);
    if (n < WRITES / 8) {
        fail_msg("%u checkpoints in %d writes (one due every 4)", n, WRITES);
    }
}

/* One broker with BIG_TOPICS topics: its registration body. */
static char *big_body(size_t *len)
{
    struct ns_buf b;
    ns_buf_init(&b);
    ns_buf_printf(&b,
                  "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":"
                  "{\"dataVersion\":{\"counter\":1,\"stateVersion\":0,"
                  "\"timestamp\":1700000000000},\"topicConfigTable\":{");
    for (unsigned i = 0; i < BIG_TOPICS; i++) {
        ns_buf_printf(&b,
                      "%s\"BigTopic%05u\":{\"perm\":6,\"readQueueNums\":4,"
                      "\"topicName\":\"BigTopic%05u\",\"topicSysFlag\":0,"
                      "\"writeQueueNums\":4}",
                      i ? "," : "", i, i);
    }
    ns_buf_printf(&b, "}}}");
    assert_int_equal(b.err, 0);
    *len = b.len;
    return (char *)b.data;
}

static void test_big_state_spaces_its_checkpoints(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    struct sim_client *c = sim_client(s, l);
    struct ns_cmd req;
    size_t len = 0;
    char *body = big_body(&len);
    sim_register_request(&req, "broker-big", "10.9.0.1:10911", 0);
    req.body = (const uint8_t *)body;
    req.body_len = len;
    int32_t op = sim_client_send(c, &req);
    ns_cmd_close(&req);
    sim_expect_code(c, op, NS_CODE_SUCCESS);
    free(body);
    assert_int_equal(ns_route_n_topics(s->nodes[l].state.route), BIG_TOPICS);
    uint64_t gap_ms =
        ns_state_bytes(&s->nodes[l].state) / NS_CHECKPOINT_GAP_BYTES_PER_MS;
    uint64_t took = 0;
    unsigned n = checkpoints_during_writes(s, l, &took);
    /* by count alone this would be WRITES / 4 */
    assert_true(took / gap_ms + 1 < WRITES / 4);
    if (n > took / gap_ms + 1) {
        fail_msg("%u checkpoints in %llu ms of writes; at most one per %llu ms "
                 "with %zu topics",
                 n, (unsigned long long)took, (unsigned long long)gap_ms,
                 (size_t)BIG_TOPICS);
    }
    assert_true(n >= 1); /* spaced, not stopped */
}

/* A digest that held the loop longer than the state's size predicts (busy,
 * shared cores) spaces checkpoints by what it cost: at most 1/100 of the
 * loop. */
static void test_gap_follows_the_digest_cost(void **state)
{
    (void)state;
    const uint64_t bytes = 3000000; /* 300 ms by size */
    assert_int_equal(ns_checkpoint_gap_ms(bytes, 0), 300);
    assert_int_equal(ns_checkpoint_gap_ms(bytes, 2000000), 300); /* 200 ms */
    assert_int_equal(ns_checkpoint_gap_ms(bytes, 15000000), 1500);
    assert_int_equal(ns_checkpoint_gap_ms(0, 1500000), 150);
    assert_int_equal(ns_checkpoint_gap_ms(0, 0), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gap_follows_the_digest_cost),
        cmocka_unit_test_setup_teardown(test_small_state_checkpoints_by_count,
                                        setup3_ckpt, sim_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_big_state_spaces_its_checkpoints,
                                        setup3_ckpt, sim_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
