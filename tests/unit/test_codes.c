/* Tests of the RocketMQ code table (include/raftns/codes.h): every stock code
 * has the number and the Java name docs/protocol.md §3 gives it, the name
 * lookups know each kind apart, and the private codes stay out of the stock
 * range. The expected pairs are written here, not taken from the table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "raftns/codes.h"

struct pair {
    int32_t code;
    const char *name;
};

static const struct pair responses[] = {
    {0, "SUCCESS"},
    {1, "SYSTEM_ERROR"},
    {2, "SYSTEM_BUSY"},
    {3, "REQUEST_CODE_NOT_SUPPORTED"},
    {16, "NO_PERMISSION"},
    {17, "TOPIC_NOT_EXIST"},
    {22, "QUERY_NOT_FOUND"},
    {1500, "GO_AWAY"},
    /* the controller's (docs/controller.md §3) */
    {2000, "CONTROLLER_FENCED_MASTER_EPOCH"},
    {2001, "CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH"},
    {2002, "CONTROLLER_INVALID_MASTER"},
    {2003, "CONTROLLER_INVALID_REPLICAS"},
    {2004, "CONTROLLER_MASTER_NOT_AVAILABLE"},
    {2005, "CONTROLLER_INVALID_REQUEST"},
    {2006, "CONTROLLER_BROKER_NOT_ALIVE"},
    {2007, "CONTROLLER_NOT_LEADER"},
    {2008, "CONTROLLER_BROKER_METADATA_NOT_EXIST"},
    {2009, "CONTROLLER_INVALID_CLEAN_BROKER_METADATA"},
    {2010, "CONTROLLER_BROKER_NEED_TO_BE_REGISTERED"},
    {2011, "CONTROLLER_MASTER_STILL_EXIST"},
    {2012, "CONTROLLER_ELECT_MASTER_FAILED"},
    {2013, "CONTROLLER_ALTER_SYNC_STATE_SET_FAILED"},
    {2014, "CONTROLLER_BROKER_ID_INVALID"},
};

static const struct pair requests[] = {
    {100, "PUT_KV_CONFIG"},
    {101, "GET_KV_CONFIG"},
    {102, "DELETE_KV_CONFIG"},
    {103, "REGISTER_BROKER"},
    {104, "UNREGISTER_BROKER"},
    {105, "GET_ROUTEINFO_BY_TOPIC"},
    {106, "GET_BROKER_CLUSTER_INFO"},
    {205, "WIPE_WRITE_PERM_OF_BROKER"},
    {206, "GET_ALL_TOPIC_LIST_FROM_NAMESERVER"},
    {216, "DELETE_TOPIC_IN_NAMESRV"},
    {217, "REGISTER_TOPIC_IN_NAMESRV"},
    {219, "GET_KVLIST_BY_NAMESPACE"},
    {224, "GET_TOPICS_BY_CLUSTER"},
    {304, "GET_SYSTEM_TOPIC_LIST_FROM_NS"},
    {311, "GET_UNIT_TOPIC_LIST"},
    {312, "GET_HAS_UNIT_SUB_TOPIC_LIST"},
    {313, "GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST"},
    {318, "UPDATE_NAMESRV_CONFIG"},
    {319, "GET_NAMESRV_CONFIG"},
    {322, "QUERY_DATA_VERSION"},
    {327, "ADD_WRITE_PERM_OF_BROKER"},
    {901, "GET_BROKER_MEMBER_GROUP"},
    {904, "BROKER_HEARTBEAT"},
    {1001, "CONTROLLER_ALTER_SYNC_STATE_SET"},
    {1002, "CONTROLLER_ELECT_MASTER"},
    {1003, "CONTROLLER_REGISTER_BROKER"},
    {1004, "CONTROLLER_GET_REPLICA_INFO"},
    {1005, "CONTROLLER_GET_METADATA_INFO"},
    {1006, "CONTROLLER_GET_SYNC_STATE_DATA"},
    {1008, "NOTIFY_BROKER_ROLE_CHANGED"},
    {1009, "UPDATE_CONTROLLER_CONFIG"},
    {1010, "GET_CONTROLLER_CONFIG"},
    {1011, "CLEAN_BROKER_DATA"},
    {1012, "CONTROLLER_GET_NEXT_BROKER_ID"},
    {1013, "CONTROLLER_APPLY_BROKER_ID"},
};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void test_names(void **state)
{
    (void)state;
    for (size_t i = 0; i < N(responses); i++) {
        assert_non_null(ns_code_response_name(responses[i].code));
        assert_string_equal(ns_code_response_name(responses[i].code),
                            responses[i].name);
    }
    for (size_t i = 0; i < N(requests); i++) {
        assert_non_null(ns_code_request_name(requests[i].code));
        assert_string_equal(ns_code_request_name(requests[i].code),
                            requests[i].name);
    }
}

/* Exactly the rows above: a row added to or dropped from the table shows. */
static void test_nothing_else(void **state)
{
    (void)state;
    size_t n_req = 0, n_rsp = 0;
    for (int32_t code = -1; code <= 10000; code++) {
        n_req += ns_code_request_name(code) != NULL;
        n_rsp += ns_code_response_name(code) != NULL;
    }
    assert_int_equal(n_req, N(requests));
    assert_int_equal(n_rsp, N(responses));
    /* A request number is not a reply name, nor the other way round. */
    assert_null(ns_code_response_name(105));
    assert_null(ns_code_request_name(17));
    assert_null(ns_code_request_name(NS_CODE_FORWARD));
}

static void test_constants(void **state)
{
    (void)state;
    assert_int_equal(NS_CODE_SUCCESS, 0);
    assert_int_equal(NS_CODE_SYSTEM_ERROR, 1);
    assert_int_equal(NS_CODE_REQUEST_CODE_NOT_SUPPORTED, 3);
    assert_int_equal(NS_CODE_NO_PERMISSION, 16);
    assert_int_equal(NS_CODE_TOPIC_NOT_EXIST, 17);
    assert_int_equal(NS_CODE_QUERY_NOT_FOUND, 22);
    assert_int_equal(NS_CODE_GET_ROUTEINFO_BY_TOPIC, 105);
    assert_int_equal(NS_CODE_REGISTER_BROKER, 103);
    assert_int_equal(NS_CODE_BROKER_HEARTBEAT, 904);
    /* The private codes sit above every stock request code. */
    for (size_t i = 0; i < N(requests); i++) {
        assert_true(requests[i].code < NS_CODE_PRIVATE_MIN);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_nothing_else),
        cmocka_unit_test(test_constants),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
