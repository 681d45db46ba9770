/* In-process tests of the forwarding paths: two raft nodes and their client
 * servers on one loop on 127.0.0.1 (ports from binding port 0, temp data
 * dirs). Each ends with uv_loop_close() == 0.
 * - Reads on a node that is not ready (docs/readiness.md), the follower held
 *   "not ready" by the RAFTNS_TEST_READY_DELAY_MS hook: a route read there
 *   comes back with the leader's bytes and names the leader (raftnsServedBy);
 *   an unchanged re-registration is still acknowledged (through the leader).
 *   Timing and the minority rule are in
 *   tests/process/test_cluster_read_forward.py.
 * - Writes through a follower: acknowledged only once the follower applied
 *   them, and (RAFTNS_TEST_FORWARD_ECHO_MS hook, docs/exactly-once.md) a late
 *   copy of a forwarded write after a newer write changes nothing.
 * - Identical registrations sent to both nodes at once share one entry.
 * - The cluster file's commandVersion caps the command format written. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "free_port.h"
#include "inproc_client.h"
#include <uv.h>

#include "raftns/alloc.h"
#include "raftns/buf.h"
#include "raftns/cluster_config.h"
#include "raftns/codes.h"
#include "raftns/fsm.h"
#include "raftns/json.h"
#include "raftns/metrics.h"
#include "raftns/node.h"
#include "raftns/remoting.h"
#include "raftns/server.h"

#define DEADLINE_MS 20000
#define N 2
#define SECRET "server-forward-test-secret"

struct member {
    char dir[64];
    char raft_addr[32];
    char client_addr[32];
    struct ns_state state;
    struct ns_node *node;
    struct ns_server *server;
    struct inproc_client client;
    bool server_stopped;
    bool node_stopped;
};

struct fixture {
    uv_loop_t loop;
    struct ns_cluster_config cluster;
    struct ns_node_member boot[N];
    struct member m[N];
};

static bool run_until(struct fixture *f, bool (*pred)(struct fixture *))
{
    uint64_t end = uv_now(&f->loop) + DEADLINE_MS;
    while (!pred(f) && uv_now(&f->loop) < end) {
        uv_run(&f->loop, UV_RUN_ONCE);
    }
    return pred(f);
}

static struct member *leader_of(struct fixture *f)
{
    for (int i = 0; i < N; i++) {
        if (ns_node_is_leader(f->m[i].node) && ns_node_is_ready(f->m[i].node)) {
            return &f->m[i];
        }
    }
    return NULL;
}

static struct member *follower_of(struct fixture *f)
{
    struct member *l = leader_of(f);
    return l == NULL ? NULL : &f->m[l == &f->m[0] ? 1 : 0];
}

static bool has_leader(struct fixture *f)
{
    return leader_of(f) != NULL;
}

/* The follower knows its leader and has applied what the leader applied. */
static bool follower_caught_up(struct fixture *f)
{
    struct member *l = leader_of(f);
    struct member *fo = follower_of(f);
    return l != NULL && ns_node_leader_id(fo->node) == ns_node_id(l->node) &&
           ns_node_last_applied(fo->node) >= ns_node_last_applied(l->node);
}

static bool all_stopped(struct fixture *f)
{
    for (int i = 0; i < N; i++) {
        if (!f->m[i].server_stopped || !f->m[i].node_stopped ||
            (f->m[i].client.opened && !f->m[i].client.closed)) {
            return false;
        }
    }
    return true;
}

static int setup_with(void **state, const char *hook, const char *value)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    ns_json_use_ns_alloc();
    assert_int_equal(uv_loop_init(&f->loop), 0);
    char json[1024];
    int n = 0;
    for (int i = 0; i < N; i++) {
        struct member *m = &f->m[i];
        snprintf(m->dir, sizeof m->dir, "/tmp/raftns-fwd-XXXXXX");
        assert_non_null(mkdtemp(m->dir));
        snprintf(m->raft_addr, sizeof m->raft_addr, "127.0.0.1:%d",
                 free_port());
        snprintf(m->client_addr, sizeof m->client_addr, "127.0.0.1:%d",
                 free_port());
        f->boot[i].id = (uint64_t)i + 1;
        f->boot[i].raft_addr = m->raft_addr;
        f->boot[i].role = NS_MEMBER_VOTER;
    }
    n = snprintf(json, sizeof json,
                 "{\"secret\":\"" SECRET "\",\"nodes\":["
                 "{\"id\":1,\"raft\":\"%s\",\"client\":\"%s\",\"bootstrap\":"
                 "true},"
                 "{\"id\":2,\"raft\":\"%s\",\"client\":\"%s\",\"bootstrap\":"
                 "true}]}",
                 f->m[0].raft_addr, f->m[0].client_addr, f->m[1].raft_addr,
                 f->m[1].client_addr);
    assert_true(n > 0 && (size_t)n < sizeof json);
    char err[256];
    ns_cluster_config_init(&f->cluster);
    assert_int_equal(
        ns_cluster_config_parse(json, (size_t)n, &f->cluster, err, sizeof err),
        0);
    assert_int_equal(setenv(hook, value, 1), 0);
    for (int i = 0; i < N; i++) {
        struct member *m = &f->m[i];
        assert_int_equal(ns_state_init(&m->state), 0);
        struct ns_node_config ncfg = {
            .id = (uint64_t)i + 1,
            .data_dir = m->dir,
            .raft_addr = m->raft_addr,
            .bootstrap = f->boot,
            .n_bootstrap = N,
            .remote_ready = true,
            .secret = SECRET,
        };
        assert_int_equal(ns_node_create(&f->loop, &ncfg, &m->state, &m->node),
                         0);
        struct ns_server_config scfg = {
            .client_addr = m->client_addr,
            .id = (uint64_t)i + 1,
            .secret = SECRET,
            .cluster = &f->cluster,
        };
        assert_int_equal(
            ns_server_create(&f->loop, &scfg, &m->state, m->node, &m->server),
            0);
        assert_int_equal(ns_server_start(m->server), 0);
        assert_int_equal(ns_node_start(m->node), 0);
        ns_buf_init(&m->client.in);
    }
    assert_int_equal(unsetenv(hook), 0);
    *state = f;
    return 0;
}

/* Whichever node follows stays not ready; the leader is ready by its barrier,
 * which the hook does not touch. */
static int setup_unready_follower(void **state)
{
    return setup_with(state, "RAFTNS_TEST_READY_DELAY_MS", "600000");
}

/* Every forwarded write reaches the leader a second time, 1.5 s after the
 * first. */
static int setup_late_copies(void **state)
{
    return setup_with(state, "RAFTNS_TEST_FORWARD_ECHO_MS", "1500");
}

static void node_stopped(void *arg)
{
    struct member *m = arg;
    m->node_stopped = true;
}

static void server_stopped(void *arg)
{
    struct member *m = arg;
    m->server_stopped = true;
    ns_node_stop(m->node, node_stopped, m);
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    for (int i = 0; i < N; i++) {
        struct member *m = &f->m[i];
        inproc_client_close(&m->client);
        ns_server_stop(m->server, server_stopped, m);
    }
    assert_true(run_until(f, all_stopped));
    uv_run(&f->loop, UV_RUN_DEFAULT); /* libraft's last close callbacks */
    for (int i = 0; i < N; i++) {
        struct member *m = &f->m[i];
        ns_server_destroy(m->server);
        ns_node_destroy(m->node);
    }
    assert_int_equal(uv_loop_close(&f->loop), 0);
    for (int i = 0; i < N; i++) {
        struct member *m = &f->m[i];
        ns_state_close(&m->state);
        ns_buf_close(&m->client.in);
        char cmd[128];
        int n = snprintf(cmd, sizeof cmd, "rm -rf %s", m->dir);
        assert_true(n > 0 && (size_t)n < sizeof cmd);
        assert_int_equal(system(cmd), 0);
    }
    ns_cluster_config_close(&f->cluster);
    free(f);
    return 0;
}

static void send_register_as(struct member *m, int32_t opaque,
                             const char *broker_name, const char *addr)
{
    struct ns_cmd req;
    inproc_make_request(&req, 103, opaque);
    assert_int_equal(ns_cmd_ext_set(&req, "brokerName", broker_name), 0);
    assert_int_equal(ns_cmd_ext_set(&req, "brokerAddr", addr), 0);
    assert_int_equal(ns_cmd_ext_set(&req, "clusterName", "c1"), 0);
    assert_int_equal(ns_cmd_ext_set(&req, "haServerAddr", "127.0.0.1:10912"),
                     0);
    assert_int_equal(ns_cmd_ext_set(&req, "brokerId", "0"), 0);
    assert_int_equal(ns_cmd_ext_set(&req, "enableActingMaster", "false"), 0);
    req.body = (const uint8_t *)INPROC_REGISTER_BODY;
    req.body_len = strlen(INPROC_REGISTER_BODY);
    inproc_client_send(&m->client, &req);
    ns_cmd_close(&req);
}

static void send_register(struct member *m, int32_t opaque)
{
    send_register_as(m, opaque, "broker-a", "127.0.0.1:10911");
}

static void send_route(struct member *m, int32_t opaque, const char *topic)
{
    struct ns_cmd req;
    inproc_make_request(&req, 105, opaque);
    assert_int_equal(ns_cmd_ext_set(&req, "topic", topic), 0);
    inproc_client_send(&m->client, &req);
    ns_cmd_close(&req);
}

static void test_not_ready_follower_reads_through_the_leader(void **state)
{
    struct fixture *f = *state;
    assert_true(run_until(f, has_leader));
    struct member *l = leader_of(f);
    struct member *fo = follower_of(f);
    char leader_id[24];
    snprintf(leader_id, sizeof leader_id, "%llu",
             (unsigned long long)ns_node_id(l->node));
    inproc_client_connect(&f->loop, &l->client, ns_server_port(l->server));
    inproc_client_connect(&f->loop, &fo->client, ns_server_port(fo->server));

    struct ns_cmd reply;
    char *body = NULL;
    send_register(l, 1);
    inproc_client_reply(&f->loop, &l->client, &reply, &body);
    assert_int_equal(reply.code, 0);
    ns_cmd_close(&reply);
    ns_free(body);
    assert_true(run_until(f, follower_caught_up));
    assert_false(ns_node_is_ready(fo->node));

    send_route(l, 2, "TopicA");
    char *want = NULL;
    inproc_client_reply(&f->loop, &l->client, &reply, &want);
    assert_int_equal(reply.code, 0);
    assert_null(ns_cmd_ext_find(&reply, NS_EXT_SERVED_BY));
    ns_cmd_close(&reply);
    assert_non_null(
        strstr(want, "\"brokerAddrs\":{\"0\":\"127.0.0.1:10911\"}"));

    send_route(fo, 3, "TopicA");
    inproc_client_reply(&f->loop, &fo->client, &reply, &body);
    assert_int_equal(reply.code, 0);
    assert_int_equal(reply.opaque, 3);
    assert_int_equal(reply.flag, NS_FLAG_RESPONSE);
    assert_non_null(ns_cmd_ext_find(&reply, NS_EXT_SERVED_BY));
    assert_string_equal(ns_cmd_ext_find(&reply, NS_EXT_SERVED_BY), leader_id);
    assert_string_equal(body, want);
    ns_cmd_close(&reply);
    ns_free(body);
    ns_free(want);

    send_route(fo, 4, "Nope");
    inproc_client_reply(&f->loop, &fo->client, &reply, &body);
    assert_int_equal(reply.code, 17);
    assert_int_equal(reply.opaque, 4);
    assert_non_null(reply.remark);
    assert_non_null(strstr(reply.remark, "for the topic: Nope\n"));
    assert_string_equal(ns_cmd_ext_find(&reply, NS_EXT_SERVED_BY), leader_id);
    ns_cmd_close(&reply);
    ns_free(body);

    /* the unchanged re-registration is acknowledged, by way of the leader */
    send_register(fo, 5);
    inproc_client_reply(&f->loop, &fo->client, &reply, &body);
    assert_int_equal(reply.code, 0);
    assert_int_equal(reply.opaque, 5);
    ns_cmd_close(&reply);
    ns_free(body);
    assert_false(ns_node_is_ready(fo->node));
}

static void send_kv_put(struct member *m, int32_t opaque, const char *key,
                        const char *value)
{
    struct ns_cmd req;
    inproc_make_request(&req, 100, opaque);
    assert_int_equal(ns_cmd_ext_set(&req, "namespace", "fwd"), 0);
    assert_int_equal(ns_cmd_ext_set(&req, "key", key), 0);
    assert_int_equal(ns_cmd_ext_set(&req, "value", value), 0);
    inproc_client_send(&m->client, &req);
    ns_cmd_close(&req);
}

static void expect_success(struct fixture *f, struct member *m, int32_t opaque)
{
    struct ns_cmd reply;
    char *body = NULL;
    inproc_client_reply(&f->loop, &m->client, &reply, &body);
    assert_int_equal(reply.opaque, opaque);
    assert_int_equal(reply.code, 0);
    ns_cmd_close(&reply);
    ns_free(body);
}

static const char *kv_of(struct member *m, const char *key)
{
    return ns_kv_find(m->state.kv, "fwd", key);
}

static struct member *ready_follower(struct fixture *f)
{
    assert_true(run_until(f, has_leader));
    struct member *fo = follower_of(f);
    assert_true(run_until(f, follower_caught_up));
    return fo;
}

static uint64_t copies_before;

/* The leader judged the late copy a duplicate, or the copy changed the value
 * (without request ids). */
static bool late_copy_arrived(struct fixture *f)
{
    const char *v = kv_of(leader_of(f), "k");
    return ns_metrics_write_copies(false) > copies_before ||
           (v != NULL && strcmp(v, "second") != 0);
}

/* The follower answers a forwarded write once it applied it itself: its own
 * state holds the value when the reply arrives, before the loop runs again. */
static void test_write_through_a_follower_is_applied_there(void **state)
{
    struct fixture *f = *state;
    struct member *fo = ready_follower(f);
    struct member *l = leader_of(f);
    inproc_client_connect(&f->loop, &fo->client, ns_server_port(fo->server));
    for (int i = 1; i <= 5; i++) {
        char value[16];
        snprintf(value, sizeof value, "v%d", i);
        send_kv_put(fo, i, "k", value);
        expect_success(f, fo, i);
        assert_non_null(kv_of(fo, "k"));
        assert_string_equal(kv_of(fo, "k"), value);
        assert_string_equal(kv_of(l, "k"), value); /* through the leader */
    }
}

/* The run of tests/jepsen/evidence/README.md in miniature: the first copy of
 * a forwarded write comes again after a newer write; the state must keep the
 * newer value on both nodes. */
static void test_late_copy_of_a_forwarded_write_changes_nothing(void **state)
{
    struct fixture *f = *state;
    struct member *fo = ready_follower(f);
    struct member *l = leader_of(f);
    inproc_client_connect(&f->loop, &fo->client, ns_server_port(fo->server));
    inproc_client_connect(&f->loop, &l->client, ns_server_port(l->server));
    copies_before = ns_metrics_write_copies(false);
    send_kv_put(fo, 1, "k", "first"); /* forwarded: copied again in 1.5 s */
    expect_success(f, fo, 1);
    send_kv_put(l, 2, "k", "second");
    expect_success(f, l, 2);
    assert_true(run_until(f, late_copy_arrived));
    assert_true(run_until(f, follower_caught_up));
    assert_string_equal(kv_of(l, "k"), "second");
    assert_string_equal(kv_of(fo, "k"), "second");
    assert_int_equal(ns_metrics_write_copies(false), copies_before + 1);
    assert_int_equal(ns_metrics_write_copies(true), 0);
}

/* A broker sends the same new registration to every name server at once: the
 * leader's copy and the one the follower forwards share one log entry
 * (docs/exactly-once.md: a first send may share another id's entry). */
/* An earlier process of the follower ran with a later clock: its recorded run
 * is ahead of the follower's own. The follower's next write must move past it
 * and be applied, not refused as stale (docs/exactly-once.md). The record is
 * put into both states directly, as the same applied entry would. */
static void test_write_after_the_clock_went_back(void **state)
{
    struct fixture *f = *state;
    struct member *fo = ready_follower(f);
    struct member *l = leader_of(f);
    struct ns_command c;
    ns_command_init(&c, NS_CMD_KV_PUT);
    c.leader_time_ms = 1;
    c.u.kv.ns = "fwd";
    c.u.kv.key = "old";
    c.u.kv.value = "from the future";
    c.reqid.origin = ns_node_id(fo->node);
    c.reqid.run = UINT64_MAX - 1;
    c.reqid.seq = 7;
    assert_int_equal(ns_fsm_apply(&l->state, &c, NULL), 0);
    assert_int_equal(ns_fsm_apply(&fo->state, &c, NULL), 0);
    inproc_client_connect(&f->loop, &fo->client, ns_server_port(fo->server));
    send_kv_put(fo, 1, "k", "after");
    expect_success(f, fo, 1);
    assert_string_equal(kv_of(fo, "k"), "after");
    assert_string_equal(kv_of(l, "k"), "after");
    const struct ns_reqid_origin *o =
        ns_reqid_find(&l->state.reqids, ns_node_id(fo->node));
    assert_non_null(o);
    assert_true(o->run == UINT64_MAX && o->high == 1);
}

/* No entry of the cluster's own is still to come: the first leader's records
 * of the members' addresses are applied, and the follower is ready (its read
 * index, a barrier entry, was served). */
static bool quiet(struct fixture *f)
{
    for (int i = 0; i < N; i++) {
        if (f->m[i].state.n_members != N || !ns_node_is_ready(f->m[i].node)) {
            return false;
        }
    }
    return follower_caught_up(f);
}

/* The ready follower, once the cluster is quiet, with a client connected to
 * it and one to the leader (*leader). */
static struct member *quiet_pair_connected(struct fixture *f,
                                           struct member **leader)
{
    struct member *fo = ready_follower(f);
    *leader = leader_of(f);
    assert_true(run_until(f, quiet));
    inproc_client_connect(&f->loop, &fo->client, ns_server_port(fo->server));
    inproc_client_connect(&f->loop, &(*leader)->client,
                          ns_server_port((*leader)->server));
    return fo;
}

static void test_identical_registrations_make_one_entry(void **state)
{
    struct fixture *f = *state;
    struct member *l, *fo = quiet_pair_connected(f, &l);
    uint64_t before = ns_node_last_applied(l->node);
    send_register(l, 1);
    send_register(fo, 2);
    expect_success(f, l, 1);
    expect_success(f, fo, 2);
    assert_true(run_until(f, follower_caught_up));
    assert_int_equal(ns_node_last_applied(l->node), before + 1);
    assert_int_equal(ns_route_n_brokers(l->state.route), 1);
    assert_int_equal(ns_route_n_brokers(fo->state.route), 1);
}

/* The cluster file's commandVersion caps the format a node writes, through
 * a follower and on the leader (a rolling upgrade from nodes that read no
 * newer); without it registrations are written in the newest. */
static void test_command_version_caps_what_is_written(void **state)
{
    struct fixture *f = *state;
    struct member *l, *fo = quiet_pair_connected(f, &l);
    uint64_t v2 = ns_metrics_commands_written(NS_COMMAND_VERSION_REQID);
    uint64_t v3 = ns_metrics_commands_written(NS_COMMAND_VERSION_COMPACT);
    f->cluster.command_version = NS_COMMAND_VERSION_REQID;
    send_register_as(fo, 1, "broker-a", "127.0.0.1:21911");
    send_register_as(l, 2, "broker-b", "127.0.0.1:22911");
    expect_success(f, fo, 1);
    expect_success(f, l, 2);
    assert_true(ns_metrics_commands_written(NS_COMMAND_VERSION_REQID) >=
                v2 + 2);
    assert_int_equal(ns_metrics_commands_written(NS_COMMAND_VERSION_COMPACT),
                     v3);
    f->cluster.command_version = 0;
    send_register_as(fo, 3, "broker-c", "127.0.0.1:23911");
    send_register_as(l, 4, "broker-d", "127.0.0.1:24911");
    expect_success(f, fo, 3);
    expect_success(f, l, 4);
    assert_true(ns_metrics_commands_written(NS_COMMAND_VERSION_COMPACT) >=
                v3 + 2);
    assert_true(run_until(f, follower_caught_up));
    for (int i = 0; i < N; i++) {
        assert_int_equal(ns_route_n_brokers(f->m[i].state.route), 4);
        assert_int_equal(ns_route_n_topics(f->m[i].state.route), 2);
    }
}

int main(void)
{
    /* as raftns does: a peer connection closed while stopping is an error
     * return, not a signal */
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            test_not_ready_follower_reads_through_the_leader,
            setup_unready_follower, teardown),
        cmocka_unit_test_setup_teardown(
            test_write_through_a_follower_is_applied_there, setup_late_copies,
            teardown),
        cmocka_unit_test_setup_teardown(
            test_late_copy_of_a_forwarded_write_changes_nothing,
            setup_late_copies, teardown),
        cmocka_unit_test_setup_teardown(
            test_identical_registrations_make_one_entry, setup_late_copies,
            teardown),
        cmocka_unit_test_setup_teardown(test_write_after_the_clock_went_back,
                                        setup_late_copies, teardown),
        cmocka_unit_test_setup_teardown(
            test_command_version_caps_what_is_written, setup_late_copies,
            teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
