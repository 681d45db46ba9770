/* The de-duplication step (src/cluster/dedup.c) over the simulated cluster
 * (sim.h): a registration counts as already held, and is answered without a
 * log entry, only when applying it would change nothing under the cluster's
 * replicated settings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "sim.h"

static void call_expect(struct sim_client *c, struct ns_cmd *req, int32_t code)
{
    int32_t op = sim_client_send(c, req);
    ns_cmd_close(req);
    struct ns_cmd reply;
    assert_non_null(sim_wait_reply(c, op, 30000, &reply));
    if (reply.code != code) {
        fail_msg("reply code %d (%s), want %d", (int)reply.code,
                 reply.remark != NULL ? reply.remark : "", (int)code);
    }
    ns_cmd_close(&reply);
}

static void route_on_every_node(struct sim *s, const char *topic, int32_t code)
{
    for (unsigned i = 0; i < s->n; i++) {
        struct ns_cmd req;
        sim_request(&req, NS_CODE_GET_ROUTEINFO_BY_TOPIC);
        assert_int_equal(ns_cmd_ext_set(&req, "topic", topic), 0);
        call_expect(sim_client(s, i), &req, code);
    }
}

/* SIM_REGISTER_BODY without TopicB, with the same DataVersion. */
static const char ONLY_TOPIC_A[] =
    "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{\"dataVersion\":"
    "{\"counter\":1,\"stateVersion\":0,\"timestamp\":1700000000000},"
    "\"topicConfigTable\":{\"TopicA\":{\"perm\":6,\"readQueueNums\":4,"
    "\"topicName\":\"TopicA\",\"topicSysFlag\":0,\"writeQueueNums\":4}}}}";

/* With deleteTopicWithBrokerRegistration, a re-registration through a
 * follower that lacks a topic of the broker (same DataVersion) is not
 * "unchanged": it is replicated, and the topic is gone on every node. */
static void test_registration_lacking_a_topic_is_not_held(void **state)
{
    struct sim *s = *state;
    unsigned l = sim_settle(s);
    struct sim_client *c = sim_client(s, sim_follower(s, l, 0));
    struct ns_cmd req;
    sim_request(&req, NS_CODE_UPDATE_NAMESRV_CONFIG);
    static const char props[] = "deleteTopicWithBrokerRegistration=true\n";
    req.body = (const uint8_t *)props;
    req.body_len = strlen(props);
    call_expect(c, &req, NS_CODE_SUCCESS);
    sim_register_request(&req, "broker-a", "10.1.0.1:10911", 0);
    call_expect(c, &req, NS_CODE_SUCCESS);
    sim_settle(s);
    route_on_every_node(s, "TopicB", NS_CODE_SUCCESS);
    unsigned before = sim_n_applied(s, l, NS_CMD_REGISTER_BROKER, true);
    sim_register_request(&req, "broker-a", "10.1.0.1:10911", 0);
    req.body = (const uint8_t *)ONLY_TOPIC_A;
    req.body_len = strlen(ONLY_TOPIC_A);
    call_expect(c, &req, NS_CODE_SUCCESS);
    sim_settle(s);
    route_on_every_node(s, "TopicA", NS_CODE_SUCCESS);
    route_on_every_node(s, "TopicB", NS_CODE_TOPIC_NOT_EXIST);
    for (unsigned i = 0; i < s->n; i++) {
        assert_int_equal(sim_n_applied(s, i, NS_CMD_REGISTER_BROKER, true),
                         before + 1);
    }
}

#define BOTH(test)                                                             \
    cmocka_unit_test_setup_teardown(test, sim_fixture_setup3,                  \
                                    sim_fixture_teardown),                     \
        cmocka_unit_test_setup_teardown(test, sim_fixture_setup5,              \
                                        sim_fixture_teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        BOTH(test_registration_lacking_a_topic_is_not_held),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
