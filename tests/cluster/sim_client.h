/* The clients of the simulated cluster (sim.h) and what they send: a client
 * is a connection without a socket on one node that keeps every reply; the
 * request builders send what RocketMQ clients and brokers send; the state
 * queries read one node's replicated state. Included by sim.h only. */
#ifndef RAFTNS_TEST_SIM_CLIENT_H
#define RAFTNS_TEST_SIM_CLIENT_H

/* --- clients --- */

static inline void sim_client_write(void *arg, const uint8_t *p, size_t n)
{
    struct sim_client *c = arg;
    struct sim_node *nd = &c->sim->nodes[c->node];
    assert_int_equal(ns_buf_append(&c->in, p, n), 0);
    size_t len = 0;
    size_t off = 0;
    while (ns_frame_check(c->in.data + off, c->in.len - off, NS_FRAME_MAX,
                          &len) == 0) {
        assert_true(c->n_replies < SIM_MAX_REPLIES);
        struct sim_reply *r = &c->replies[c->n_replies++];
        struct ns_cmd cmd;
        assert_int_equal(ns_cmd_decode(c->in.data + off, len, &cmd), 0);
        r->opaque = cmd.opaque;
        ns_cmd_close(&cmd);
        r->frame = malloc(len);
        assert_non_null(r->frame);
        memcpy(r->frame, c->in.data + off, len);
        r->len = len;
        /* What the node had applied when it answered: a write through a
         * follower is answered only once the follower applied it. */
        r->applied = ns_node_last_applied(nd->node);
        off += len;
    }
    memmove(c->in.data, c->in.data + off, c->in.len - off);
    c->in.len -= off;
}

static inline void sim_client_closed(void *arg, struct ns_conn *conn)
{
    struct sim_client *c = arg;
    c->conn = NULL;
    sim_conn_closed(c->sim, conn);
}

/* A new client of node (owned by s: closed at teardown, so that a test that
 * fails half-way leaves nothing behind). */
static inline struct sim_client *sim_client(struct sim *s, unsigned node)
{
    assert_true(s->n_clients < SIM_MAX_CLIENTS);
    struct sim_client *c = &s->clients[s->n_clients++];
    memset(c, 0, sizeof *c);
    c->sim = s;
    c->node = node;
    c->next_opaque = 1;
    c->sink.write = sim_client_write;
    c->sink.closed = sim_client_closed;
    c->sink.arg = c;
    ns_buf_init(&c->in);
    assert_int_equal(ns_conn_open_sink(&s->nodes[node].server->net,
                                       "192.168.0.1:40000", &c->sink, &c->conn),
                     0);
    return c;
}

static inline void sim_client_free(struct sim_client *c)
{
    ns_buf_close(&c->in);
    for (unsigned i = 0; i < c->n_replies; i++) {
        free(c->replies[i].frame);
    }
    c->n_replies = 0;
}

/* A request header as a Java 4.9 client sends it. */
static inline void sim_request(struct ns_cmd *c, int32_t code)
{
    ns_cmd_init(c);
    c->code = code;
    c->version = 479;
    c->language = NS_LANG_JAVA;
    c->ser = NS_SER_JSON;
}

/* Sends req (its opaque is set) and returns the opaque. */
static inline int32_t sim_client_send(struct sim_client *c, struct ns_cmd *req)
{
    req->opaque = c->next_opaque++;
    struct ns_buf b;
    ns_buf_init(&b);
    assert_int_equal(ns_cmd_encode(req, &b), 0);
    assert_non_null(c->conn);
    ns_conn_input(c->conn, b.data, b.len);
    ns_buf_close(&b);
    return req->opaque;
}

static inline struct sim_reply *sim_find_reply(struct sim_client *c,
                                               int32_t opaque)
{
    for (unsigned i = 0; i < c->n_replies; i++) {
        if (c->replies[i].opaque == opaque) {
            return &c->replies[i];
        }
    }
    return NULL;
}

struct sim_wait {
    struct sim_client *c;
    int32_t opaque;
};

static inline bool sim_pred_reply(struct sim *s, void *arg)
{
    (void)s;
    struct sim_wait *w = arg;
    return sim_find_reply(w->c, w->opaque) != NULL;
}

/* Steps until the reply to opaque arrives (at most max_ms) and decodes it
 * into out (borrows the stored frame; ns_cmd_close it); NULL when none
 * came. */
static inline struct sim_reply *sim_wait_reply(struct sim_client *c,
                                               int32_t opaque, uint64_t max_ms,
                                               struct ns_cmd *out)
{
    struct sim_wait w = {c, opaque};
    if (!sim_run_until(c->sim, sim_pred_reply, &w, max_ms)) {
        return NULL;
    }
    struct sim_reply *r = sim_find_reply(c, opaque);
    assert_int_equal(ns_cmd_decode(r->frame, r->len, out), 0);
    return r;
}

/* --- requests --- */

/* A stock-shaped REGISTER_BROKER of broker-<name> at addr: TopicA and
 * TopicB, DataVersion 1, heartbeat timeout timeout_ms (0 = the default). */
static const char SIM_REGISTER_BODY[] =
    "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":"
    "{\"counter\":1,\"stateVersion\":0,\"timestamp\":1700000000000},"
    "\"topicConfigTable\":{\"TopicA\":{\"perm\":6,\"readQueueNums\":4,"
    "\"topicName\":\"TopicA\",\"topicSysFlag\":0,\"writeQueueNums\":4},"
    "\"TopicB\":{\"perm\":6,\"readQueueNums\":4,\"topicName\":\"TopicB\","
    "\"topicSysFlag\":0,\"writeQueueNums\":4}}}}";

static inline void sim_register_request(struct ns_cmd *req, const char *name,
                                        const char *addr, unsigned timeout_ms)
{
    sim_request(req, NS_CODE_REGISTER_BROKER);
    assert_int_equal(ns_cmd_ext_set(req, "brokerName", name), 0);
    assert_int_equal(ns_cmd_ext_set(req, "brokerAddr", addr), 0);
    assert_int_equal(ns_cmd_ext_set(req, "clusterName", "c1"), 0);
    assert_int_equal(ns_cmd_ext_set(req, "haServerAddr", addr), 0);
    assert_int_equal(ns_cmd_ext_set(req, "brokerId", "0"), 0);
    assert_int_equal(ns_cmd_ext_set(req, "enableActingMaster", "false"), 0);
    if (timeout_ms != 0) {
        char t[24];
        snprintf(t, sizeof t, "%u", timeout_ms);
        assert_int_equal(ns_cmd_ext_set(req, "heartbeatTimeoutMillis", t), 0);
    }
    req->body = (const uint8_t *)SIM_REGISTER_BODY;
    req->body_len = strlen(SIM_REGISTER_BODY);
}

static inline int32_t sim_send_register(struct sim_client *c, const char *name,
                                        const char *addr, unsigned timeout_ms)
{
    struct ns_cmd req;
    sim_register_request(&req, name, addr, timeout_ms);
    int32_t op = sim_client_send(c, &req);
    ns_cmd_close(&req);
    return op;
}

static inline int32_t sim_send_kv_put(struct sim_client *c, const char *key,
                                      const char *value)
{
    struct ns_cmd req;
    sim_request(&req, NS_CODE_PUT_KV_CONFIG);
    assert_int_equal(ns_cmd_ext_set(&req, "namespace", "sim"), 0);
    assert_int_equal(ns_cmd_ext_set(&req, "key", key), 0);
    assert_int_equal(ns_cmd_ext_set(&req, "value", value), 0);
    int32_t op = sim_client_send(c, &req);
    ns_cmd_close(&req);
    return op;
}

static inline int32_t sim_send_kv_get(struct sim_client *c, const char *key,
                                      bool consistent)
{
    struct ns_cmd req;
    sim_request(&req, NS_CODE_GET_KV_CONFIG);
    assert_int_equal(ns_cmd_ext_set(&req, "namespace", "sim"), 0);
    assert_int_equal(ns_cmd_ext_set(&req, "key", key), 0);
    if (consistent) {
        assert_int_equal(ns_cmd_ext_set(&req, NS_EXT_CONSISTENT, "true"), 0);
    }
    int32_t op = sim_client_send(c, &req);
    ns_cmd_close(&req);
    return op;
}

/* Signs req with the cluster secret (an operator's private request). */
static inline void sim_sign(struct ns_cmd *req)
{
    static uint64_t counter;
    uint8_t nonce[NS_SIGN_NONCE_LEN] = {0};
    counter++;
    memcpy(nonce, &counter, sizeof counter);
    assert_int_equal(ns_sign_request(req, SIM_SECRET, strlen(SIM_SECRET),
                                     ns_clock_wall_ms(), nonce),
                     0);
}

static inline const char *sim_kv(struct sim *s, unsigned i, const char *key)
{
    return ns_kv_find(s->nodes[i].state.kv, "sim", key);
}

/* Node i's value of key is want (a missing key fails, it does not crash). */
#define sim_assert_kv(s, i, key, want)                                         \
    do {                                                                       \
        const char *got_ = sim_kv((s), (i), (key));                            \
        assert_non_null(got_);                                                 \
        assert_string_equal(got_, (want));                                     \
    } while (0)

/* How many entries of type node i applied (since its start), and how many
 * of them the request-id check let through (NS_REQID_NEW). */
static inline unsigned sim_n_applied(struct sim *s, unsigned i, int type,
                                     bool only_new)
{
    unsigned n = 0;
    for (unsigned k = 0; k < s->nodes[i].n_applied; k++) {
        const struct sim_applied *a = &s->nodes[i].applied[k];
        n += a->type == type && (!only_new || a->reqid == NS_REQID_NEW);
    }
    return n;
}

#endif
