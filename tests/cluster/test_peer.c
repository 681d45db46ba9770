/* Cluster test: the node-to-node client (src/net/peer.c) over a real loop and
 * a loopback server in the same loop. Requests made in one loop turn leave in
 * one write, whether the turn's callbacks were I/O (a reply starting the
 * next burst) or a timer (a burst with nothing else to wake the loop); every
 * request gets its own answer. Writes are counted by the kernel
 * (/proc/self/io, syscw): a burst costs the client's write and the server's
 * answer, where a write per request would cost one per request. */
#include <stdio.h>

#include "fixture_util.h"
#include "net/peer.h"
#include "raftns/buf.h"

#define BURST 20
#define BURSTS 4

struct server {
    uv_tcp_t listener;
    uv_tcp_t conn;
    bool accepted;
    struct ns_buf rbuf;
    unsigned requests;
};

struct client {
    uv_loop_t *loop;
    struct ns_peer *peer;
    uv_timer_t timer;
    unsigned answered[BURSTS];
    unsigned bursts_sent;
    int32_t last_code;
    bool bad_answer;
};

static struct server srv;
static struct client cli;

static void srv_alloc(uv_handle_t *h, size_t hint, uv_buf_t *b)
{
    (void)h;
    (void)hint;
    static char chunk[65536];
    *b = uv_buf_init(chunk, sizeof chunk);
}

static void srv_written(uv_write_t *w, int status)
{
    (void)status;
    ns_free(w->data);
    ns_free(w);
}

/* Answers every whole frame with a response of the same opaque, its code
 * echoed in the remark's place (the response code) so the client can check
 * it got its own answer. */
static void srv_answer(struct server *s)
{
    size_t used = 0, flen = 0;
    struct ns_buf out;
    ns_buf_init(&out);
    while (ns_frame_check(s->rbuf.data + used, s->rbuf.len - used, 1u << 20,
                          &flen) == 0) {
        struct ns_cmd req, resp;
        assert_int_equal(ns_cmd_decode(s->rbuf.data + used, flen, &req), 0);
        ns_cmd_init(&resp);
        resp.code = req.code;
        resp.opaque = req.opaque;
        resp.flag = NS_FLAG_RESPONSE;
        assert_int_equal(ns_cmd_encode(&resp, &out), 0);
        ns_cmd_close(&req);
        s->requests++;
        used += flen;
    }
    memmove(s->rbuf.data, s->rbuf.data + used, s->rbuf.len - used);
    s->rbuf.len -= used;
    if (out.len > 0) {
        uv_write_t *w = ns_calloc(1, sizeof *w);
        assert_non_null(w);
        size_t len = 0;
        w->data = ns_buf_take(&out, &len);
        uv_buf_t b = uv_buf_init(w->data, (unsigned)len);
        assert_int_equal(
            uv_write(w, (uv_stream_t *)&s->conn, &b, 1, srv_written), 0);
    }
    ns_buf_close(&out);
}

static void srv_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b)
{
    struct server *s = st->data;
    if (n <= 0) {
        return;
    }
    assert_int_equal(ns_buf_append(&s->rbuf, b->base, (size_t)n), 0);
    srv_answer(s);
}

static void srv_connection(uv_stream_t *l, int status)
{
    struct server *s = l->data;
    assert_int_equal(status, 0);
    uv_tcp_init(l->loop, &s->conn);
    s->conn.data = s;
    assert_int_equal(uv_accept(l, (uv_stream_t *)&s->conn), 0);
    s->accepted = true;
    uv_read_start((uv_stream_t *)&s->conn, srv_alloc, srv_read);
}

static int srv_port(struct server *s)
{
    struct sockaddr_in a;
    int len = sizeof a;
    assert_int_equal(
        uv_tcp_getsockname(&s->listener, (struct sockaddr *)&a, &len), 0);
    return ntohs(a.sin_port);
}

/* Write system calls this process made so far. */
static unsigned long write_calls(void)
{
    FILE *f = fopen("/proc/self/io", "r");
    assert_non_null(f);
    char line[128];
    unsigned long n = 0;
    bool found = false;
    while (fgets(line, sizeof line, f) != NULL) {
        found = found || sscanf(line, "syscw: %lu", &n) == 1;
    }
    fclose(f);
    assert_true(found);
    return n;
}

static void send_burst(struct client *c);

static void answered(void *arg, int status, const struct ns_cmd *reply)
{
    unsigned burst = (unsigned)(uintptr_t)arg;
    if (status != 0 || reply == NULL || reply->code != (int32_t)(100 + burst)) {
        cli.bad_answer = true;
        return;
    }
    cli.answered[burst]++;
    /* The last answer of the first burst starts the second from inside the
     * loop's I/O callbacks. */
    if (burst == 0 && cli.answered[0] == BURST) {
        send_burst(&cli);
    }
}

static void send_burst(struct client *c)
{
    unsigned burst = c->bursts_sent++;
    for (unsigned i = 0; i < BURST; i++) {
        struct ns_cmd req;
        ns_cmd_init(&req);
        req.code = (int32_t)(100 + burst);
        assert_int_equal(ns_peer_request(c->peer, &req, 5000, answered,
                                         (void *)(uintptr_t)burst),
                         0);
    }
}

static void timer_burst(uv_timer_t *t)
{
    send_burst(t->data);
}

/* Runs the loop until burst has every answer (or one was wrong). */
static void run_until_answered(uv_loop_t *loop, unsigned burst)
{
    uint64_t deadline = uv_now(loop) + 10000;
    while (!cli.bad_answer && cli.answered[burst] < BURST &&
           uv_now(loop) < deadline) {
        uv_run(loop, UV_RUN_ONCE);
    }
    assert_false(cli.bad_answer);
    assert_int_equal(cli.answered[burst], BURST);
}

static void test_a_turn_of_requests_is_one_write(void **state)
{
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    memset(&srv, 0, sizeof srv);
    memset(&cli, 0, sizeof cli);
    ns_buf_init(&srv.rbuf);
    uv_tcp_init(&loop, &srv.listener);
    srv.listener.data = &srv;
    struct sockaddr_in any;
    uv_ip4_addr("127.0.0.1", 0, &any);
    assert_int_equal(
        uv_tcp_bind(&srv.listener, (const struct sockaddr *)&any, 0), 0);
    assert_int_equal(
        uv_listen((uv_stream_t *)&srv.listener, 16, srv_connection), 0);
    char addr[32];
    snprintf(addr, sizeof addr, "127.0.0.1:%d", srv_port(&srv));
    cli.loop = &loop;
    assert_int_equal(ns_peer_create(&loop, &cli.peer), 0);
    assert_int_equal(ns_peer_set_addr(cli.peer, addr), 0);

    /* Burst 0 from a timer, burst 1 from the last answer of burst 0. */
    uv_timer_init(&loop, &cli.timer);
    cli.timer.data = &cli;
    uv_timer_start(&cli.timer, timer_burst, 1, 0);
    run_until_answered(&loop, 0);
    run_until_answered(&loop, 1);
    /* Burst 2 from a timer on a connected, idle peer: nothing else wakes the
     * loop, the write must not wait for poll's timeout. */
    unsigned long before = write_calls();
    uint64_t t0 = uv_now(&loop);
    uv_timer_start(&cli.timer, timer_burst, 1, 0);
    run_until_answered(&loop, 2);
    unsigned long writes = write_calls() - before;
    assert_true(uv_now(&loop) - t0 < 1000);
    /* the peer's one write and the server's answers (one write per read) */
    assert_true(writes >= 2 && writes <= 4);
    /* Burst 3 from outside any callback: the loop must not block in poll
     * (for the peer's 50 ms tick) before the frames are written. */
    send_burst(&cli);
    assert_int_equal(uv_backend_timeout(&loop), 0);
    run_until_answered(&loop, 3);
    assert_int_equal(srv.requests, BURSTS * BURST);

    ns_peer_close(cli.peer, NULL, NULL);
    uv_close((uv_handle_t *)&cli.timer, NULL);
    uv_close((uv_handle_t *)&srv.conn, NULL);
    uv_close((uv_handle_t *)&srv.listener, NULL);
    while (uv_run(&loop, UV_RUN_NOWAIT) != 0) {
    }
    assert_int_equal(uv_loop_close(&loop), 0);
    ns_buf_close(&srv.rbuf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_turn_of_requests_is_one_write),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
