/* The controller over the simulated cluster, node by node (sim.h,
 * sim_controller.h): a follower's and a not-yet-ready leader's answers are in
 * test_sim_controller.c; here the leader's queue across a lost leadership,
 * /status and /metrics, malformed requests, a 904 on both liveness tables,
 * the controller switched off, and the controller's own port
 * (controllerDLegerPeers). 3 and 5 nodes, virtual time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sim.h"

#include <cJSON.h>

#include "sim_controller.h"

/* Two writes queued on the leader, then it is cut off: the one in flight
 * fails (no quorum) with an error reply, the queued one is answered "not
 * leader" once the node stepped down; neither was applied anywhere. */
static void test_leadership_lost_with_requests_queued(void **state)
{
    struct sim *s = *state;
    unsigned l = (unsigned)sim_leader(s);
    struct sim_client *c = sim_client(s, l);
    int32_t ops[2];
    for (unsigned k = 0; k < 2; k++) {
        struct ns_cmd req;
        ctl_request(&req, NS_CODE_CONTROLLER_APPLY_BROKER_ID);
        ext(&req, "clusterName", "c1");
        ext(&req, "brokerName", k ? "broker-b" : "broker-a");
        ext(&req, "appliedBrokerId", "1");
        ext(&req, "registerCheckCode", "10.1.1.1:30911;1");
        ops[k] = sim_client_send(c, &req);
        ns_cmd_close(&req);
    }
    assert_int_equal(ctl_of(s, l)->n_queued, 2);
    sim_cut(s, l);
    struct ns_cmd r;
    assert_non_null(sim_wait_reply(c, ops[0], 30000, &r));
    assert_true(r.code != 0);
    ns_cmd_close(&r);
    assert_non_null(sim_wait_reply(c, ops[1], 30000, &r));
    expect(&r, NS_CODE_CONTROLLER_NOT_LEADER,
           "The controller is not in leader state");
    ns_cmd_close(&r);
    assert_int_equal(ctl_of(s, l)->n_queued, 0);
    sim_heal(s, l);
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        assert_int_equal(s->nodes[i].state.ctl.n, 0);
    }
}

/* The controller's numbers on /status and /metrics (through the server's
 * API the observer uses) follow the table and the counters. */
static void test_status_and_metrics(void **state)
{
    struct sim *s = *state;
    struct broker b[2];
    unsigned l = group_with_master(s, b, 2);
    struct ns_cmd r;
    alter(s, l, "broker-a", 1, 0, "1", 2, &r); /* fenced */
    ns_cmd_close(&r);
    struct ns_buf out;
    ns_buf_init(&out);
    assert_true(ns_server_controller_status(s->nodes[l].server, &out));
    char want[512];
    snprintf(want, sizeof want,
             "{\"enabled\":true,\"elections\":1,\"elections_failed\":0,"
             "\"fenced\":1,\"not_leader\":0,\"notified\":2,\"heartbeats\":2,"
             "\"groups\":[{\"name\":\"broker-a\",\"master\":1,"
             "\"masterEpoch\":1,\"syncStateSetEpoch\":2,\"members\":2,"
             "\"syncStateSet\":[1,2]}]}");
    if (out.len != strlen(want) || memcmp(out.data, want, out.len) != 0) {
        fail_msg("status %.*s", (int)out.len, (const char *)out.data);
    }
    ns_buf_reset(&out);
    ns_server_controller_metrics(s->nodes[l].server, &out);
    ns_buf_put_u8(&out, 0);
    const char *m = (const char *)out.data;
    assert_non_null(strstr(m, "raftns_controller_groups 1\n"));
    assert_non_null(strstr(m, "raftns_controller_masters 1\n"));
    assert_non_null(strstr(m, "raftns_controller_fenced_total 1\n"));
    assert_non_null(
        strstr(m, "raftns_controller_master_epoch{group=\"broker-a\"} 1\n"));
    ns_buf_close(&out);
}

/* Requests a C client may get wrong: 1001 without a body is Java's
 * NullPointerException; ids as strings count; 1009 with no body or with
 * text that is not properties. */
static void test_malformed_requests(void **state)
{
    struct sim *s = *state;
    struct broker b[2];
    unsigned l = group_with_master(s, b, 2);
    struct ns_cmd req, r;
    ctl_request(&req, NS_CODE_CONTROLLER_ALTER_SYNC_STATE_SET);
    ext(&req, "brokerName", "broker-a");
    ext(&req, "masterBrokerId", "1");
    ext(&req, "masterEpoch", "1");
    call(s, l, &req, &r);
    expect(&r, NS_CODE_SYSTEM_ERROR, "java.lang.NullPointerException");
    ns_cmd_close(&r);
    ctl_request(&req, NS_CODE_CONTROLLER_ALTER_SYNC_STATE_SET);
    ext(&req, "brokerName", "broker-a");
    ext(&req, "masterBrokerId", "1");
    ext(&req, "masterEpoch", "1");
    const char *body = "{\"syncStateSet\":[\"1\",1],\"syncStateSetEpoch\":2}";
    req.body = (const uint8_t *)body;
    req.body_len = strlen(body);
    call(s, l, &req, &r);
    expect(&r, 0, NULL);
    assert_body(&r, "{\"syncStateSet\":[1],\"syncStateSetEpoch\":3}");
    ns_cmd_close(&r);
    assert_group(s, "broker-a", "m1 e1 s[1] se3 ids[1,2]");
    ctl_request(&req, NS_CODE_UPDATE_CONTROLLER_CONFIG);
    call(s, l, &req, &r);
    expect(&r, 0, NULL);
    ns_cmd_close(&r);
    ctl_request(&req, NS_CODE_UPDATE_CONTROLLER_CONFIG);
    const char *bad = "a=\\uZZZZ\n";
    req.body = (const uint8_t *)bad;
    req.body_len = strlen(bad);
    call(s, l, &req, &r);
    expect(&r, NS_CODE_SYSTEM_ERROR, "string2Properties error");
    ns_cmd_close(&r);
}

static bool pred_listed(struct sim *s, void *arg)
{
    (void)s;
    struct sim_wait *w = arg;
    return sim_find_reply(w->c, w->opaque) != NULL;
}

/* On the shared port a 904 keeps both meanings (docs/controller.md §6): the
 * controller's heartbeat and the name server's liveness of the broker
 * registered there (BROKER_LIVENESS shows it heard just now). */
static void test_heartbeat_refreshes_route_liveness(void **state)
{
    struct sim *s = *state;
    unsigned l = (unsigned)sim_leader(s);
    struct sim_client *reg = sim_client(s, l);
    struct ns_cmd r;
    assert_non_null(sim_wait_reply(
        reg, sim_send_register(reg, "broker-a", "10.1.1.1:30911", 0), 30000,
        &r));
    expect(&r, 0, NULL);
    ns_cmd_close(&r);
    sim_run_for(s, 3000);
    struct broker b;
    broker_init(s, &b, "broker-a", 1);
    snprintf(b.addr, sizeof b.addr, "10.1.1.1:30911");
    beat(s, &b);
    struct sim_client *c = sim_client(s, l);
    struct ns_cmd req;
    ctl_request(&req, NS_CODE_BROKER_LIVENESS);
    struct sim_wait w = {c, sim_client_send(c, &req)};
    ns_cmd_close(&req);
    assert_true(sim_run_until(s, pred_listed, &w, 1000));
    struct sim_reply *got = sim_find_reply(c, w.opaque);
    assert_int_equal(ns_cmd_decode(got->frame, got->len, &r), 0);
    expect(&r, 0, NULL);
    cJSON *j = cJSON_ParseWithLength((const char *)r.body, r.body_len);
    assert_non_null(j);
    const cJSON *e = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "brokers"), 0);
    assert_non_null(e);
    assert_string_equal(cJSON_GetObjectItem(e, "brokerAddr")->valuestring,
                        "10.1.1.1:30911");
    assert_true(cJSON_IsTrue(cJSON_GetObjectItem(e, "heardHere")));
    double ago = cJSON_GetObjectItem(e, "lastHeartbeatAgoMs")->valuedouble;
    if (!(ago >= 0 && ago < 1000)) {
        fail_msg("last heartbeat %.0f ms ago: the 904 did not touch it", ago);
    }
    cJSON_Delete(j);
    ns_cmd_close(&r);
}

static int setup3_off(void **state)
{
    memset(admin, 0, sizeof admin);
    struct sim *s = sim_fixture_new(3, 3, NULL);
    sim_settle(s);
    *state = s;
    return 0;
}

/* enableControllerInNamesrv off (the default): the controller codes are
 * unknown, as before the controller existed. */
static void test_controller_off(void **state)
{
    struct sim *s = *state;
    unsigned l = (unsigned)sim_leader(s);
    static const int32_t codes[] = {
        NS_CODE_CONTROLLER_GET_METADATA_INFO,
        NS_CODE_GET_CONTROLLER_CONFIG,
        NS_CODE_UPDATE_CONTROLLER_CONFIG,
        NS_CODE_CONTROLLER_GET_NEXT_BROKER_ID,
    };
    for (size_t k = 0; k < sizeof codes / sizeof codes[0]; k++) {
        struct ns_cmd req, r;
        ctl_request(&req, codes[k]);
        call(s, l, &req, &r);
        char remark[64];
        snprintf(remark, sizeof remark, " request type %d not supported",
                 (int)codes[k]);
        expect(&r, NS_CODE_REQUEST_CODE_NOT_SUPPORTED, remark);
        ns_cmd_close(&r);
    }
    assert_false(ns_server_controller_status(s->nodes[l].server, NULL));
}

/* A client of node i on its controller port (controllerDLegerPeers). */
static struct sim_client *ctl_port_client(struct sim *s, unsigned i)
{
    struct sim_client *c = sim_client(s, i);
    ns_conn_close(c->conn, "moved to the controller port");
    sim_after(s);
    c->sink.closed = sim_client_closed;
    assert_true(s->nodes[i].server->has_ctl_net);
    assert_int_equal(ns_conn_open_sink(&s->nodes[i].server->ctl_net,
                                       "192.168.0.2:40000", &c->sink, &c->conn),
                     0);
    return c;
}

#define PEERS_SETTINGS                                                         \
    CTL_SETTINGS                                                               \
    "controllerDLegerGroup=raftns-ctl\n"                                       \
    "controllerDLegerPeers=n1-10.0.1.1:9878;n2-10.0.1.2:9878;"                 \
    "n3-10.0.1.3:9878;n4-10.0.1.4:9878;n5-10.0.1.5:9878\n"

static int setup_peers(void **state, unsigned n)
{
    memset(admin, 0, sizeof admin);
    struct sim_opts o = {.settings = PEERS_SETTINGS};
    struct sim *s = sim_fixture_new(n, n, &o);
    sim_settle(s);
    *state = s;
    return 0;
}

static int setup3_peers(void **state)
{
    return setup_peers(state, 3);
}

static int setup5_peers(void **state)
{
    return setup_peers(state, 5);
}

/* With controllerDLegerPeers, as Java's embedded controller: 1005 on every
 * node names the leader's controller port and every peer's; the codes are
 * served on that port too, and a broker's connection there closing fails its
 * group over. */
static void test_controller_port(void **state)
{
    struct sim *s = *state;
    unsigned l = (unsigned)sim_leader(s);
    char leader_addr[32];
    snprintf(leader_addr, sizeof leader_addr, "10.0.1.%u:9878", l + 1);
    for (unsigned i = 0; i < s->n; i++) {
        struct ns_cmd req, r;
        ctl_request(&req, NS_CODE_CONTROLLER_GET_METADATA_INFO);
        call(s, i, &req, &r);
        expect(&r, 0, NULL);
        assert_string_equal(ns_cmd_ext_find(&r, "controllerLeaderAddress"),
                            leader_addr);
        assert_string_equal(ns_cmd_ext_find(&r, "group"), "raftns-ctl");
        assert_non_null(
            strstr(ns_cmd_ext_find(&r, "peers"), "n2:10.0.1.2:9878;"));
        ns_cmd_close(&r);
    }
    struct broker b[2];
    for (unsigned k = 0; k < 2; k++) {
        broker_init(s, &b[k], "broker-a", (int64_t)k + 1);
        for (unsigned i = 0; i < s->n; i++) {
            b[k].conn[i] = ctl_port_client(s, i);
        }
        admit(s, l, &b[k]);
    }
    struct ns_cmd r;
    elect(s, l, "broker-a", 1, false, &r);
    expect(&r, 0, NULL);
    ns_cmd_close(&r);
    alter(s, l, "broker-a", 1, 1, "1,2", 1, &r);
    expect(&r, 0, NULL);
    ns_cmd_close(&r);
    assert_true(b[0].conn[l]->conn->id >= (1ull << 62));
    broker_close(s, &b[0]);
    struct want_master w = {"broker-a", 2};
    assert_true(sim_run_until(s, pred_master, &w, 500));
    assert_group(s, "broker-a", "m2 e2 s[2] se3 ids[1,2]");
    assert_tables_identical(s);
}

#define BOTH(test)                                                             \
    cmocka_unit_test_setup_teardown(test, setup3, teardown),                   \
        cmocka_unit_test_setup_teardown(test, setup5, teardown)
int main(void)
{
    const struct CMUnitTest tests[] = {
        BOTH(test_leadership_lost_with_requests_queued),
        BOTH(test_status_and_metrics),
        BOTH(test_malformed_requests),
        BOTH(test_heartbeat_refreshes_route_liveness),
        cmocka_unit_test_setup_teardown(test_controller_off, setup3_off,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_controller_port, setup3_peers,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_controller_port, setup5_peers,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
