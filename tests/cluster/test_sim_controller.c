/* The RocketMQ 5 controller over the simulated cluster (sim.h): full nodes
 * with enableControllerInNamesrv on, 3 and 5 of them, virtual time. Brokers
 * are sink clients that speak the controller codes (docs/controller.md §3):
 * they apply for ids, register, heartbeat every node (904) and ask the
 * leader; the 1008 the leader sends to a broker's address is kept by the
 * in-memory network. Every test asserts the replies and every node's
 * controller table: admission and registration, an election when a master's
 * heartbeats stop and at once when its connections close, fencing by epoch,
 * SyncStateSet changes, elect by admin, clean broker data, a follower's and a
 * not-yet-ready leader's "not leader", metadata naming the leader, and one
 * table on every node after a raft leader failover. The helpers are in
 * sim_controller.h; more in test_sim_controller_node.c. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sim.h"

#include "sim_controller.h"

/* --- tests --- */

/* Admission (1012, 1013), registration (1003), heartbeats (904) and the first
 * election: the replies carry Java's fields and remarks, every node holds the
 * same group, and the leader tells both brokers (1008). */
static void test_register_heartbeat_and_first_election(void **state)
{
    struct sim *s = *state;
    struct broker b[2];
    unsigned l = group_of(s, b, 2);
    struct ns_cmd r;
    /* a second apply of a taken id with another check code */
    apply_id(s, l, &b[1], "10.9.9.9:1;5", NS_CODE_CONTROLLER_BROKER_ID_INVALID);
    /* the same check code again: an idempotent retry */
    char check[64];
    snprintf(check, sizeof check, "%s;1700000000000", b[1].addr);
    apply_id(s, l, &b[1], check, 0);
    struct broker z;
    broker_init(s, &z, "broker-z", 3);
    apply_id(s, l, &z, "x;1", NS_CODE_CONTROLLER_BROKER_ID_INVALID);
    /* register: no master yet, so no master fields; the empty set */
    register_broker(s, l, &b[0], &r);
    expect(&r, 0, NULL);
    assert_null(ns_cmd_ext_find(&r, "masterBrokerId"));
    assert_body(&r, "{\"syncStateSet\":[],\"syncStateSetEpoch\":0}");
    ns_cmd_close(&r);
    struct broker ghost;
    broker_init(s, &ghost, "broker-a", 9);
    register_broker(s, l, &ghost, &r);
    expect(&r, NS_CODE_CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
           "BrokerId: 9 hasn't been registered in broker-set: broker-a");
    ns_cmd_close(&r);
    /* a two-way 904 is answered on any node; without an id it is refused */
    struct ns_cmd req;
    ctl_request(&req, NS_CODE_BROKER_HEARTBEAT);
    ext(&req, "clusterName", "c1");
    ext(&req, "brokerName", "broker-a");
    ext(&req, "brokerAddr", b[0].addr);
    call(s, sim_follower(s, l, 0), &req, &r);
    expect(&r, NS_CODE_CONTROLLER_INVALID_REQUEST,
           "Heart beat with empty brokerId");
    ns_cmd_close(&r);
    sim_run_for(s, 50);
    for (unsigned i = 0; i < s->n; i++) {
        const struct ns_ctl_live *lv = &ctl_of(s, i)->live;
        assert_non_null(ns_ctl_live_find(lv, "c1", "broker-a", 1));
        assert_non_null(ns_ctl_live_find(lv, "c1", "broker-a", 2));
    }
    assert_group(s, "broker-a", "m- e0 s[] se0 ids[1,2]");
    /* the first election takes the requester (a broker's 1002) */
    elect(s, l, "broker-a", 2, false, &r);
    expect(&r, 0, NULL);
    assert_int_equal(ext_int(&r, "masterBrokerId"), 2);
    assert_int_equal(ext_int(&r, "masterEpoch"), 1);
    assert_int_equal(ext_int(&r, "syncStateSetEpoch"), 1);
    assert_string_equal(ns_cmd_ext_find(&r, "masterAddress"), b[1].addr);
    char want[256];
    snprintf(want, sizeof want,
             "{\"brokerMemberGroup\":{\"brokerAddrs\":{1:\"%s\",2:\"%s\"},"
             "\"brokerName\":\"broker-a\",\"cluster\":\"c1\"},"
             "\"syncStateSet\":[2]}",
             b[0].addr, b[1].addr);
    assert_body(&r, want);
    ns_cmd_close(&r);
    assert_now_on(s, l, "broker-a", "m2 e1 s[2] se1 ids[1,2]");
    assert_group(s, "broker-a", "m2 e1 s[2] se1 ids[1,2]");
    assert_tables_identical(s);
    for (unsigned k = 0; k < 2; k++) {
        struct ns_cmd n;
        assert_int_equal(notified(s, b[k].addr, &n), 1);
        assert_int_equal(ext_int(&n, "masterBrokerId"), 2);
        assert_int_equal(ext_int(&n, "masterEpoch"), 1);
        assert_string_equal(ns_cmd_ext_find(&n, "masterAddress"), b[1].addr);
        ns_cmd_close(&n);
    }
    /* now registration names the live master */
    register_broker(s, l, &b[0], &r);
    expect(&r, 0, NULL);
    assert_int_equal(ext_int(&r, "masterBrokerId"), 2);
    assert_body(&r, "{\"syncStateSet\":[2],\"syncStateSetEpoch\":1}");
    ns_cmd_close(&r);
    /* 1004 reads the same */
    ctl_request(&req, NS_CODE_CONTROLLER_GET_REPLICA_INFO);
    ext(&req, "brokerName", "broker-a");
    call(s, l, &req, &r);
    expect(&r, 0, NULL);
    assert_int_equal(ext_int(&r, "masterBrokerId"), 2);
    assert_int_equal(ext_int(&r, "masterEpoch"), 1);
    ns_cmd_close(&r);
    ctl_request(&req, NS_CODE_CONTROLLER_GET_REPLICA_INFO);
    ext(&req, "brokerName", "broker-q");
    call(s, l, &req, &r);
    expect(&r, NS_CODE_CONTROLLER_BROKER_METADATA_NOT_EXIST,
           "Broker metadata is not existed");
    ns_cmd_close(&r);
}

/* The master stops heartbeating (its connections stay open): after its
 * heartbeat timeout the leader elects the in-sync slave and tells it. */
static void test_master_heartbeats_stop(void **state)
{
    struct sim *s = *state;
    struct broker b[2];
    group_with_master(s, b, 2);
    assert_group(s, "broker-a", "m1 e1 s[1,2] se2 ids[1,2]");
    uint64_t t0 = sim_now(s);
    beat(s, &b[0]); /* its last */
    b[0].beating = false;
    struct broker *bs[] = {&b[0], &b[1]};
    /* not before its timeout */
    run_beating(s, bs, 2, BEAT_TIMEOUT_MS - 500, NULL, NULL);
    assert_group(s, "broker-a", "m1 e1 s[1,2] se2 ids[1,2]");
    struct want_master w = {"broker-a", 2};
    assert_true(run_beating(s, bs, 2, 8000, pred_master, &w));
    assert_true(sim_now(s) - t0 >= BEAT_TIMEOUT_MS);
    assert_group(s, "broker-a", "m2 e2 s[2] se3 ids[1,2]");
    struct ns_cmd n;
    assert_true(notified(s, b[1].addr, &n) >= 2);
    assert_int_equal(ext_int(&n, "masterBrokerId"), 2);
    assert_int_equal(ext_int(&n, "masterEpoch"), 2);
    assert_int_equal(ext_int(&n, "syncStateSetEpoch"), 3);
    ns_cmd_close(&n);
    assert_true(ctl_of(s, (unsigned)sim_leader(s))->stats.elections >= 2);
    assert_tables_identical(s);
}

/* The master's connections close (its process was killed): the election
 * follows at once, long before any heartbeat timeout. */
static void test_master_connection_close(void **state)
{
    struct sim *s = *state;
    struct broker b[3];
    group_with_master(s, b, 3);
    assert_group(s, "broker-a", "m1 e1 s[1,2,3] se2 ids[1,2,3]");
    uint64_t t0 = sim_now(s);
    broker_close(s, &b[0]);
    struct want_master w2 = {"broker-a", 2}, w3 = {"broker-a", 3};
    /* either in-sync slave (3 has the higher offset: it wins) */
    assert_true(sim_run_until(s, pred_master, &w3, 500));
    assert_false(pred_master(s, &w2));
    assert_true(sim_now(s) - t0 < 500);
    assert_group(s, "broker-a", "m3 e2 s[3] se3 ids[1,2,3]");
    assert_int_equal(notified(s, b[0].addr, NULL), 1); /* only the first */
    assert_int_equal(notified(s, b[2].addr, NULL), 2);
    assert_tables_identical(s);
}

/* Fencing (1001): the deposed master, a stale master epoch and a stale
 * SyncStateSet epoch are refused with Java's codes and remarks and change
 * nothing; the current master's correct request is applied everywhere. */
static void test_fencing_by_epoch(void **state)
{
    struct sim *s = *state;
    struct broker b[3];
    unsigned l = group_with_master(s, b, 3);
    broker_close(s, &b[0]);
    struct want_master w = {"broker-a", 3};
    assert_true(sim_run_until(s, pred_master, &w, 2000));
    assert_group(s, "broker-a", "m3 e2 s[3] se3 ids[1,2,3]");
    uint64_t fenced = ctl_of(s, l)->stats.fenced;
    struct ns_cmd r;
    /* the old master, with its old view */
    alter(s, l, "broker-a", 1, 1, "1,2", 2, &r);
    expect(&r, NS_CODE_CONTROLLER_INVALID_MASTER,
           "Rejecting alter syncStateSet request because the current leader "
           "is:{3}, not {1}");
    assert_int_equal(ext_int(&r, "newSyncStateSetEpoch"), 0);
    ns_cmd_close(&r);
    /* the new master with the old master epoch */
    alter(s, l, "broker-a", 3, 1, "2,3", 3, &r);
    expect(&r, NS_CODE_CONTROLLER_FENCED_MASTER_EPOCH,
           "Rejecting alter syncStateSet request because the current master "
           "epoch is:{2}, not {1}");
    ns_cmd_close(&r);
    /* the right master epoch, a stale set epoch */
    alter(s, l, "broker-a", 3, 2, "2,3", 2, &r);
    expect(&r, NS_CODE_CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH,
           "Rejecting alter syncStateSet request because the current "
           "syncStateSet epoch is:{3}, not {2}");
    ns_cmd_close(&r);
    /* an id that was never admitted, a dead member, a set without the master,
     * the unchanged set */
    alter(s, l, "broker-a", 3, 2, "3,7", 3, &r);
    expect(&r, NS_CODE_CONTROLLER_INVALID_REPLICAS,
           "Rejecting alter syncStateSet request because the replicas {7} "
           "don't exist");
    ns_cmd_close(&r);
    alter(s, l, "broker-a", 3, 2, "1,3", 3, &r);
    expect(&r, NS_CODE_CONTROLLER_BROKER_NOT_ALIVE,
           "Rejecting alter syncStateSet request because the replicas {1} "
           "don't alive");
    ns_cmd_close(&r);
    alter(s, l, "broker-a", 3, 2, "2", 3, &r);
    expect(&r, NS_CODE_CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
           "Rejecting alter syncStateSet request because the newSyncStateSet "
           "don't contains origin leader {3}");
    ns_cmd_close(&r);
    alter(s, l, "broker-a", 3, 2, "3", 3, &r);
    expect(&r, NS_CODE_CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
           "The newSyncStateSet is equal with oldSyncStateSet, no needed to "
           "update syncStateSet");
    ns_cmd_close(&r);
    alter(s, l, "broker-q", 3, 2, "3", 3, &r);
    expect(&r, NS_CODE_CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
           "Broker metadata is not existed");
    ns_cmd_close(&r);
    assert_int_equal(ctl_of(s, l)->stats.fenced, fenced + 3);
    sim_run_for(s, 100);
    assert_group(s, "broker-a", "m3 e2 s[3] se3 ids[1,2,3]");
    /* the current master grows its set */
    alter(s, l, "broker-a", 3, 2, "2,3", 3, &r);
    expect(&r, 0, NULL);
    assert_int_equal(ext_int(&r, "newSyncStateSetEpoch"), 4);
    assert_body(&r, "{\"syncStateSet\":[2,3],\"syncStateSetEpoch\":4}");
    ns_cmd_close(&r);
    assert_now_on(s, l, "broker-a", "m3 e2 s[2,3] se4 ids[1,2,3]");
    assert_group(s, "broker-a", "m3 e2 s[2,3] se4 ids[1,2,3]");
    assert_tables_identical(s);
}

/* A master alone in its SyncStateSet dies: with unclean election off nobody
 * else may take over (the master is cleared, its epoch raised); a slave's own
 * 1002 fails; once this node allows unclean elections (1009, local), it
 * elects the slave. */
static void test_master_alone_in_sync_set(void **state)
{
    struct sim *s = *state;
    struct broker b[2];
    unsigned l = group_with_master(s, b, 1);
    broker_init(s, &b[1], "broker-a", 2);
    admit(s, l, &b[1]);
    assert_group(s, "broker-a", "m1 e1 s[1] se1 ids[1,2]");
    broker_close(s, &b[0]);
    struct broker *bs[] = {&b[1]};
    /* the triggered election and its retries (each raises the epoch) */
    run_beating(s, bs, 1, 12000, NULL, NULL);
    const struct ns_ctl_group *g = group_on(s, l, "broker-a");
    assert_non_null(g);
    assert_false(g->has_master);
    assert_true(g->master_epoch > 1);
    int32_t epoch = g->master_epoch;
    struct ns_cmd r;
    elect(s, l, "broker-a", 2, false, &r);
    expect(&r, NS_CODE_CONTROLLER_ELECT_MASTER_FAILED,
           "Failed to elect a new master");
    ns_cmd_close(&r);
    assert_false(group_on(s, l, "broker-a")->has_master);
    /* unclean on the leader only: it decides */
    struct ns_cmd req;
    ctl_request(&req, NS_CODE_UPDATE_CONTROLLER_CONFIG);
    const char *props = "enableElectUncleanMaster=true\n";
    req.body = (const uint8_t *)props;
    req.body_len = strlen(props);
    call(s, l, &req, &r);
    expect(&r, 0, NULL);
    ns_cmd_close(&r);
    assert_true(ctl_of(s, l)->set.unclean);
    assert_false(ctl_of(s, sim_follower(s, l, 0))->set.unclean);
    run_beating(s, bs, 1, 100, NULL, NULL);
    elect(s, l, "broker-a", 2, false, &r);
    expect(&r, 0, NULL);
    assert_int_equal(ext_int(&r, "masterBrokerId"), 2);
    ns_cmd_close(&r);
    char want[64];
    snprintf(want, sizeof want, "m2 e%d s[2] se2 ids[1,2]", (int)epoch + 1);
    assert_group(s, "broker-a", want);
    assert_tables_identical(s);
}

/* mqadmin electMaster (designate): the wanted in-sync id is elected; an id
 * outside the set is refused and changes nothing; the current master again
 * is "still alive". */
static void test_elect_by_admin(void **state)
{
    struct sim *s = *state;
    struct broker b[3];
    unsigned l = group_with_master(s, b, 2);
    broker_init(s, &b[2], "broker-a", 3);
    admit(s, l, &b[2]);
    assert_group(s, "broker-a", "m1 e1 s[1,2] se2 ids[1,2,3]");
    struct ns_cmd r;
    elect(s, sim_follower(s, l, 0), "broker-a", 2, true, &r);
    expect(&r, NS_CODE_CONTROLLER_NOT_LEADER,
           "The controller is not in leader state");
    ns_cmd_close(&r);
    elect(s, l, "broker-a", 2, true, &r);
    expect(&r, 0, NULL);
    assert_int_equal(ext_int(&r, "masterBrokerId"), 2);
    assert_int_equal(ext_int(&r, "masterEpoch"), 2);
    ns_cmd_close(&r);
    assert_group(s, "broker-a", "m2 e2 s[2] se3 ids[1,2,3]");
    elect(s, l, "broker-a", 3, true, &r);
    expect(&r, NS_CODE_CONTROLLER_ELECT_MASTER_FAILED,
           "Failed to elect a new master");
    ns_cmd_close(&r);
    elect(s, l, "broker-a", 2, true, &r);
    expect(&r, NS_CODE_CONTROLLER_MASTER_STILL_EXIST,
           "The old master 2 is still alive, not need to elect new master "
           "for broker broker-a");
    assert_int_equal(ext_int(&r, "masterBrokerId"), 2);
    ns_cmd_close(&r);
    elect(s, l, "broker-q", 2, true, &r);
    expect(&r, NS_CODE_CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
           "Broker hasn't been registered");
    ns_cmd_close(&r);
    sim_run_for(s, 100);
    assert_group(s, "broker-a", "m2 e2 s[2] se3 ids[1,2,3]");
    assert_tables_identical(s);
    /* 1006: both lists, with liveness; unknown names are skipped */
    struct ns_cmd req;
    ctl_request(&req, NS_CODE_CONTROLLER_GET_SYNC_STATE_DATA);
    const char *names = "[\"broker-a\",\"broker-q\"]";
    req.body = (const uint8_t *)names;
    req.body_len = strlen(names);
    call(s, l, &req, &r);
    expect(&r, 0, NULL);
    char want[1024];
    snprintf(want, sizeof want,
             "{\"replicasInfoTable\":{\"broker-a\":{\"inSyncReplicas\":["
             "{\"alive\":true,\"brokerAddress\":\"%s\",\"brokerId\":2,"
             "\"brokerName\":\"broker-a\"}],\"masterAddress\":\"%s\","
             "\"masterBrokerId\":2,\"masterEpoch\":2,\"notInSyncReplicas\":["
             "{\"alive\":true,\"brokerAddress\":\"%s\",\"brokerId\":1,"
             "\"brokerName\":\"broker-a\"},{\"alive\":true,\"brokerAddress\":"
             "\"%s\",\"brokerId\":3,\"brokerName\":\"broker-a\"}],"
             "\"syncStateSetEpoch\":3}}}",
             b[1].addr, b[1].addr, b[0].addr, b[2].addr);
    assert_body(&r, want);
    ns_cmd_close(&r);
    ctl_request(&req, NS_CODE_CONTROLLER_GET_SYNC_STATE_DATA);
    call(s, l, &req, &r);
    expect(&r, NS_CODE_SYSTEM_ERROR, "not set any response code");
    ns_cmd_close(&r);
}

static void clean(struct sim *s, unsigned l, const char *name, const char *ids,
                  bool living, struct ns_cmd *out)
{
    struct ns_cmd req;
    ctl_request(&req, NS_CODE_CLEAN_BROKER_DATA);
    ext(&req, "clusterName", "c1");
    ext(&req, "brokerName", name);
    if (ids != NULL) {
        ext(&req, "brokerControllerIdsToClean", ids);
    }
    ext(&req, "isCleanLivingBroker", living ? "true" : "false");
    call(s, l, &req, out);
}

/* mqadmin cleanBrokerMetadata: live brokers and a group with a master are
 * kept unless asked to clean living ones; a dead id goes from every node;
 * then the whole group. */
static void test_clean_broker_data(void **state)
{
    struct sim *s = *state;
    struct broker b[3];
    unsigned l = group_with_master(s, b, 3);
    struct ns_cmd r;
    clean(s, l, "broker-a", NULL, false, &r);
    expect(&r, NS_CODE_CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
           "Broker broker-a is still alive, clean up failure");
    ns_cmd_close(&r);
    clean(s, l, "broker-a", "3", false, &r);
    expect(&r, NS_CODE_CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
           "Broker [broker-a,  3] is still alive, clean up failure");
    ns_cmd_close(&r);
    clean(s, l, "broker-q", NULL, true, &r);
    expect(&r, NS_CODE_CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
           "Broker broker-q is not existed,clean broker data failure.");
    ns_cmd_close(&r);
    sim_run_for(s, 100);
    assert_group(s, "broker-a", "m1 e1 s[1,2,3] se2 ids[1,2,3]");
    broker_close(s, &b[2]);
    sim_run_for(s, 100);
    clean(s, l, "broker-a", "3", false, &r);
    expect(&r, 0, NULL);
    assert_int_equal(r.n_ext, 0);
    ns_cmd_close(&r);
    assert_group(s, "broker-a", "m1 e1 s[1,2] se2 ids[1,2]");
    clean(s, l, "broker-a", NULL, true, &r);
    expect(&r, 0, NULL);
    ns_cmd_close(&r);
    assert_group(s, "broker-a", "none");
    assert_tables_identical(s);
}

/* Every leader-only code on a follower is Java's non-leader answer (2007, no
 * extFields, nothing queued); 1005 there names the leader's controller
 * address; 904, 1009 and 1010 are served by every node. */
static void test_follower_answers_not_leader(void **state)
{
    struct sim *s = *state;
    unsigned l = (unsigned)sim_leader(s);
    unsigned f = sim_follower(s, l, 1);
    static const int32_t leader_only[] = {
        NS_CODE_CONTROLLER_ALTER_SYNC_STATE_SET,
        NS_CODE_CONTROLLER_ELECT_MASTER,
        NS_CODE_CONTROLLER_REGISTER_BROKER,
        NS_CODE_CONTROLLER_GET_REPLICA_INFO,
        NS_CODE_CONTROLLER_GET_SYNC_STATE_DATA,
        NS_CODE_CLEAN_BROKER_DATA,
        NS_CODE_CONTROLLER_GET_NEXT_BROKER_ID,
        NS_CODE_CONTROLLER_APPLY_BROKER_ID,
    };
    uint64_t before = ctl_of(s, f)->stats.not_leader;
    for (size_t k = 0; k < sizeof leader_only / sizeof leader_only[0]; k++) {
        struct ns_cmd req, r;
        ctl_request(&req, leader_only[k]);
        ext(&req, "brokerName", "broker-a");
        ext(&req, "clusterName", "c1");
        ext(&req, "brokerId", "1");
        ext(&req, "appliedBrokerId", "1");
        ext(&req, "registerCheckCode", "x;1");
        call(s, f, &req, &r);
        expect(&r, NS_CODE_CONTROLLER_NOT_LEADER,
               "The controller is not in leader state");
        assert_int_equal(r.n_ext, 0);
        ns_cmd_close(&r);
    }
    assert_int_equal(ctl_of(s, f)->stats.not_leader,
                     before + sizeof leader_only / sizeof leader_only[0]);
    sim_run_for(s, 200);
    for (unsigned i = 0; i < s->n; i++) {
        assert_int_equal(s->nodes[i].state.ctl.n, 0); /* nothing applied */
    }
    char leader_id[16];
    snprintf(leader_id, sizeof leader_id, "n%llu",
             (unsigned long long)s->nodes[l].id);
    for (unsigned i = 0; i < s->n; i++) {
        struct ns_cmd req, r;
        ctl_request(&req, NS_CODE_CONTROLLER_GET_METADATA_INFO);
        call(s, i, &req, &r);
        expect(&r, 0, NULL);
        assert_string_equal(ns_cmd_ext_find(&r, "controllerLeaderAddress"),
                            s->nodes[l].client_addr);
        assert_string_equal(ns_cmd_ext_find(&r, "controllerLeaderId"),
                            leader_id);
        assert_string_equal(ns_cmd_ext_find(&r, "isLeader"),
                            i == l ? "true" : "false");
        assert_string_equal(ns_cmd_ext_find(&r, "group"),
                            "DefaultControllerGroup");
        const char *peers = ns_cmd_ext_find(&r, "peers");
        assert_non_null(peers);
        for (unsigned j = 0; j < s->n; j++) {
            char one[64];
            snprintf(one, sizeof one, "n%u:%s;", j + 1,
                     s->nodes[j].client_addr);
            assert_non_null(strstr(peers, one));
        }
        ns_cmd_close(&r);
    }
    struct ns_cmd req, r;
    ctl_request(&req, NS_CODE_GET_CONTROLLER_CONFIG);
    call(s, f, &req, &r);
    expect(&r, 0, NULL);
    assert_true(body_has(&r, "enableControllerInNamesrv=true"));
    ns_cmd_close(&r);
    ctl_request(&req, NS_CODE_UPDATE_CONTROLLER_CONFIG);
    const char *bad = "configStorePath=/tmp/x\n";
    req.body = (const uint8_t *)bad;
    req.body_len = strlen(bad);
    call(s, f, &req, &r);
    expect(&r, NS_CODE_NO_PERMISSION, "Can not update config in black list.");
    ns_cmd_close(&r);
    ctl_request(&req, NS_CODE_UPDATE_CONTROLLER_CONFIG);
    const char *ok = "scanInactiveMasterInterval=700\n";
    req.body = (const uint8_t *)ok;
    req.body_len = strlen(ok);
    call(s, f, &req, &r);
    expect(&r, 0, NULL);
    ns_cmd_close(&r);
    assert_int_equal(ctl_of(s, f)->set.scan_inactive_master_ms, 700);
    /* 319 lists the controller's settings NamesrvConfig does not have */
    ctl_request(&req, NS_CODE_GET_NAMESRV_CONFIG);
    call(s, f, &req, &r);
    expect(&r, 0, NULL);
    assert_true(body_has(&r, "scanInactiveMasterInterval=700\n"));
    assert_true(body_has(&r, "notifyBrokerRoleChanged=true\n"));
    ns_cmd_close(&r);
    assert_int_equal(ctl_of(s, l)->set.scan_inactive_master_ms, 500);
}

static bool pred_raft_leader_not_ready(struct sim *s, void *arg)
{
    unsigned *out = arg;
    for (unsigned i = 0; i < s->n; i++) {
        if (s->nodes[i].up &&
            ns_node_role(s->nodes[i].node) == NS_ROLE_LEADER &&
            !ns_node_is_leader(s->nodes[i].node)) {
            *out = i;
            return true;
        }
    }
    return false;
}

/* A new raft leader answers "not leader" until an entry of its own term was
 * applied, then serves; 1005 already says isLeader (Java's quirk). */
static void test_new_leader_not_ready(void **state)
{
    struct sim *s = *state;
    unsigned old = (unsigned)sim_leader(s);
    sim_kill(s, old);
    unsigned nl = 0;
    assert_true(sim_run_until(s, pred_raft_leader_not_ready, &nl, 30000));
    struct sim_client *c = sim_client(s, nl);
    struct ns_cmd req;
    ctl_request(&req, NS_CODE_CONTROLLER_GET_NEXT_BROKER_ID);
    ext(&req, "clusterName", "c1");
    ext(&req, "brokerName", "broker-a");
    int32_t op = sim_client_send(c, &req);
    ns_cmd_close(&req);
    ctl_request(&req, NS_CODE_CONTROLLER_GET_METADATA_INFO);
    int32_t op_meta = sim_client_send(c, &req);
    ns_cmd_close(&req);
    /* answered in the same turn, before the barrier can have applied */
    sim_after(s);
    assert_false(ns_node_is_leader(s->nodes[nl].node));
    struct ns_cmd r;
    assert_non_null(sim_wait_reply(c, op, 0, &r));
    expect(&r, NS_CODE_CONTROLLER_NOT_LEADER,
           "The controller is not in leader state");
    ns_cmd_close(&r);
    assert_non_null(sim_wait_reply(c, op_meta, 0, &r));
    assert_string_equal(ns_cmd_ext_find(&r, "isLeader"), "true");
    ns_cmd_close(&r);
    assert_int_equal(sim_settle(s), nl);
    ctl_request(&req, NS_CODE_CONTROLLER_GET_NEXT_BROKER_ID);
    ext(&req, "clusterName", "c1");
    ext(&req, "brokerName", "broker-a");
    call(s, nl, &req, &r);
    expect(&r, 0, NULL);
    assert_int_equal(ext_int(&r, "nextBrokerId"), 1);
    ns_cmd_close(&r);
}

/* Two groups, then the raft leader dies together with broker-a's master:
 * the new leader elects broker-a's slave (its own heartbeat table), takes
 * further changes, and every surviving node ends with the same table. */
static void test_table_identical_after_leader_failover(void **state)
{
    struct sim *s = *state;
    struct broker a[2], b[2];
    unsigned l = group_with_master(s, a, 2);
    for (unsigned k = 0; k < 2; k++) {
        broker_init(s, &b[k], "broker-b", (int64_t)k + 1);
        admit(s, l, &b[k]);
    }
    struct ns_cmd r;
    elect(s, l, "broker-b", 1, false, &r);
    expect(&r, 0, NULL);
    ns_cmd_close(&r);
    alter(s, l, "broker-b", 1, 1, "1,2", 1, &r);
    expect(&r, 0, NULL);
    ns_cmd_close(&r);
    assert_group(s, "broker-b", "m1 e1 s[1,2] se2 ids[1,2]");
    assert_tables_identical(s);
    struct broker *bs[] = {&a[0], &a[1], &b[0], &b[1]};
    /* the table is warm (docs/controller.md §7) */
    run_beating(s, bs, 4, 10000, NULL, NULL);
    sim_kill(s, l);
    broker_close(s, &a[0]);
    struct want_master w = {"broker-a", 2};
    assert_true(run_beating(s, bs, 4, 20000, pred_master, &w));
    unsigned nl = sim_settle(s);
    assert_true(nl != l);
    assert_group(s, "broker-a", "m2 e2 s[2] se3 ids[1,2]");
    assert_true(notified(s, a[1].addr, NULL) >= 2);
    /* the new leader takes writes; fencing holds across the change */
    elect(s, nl, "broker-b", 2, true, &r);
    expect(&r, 0, NULL);
    assert_int_equal(ext_int(&r, "masterEpoch"), 2);
    ns_cmd_close(&r);
    alter(s, nl, "broker-b", 1, 1, "1,2", 3, &r);
    expect(&r, NS_CODE_CONTROLLER_INVALID_MASTER, NULL);
    ns_cmd_close(&r);
    run_beating(s, bs, 4, 200, NULL, NULL);
    alter(s, nl, "broker-b", 2, 2, "1,2", 3, &r);
    expect(&r, 0, NULL);
    ns_cmd_close(&r);
    assert_group(s, "broker-b", "m2 e2 s[1,2] se4 ids[1,2]");
    assert_group(s, "broker-a", "m2 e2 s[2] se3 ids[1,2]");
    assert_tables_identical(s);
}

#define BOTH(test)                                                             \
    cmocka_unit_test_setup_teardown(test, setup3, teardown),                   \
        cmocka_unit_test_setup_teardown(test, setup5, teardown)
int main(void)
{
    const struct CMUnitTest tests[] = {
        BOTH(test_register_heartbeat_and_first_election),
        BOTH(test_master_heartbeats_stop),
        BOTH(test_master_connection_close),
        BOTH(test_fencing_by_epoch),
        BOTH(test_master_alone_in_sync_set),
        BOTH(test_elect_by_admin),
        BOTH(test_clean_broker_data),
        BOTH(test_follower_answers_not_leader),
        BOTH(test_new_leader_not_ready),
        BOTH(test_table_identical_after_leader_failover),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
