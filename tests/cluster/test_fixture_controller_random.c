/* A seeded random schedule for the controller on raft_fixture (virtual time):
 * three brokers of one group heartbeat, die and come back, the master alters
 * its SyncStateSet (sometimes from a stale view), elections are triggered and
 * designated, and raft servers are killed, revived, cut off and healed. Each
 * request is decided on the ready leader against its replica and its own
 * heartbeats and committed before the next one is decided, as the
 * controller room does. A hook on every replica's applies checks, entry by
 * entry: epochs only grow, an elected master was in the SyncStateSet just
 * before (unclean election off), and no two entries elect different masters
 * with the same master epoch; at the end every replica is byte-identical.
 * RAFTNS_SEED replays a schedule. */
#include "fixture_util.h"

#include "raftns/controller.h"

#define N_STEPS 800
#define N_BROKERS 3
#define MAX_EPOCH 4096

static struct fx x; /* static: zeroed (P6) */
static struct ns_ctl_live live[3];
static bool dead[N_BROKERS + 1];

/* What every replica's hook saw (per replica), and the masters by epoch
 * (all replicas). */
static struct shadow {
    int32_t master_epoch, sync_epoch;
    int64_t sync[NS_CTL_MAX_MEMBERS];
    size_t n_sync;
} shadow[3];
static int64_t master_of_epoch[MAX_EPOCH];
static unsigned n_elections_applied, n_violations;

static const struct ns_ctl_group *group_of(const struct ns_state *s)
{
    return ns_ctl_find(&s->ctl, "broker-a");
}

static bool in_shadow(const struct shadow *sh, int64_t id)
{
    for (size_t i = 0; i < sh->n_sync; i++) {
        if (sh->sync[i] == id) {
            return true;
        }
    }
    return false;
}

static bool on_applied(void *arg, uint64_t index, const uint8_t *cmd,
                       size_t len, const struct ns_apply_result *res)
{
    (void)index;
    (void)res;
    unsigned i = (unsigned)(uintptr_t)arg;
    struct shadow *sh = &shadow[i];
    struct ns_command c;
    if (ns_command_decode(cmd, len, &c) != 0) {
        n_violations++;
        return false;
    }
    const struct ns_ctl_group *g = group_of(&x.s[i].state);
    if (c.type == NS_CMD_CTL_ELECT_MASTER && c.u.ctl.elected && g != NULL) {
        n_elections_applied++;
        /* the group's very first election takes the requester (S empty) */
        bool first = sh->master_epoch == 0 && sh->n_sync == 0;
        if (!first && !in_shadow(sh, c.u.ctl.id)) {
            fprintf(stderr, "replica %u: master %lld elected outside S\n", i,
                    (long long)c.u.ctl.id);
            n_violations++;
        }
        int32_t e = g->master_epoch;
        if (e > 0 && e < MAX_EPOCH) {
            if (master_of_epoch[e] != 0 && master_of_epoch[e] != c.u.ctl.id) {
                fprintf(stderr, "epoch %d has masters %lld and %lld\n", (int)e,
                        (long long)master_of_epoch[e], (long long)c.u.ctl.id);
                n_violations++;
            }
            master_of_epoch[e] = c.u.ctl.id;
        }
    }
    if (g != NULL) {
        if (g->master_epoch < sh->master_epoch ||
            g->sync_epoch < sh->sync_epoch) {
            fprintf(stderr, "replica %u: an epoch went back\n", i);
            n_violations++;
        }
        sh->master_epoch = g->master_epoch;
        sh->sync_epoch = g->sync_epoch;
        sh->n_sync = g->n_sync;
        memcpy(sh->sync, g->sync, g->n_sync * sizeof *g->sync);
    }
    ns_command_close(&c);
    return false;
}

static int64_t now_ms(void)
{
    return (int64_t)raft_fixture_time(&x.f);
}

static void beat(int64_t id, int32_t epoch, int64_t offset)
{
    static const char *const addrs[] = {"", "10.0.0.1:1", "10.0.0.2:1",
                                        "10.0.0.3:1"};
    struct ns_ctl_beat_in in = {"c1",  "broker-a", addrs[id], id, 10000,
                                epoch, offset,     offset,    1,  0};
    for (unsigned i = 0; i < 3; i++) {
        assert_int_equal(ns_ctl_live_beat(&live[i], &in, now_ms()), 0);
    }
}

static void die(int64_t id)
{
    for (unsigned i = 0; i < 3; i++) {
        for (size_t k = 0; k < live[i].n; k++) {
            if (live[i].items[k].id == id) {
                live[i].items[k].last_ms = -1000000;
            }
        }
        struct ns_ctl_live gone;
        assert_int_equal(ns_ctl_live_expire(&live[i], now_ms(), 0, &gone), 0);
        ns_ctl_live_close(&gone);
    }
    dead[id] = true;
}

static enum ns_command_type cmd_type(enum ns_ctl_event_type t)
{
    switch (t) {
    case NS_CTL_EV_ALTER_SYNC_STATE_SET:
        return NS_CMD_CTL_ALTER_SYNC_STATE_SET;
    case NS_CTL_EV_APPLY_BROKER_ID:
        return NS_CMD_CTL_APPLY_BROKER_ID;
    case NS_CTL_EV_ELECT_MASTER:
        return NS_CMD_CTL_ELECT_MASTER;
    case NS_CTL_EV_CLEAN_BROKER_DATA:
        return NS_CMD_CTL_CLEAN_BROKER_DATA;
    case NS_CTL_EV_UPDATE_BROKER_ADDRESS:
        return NS_CMD_CTL_UPDATE_BROKER_ADDRESS;
    }
    return NS_CMD_CHECKPOINT;
}

typedef int (*decide_fn)(const struct ns_ctl_view *v,
                         const struct ns_ctl_request *r,
                         struct ns_ctl_decision *d);

/* Decides r on the ready leader and commits its event (waiting at most a
 * few seconds of virtual time: it may fail when the leader is cut off). */
static void request(decide_fn fn, const struct ns_ctl_request *r)
{
    unsigned l = fx_ready_leader(&x);
    if (l == x.n) {
        return;
    }
    struct ns_ctl_view v = {&x.s[l].state.ctl, &live[l], now_ms(), false};
    struct ns_ctl_decision d;
    assert_int_equal(fn(&v, r, &d), 0);
    if (d.has_event) {
        struct ns_command c;
        struct fx_req q;
        ns_command_init(&c, cmd_type(d.event_type));
        c.leader_time_ms = FX_T0;
        c.u.ctl = d.event; /* borrowed */
        if (fx_submit(&x, l, &c, &q) == 0) {
            /* q lives on this stack: wait for its end (raft fails it when
             * the leader is deposed). */
            assert_true(raft_fixture_step_until(&x.f, fx_stop_done, &q, 60000));
        }
    }
    ns_ctl_decision_close(&d);
}

static void admit(int64_t id)
{
    char code[32];
    snprintf(code, sizeof code, "10.0.0.%lld:1;1", (long long)id);
    struct ns_ctl_request r = {.cluster = "c1",
                               .broker_name = "broker-a",
                               .check_code = code,
                               .has_id = true,
                               .id = id};
    request(ns_ctl_decide_apply_id, &r);
}

/* The master's 1001 from its view: usually the leader's current epochs, now
 * and then one step stale. */
static void alter(uint64_t *st)
{
    unsigned l = fx_ready_leader(&x);
    const struct ns_ctl_group *g = l < x.n ? group_of(&x.s[l].state) : NULL;
    if (g == NULL || !g->has_master) {
        return;
    }
    int64_t ids[N_BROKERS + 1];
    size_t n = 0;
    for (int64_t id = 1; id <= N_BROKERS; id++) {
        if (id == g->master_id || fx_rand_below(st, 2) == 0) {
            ids[n++] = id;
        }
    }
    bool stale = fx_rand_below(st, 5) == 0;
    struct ns_ctl_request r = {.broker_name = "broker-a",
                               .has_id = true,
                               .id = g->master_id,
                               .has_master_epoch = true,
                               .master_epoch =
                                   g->master_epoch - (stale ? 1 : 0),
                               .ids = ids,
                               .n_ids = n,
                               .set_epoch = g->sync_epoch};
    request(ns_ctl_decide_alter, &r);
}

static void disrupt(uint64_t *st)
{
    static bool isolated[3];
    unsigned i = fx_rand_below(st, 3);
    unsigned n_down = 0;
    for (unsigned k = 0; k < 3; k++) {
        n_down += !raft_fixture_alive(&x.f, k) || isolated[k];
    }
    if (!raft_fixture_alive(&x.f, i)) {
        raft_fixture_revive(&x.f, i);
    } else if (isolated[i]) {
        fx_isolate(&x, i, false);
        isolated[i] = false;
    } else if (n_down == 0 && fx_rand_below(st, 2) == 0) {
        raft_fixture_kill(&x.f, i);
    } else if (n_down == 0) {
        fx_isolate(&x, i, true);
        isolated[i] = true;
    }
}

static void heal_all(void)
{
    for (unsigned i = 0; i < 3; i++) {
        fx_isolate(&x, i, false);
        if (!raft_fixture_alive(&x.f, i)) {
            raft_fixture_revive(&x.f, i);
        }
    }
}

static void test_random_schedule(void **state)
{
    (void)state;
    uint64_t st = fx_seed("test_fixture_controller_random");
    fx_setup(&x, 3, true);
    for (unsigned i = 0; i < 3; i++) {
        x.s[i].fa.hooks.on_applied = on_applied;
        x.s[i].fa.hooks.arg = (void *)(uintptr_t)i;
    }
    assert_true(fx_wait_leader(&x, 30000) < 3);
    for (int64_t id = 1; id <= N_BROKERS; id++) {
        admit(id);
        beat(id, 0, 0);
    }
    struct ns_ctl_request first = {
        .cluster = "c1", .broker_name = "broker-a", .has_id = true, .id = 1};
    request(ns_ctl_decide_elect, &first);
    int32_t epochs[N_BROKERS + 1] = {0};
    int64_t offsets[N_BROKERS + 1] = {0};
    for (unsigned step = 0; step < N_STEPS; step++) {
        unsigned kind = fx_rand_below(&st, 100);
        int64_t id = 1 + fx_rand_below(&st, N_BROKERS);
        if (kind < 30) {
            if (!dead[id]) {
                offsets[id] += fx_rand_below(&st, 100);
                epochs[id] += fx_rand_below(&st, 8) == 0;
                beat(id, epochs[id], offsets[id]);
            }
        } else if (kind < 38) {
            die(id);
        } else if (kind < 48) {
            dead[id] = false;
            beat(id, epochs[id], offsets[id]);
        } else if (kind < 65) {
            struct ns_ctl_request r = {.broker_name = "broker-a",
                                       .cluster = ""};
            request(ns_ctl_decide_elect, &r);
        } else if (kind < 82) {
            alter(&st);
        } else if (kind < 87) {
            struct ns_ctl_request r = {.cluster = "c1",
                                       .broker_name = "broker-a",
                                       .has_id = true,
                                       .id = id,
                                       .designate = true};
            request(ns_ctl_decide_elect, &r);
        } else if (kind < 93) {
            disrupt(&st);
        } else {
            for (unsigned k = 0; k < 20; k++) {
                raft_fixture_step(&x.f);
            }
        }
        raft_fixture_step(&x.f);
    }
    heal_all();
    /* Writes after the heal until every replica applied the leader's last
     * entry. Seen with RAFTNS_SEED=1796159658877987 and 1796160406146667: a
     * follower of the same term with the leader's last entry stayed one
     * entry short of the commit index for 30 s of virtual time (raft 0.15 on
     * the fixture; not root-caused); the next entries let it catch up. */
    for (unsigned k = 0; k < 5; k++) {
        struct ns_command c;
        char key[16];
        snprintf(key, sizeof key, "healed%u", k);
        fx_cmd_kv(&c, "ns", key, "1");
        fx_apply_sync(&x, &c, 30000);
        ns_command_close(&c);
        unsigned l = fx_wait_leader(&x, 30000);
        if (l < x.n &&
            fx_wait_applied_all(&x, raft_last_index(fx_raft(&x, l)), 5000)) {
            break;
        }
    }
    struct ns_buf all;
    fx_assert_converged(&x, &all);
    ns_buf_close(&all);
    printf("controller schedule: %u elections applied (all replicas), %u "
           "violations\n",
           n_elections_applied, n_violations);
    assert_int_equal(n_violations, 0);
    assert_true(n_elections_applied > 0);
    fx_teardown(&x);
    for (unsigned i = 0; i < 3; i++) {
        ns_ctl_live_close(&live[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_schedule),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
