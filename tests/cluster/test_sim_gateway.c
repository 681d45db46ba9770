/* The gateway's handlers over the simulated cluster (sim.h), 3 and 5 full
 * nodes: every request code a client sends, through a follower. A write is
 * seen on every node once the reply came; a read answers from the node's own
 * state; a refusal is a reply, not a closed connection. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "raftns/acl.h"
#include "sim.h"

/* Sends req on c, waits for the reply and checks its code; returns a copy of
 * its body as a string (ns_free it). */
static char *call(struct sim_client *c, struct ns_cmd *req, int32_t code)
{
    int32_t op = sim_client_send(c, req);
    ns_cmd_close(req);
    struct ns_cmd reply;
    assert_non_null(sim_wait_reply(c, op, 30000, &reply));
    if (reply.code != code) {
        fail_msg("request %d: code %d (%s), want %d", (int)req->code,
                 (int)reply.code, reply.remark != NULL ? reply.remark : "",
                 (int)code);
    }
    char *body = ns_strndup(reply.body_len > 0 ? (const char *)reply.body : "",
                            reply.body_len);
    assert_non_null(body);
    ns_cmd_close(&reply);
    return body;
}

static void call_expect(struct sim_client *c, struct ns_cmd *req, int32_t code,
                        const char *in_body)
{
    char *body = call(c, req, code);
    if (in_body != NULL && strstr(body, in_body) == NULL) {
        fail_msg("request %d: body lacks %s: %s", (int)req->code, in_body,
                 body);
    }
    ns_free(body);
}

static void with(struct ns_cmd *req, const char *key, const char *value)
{
    assert_int_equal(ns_cmd_ext_set(req, key, value), 0);
}

static void route_on_every_node(struct sim *s, const char *topic, int32_t code,
                                const char *in_body)
{
    for (unsigned i = 0; i < s->n; i++) {
        struct sim_client *c = sim_client(s, i);
        struct ns_cmd req;
        sim_request(&req, NS_CODE_GET_ROUTEINFO_BY_TOPIC);
        with(&req, "topic", topic);
        call_expect(c, &req, code, in_body);
    }
}

static const char TOPIC_C_ROUTE[] =
    "{\"queueDatas\":[{\"brokerName\":\"broker-a\",\"perm\":6,"
    "\"readQueueNums\":2,\"writeQueueNums\":2,\"topicSysFlag\":0}]}";

/* Registration, the route reads, write permissions, topics, the namesrv
 * config, KV, data versions and heartbeats, and unregistration, through a
 * follower. */
static void test_every_request_through_a_follower(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    struct sim_client *c = sim_client(s, sim_follower(s, l, 0));
    struct ns_cmd req;

    sim_register_request(&req, "broker-a", "10.1.0.1:10911", 0);
    call_expect(c, &req, NS_CODE_SUCCESS, NULL);
    sim_settle(s);
    route_on_every_node(s, "TopicA", NS_CODE_SUCCESS, "broker-a");

    sim_request(&req, NS_CODE_GET_BROKER_CLUSTER_INFO);
    call_expect(c, &req, NS_CODE_SUCCESS, "c1");
    sim_request(&req, NS_CODE_GET_ALL_TOPIC_LIST_FROM_NAMESERVER);
    call_expect(c, &req, NS_CODE_SUCCESS, "TopicA");
    sim_request(&req, NS_CODE_GET_TOPICS_BY_CLUSTER);
    with(&req, "cluster", "c1");
    call_expect(c, &req, NS_CODE_SUCCESS, "TopicB");
    sim_request(&req, NS_CODE_GET_SYSTEM_TOPIC_LIST_FROM_NS);
    call_expect(c, &req, NS_CODE_SUCCESS, "c1");
    sim_request(&req, NS_CODE_GET_UNIT_TOPIC_LIST);
    call_expect(c, &req, NS_CODE_SUCCESS, "topicList");
    sim_request(&req, NS_CODE_GET_HAS_UNIT_SUB_TOPIC_LIST);
    call_expect(c, &req, NS_CODE_SUCCESS, "topicList");
    sim_request(&req, NS_CODE_GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST);
    call_expect(c, &req, NS_CODE_SUCCESS, "topicList");
    sim_request(&req, NS_CODE_GET_BROKER_MEMBER_GROUP);
    with(&req, "clusterName", "c1");
    with(&req, "brokerName", "broker-a");
    call_expect(c, &req, NS_CODE_SUCCESS, "10.1.0.1:10911");

    sim_request(&req, NS_CODE_WIPE_WRITE_PERM_OF_BROKER);
    with(&req, "brokerName", "broker-a");
    call_expect(c, &req, NS_CODE_SUCCESS, NULL);
    sim_settle(s);
    route_on_every_node(s, "TopicA", NS_CODE_SUCCESS, "\"perm\":4");
    sim_request(&req, NS_CODE_ADD_WRITE_PERM_OF_BROKER);
    with(&req, "brokerName", "broker-a");
    call_expect(c, &req, NS_CODE_SUCCESS, NULL);
    sim_settle(s);
    route_on_every_node(s, "TopicA", NS_CODE_SUCCESS, "\"perm\":6");

    sim_request(&req, NS_CODE_REGISTER_TOPIC_IN_NAMESRV);
    with(&req, "topic", "TopicC");
    req.body = (const uint8_t *)TOPIC_C_ROUTE;
    req.body_len = strlen(TOPIC_C_ROUTE);
    call_expect(c, &req, NS_CODE_SUCCESS, NULL);
    sim_settle(s);
    route_on_every_node(s, "TopicC", NS_CODE_SUCCESS, "broker-a");
    sim_request(&req, NS_CODE_DELETE_TOPIC_IN_NAMESRV);
    with(&req, "topic", "TopicC");
    call_expect(c, &req, NS_CODE_SUCCESS, NULL);
    sim_settle(s);
    route_on_every_node(s, "TopicC", NS_CODE_TOPIC_NOT_EXIST, NULL);

    static const char props[] = "orderMessageEnable=true\n";
    sim_request(&req, NS_CODE_UPDATE_NAMESRV_CONFIG);
    req.body = (const uint8_t *)props;
    req.body_len = strlen(props);
    call_expect(c, &req, NS_CODE_SUCCESS, NULL);
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        sim_request(&req, NS_CODE_GET_NAMESRV_CONFIG);
        call_expect(sim_client(s, i), &req, NS_CODE_SUCCESS,
                    "orderMessageEnable=true");
    }

    int32_t op = sim_send_kv_put(c, "k", "v");
    struct ns_cmd reply;
    assert_non_null(sim_wait_reply(c, op, 30000, &reply));
    assert_int_equal(reply.code, NS_CODE_SUCCESS);
    ns_cmd_close(&reply);
    sim_request(&req, NS_CODE_GET_KVLIST_BY_NAMESPACE);
    with(&req, "namespace", "sim");
    call_expect(c, &req, NS_CODE_SUCCESS, "\"k\"");
    sim_request(&req, NS_CODE_DELETE_KV_CONFIG);
    with(&req, "namespace", "sim");
    with(&req, "key", "k");
    call_expect(c, &req, NS_CODE_SUCCESS, NULL);
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        assert_null(sim_kv(s, i, "k"));
    }

    static const char dv[] =
        "{\"counter\":1,\"stateVersion\":0,\"timestamp\":1700000000000}";
    sim_request(&req, NS_CODE_QUERY_DATA_VERSION);
    with(&req, "brokerName", "broker-a");
    with(&req, "brokerAddr", "10.1.0.1:10911");
    with(&req, "clusterName", "c1");
    with(&req, "brokerId", "0");
    req.body = (const uint8_t *)dv;
    req.body_len = strlen(dv);
    call_expect(c, &req, NS_CODE_SUCCESS, NULL);
    sim_request(&req, NS_CODE_BROKER_HEARTBEAT);
    with(&req, "clusterName", "c1");
    with(&req, "brokerAddr", "10.1.0.1:10911");
    with(&req, "brokerName", "broker-a");
    req.flag = NS_FLAG_ONEWAY;
    sim_client_send(c, &req);
    ns_cmd_close(&req);
    sim_request(&req, NS_CODE_STATUS);
    call_expect(c, &req, NS_CODE_SUCCESS, "\"leader\"");

    sim_request(&req, NS_CODE_UNREGISTER_BROKER);
    with(&req, "brokerName", "broker-a");
    with(&req, "brokerAddr", "10.1.0.1:10911");
    with(&req, "clusterName", "c1");
    with(&req, "brokerId", "0");
    call_expect(c, &req, NS_CODE_SUCCESS, NULL);
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        assert_int_equal(ns_route_n_brokers(s->nodes[i].state.route), 0);
    }
    route_on_every_node(s, "TopicA", NS_CODE_TOPIC_NOT_EXIST, NULL);
}

/* Requests that are wrong get a reply that says so; the connection stays
 * open and serves the next request. */
static void test_refusals_are_replies(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    struct sim_client *c = sim_client(s, sim_follower(s, l, 0));
    struct ns_cmd req;
    sim_request(&req, NS_CODE_GET_ROUTEINFO_BY_TOPIC);
    with(&req, "topic", "NoSuchTopic");
    call_expect(c, &req, NS_CODE_TOPIC_NOT_EXIST, NULL);
    sim_request(&req, 4242);
    call_expect(c, &req, NS_CODE_REQUEST_CODE_NOT_SUPPORTED, NULL);
    static const char start_up[] = "listenPort=1\n";
    sim_request(&req, NS_CODE_UPDATE_NAMESRV_CONFIG);
    req.body = (const uint8_t *)start_up;
    req.body_len = strlen(start_up);
    call_expect(c, &req, NS_CODE_SYSTEM_ERROR, NULL);
    static const char acl[] = "aclEnable=true\n";
    sim_request(&req, NS_CODE_UPDATE_NAMESRV_CONFIG);
    req.body = (const uint8_t *)acl;
    req.body_len = strlen(acl);
    call_expect(c, &req, NS_CODE_NO_PERMISSION, NULL);
    sim_request(&req, NS_CODE_REGISTER_TOPIC_IN_NAMESRV);
    with(&req, "topic", "TopicX");
    req.body = (const uint8_t *)"not json";
    req.body_len = 8;
    call_expect(c, &req, NS_CODE_SYSTEM_ERROR, NULL);
    /* a private code from a client without the cluster secret */
    sim_request(&req, NS_CODE_MEMBER_LIST);
    call_expect(c, &req, NS_CODE_NO_PERMISSION, NULL);
    sim_request(&req, NS_CODE_GET_KV_CONFIG);
    with(&req, "namespace", "sim");
    with(&req, "key", "none");
    call_expect(c, &req, NS_CODE_QUERY_NOT_FOUND, NULL);
    /* broker requests Java would throw on: the exception reply */
    sim_request(&req, NS_CODE_UNREGISTER_BROKER); /* no brokerId */
    with(&req, "brokerName", "broker-a");
    call_expect(c, &req, NS_CODE_SYSTEM_ERROR, NULL);
    sim_request(&req, NS_CODE_QUERY_DATA_VERSION); /* no body */
    with(&req, "brokerName", "broker-a");
    with(&req, "brokerAddr", "10.1.0.1:10911");
    with(&req, "clusterName", "c1");
    call_expect(c, &req, NS_CODE_SYSTEM_ERROR, NULL);
    sim_request(&req, NS_CODE_QUERY_DATA_VERSION); /* not a DataVersion */
    with(&req, "brokerName", "broker-a");
    with(&req, "brokerAddr", "10.1.0.1:10911");
    with(&req, "clusterName", "c1");
    req.body = (const uint8_t *)"[1,2]";
    req.body_len = 5;
    call_expect(c, &req, NS_CODE_SYSTEM_ERROR, NULL);
    sim_register_request(&req, "broker-a", "10.1.0.1:10911", 0);
    req.body = (const uint8_t *)"{\"topicConfigSerializeWrapper\":";
    req.body_len = strlen((const char *)req.body);
    call_expect(c, &req, NS_CODE_SYSTEM_ERROR, NULL);
    sim_register_request(&req, "broker-a", "10.1.0.1:10911", 0);
    req.version = 100; /* a 4.x client before V3_0_11 sees fastjson's text */
    req.body = (const uint8_t *)"{\"topicConfigSerializeWrapper\":";
    req.body_len = strlen((const char *)req.body);
    call_expect(c, &req, NS_CODE_SYSTEM_ERROR, NULL);
    /* a data version query of a broker nobody registered: "changed" */
    static const char dv[] =
        "{\"counter\":1,\"stateVersion\":0,\"timestamp\":1700000000000}";
    sim_request(&req, NS_CODE_QUERY_DATA_VERSION);
    with(&req, "brokerName", "broker-z");
    with(&req, "brokerAddr", "10.1.0.26:10911");
    with(&req, "clusterName", "c1");
    req.body = (const uint8_t *)dv;
    req.body_len = strlen(dv);
    call_expect(c, &req, NS_CODE_SUCCESS, NULL);
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        assert_int_equal(ns_route_n_brokers(s->nodes[i].state.route), 0);
    }
    assert_non_null(c->conn);
}

static void update_config(struct sim *s, struct sim_client *c,
                          const char *props)
{
    struct ns_cmd req;
    sim_request(&req, NS_CODE_UPDATE_NAMESRV_CONFIG);
    req.body = (const uint8_t *)props;
    req.body_len = strlen(props);
    call_expect(c, &req, NS_CODE_SUCCESS, NULL);
    sim_settle(s);
}

/* Replicated settings change what every node answers: with
 * orderMessageEnable a route carries the topic's order configuration (and a
 * registration's reply the whole namespace); with needWaitForService a
 * freshly started cluster answers routes "not ready" until the wait is
 * over, the follower after asking the leader. */
static void test_route_settings(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    struct sim_client *c = sim_client(s, sim_follower(s, l, 0));
    struct ns_cmd req;
    sim_register_request(&req, "broker-a", "10.1.0.1:10911", 0);
    call_expect(c, &req, NS_CODE_SUCCESS, NULL);
    sim_request(&req, NS_CODE_PUT_KV_CONFIG);
    with(&req, "namespace", NS_KV_ORDER_TOPIC_CONFIG);
    with(&req, "key", "TopicA");
    with(&req, "value", "broker-a:4");
    call_expect(c, &req, NS_CODE_SUCCESS, NULL);
    update_config(s, c, "orderMessageEnable=true\n");
    route_on_every_node(s, "TopicA", NS_CODE_SUCCESS, "broker-a:4");
    sim_request(&req, NS_CODE_GET_ROUTEINFO_BY_TOPIC);
    with(&req, "topic", "TopicA");
    with(&req, "acceptStandardJsonOnly", "true");
    call_expect(c, &req, NS_CODE_SUCCESS, "\"orderTopicConf\":\"broker-a:4\"");
    sim_register_request(&req, "broker-b", "10.1.0.2:10911", 0);
    call_expect(c, &req, NS_CODE_SUCCESS, "broker-a:4");

    update_config(s, c,
                  "needWaitForService=true\nwaitSecondsForService=3600\n");
    route_on_every_node(s, "TopicA", NS_CODE_SYSTEM_ERROR, NULL);
    update_config(s, c, "needWaitForService=false\n");
    route_on_every_node(s, "TopicA", NS_CODE_SUCCESS, "broker-b");

    /* admin requests with nothing to do are answered, and change nothing */
    sim_request(&req, NS_CODE_DELETE_TOPIC_IN_NAMESRV);
    call_expect(c, &req, NS_CODE_SUCCESS, NULL);
    sim_request(&req, NS_CODE_REGISTER_TOPIC_IN_NAMESRV);
    with(&req, "topic", "TopicD");
    req.body = (const uint8_t *)"{\"queueDatas\":[]}";
    req.body_len = strlen("{\"queueDatas\":[]}");
    call_expect(c, &req, NS_CODE_SUCCESS, NULL);
    sim_request(&req, NS_CODE_DELETE_TOPIC_IN_NAMESRV);
    with(&req, "topic", "TopicB");
    with(&req, "clusterName", "c1");
    call_expect(c, &req, NS_CODE_SUCCESS, NULL);
    sim_settle(s);
    route_on_every_node(s, "TopicB", NS_CODE_TOPIC_NOT_EXIST, NULL);
    route_on_every_node(s, "TopicD", NS_CODE_TOPIC_NOT_EXIST, NULL);
}

/* --- node-to-node requests from a client --- */

static void forward_of(struct ns_cmd *req, struct ns_buf *b,
                       const struct ns_command *c)
{
    ns_buf_init(b);
    assert_int_equal(ns_command_encode(c, b), 0);
    sim_request(req, NS_CODE_FORWARD);
    req->language = NS_LANG_OTHER;
    req->body = b->data;
    req->body_len = b->len;
}

/* The private codes check who sends them and what: unsigned or replayed
 * requests, a FORWARD to a follower, one that does not decode, one of a
 * command only the leader makes, and a READ_INDEX at a follower are all
 * refused; a well-formed signed FORWARD to the leader is applied. */
static void test_private_requests_are_checked(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    unsigned fo = sim_follower(s, l, 0);
    struct sim_client *cl = sim_client(s, l);
    struct sim_client *cf = sim_client(s, fo);
    struct ns_command kv;
    ns_command_init(&kv, NS_CMD_KV_PUT);
    kv.leader_time_ms = 1;
    kv.u.kv.ns = "sim";
    kv.u.kv.key = "fwd";
    kv.u.kv.value = "direct";
    struct ns_buf b;
    struct ns_cmd req;

    forward_of(&req, &b, &kv); /* unsigned */
    call_expect(cl, &req, NS_CODE_NO_PERMISSION, NULL);
    ns_buf_close(&b);
    forward_of(&req, &b, &kv); /* to a follower */
    sim_sign(&req);
    call_expect(cf, &req, NS_CODE_SYSTEM_ERROR, NULL);
    ns_buf_close(&b);
    sim_request(&req, NS_CODE_FORWARD); /* not a command */
    req.language = NS_LANG_OTHER;
    req.body = (const uint8_t *)"garbage";
    req.body_len = 7;
    sim_sign(&req);
    call_expect(cl, &req, NS_CODE_SYSTEM_ERROR, NULL);
    struct ns_command ck;
    ns_command_init(&ck, NS_CMD_SET_MEMBER); /* the leader's own */
    ck.leader_time_ms = 1;
    ck.u.member.id = 9;
    forward_of(&req, &b, &ck);
    sim_sign(&req);
    call_expect(cl, &req, NS_CODE_NO_PERMISSION, NULL);
    ns_buf_close(&b);
    sim_request(&req, NS_CODE_READ_INDEX); /* at a follower */
    req.language = NS_LANG_OTHER;
    sim_sign(&req);
    call_expect(cf, &req, NS_CODE_SYSTEM_ERROR, NULL);

    forward_of(&req, &b, &kv);
    sim_sign(&req);
    struct ns_cmd copy;
    assert_int_equal(ns_cmd_copy(&req, &copy), 0);
    call_expect(cl, &req, NS_CODE_SUCCESS, NULL);
    call_expect(cl, &copy, NS_CODE_NO_PERMISSION, NULL); /* replayed */
    ns_buf_close(&b);
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        sim_assert_kv(s, i, "fwd", "direct");
    }

    /* the other node-to-node codes: unsigned, without a sender, malformed */
    static const int32_t reports[] = {NS_CODE_LIVENESS_REPORT,
                                      NS_CODE_DIGEST_REPORT};
    for (int k = 0; k < 2; k++) {
        sim_request(&req, reports[k]);
        req.language = NS_LANG_OTHER;
        call_expect(cl, &req, NS_CODE_NO_PERMISSION, NULL);
        sim_request(&req, reports[k]);
        req.language = NS_LANG_OTHER;
        sim_sign(&req);
        call_expect(cl, &req, NS_CODE_SYSTEM_ERROR, NULL);
        sim_request(&req, reports[k]);
        req.language = NS_LANG_OTHER;
        with(&req, NS_EXT_FROM, "2");
        req.body = (const uint8_t *)"\x01\x02\x03";
        req.body_len = 3;
        sim_sign(&req);
        call_expect(cl, &req, NS_CODE_SYSTEM_ERROR, NULL);
    }
    sim_request(&req, NS_CODE_STATE_FETCH);
    req.language = NS_LANG_OTHER;
    call_expect(cl, &req, NS_CODE_NO_PERMISSION, NULL);

    /* READ_FORWARD carries a whole request frame: a write is refused, a
     * frame that does not decode too, a read is answered */
    static const int32_t inner_codes[] = {NS_CODE_PUT_KV_CONFIG,
                                          NS_CODE_GET_KV_CONFIG};
    static const int32_t want[] = {NS_CODE_NO_PERMISSION, NS_CODE_SUCCESS};
    for (int k = 0; k < 3; k++) {
        struct ns_cmd inner;
        sim_request(&inner, inner_codes[k % 2]);
        with(&inner, "namespace", "sim");
        with(&inner, "key", "fwd");
        with(&inner, "value", "via-read-forward");
        ns_buf_init(&b);
        assert_int_equal(ns_cmd_encode(&inner, &b), 0);
        ns_cmd_close(&inner);
        sim_request(&req, NS_CODE_READ_FORWARD);
        req.language = NS_LANG_OTHER;
        req.body = b.data;
        req.body_len = k < 2 ? b.len : b.len - 1;
        sim_sign(&req);
        call_expect(cl, &req, k < 2 ? want[k] : NS_CODE_SYSTEM_ERROR, NULL);
        ns_buf_close(&b);
    }
    /* a frame flagged as a response is not a request: dropped, and the
     * connection goes on */
    sim_request(&req, NS_CODE_GET_KV_CONFIG);
    req.flag = NS_FLAG_RESPONSE;
    int32_t dropped = sim_client_send(cl, &req);
    ns_cmd_close(&req);
    sim_request(&req, NS_CODE_GET_KV_CONFIG);
    with(&req, "namespace", "sim");
    with(&req, "key", "fwd");
    call_expect(cl, &req, NS_CODE_SUCCESS, NULL);
    assert_null(sim_find_reply(cl, dropped));
    sim_request(&req, NS_CODE_STATE_FETCH); /* at a follower */
    req.language = NS_LANG_OTHER;
    sim_sign(&req);
    call_expect(cf, &req, NS_CODE_SYSTEM_ERROR, NULL);
}

/* Requests whose fields are missing or wrong, on the write path and the
 * namesrv config, are answered with what was wrong; nothing changes. */
static void test_bad_writes_are_refused(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    struct sim_client *c = sim_client(s, sim_follower(s, l, 0));
    struct ns_cmd req;
    sim_request(&req, NS_CODE_PUT_KV_CONFIG); /* no key */
    with(&req, "namespace", "sim");
    call_expect(c, &req, NS_CODE_SYSTEM_ERROR, NULL);
    sim_request(&req, NS_CODE_DELETE_KV_CONFIG); /* nothing to delete */
    call_expect(c, &req, NS_CODE_SUCCESS, NULL);
    sim_request(&req, NS_CODE_GET_KVLIST_BY_NAMESPACE);
    with(&req, "namespace", "none");
    call_expect(c, &req, NS_CODE_QUERY_NOT_FOUND, NULL);
    sim_request(&req, NS_CODE_UPDATE_NAMESRV_CONFIG); /* empty */
    call_expect(c, &req, NS_CODE_SUCCESS, NULL);
    /* protected keys, a bad value, a malformed unicode escape */
    static const char *const bad[] = {
        "configStorePath=/tmp/x\n", "rocketmqHome=/tmp\n",
        "orderMessageEnable=maybe\n", "orderMessageEnable=\\u00zz\n"};
    static const int32_t codes[] = {NS_CODE_NO_PERMISSION,
                                    NS_CODE_NO_PERMISSION, NS_CODE_SYSTEM_ERROR,
                                    NS_CODE_SYSTEM_ERROR};
    for (int k = 0; k < 4; k++) {
        sim_request(&req, NS_CODE_UPDATE_NAMESRV_CONFIG);
        req.body = (const uint8_t *)bad[k];
        req.body_len = strlen(bad[k]);
        call_expect(c, &req, codes[k], NULL);
    }
    sim_request(&req, NS_CODE_WIPE_WRITE_PERM_OF_BROKER); /* no broker */
    char *body = call(c, &req, NS_CODE_SUCCESS);
    ns_free(body);
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        assert_false(
            ns_config_settings(s->nodes[i].state.config)->order_message_enable);
    }
}

/* A write whose command would be over NS_COMMAND_MAX could never be
 * forwarded in one frame: it is refused at once, nothing written. */
static void test_oversized_write_is_refused(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    struct sim_client *c = sim_client(s, sim_follower(s, l, 0));
    size_t n = NS_FRAME_MAX - 32u * 1024u;
    char *big = malloc(n + 1);
    assert_non_null(big);
    memset(big, 'v', n);
    big[n] = '\0';
    struct ns_cmd req;
    sim_request(&req, NS_CODE_PUT_KV_CONFIG);
    with(&req, "namespace", "sim");
    with(&req, "key", "big");
    with(&req, "value", big);
    free(big);
    int32_t op = sim_client_send(c, &req);
    ns_cmd_close(&req);
    struct ns_cmd reply;
    assert_non_null(sim_wait_reply(c, op, 10000, &reply));
    assert_int_equal(reply.code, NS_CODE_SYSTEM_ERROR);
    assert_non_null(reply.remark);
    assert_non_null(strstr(reply.remark, "too large"));
    ns_cmd_close(&reply);
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        assert_null(sim_kv(s, i, "big"));
    }
}

/* --- registrations --- */

static unsigned n_registered(struct sim *s, unsigned i)
{
    return sim_n_applied(s, i, NS_CMD_REGISTER_BROKER, false);
}

/* An unchanged re-registration (a broker's periodic one) is answered
 * without an entry, on a follower in contact with its leader; a body whose
 * CRC does not match is refused and nothing is written. */
static void test_reregistration_writes_nothing(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    struct sim_client *c = sim_client(s, sim_follower(s, l, 0));
    struct ns_cmd req;
    sim_register_request(&req, "broker-a", "10.1.0.1:10911", 0);
    call_expect(c, &req, NS_CODE_SUCCESS, NULL);
    sim_settle(s);
    for (int k = 0; k < 3; k++) {
        sim_register_request(&req, "broker-a", "10.1.0.1:10911", 0);
        call_expect(c, &req, NS_CODE_SUCCESS, NULL);
    }
    sim_register_request(&req, "broker-b", "10.1.0.2:10911", 0);
    with(&req, "bodyCrc32", "12345");
    call_expect(c, &req, NS_CODE_SYSTEM_ERROR, NULL);
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        assert_int_equal(n_registered(s, i), 1);
        assert_int_equal(ns_route_n_brokers(s->nodes[i].state.route), 1);
    }
}

/* A registration over 256 KiB is decoded off the loop
 * (gateway/register_async.c) and then written like any other. */
static void test_large_registration(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    struct sim_client *c = sim_client(s, sim_follower(s, l, 0));
    struct ns_buf body;
    ns_buf_init(&body);
    ns_buf_printf(&body, "{\"filterServerList\":[],"
                         "\"topicConfigSerializeWrapper\":{\"dataVersion\":"
                         "{\"counter\":1,\"stateVersion\":0,\"timestamp\":"
                         "1700000000000},\"topicConfigTable\":{");
    for (int t = 0; t < 3000; t++) {
        ns_buf_printf(&body,
                      "%s\"BigTopic%04d\":{\"perm\":6,\"readQueueNums\":4,"
                      "\"topicName\":\"BigTopic%04d\",\"topicSysFlag\":0,"
                      "\"writeQueueNums\":4}",
                      t > 0 ? "," : "", t, t);
    }
    ns_buf_printf(&body, "}}}");
    assert_int_equal(body.err, 0);
    assert_true(body.len >= 256u * 1024u);
    struct ns_cmd req;
    sim_register_request(&req, "broker-big", "10.1.0.9:10911", 0);
    req.body = body.data;
    req.body_len = body.len;
    call_expect(c, &req, NS_CODE_SUCCESS, NULL);
    ns_buf_close(&body);
    sim_settle(s);
    route_on_every_node(s, "BigTopic2999", NS_CODE_SUCCESS, "broker-big");
}

/* --- ACL (aclEnable on every node) --- */

static int setup_acl(void **state, unsigned n)
{
    struct sim_opts o = {.acl = true};
    struct sim *s = sim_fixture_new(n, n, &o);
    *state = s;
    return 0;
}

static int setup3_acl(void **state)
{
    return setup_acl(state, 3);
}

static int setup5_acl(void **state)
{
    return setup_acl(state, 5);
}

#define ADMIN_AK "sim-admin"
#define ADMIN_SK "sim-admin-secret"

static void acl_sign(struct ns_cmd *req, const char *ak, const char *sk)
{
    with(req, NS_ACL_EXT_ACCESS_KEY, ak);
    char sig[NS_ACL_SIG_LEN + 1];
    assert_int_equal(ns_acl_sign(req, sk, false, sig), 0);
    with(req, NS_ACL_EXT_SIGNATURE, sig);
}

static bool accounts_everywhere(struct sim *s, void *arg)
{
    (void)arg;
    for (unsigned i = 0; i < s->n; i++) {
        if (s->nodes[i].state.acl.n != 1) {
            return false;
        }
    }
    return true;
}

/* Anonymous reads pass and anonymous writes are refused; the first admin
 * account is created with the cluster secret alone (the table is empty),
 * replicated to every node, and a write signed with it passes on a
 * follower, one with a wrong signature does not. */
static void test_acl_through_a_follower(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    struct sim_client *c = sim_client(s, sim_follower(s, l, 0));
    struct ns_cmd req;
    sim_request(&req, NS_CODE_GET_ROUTEINFO_BY_TOPIC);
    with(&req, "topic", "TopicA");
    call_expect(c, &req, NS_CODE_TOPIC_NOT_EXIST, NULL);
    sim_request(&req, NS_CODE_PUT_KV_CONFIG);
    with(&req, "namespace", "sim");
    with(&req, "key", "k");
    with(&req, "value", "anonymous");
    call_expect(c, &req, NS_CODE_NO_PERMISSION, NULL);

    sim_request(&req, NS_CODE_ACL_LIST);
    sim_sign(&req);
    call_expect(c, &req, NS_CODE_SUCCESS, "\"accounts\":[]");
    sim_request(&req, NS_CODE_ACL_UPDATE);
    with(&req, NS_EXT_ACL_OP, "add");
    with(&req, NS_EXT_ACL_ACCESS_KEY, ADMIN_AK);
    with(&req, NS_EXT_ACL_SECRET_KEY, ADMIN_SK);
    with(&req, NS_EXT_ACL_ROLE, "admin");
    sim_sign(&req);
    call_expect(c, &req, NS_CODE_SUCCESS, NULL);
    assert_true(sim_run_until(s, accounts_everywhere, NULL, 10000));

    sim_request(&req, NS_CODE_PUT_KV_CONFIG);
    with(&req, "namespace", "sim");
    with(&req, "key", "k");
    with(&req, "value", "signed");
    acl_sign(&req, ADMIN_AK, ADMIN_SK);
    call_expect(c, &req, NS_CODE_SUCCESS, NULL);
    sim_request(&req, NS_CODE_PUT_KV_CONFIG);
    with(&req, "namespace", "sim");
    with(&req, "key", "k");
    with(&req, "value", "forged");
    acl_sign(&req, ADMIN_AK, "not-the-secret");
    call_expect(c, &req, NS_CODE_NO_PERMISSION, NULL);
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        sim_assert_kv(s, i, "k", "signed");
    }

    /* now the table has an account: the ACL codes need an admin's
     * signature over the private one */
    sim_request(&req, NS_CODE_ACL_LIST);
    with(&req, NS_ACL_EXT_ACCESS_KEY, ADMIN_AK);
    sim_sign(&req);
    acl_sign(&req, ADMIN_AK, ADMIN_SK);
    call_expect(c, &req, NS_CODE_SUCCESS, ADMIN_AK);
    sim_request(&req, NS_CODE_ACL_UPDATE);
    with(&req, NS_EXT_ACL_OP, "add");
    with(&req, NS_EXT_ACL_ACCESS_KEY, "sim-reader");
    with(&req, NS_EXT_ACL_SECRET_KEY, "sim-reader-secret");
    with(&req, NS_EXT_ACL_ROLE, "reader");
    with(&req, NS_EXT_ACL_NETWORKS, "192.168.0.0/16");
    with(&req, NS_ACL_EXT_ACCESS_KEY, ADMIN_AK);
    sim_sign(&req);
    acl_sign(&req, ADMIN_AK, ADMIN_SK);
    call_expect(c, &req, NS_CODE_SUCCESS, NULL);
    sim_request(&req, NS_CODE_ACL_LIST);
    with(&req, NS_ACL_EXT_ACCESS_KEY, ADMIN_AK);
    sim_sign(&req);
    acl_sign(&req, ADMIN_AK, ADMIN_SK);
    call_expect(c, &req, NS_CODE_SUCCESS, "192.168.0.0\\/16");
    sim_request(&req, NS_CODE_PUT_KV_CONFIG);
    with(&req, "namespace", "sim");
    with(&req, "key", "k");
    with(&req, "value", "reader");
    acl_sign(&req, "sim-reader", "sim-reader-secret");
    call_expect(c, &req, NS_CODE_NO_PERMISSION, NULL); /* a reader */
    sim_request(&req, NS_CODE_GET_KV_CONFIG);
    with(&req, "namespace", "sim");
    with(&req, "key", "k");
    acl_sign(&req, "sim-reader", "sim-reader-secret");
    call_expect(c, &req, NS_CODE_SUCCESS, NULL);
    sim_request(&req, NS_CODE_ACL_UPDATE);
    with(&req, NS_EXT_ACL_OP, "rename");
    with(&req, NS_EXT_ACL_ACCESS_KEY, "sim-reader");
    with(&req, NS_ACL_EXT_ACCESS_KEY, ADMIN_AK);
    sim_sign(&req);
    acl_sign(&req, ADMIN_AK, ADMIN_SK);
    call_expect(c, &req, NS_CODE_SYSTEM_ERROR, NULL);
    sim_request(&req, NS_CODE_ACL_UPDATE);
    with(&req, NS_EXT_ACL_OP, "remove");
    with(&req, NS_EXT_ACL_ACCESS_KEY, "sim-reader");
    with(&req, NS_ACL_EXT_ACCESS_KEY, ADMIN_AK);
    sim_sign(&req);
    acl_sign(&req, ADMIN_AK, ADMIN_SK);
    call_expect(c, &req, NS_CODE_SUCCESS, NULL);
    assert_true(sim_run_until(s, accounts_everywhere, NULL, 10000));
}

static int setup3_seeded(void **state)
{
    struct sim_opts o = {
        .acl = true,
        .acl_accounts =
            "[{\"accessKey\":\"" ADMIN_AK "\",\"secretKey\":\"" ADMIN_SK
            "\",\"role\":\"admin\"}]",
    };
    struct sim *s = sim_fixture_new(3, 3, &o);
    *state = s;
    return 0;
}

/* The cluster file's accounts are proposed once by the first leader and
 * hold on every node: a write signed with one passes at a follower. */
static void test_acl_seeded_from_the_cluster_file(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    assert_true(sim_run_until(s, accounts_everywhere, NULL, 10000));
    for (unsigned i = 0; i < s->n; i++) {
        assert_true(s->nodes[i].state.acl.seeded);
    }
    struct sim_client *c = sim_client(s, sim_follower(s, l, 0));
    struct ns_cmd req;
    sim_request(&req, NS_CODE_PUT_KV_CONFIG);
    with(&req, "namespace", "sim");
    with(&req, "key", "k");
    with(&req, "value", "seeded");
    acl_sign(&req, ADMIN_AK, ADMIN_SK);
    call_expect(c, &req, NS_CODE_SUCCESS, NULL);
    sim_settle(s);
    for (unsigned i = 0; i < s->n; i++) {
        sim_assert_kv(s, i, "k", "seeded");
    }
}

/* Route reads in zone mode (__ZONE_MODE, __ZONE_NAME): a blank zone name is
 * no filter; a zone no master broker is in drops them; a read without a topic
 * is TOPIC_NOT_EXIST. */
static void test_route_zone_mode(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    struct sim_client *c = sim_client(s, l);
    int32_t op = sim_send_register(c, "broker-z", "10.2.0.1:10911", 0);
    struct ns_cmd r;
    assert_non_null(sim_wait_reply(c, op, 30000, &r));
    assert_int_equal(r.code, 0);
    ns_cmd_close(&r);
    static const struct {
        const char *zone;
        bool routed;
    } cases[] = {{"  ", true}, {"z1", false}};
    for (size_t k = 0; k < 2; k++) {
        struct ns_cmd req;
        sim_request(&req, NS_CODE_GET_ROUTEINFO_BY_TOPIC);
        assert_int_equal(ns_cmd_ext_set(&req, "topic", "TopicA"), 0);
        assert_int_equal(ns_cmd_ext_set(&req, "__ZONE_MODE", "true"), 0);
        assert_int_equal(ns_cmd_ext_set(&req, "__ZONE_NAME", cases[k].zone), 0);
        char *body = call(c, &req, NS_CODE_SUCCESS);
        if ((strstr(body, "10.2.0.1:10911") != NULL) != cases[k].routed) {
            fail_msg("zone \"%s\": %s", cases[k].zone, body);
        }
        ns_free(body);
    }
    struct ns_cmd req;
    sim_request(&req, NS_CODE_GET_ROUTEINFO_BY_TOPIC);
    ns_free(call(c, &req, NS_CODE_TOPIC_NOT_EXIST));
}

#define BOTH(test)                                                             \
    cmocka_unit_test_setup_teardown(test, sim_fixture_setup3,                  \
                                    sim_fixture_teardown),                     \
        cmocka_unit_test_setup_teardown(test, sim_fixture_setup5,              \
                                        sim_fixture_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        BOTH(test_route_zone_mode),
        BOTH(test_every_request_through_a_follower),
        BOTH(test_refusals_are_replies),
        BOTH(test_route_settings),
        BOTH(test_private_requests_are_checked),
        BOTH(test_bad_writes_are_refused),
        cmocka_unit_test_setup_teardown(test_oversized_write_is_refused,
                                        sim_fixture_setup3,
                                        sim_fixture_teardown),
        BOTH(test_reregistration_writes_nothing),
        BOTH(test_large_registration),
        cmocka_unit_test_setup_teardown(test_acl_through_a_follower, setup3_acl,
                                        sim_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_acl_through_a_follower, setup5_acl,
                                        sim_fixture_teardown),
        cmocka_unit_test_setup_teardown(test_acl_seeded_from_the_cluster_file,
                                        setup3_seeded, sim_fixture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
