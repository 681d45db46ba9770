/* A libuv RocketMQ client for the in-process server tests of tests/cluster/
 * (test_server_loop.c, test_server_forward.c): connect to a server on the same
 * loop, send requests, wait for replies, all with a deadline. Header-only
 * (each test is its own executable); include after cmocka.h. */
#ifndef RAFTNS_TEST_INPROC_CLIENT_H
#define RAFTNS_TEST_INPROC_CLIENT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "raftns/alloc.h"
#include "raftns/buf.h"
#include "raftns/remoting.h"

#define INPROC_CLIENT_DEADLINE_MS 20000

struct inproc_client {
    uv_tcp_t tcp; /* first: the handle is the client */
    uv_connect_t connect;
    bool opened; /* the handle was initialised: it must be closed */
    bool connected;
    bool closed;
    struct ns_buf in;
    char chunk[65536];
};

/* A stock-shaped REGISTER_BROKER body: TopicA and TopicB, DataVersion 1. */
static const char INPROC_REGISTER_BODY[] =
    "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":"
    "{\"counter\":1,\"stateVersion\":0,\"timestamp\":1700000000000},"
    "\"topicConfigTable\":{\"TopicA\":{\"perm\":6,\"readQueueNums\":4,"
    "\"topicName\":\"TopicA\",\"topicSysFlag\":0,\"writeQueueNums\":4},"
    "\"TopicB\":{\"perm\":6,\"readQueueNums\":4,\"topicName\":\"TopicB\","
    "\"topicSysFlag\":0,\"writeQueueNums\":4}}}}";

static inline void inproc_client_on_connect(uv_connect_t *req, int status)
{
    struct inproc_client *c = req->data;
    c->connected = status == 0;
}

static inline void inproc_client_on_alloc(uv_handle_t *h, size_t suggested,
                                          uv_buf_t *buf)
{
    struct inproc_client *c = (struct inproc_client *)h;
    (void)suggested;
    buf->base = c->chunk;
    buf->len = sizeof c->chunk;
}

static inline void inproc_client_on_read(uv_stream_t *s, ssize_t n,
                                         const uv_buf_t *buf)
{
    struct inproc_client *c = (struct inproc_client *)s;
    if (n > 0) {
        assert_int_equal(ns_buf_append(&c->in, buf->base, (size_t)n), 0);
    }
}

static inline void inproc_client_on_write(uv_write_t *w, int status)
{
    assert_int_equal(status, 0);
    ns_free(w->data);
    free(w);
}

static inline void inproc_client_on_closed(uv_handle_t *h)
{
    ((struct inproc_client *)h)->closed = true;
}

static inline bool inproc_client_has_frame(const struct inproc_client *c)
{
    size_t len = 0;
    return ns_frame_check(c->in.data, c->in.len, NS_FRAME_MAX, &len) == 0;
}

/* Connects c (its in buffer initialised by the caller) to 127.0.0.1:port and
 * starts reading; fails the test if that takes past the deadline. */
static inline void inproc_client_connect(uv_loop_t *loop,
                                         struct inproc_client *c, int port)
{
    struct sockaddr_in sa;
    uv_ip4_addr("127.0.0.1", port, &sa);
    uv_tcp_init(loop, &c->tcp);
    c->opened = true;
    c->connect.data = c;
    assert_int_equal(uv_tcp_connect(&c->connect, &c->tcp,
                                    (struct sockaddr *)&sa,
                                    inproc_client_on_connect),
                     0);
    uint64_t end = uv_now(loop) + INPROC_CLIENT_DEADLINE_MS;
    while (!c->connected && uv_now(loop) < end) {
        uv_run(loop, UV_RUN_ONCE);
    }
    assert_true(c->connected);
    assert_int_equal(uv_read_start((uv_stream_t *)&c->tcp,
                                   inproc_client_on_alloc,
                                   inproc_client_on_read),
                     0);
}

/* Closes c if it was opened and is not closing yet; c->closed once done. */
static inline void inproc_client_close(struct inproc_client *c)
{
    if (c->opened && !uv_is_closing((uv_handle_t *)&c->tcp)) {
        uv_close((uv_handle_t *)&c->tcp, inproc_client_on_closed);
    }
}

static inline void inproc_client_send(struct inproc_client *c,
                                      const struct ns_cmd *cmd)
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
        uv_write(w, (uv_stream_t *)&c->tcp, &ub, 1, inproc_client_on_write), 0);
}

/* Waits (deadline) for one reply and decodes it into out; its body is copied
 * into *body (the caller frees it with ns_free). */
static inline void inproc_client_reply(uv_loop_t *loop, struct inproc_client *c,
                                       struct ns_cmd *out, char **body)
{
    uint64_t end = uv_now(loop) + INPROC_CLIENT_DEADLINE_MS;
    while (!inproc_client_has_frame(c) && uv_now(loop) < end) {
        uv_run(loop, UV_RUN_ONCE);
    }
    size_t len = 0;
    assert_int_equal(ns_frame_check(c->in.data, c->in.len, NS_FRAME_MAX, &len),
                     0);
    assert_int_equal(ns_cmd_decode(c->in.data, len, out), 0);
    *body = ns_strndup(out->body_len > 0 ? (const char *)out->body : "",
                       out->body_len);
    assert_non_null(*body);
    out->body = NULL;
    out->body_len = 0;
    memmove(c->in.data, c->in.data + len, c->in.len - len);
    c->in.len -= len;
}

/* A request header as a Java 4.9 client sends it. */
static inline void inproc_make_request(struct ns_cmd *c, int32_t code,
                                       int32_t opaque)
{
    ns_cmd_init(c);
    c->code = code;
    c->opaque = opaque;
    c->version = 479;
    c->language = NS_LANG_JAVA;
    c->ser = NS_SER_JSON;
}

#endif
