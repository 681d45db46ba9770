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
#include <uv.h>

#include "raftns/alloc.h"
#include "raftns/buf.h"
#include "raftns/fsm.h"
#include "raftns/json.h"
#include "raftns/node.h"
#include "raftns/remoting.h"
#include "raftns/server.h"

#define DEADLINE_MS 10000

struct client {
    uv_tcp_t tcp;
    uv_connect_t connect;
    bool connected;
    bool closed;
    int connect_status;
    struct ns_buf in;
    char chunk[65536];
};

struct fixture {
    uv_loop_t loop;
    char dir[64];
    char raft_addr[32];
    struct ns_state state;
    struct ns_node *node;
    struct ns_server *server;
    struct client client;
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

static bool is_connected(struct fixture *f)
{
    return f->client.connected;
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

static void client_closed(uv_handle_t *h)
{
    struct client *c = (struct client *)h;
    c->closed = true;
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
    if (!uv_is_closing((uv_handle_t *)&f->client.tcp)) {
        uv_close((uv_handle_t *)&f->client.tcp, client_closed);
    }
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

/* --- the libuv client --- */

static void on_connect(uv_connect_t *req, int status)
{
    struct client *c = req->data;
    c->connect_status = status;
    c->connected = status == 0;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct client *c = (struct client *)h;
    (void)suggested;
    buf->base = c->chunk;
    buf->len = sizeof c->chunk;
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
    struct client *c = (struct client *)s;
    if (n > 0) {
        assert_int_equal(ns_buf_append(&c->in, buf->base, (size_t)n), 0);
    }
}

static void on_write(uv_write_t *w, int status)
{
    assert_int_equal(status, 0);
    ns_free(w->data);
    free(w);
}

static void client_connect(struct fixture *f)
{
    struct sockaddr_in sa;
    uv_ip4_addr("127.0.0.1", ns_server_port(f->server), &sa);
    uv_tcp_init(&f->loop, &f->client.tcp);
    f->client.connect.data = &f->client;
    assert_int_equal(uv_tcp_connect(&f->client.connect, &f->client.tcp,
                                    (struct sockaddr *)&sa, on_connect),
                     0);
    assert_true(run_until(f, is_connected));
    assert_int_equal(
        uv_read_start((uv_stream_t *)&f->client.tcp, on_alloc, on_read), 0);
}

static void client_send(struct fixture *f, const struct ns_cmd *cmd)
{
    struct ns_buf b;
    ns_buf_init(&b);
    assert_int_equal(ns_cmd_encode(cmd, &b), 0);
    size_t len = 0;
    uint8_t *data = ns_buf_take(&b, &len);
    uv_write_t *w = malloc(sizeof *w);
    assert_non_null(w);
    w->data = data;
    uv_buf_t ub = uv_buf_init((char *)data, (unsigned)len);
    assert_int_equal(
        uv_write(w, (uv_stream_t *)&f->client.tcp, &ub, 1, on_write), 0);
}

static bool has_frame(struct fixture *f)
{
    size_t len = 0;
    return ns_frame_check(f->client.in.data, f->client.in.len, NS_FRAME_MAX,
                          &len) == 0;
}

/* Waits for one reply and decodes it into out (body copied into *body, caller
 * frees). */
static void client_reply(struct fixture *f, struct ns_cmd *out, char **body)
{
    assert_true(run_until(f, has_frame));
    size_t len = 0;
    assert_int_equal(
        ns_frame_check(f->client.in.data, f->client.in.len, NS_FRAME_MAX, &len),
        0);
    assert_int_equal(ns_cmd_decode(f->client.in.data, len, out), 0);
    *body = ns_strndup(out->body_len > 0 ? (const char *)out->body : "",
                       out->body_len);
    assert_non_null(*body);
    out->body = NULL;
    out->body_len = 0;
    memmove(f->client.in.data, f->client.in.data + len, f->client.in.len - len);
    f->client.in.len -= len;
}

static const char REGISTER_BODY[] =
    "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":"
    "{"
    "\"counter\":1,\"stateVersion\":0,\"timestamp\":1700000000000},"
    "\"topicConfigTable\":{\"TopicA\":{\"perm\":6,\"readQueueNums\":4,"
    "\"topicName\":"
    "\"TopicA\",\"topicSysFlag\":0,\"writeQueueNums\":4},\"TopicB\":{\"perm\":"
    "6,"
    "\"readQueueNums\":4,\"topicName\":\"TopicB\",\"topicSysFlag\":0,"
    "\"writeQueueNums\":4}}}}";

static void make_request(struct ns_cmd *c, int32_t code, int32_t opaque)
{
    ns_cmd_init(c);
    c->code = code;
    c->opaque = opaque;
    c->version = 479;
    c->language = NS_LANG_JAVA;
    c->ser = NS_SER_JSON;
}

static void test_register_then_route(void **state)
{
    struct fixture *f = *state;
    assert_true(run_until(f, is_leader));
    client_connect(f);

    struct ns_cmd req;
    make_request(&req, 103, 7);
    assert_int_equal(ns_cmd_ext_set(&req, "brokerName", "broker-a"), 0);
    assert_int_equal(ns_cmd_ext_set(&req, "brokerAddr", "127.0.0.1:10911"), 0);
    assert_int_equal(ns_cmd_ext_set(&req, "clusterName", "c1"), 0);
    assert_int_equal(ns_cmd_ext_set(&req, "haServerAddr", "127.0.0.1:10912"),
                     0);
    assert_int_equal(ns_cmd_ext_set(&req, "brokerId", "0"), 0);
    assert_int_equal(ns_cmd_ext_set(&req, "enableActingMaster", "false"), 0);
    req.body = (const uint8_t *)REGISTER_BODY;
    req.body_len = strlen(REGISTER_BODY);
    client_send(f, &req);
    ns_cmd_close(&req);

    struct ns_cmd reply;
    char *body = NULL;
    client_reply(f, &reply, &body);
    assert_int_equal(reply.code, 0);
    assert_int_equal(reply.opaque, 7);
    assert_int_equal(reply.flag, NS_FLAG_RESPONSE);
    assert_true(reply.has_ext);
    assert_int_equal(reply.n_ext, 0);
    assert_null(reply.remark);
    assert_string_equal(body, "");
    ns_cmd_close(&reply);
    ns_free(body);

    make_request(&req, 105, 8);
    assert_int_equal(ns_cmd_ext_set(&req, "topic", "TopicA"), 0);
    client_send(f, &req);
    ns_cmd_close(&req);
    client_reply(f, &reply, &body);
    assert_int_equal(reply.code, 0);
    assert_int_equal(reply.opaque, 8);
    assert_non_null(
        strstr(body, "\"brokerAddrs\":{\"0\":\"127.0.0.1:10911\"}"));
    assert_non_null(strstr(body, "\"cluster\":\"c1\""));
    assert_non_null(strstr(body, "\"perm\":6"));
    ns_cmd_close(&reply);
    ns_free(body);

    make_request(&req, 105, 9);
    assert_int_equal(ns_cmd_ext_set(&req, "topic", "Nope"), 0);
    client_send(f, &req);
    ns_cmd_close(&req);
    client_reply(f, &reply, &body);
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
    client_connect(f);

    struct ns_cmd req;
    make_request(&req, 904, 1);
    req.flag = NS_FLAG_ONEWAY; /* processed, never answered */
    assert_int_equal(ns_cmd_ext_set(&req, "clusterName", "c1"), 0);
    client_send(f, &req);
    ns_cmd_close(&req);

    make_request(&req, 99999, 2);
    client_send(f, &req);
    ns_cmd_close(&req);
    struct ns_cmd reply;
    char *body = NULL;
    client_reply(f, &reply, &body);
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
