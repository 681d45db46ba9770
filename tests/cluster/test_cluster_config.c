/* Cluster file tests: every file in cluster-configs/ parses (the directory is
 * found from this file's path, globbed at test time), and files that break a
 * rule are rejected with a reason. Not a test of starting a cluster. */
#include <glob.h>
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

static void configs_dir(char *out, size_t cap)
{
    /* __FILE__ = <repo>/tests/cluster/test_cluster_config.c */
    snprintf(out, cap, "%s", __FILE__);
    for (int up = 0; up < 3; up++) {
        char *slash = strrchr(out, '/');
        assert_non_null(slash);
        *slash = '\0';
    }
    size_t len = strlen(out);
    snprintf(out + len, cap - len, "/cluster-configs");
}

static void every_file_parses(void **state)
{
    (void)state;
    char dir[4096], pattern[4200];
    configs_dir(dir, sizeof dir);
    snprintf(pattern, sizeof pattern, "%s/*.json", dir);
    glob_t g;
    assert_int_equal(glob(pattern, 0, NULL, &g), 0);
    assert_true(g.gl_pathc >= 4); /* local-1, local-3, local-5, three-hosts */
    bool saw_local3 = false;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        struct ns_cluster_config c;
        char err[256];
        ns_cluster_config_init(&c);
        int rv = ns_cluster_config_load(g.gl_pathv[i], &c, err, sizeof err);
        if (rv != 0) {
            print_error("%s: %s\n", g.gl_pathv[i], err);
        }
        assert_int_equal(rv, 0);
        assert_true(c.n_nodes >= 1);
        for (size_t j = 0; j < c.n_nodes; j++) {
            assert_true(ns_cluster_addr_is_ipv4(c.nodes[j].raft_addr));
            assert_true(ns_cluster_addr_is_ipv4(c.nodes[j].client_addr));
        }
        if (strstr(g.gl_pathv[i], "/local-3.json") != NULL) {
            saw_local3 = true;
            assert_int_equal(c.n_nodes, 3);
            for (uint64_t id = 1; id <= 3; id++) {
                const struct ns_cluster_node *nd =
                    ns_cluster_config_find(&c, id);
                char want[32];
                assert_non_null(nd);
                assert_true(nd->bootstrap);
                snprintf(want, sizeof want, "127.0.0.1:%u",
                         (unsigned)(9875 + id));
                assert_string_equal(nd->client_addr, want);
                snprintf(want, sizeof want, "127.0.0.1:%u",
                         (unsigned)(9885 + id));
                assert_string_equal(nd->raft_addr, want);
            }
        }
        ns_cluster_config_close(&c);
    }
    assert_true(saw_local3);
    globfree(&g);
}

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

static void missing_file(void **state)
{
    (void)state;
    struct ns_cluster_config c;
    char err[256];
    ns_cluster_config_init(&c);
    assert_int_equal(
        ns_cluster_config_load("/nonexistent/raftns.json", &c, err, sizeof err),
        NS_EIO);
    assert_non_null(strstr(err, "cannot open"));
    ns_cluster_config_close(&c);
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
        cmocka_unit_test(every_file_parses),
        cmocka_unit_test(minimal_file_and_defaults),
        cmocka_unit_test(rejections),
        cmocka_unit_test(shared_address_rejected),
        cmocka_unit_test(acl_accounts),
        cmocka_unit_test(missing_file),
        cmocka_unit_test(allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
