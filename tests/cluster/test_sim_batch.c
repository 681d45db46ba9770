/* Proposals batched per loop turn (raft/node/node_propose.c), over the
 * simulated cluster (sim.h): the writes a leader takes in one turn reach raft
 * as one raft_apply, each is answered with its own entry's result once that
 * entry applied, and a batch whose leader steps down before it commits is
 * answered too. Fails against the mutant batch-first-entry
 * (scripts/mutants.sh): raft 0.15 calls a request back when its req.index
 * applies, which raft_apply sets to the batch's first entry. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sim.h"

#define GROUPS 8

static void group_name(char *out, size_t cap, unsigned k)
{
    snprintf(out, cap, "g%u", k);
}

static void group_addr(char *out, size_t cap, unsigned k, unsigned id)
{
    snprintf(out, cap, "10.0.%u.%u:10911", k, id + 1);
}

/* REGISTER_BROKER of broker id `id` of group k (sim.h's body). */
static int32_t send_member(struct sim_client *c, unsigned k, unsigned id)
{
    char name[16], addr[32], ids[8];
    struct ns_cmd req;
    group_name(name, sizeof name, k);
    group_addr(addr, sizeof addr, k, id);
    snprintf(ids, sizeof ids, "%u", id);
    sim_register_request(&req, name, addr, 0);
    assert_int_equal(ns_cmd_ext_set(&req, "brokerId", ids), 0);
    int32_t op = sim_client_send(c, &req);
    ns_cmd_close(&req);
    return op;
}

/* Requests raft 0.15 holds for this leader: leader_state.requests, a libraft
 * queue (two pointers per link, the next one first). */
static unsigned raft_requests(struct raft *r)
{
    void **head = (void **)&r->leader_state.requests;
    unsigned n = 0;
    for (void **q = *(void ***)head; q != head; q = *(void ***)q) {
        n++;
    }
    return n;
}

/* Slaves of GROUPS groups register in one turn of the leader: raft gets one
 * request of GROUPS entries, and each slave is answered with the master of
 * its own group (the result of its own entry), after that entry applied. */
static void test_one_turn_is_one_batch_answered_entry_by_entry(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    struct raft *r = raft_fixture_get(&s->f, l);
    struct ns_node *node = s->nodes[l].node;
    struct sim_client *c[GROUPS];
    for (unsigned k = 0; k < GROUPS; k++) {
        c[k] = sim_client(s, l);
        sim_expect_code(c[k], send_member(c[k], k, 0), NS_CODE_SUCCESS);
    }
    sim_settle(s);
    uint64_t batches0, entries0;
    ns_node_batch_stats(node, &batches0, &entries0);
    raft_index last0 = raft_last_index(r);
    unsigned requests0 = raft_requests(r);

    int32_t op[GROUPS];
    for (unsigned k = 0; k < GROUPS; k++) {
        op[k] = send_member(c[k], k, 1);
    }
    /* nothing reaches raft before the turn ends */
    assert_int_equal(raft_last_index(r), last0);
    ns_node_tick(node);
    assert_int_equal(raft_last_index(r), last0 + GROUPS);
    assert_int_equal(raft_requests(r), requests0 + 1);
    uint64_t batches, entries;
    ns_node_batch_stats(node, &batches, &entries);
    assert_int_equal(batches, batches0 + 1);
    assert_int_equal(entries, entries0 + GROUPS);

    for (unsigned k = 0; k < GROUPS; k++) {
        struct ns_cmd reply;
        struct sim_reply *got = sim_wait_reply(c[k], op[k], 10000, &reply);
        assert_non_null(got);
        if (reply.code != NS_CODE_SUCCESS) {
            fail_msg("slave of group %u: code %d (%s)", k, (int)reply.code,
                     reply.remark != NULL ? reply.remark : "");
        }
        char master[32];
        group_addr(master, sizeof master, k, 0);
        const char *said = ns_cmd_ext_find(&reply, "masterAddr");
        assert_non_null(said);
        assert_string_equal(said, master);
        assert_true(got->applied >= last0 + 1 + k);
        ns_cmd_close(&reply);
    }
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        assert_int_equal(sim_n_applied(s, i, NS_CMD_REGISTER_BROKER, false),
                         2 * GROUPS);
    }
}

/* A batch whose leader is cut off before it commits: every write of it is
 * answered (none waits for ever), a success only for a value every node
 * holds after the heal, and the next leader takes writes. */
static void test_batch_of_a_deposed_leader_is_answered(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    struct sim_client *c[GROUPS];
    int32_t op[GROUPS];
    for (unsigned k = 0; k < GROUPS; k++) {
        c[k] = sim_client(s, l);
    }
    for (unsigned k = 0; k < GROUPS; k++) {
        char key[16];
        snprintf(key, sizeof key, "k%u", k);
        op[k] = sim_send_kv_put(c[k], key, "v");
    }
    ns_node_tick(s->nodes[l].node);
    sim_cut(s, l);
    bool ok[GROUPS];
    for (unsigned k = 0; k < GROUPS; k++) {
        struct ns_cmd reply;
        assert_non_null(sim_wait_reply(c[k], op[k], 30000, &reply));
        ok[k] = reply.code == NS_CODE_SUCCESS;
        ns_cmd_close(&reply);
    }
    sim_heal(s, l);
    unsigned l2 = sim_settle(s);
    struct sim_client *again = sim_client(s, l2);
    sim_expect_code(again, sim_send_kv_put(again, "after", "v"),
                    NS_CODE_SUCCESS);
    sim_settle(s);
    for (unsigned k = 0; k < GROUPS; k++) {
        char key[16];
        snprintf(key, sizeof key, "k%u", k);
        for (unsigned i = 0; ok[k] && i < s->n; i++) {
            sim_assert_kv(s, i, key, "v");
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_one_turn_is_one_batch_answered_entry_by_entry,
            sim_fixture_setup3, sim_fixture_teardown),
        cmocka_unit_test_setup_teardown(
            test_batch_of_a_deposed_leader_is_answered, sim_fixture_setup3,
            sim_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
