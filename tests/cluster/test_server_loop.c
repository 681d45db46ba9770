/* In-process integration test of the server layer: a raft node and the client
 * server on one loop on 127.0.0.1 (ports from binding port 0, a temp data dir),
 * driven by a libuv client. It checks replies and a graceful stop ending in
 * uv_loop_close() == 0. It is not a protocol conformance suite (tests/process
 * does that against the binary). */
#include <setjmp.h>
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
#include "raftns/fsm.h"
#include "raftns/json.h"
#include "raftns/node.h"
#include "raftns/remoting.h"
#include "raftns/server.h"

#define DEADLINE_MS 10000

struct fixture {
    uv_loop_t loop;
    char dir[64];
    char raft_addr[32];
    struct ns_state state;
    struct ns_node *node;
    struct ns_server *server;
    struct inproc_client client;
    bool server_stopped;
    bool node_stopped;
};

/* Runs the loop until pred(f) holds or the deadline passes; returns pred's
 * final value. */
static bool run_until(struct fixture *f, bool (*pred)(struct fixture *))
{
    uint64_t end = uv_now(&f->loop) + DEADLINE_MS;
    while (!pred(f) && uv_now(&f->loop) < end) {
        uv_run(&f->loop, UV_RUN_ONCE);
    }
    return pred(f);
}

static bool is_leader(struct fixture *f)
{
    return ns_node_is_leader(f->node) && ns_node_is_ready(f->node);
}

static bool all_stopped(struct fixture *f)
{
    return f->server_stopped && f->node_stopped && f->client.closed;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    ns_json_use_ns_alloc();
    assert_int_equal(uv_loop_init(&f->loop), 0);
    snprintf(f->dir, sizeof f->dir, "/tmp/raftns-loop-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->raft_addr, sizeof f->raft_addr, "127.0.0.1:%d", free_port());
    assert_int_equal(ns_state_init(&f->state), 0);
    struct ns_node_config ncfg = {
        .id = 1, .data_dir = f->dir, .raft_addr = f->raft_addr};
    assert_int_equal(ns_node_create(&f->loop, &ncfg, &f->state, &f->node), 0);
    struct ns_server_config scfg = {.client_addr = "127.0.0.1:0"};
    assert_int_equal(
        ns_server_create(&f->loop, &scfg, &f->state, f->node, &f->server), 0);
    assert_int_equal(ns_server_start(f->server), 0);
    assert_int_not_equal(ns_server_port(f->server), 0);
    assert_int_equal(ns_node_start(f->node), 0);
    ns_buf_init(&f->client.in);
    *state = f;
    return 0;
}

static void node_stopped(void *arg)
{
    struct fixture *f = arg;
    f->node_stopped = true;
}

static void server_stopped(void *arg)
{
    struct fixture *f = arg;
    f->server_stopped = true;
    ns_node_stop(f->node, node_stopped, f);
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    inproc_client_close(&f->client);
    ns_server_stop(f->server, server_stopped, f);
    assert_true(run_until(f, all_stopped));
    uv_run(&f->loop, UV_RUN_DEFAULT); /* libraft's last close callbacks */
    ns_server_destroy(f->server);
    ns_node_destroy(f->node);
    assert_int_equal(uv_loop_close(&f->loop), 0);
    ns_state_close(&f->state);
    ns_buf_close(&f->client.in);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", f->dir);
    assert_int_equal(system(cmd), 0);
    free(f);
    return 0;
}

static void test_register_then_route(void **state)
{
    struct fixture *f = *state;
    assert_true(run_until(f, is_leader));
    inproc_client_connect(&f->loop, &f->client, ns_server_port(f->server));

    struct ns_cmd req;
    inproc_make_request(&req, 103, 7);
    assert_int_equal(ns_cmd_ext_set(&req, "brokerName", "broker-a"), 0);
    assert_int_equal(ns_cmd_ext_set(&req, "brokerAddr", "127.0.0.1:10911"), 0);
    assert_int_equal(ns_cmd_ext_set(&req, "clusterName", "c1"), 0);
    assert_int_equal(ns_cmd_ext_set(&req, "haServerAddr", "127.0.0.1:10912"),
                     0);
    assert_int_equal(ns_cmd_ext_set(&req, "brokerId", "0"), 0);
    assert_int_equal(ns_cmd_ext_set(&req, "enableActingMaster", "false"), 0);
    req.body = (const uint8_t *)INPROC_REGISTER_BODY;
    req.body_len = strlen(INPROC_REGISTER_BODY);
    inproc_client_send(&f->client, &req);
    ns_cmd_close(&req);

    struct ns_cmd reply;
    char *body = NULL;
    inproc_client_reply(&f->loop, &f->client, &reply, &body);
    assert_int_equal(reply.code, 0);
    assert_int_equal(reply.opaque, 7);
    assert_int_equal(reply.flag, NS_FLAG_RESPONSE);
    assert_true(reply.has_ext);
    assert_int_equal(reply.n_ext, 0);
    assert_null(reply.remark);
    assert_string_equal(body, "");
    ns_cmd_close(&reply);
    ns_free(body);

    inproc_make_request(&req, 105, 8);
    assert_int_equal(ns_cmd_ext_set(&req, "topic", "TopicA"), 0);
    inproc_client_send(&f->client, &req);
    ns_cmd_close(&req);
    inproc_client_reply(&f->loop, &f->client, &reply, &body);
    assert_int_equal(reply.code, 0);
    assert_int_equal(reply.opaque, 8);
    assert_non_null(
        strstr(body, "\"brokerAddrs\":{\"0\":\"127.0.0.1:10911\"}"));
    assert_non_null(strstr(body, "\"cluster\":\"c1\""));
    assert_non_null(strstr(body, "\"perm\":6"));
    ns_cmd_close(&reply);
    ns_free(body);

    inproc_make_request(&req, 105, 9);
    assert_int_equal(ns_cmd_ext_set(&req, "topic", "Nope"), 0);
    inproc_client_send(&f->client, &req);
    ns_cmd_close(&req);
    inproc_client_reply(&f->loop, &f->client, &reply, &body);
    assert_int_equal(reply.code, 17);
    assert_int_equal(reply.opaque, 9);
    assert_non_null(reply.remark);
    assert_non_null(strstr(reply.remark, "for the topic: Nope\n"));
    ns_cmd_close(&reply);
    ns_free(body);
}

static void test_unknown_code_and_oneway(void **state)
{
    struct fixture *f = *state;
    assert_true(run_until(f, is_leader));
    inproc_client_connect(&f->loop, &f->client, ns_server_port(f->server));

    struct ns_cmd req;
    inproc_make_request(&req, 904, 1);
    req.flag = NS_FLAG_ONEWAY; /* processed, never answered */
    assert_int_equal(ns_cmd_ext_set(&req, "clusterName", "c1"), 0);
    inproc_client_send(&f->client, &req);
    ns_cmd_close(&req);

    inproc_make_request(&req, 99999, 2);
    inproc_client_send(&f->client, &req);
    ns_cmd_close(&req);
    struct ns_cmd reply;
    char *body = NULL;
    inproc_client_reply(&f->loop, &f->client, &reply, &body);
    assert_int_equal(reply.opaque, 2); /* the oneway request produced nothing */
    assert_int_equal(reply.code, 3);
    assert_string_equal(reply.remark, " request type 99999 not supported");
    ns_cmd_close(&reply);
    ns_free(body);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_register_then_route, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_unknown_code_and_oneway, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
