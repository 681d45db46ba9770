/* Unit tests of the pure cluster file parser (src/route/cluster_config.c):
 * every form it accepts (with the values it stores) and every rule it enforces
 * (with the reason it gives), on buffers. Reading files from disk is
 * tests/cluster/test_cluster_config_load.c; starting a cluster is not tested
 * here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "raftns/alloc.h"
#include "raftns/cluster_config.h"
#include "raftns/err.h"

static int parse(const char *text, char *err, size_t errlen)
{
    struct ns_cluster_config c;
    ns_cluster_config_init(&c);
    int rv = ns_cluster_config_parse(text, strlen(text), &c, err, errlen);
    ns_cluster_config_close(&c);
    return rv;
}

static void assert_rejected(const char *text, const char *reason)
{
    char err[256];
    assert_int_equal(parse(text, err, sizeof err), NS_EPROTO);
    if (strstr(err, reason) == NULL) {
        print_error("error \"%s\" does not mention \"%s\"\n", err, reason);
        fail();
    }
}

#define N1 "{\"id\":1,\"raft\":\"127.0.0.1:1\",\"client\":\"127.0.0.1:2\","
#define N2 "{\"id\":2,\"raft\":\"127.0.0.1:3\",\"client\":\"127.0.0.1:4\","

static void minimal_file_and_defaults(void **state)
{
    (void)state;
    struct ns_cluster_config c;
    char err[256];
    const char *text = "{\"nodes\":[" N1 "\"bootstrap\":true}],"
                       "\"namesrv\":{\"orderMessageEnable\":true,"
                       "\"scanNotActiveBrokerInterval\":5000}}";
    ns_cluster_config_init(&c);
    assert_int_equal(
        ns_cluster_config_parse(text, strlen(text), &c, err, sizeof err), 0);
    assert_string_equal(c.secret, "");
    assert_int_equal(c.election_timeout_ms, 0);
    assert_int_equal(c.snapshot_threshold, 0);
    assert_null(c.nodes[0].http_addr);
    assert_int_equal(c.namesrv.n, 2);
    ns_cluster_config_close(&c);
}

static void rejections(void **state)
{
    (void)state;
    assert_rejected("{\"nodes\":[" N1 "\"bootstrap\":true}," N1
                    "\"bootstrap\":true}]}",
                    "duplicate node id 1");
    assert_rejected("{\"nodes\":[{\"id\":1,\"raft\":\"localhost:9886\","
                    "\"client\":\"127.0.0.1:2\",\"bootstrap\":true}]}",
                    "IPv4");
    assert_rejected("{\"nodes\":[{\"id\":1,\"raft\":\"127.0.0.1\","
                    "\"client\":\"127.0.0.1:2\",\"bootstrap\":true}]}",
                    "IPv4");
    assert_rejected("{\"nodes\":[{\"id\":1,\"raft\":\"256.0.0.1:5\","
                    "\"client\":\"127.0.0.1:2\",\"bootstrap\":true}]}",
                    "IPv4");
    assert_rejected("{\"nodes\":[{\"id\":1,\"client\":\"127.0.0.1:2\","
                    "\"bootstrap\":true}]}",
                    "missing string \"raft\"");
    assert_rejected("{\"nodes\":[{\"id\":1,\"raft\":\"127.0.0.1:2\","
                    "\"bootstrap\":true}]}",
                    "missing string \"client\"");
    assert_rejected("{\"nodes\":[{\"raft\":\"127.0.0.1:1\","
                    "\"client\":\"127.0.0.1:2\",\"bootstrap\":true}]}",
                    "\"id\"");
    assert_rejected("{\"nodes\":[" N1 "\"bootstrap\":false}]}", "no node has");
    assert_rejected("{\"secret\":\"x\"}", "\"nodes\"");
    assert_rejected("{\"nodes\":[]}", "\"nodes\"");
    assert_rejected("[1,2]", "top level");
    assert_rejected("{\"nodes\":", "not valid JSON");
    assert_rejected("{\"electionTimeoutMs\":-5,\"nodes\":[" N1
                    "\"bootstrap\":true}]}",
                    "electionTimeoutMs");
    assert_rejected("{\"secret\":7,\"nodes\":[" N1 "\"bootstrap\":true}]}",
                    "secret");
}

#define ACL_FILE(accounts)                                                     \
    "{\"nodes\":[" N1 "\"bootstrap\":true}],\"acl\":" accounts "}"

static void acl_accounts(void **state)
{
    (void)state;
    struct ns_cluster_config c;
    char err[256];
    const char *text = ACL_FILE(
        "{\"accounts\":[{\"accessKey\":\"a\",\"secretKey\":\"s1\","
        "\"role\":\"admin\"},{\"accessKey\":\"b\",\"secretKey\":\"s2\","
        "\"role\":\"broker\",\"networks\":[\"10.0.0.0/8\",\"1.2.3.4\"]}]}");
    ns_cluster_config_init(&c);
    assert_int_equal(
        ns_cluster_config_parse(text, strlen(text), &c, err, sizeof err), 0);
    assert_int_equal(c.n_acl_accounts, 2);
    assert_string_equal(c.acl_accounts[1].secret_key, "s2");
    assert_int_equal(c.acl_accounts[1].role, NS_ACL_ROLE_BROKER);
    assert_int_equal(c.acl_accounts[1].n_nets, 2);
    assert_int_equal(c.acl_accounts[1].nets[1].prefix, 32);
    ns_cluster_config_close(&c);
    assert_rejected(ACL_FILE("[]"), "\"acl\" must be");
    assert_rejected(ACL_FILE("{\"accounts\":[{\"accessKey\":\"a\","
                             "\"secretKey\":\"s\",\"role\":\"root\"}]}"),
                    "role must be");
    assert_rejected(ACL_FILE("{\"accounts\":[{\"accessKey\":\"a\","
                             "\"role\":\"admin\"}]}"),
                    "needs string accessKey");
    assert_rejected(ACL_FILE("{\"accounts\":[{\"accessKey\":\"a\","
                             "\"secretKey\":\"s\",\"role\":\"admin\","
                             "\"networks\":[\"10.0.0.0/33\"]}]}"),
                    "not an IPv4 CIDR");
    assert_rejected(ACL_FILE("{\"accounts\":[{\"accessKey\":\"a\","
                             "\"secretKey\":\"s\",\"role\":\"admin\"},"
                             "{\"accessKey\":\"a\",\"secretKey\":\"t\","
                             "\"role\":\"reader\"}]}"),
                    "duplicate accessKey");
    assert_rejected(ACL_FILE("{\"accounts\":[{\"accessKey\":\"a b\","
                             "\"secretKey\":\"s\",\"role\":\"admin\"}]}"),
                    "access key must be");
}

static void shared_address_rejected(void **state)
{
    (void)state;
    /* node 2 reuses node 1's client address */
    assert_rejected("{\"nodes\":[" N1 "\"bootstrap\":true},"
                    "{\"id\":2,\"raft\":\"127.0.0.1:9\","
                    "\"client\":\"127.0.0.1:2\",\"bootstrap\":true}]}",
                    "share an address");
}

static void allocation_failures(void **state)
{
    (void)state;
    const char *text = "{\"secret\":\"s\",\"nodes\":[" N1
                       "\"http\":\"127.0.0.1:7\",\"bootstrap\":true}," N2
                       "\"bootstrap\":true}],\"namesrv\":{\"a\":\"b\"},"
                       "\"acl\":{\"accounts\":[{\"accessKey\":\"a\","
                       "\"secretKey\":\"s\",\"role\":\"admin\","
                       "\"networks\":[\"10.0.0.0/8\"]}]}}";
    for (int k = 0;; k++) {
        struct ns_cluster_config c;
        char err[256];
        ns_cluster_config_init(&c);
        ns_alloc_fail_at(k, 1);
        int rv =
            ns_cluster_config_parse(text, strlen(text), &c, err, sizeof err);
        ns_alloc_fail_at(-1, 0);
        ns_cluster_config_close(&c);
        if (rv == 0) {
            break;
        }
        /* cJSON allocations are not routed through ns_malloc here: a failed
         * ns_* allocation shows as NS_ENOMEM */
        assert_int_equal(rv, NS_ENOMEM);
        assert_true(k < 100);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(minimal_file_and_defaults),
        cmocka_unit_test(rejections),
        cmocka_unit_test(shared_address_rejected),
        cmocka_unit_test(acl_accounts),
        cmocka_unit_test(allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
