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
#include <stdlib.h>
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
    assert_int_equal(c.fork_state_bytes, 0);
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

/* Parses text that must be accepted into *c (closed by the caller). */
static void parse_ok(const char *text, struct ns_cluster_config *c)
{
    char err[256];
    ns_cluster_config_init(c);
    int rv = ns_cluster_config_parse(text, strlen(text), c, err, sizeof err);
    if (rv != 0) {
        print_error("refused: %s\n", err);
    }
    assert_int_equal(rv, 0);
    assert_string_equal(err, "ok");
}

static const char *prop(const struct ns_cluster_config *c, const char *key)
{
    for (size_t i = 0; i < c->namesrv.n; i++) {
        if (strcmp(c->namesrv.items[i].key, key) == 0) {
            return c->namesrv.items[i].value;
        }
    }
    return NULL;
}

static void full_file_values(void **state)
{
    (void)state;
    struct ns_cluster_config c;
    parse_ok("{\"secret\":\"abc\",\"electionTimeoutMs\":600000,"
             "\"heartbeatMs\":1,\"snapshotThreshold\":1073741824,"
             "\"forkStateBytes\":1,\"commandVersion\":2,"
             "\"comment\":[1,{\"x\":null}],\"_note\":1,"
             "\"nodes\":[{\"id\":9007199254740991,\"raft\":\"10.0.0.1:1\","
             "\"client\":\"10.0.0.1:65535\",\"http\":\"10.0.0.1:3\","
             "\"bootstrap\":true,\"comment\":\"ignored\"},"
             "{\"id\":2,\"raft\":\"10.0.0.2:1\",\"client\":\"10.0.0.2:2\","
             "\"bootstrap\":false},"
             "{\"id\":3,\"raft\":\"10.0.0.3:1\",\"client\":\"10.0.0.3:2\"}],"
             "\"namesrv\":{\"s\":\"text\",\"t\":true,\"f\":false,"
             "\"n\":5000,\"neg\":-7}}",
             &c);
    assert_string_equal(c.secret, "abc");
    assert_null(c.secret_file);
    assert_int_equal(c.election_timeout_ms, 600000);
    assert_int_equal(c.heartbeat_ms, 1);
    assert_int_equal(c.snapshot_threshold, 1u << 30);
    assert_int_equal(c.fork_state_bytes, 1);
    assert_int_equal(c.command_version, 2);
    assert_int_equal(c.n_nodes, 3);
    /* file order is kept */
    assert_true(c.nodes[0].id == 9007199254740991ull);
    assert_int_equal(c.nodes[1].id, 2);
    assert_int_equal(c.nodes[2].id, 3);
    assert_string_equal(c.nodes[0].http_addr, "10.0.0.1:3");
    assert_string_equal(c.nodes[0].client_addr, "10.0.0.1:65535");
    assert_true(c.nodes[0].bootstrap);
    assert_false(c.nodes[1].bootstrap);
    assert_false(c.nodes[2].bootstrap); /* absent = false */
    assert_null(c.nodes[2].http_addr);
    assert_ptr_equal(ns_cluster_config_find(&c, 2), &c.nodes[1]);
    assert_null(ns_cluster_config_find(&c, 4));
    assert_int_equal(c.namesrv.n, 5);
    assert_string_equal(prop(&c, "s"), "text");
    assert_string_equal(prop(&c, "t"), "true");
    assert_string_equal(prop(&c, "f"), "false");
    assert_string_equal(prop(&c, "n"), "5000");
    assert_string_equal(prop(&c, "neg"), "-7");
    assert_int_equal(c.n_acl_accounts, 0);
    ns_cluster_config_close(&c);
}

static void secret_file_and_empty_acl(void **state)
{
    (void)state;
    struct ns_cluster_config c;
    parse_ok("{\"secretFile\":\"../s/cluster.secret\",\"nodes\":[" N1
             "\"bootstrap\":true}],\"acl\":{}}",
             &c);
    assert_string_equal(c.secret, "");
    assert_string_equal(c.secret_file, "../s/cluster.secret");
    assert_int_equal(c.n_acl_accounts, 0);
    ns_cluster_config_close(&c);
    parse_ok("{\"nodes\":[" N1 "\"bootstrap\":true}],\"acl\":{\"accounts\":[]},"
             "\"namesrv\":{}}",
             &c);
    assert_int_equal(c.n_acl_accounts, 0);
    assert_int_equal(c.namesrv.n, 0);
    ns_cluster_config_close(&c);
    /* networks may be absent or empty */
    parse_ok(ACL_FILE("{\"accounts\":[{\"accessKey\":\"a\","
                      "\"secretKey\":\"s\",\"role\":\"reader\","
                      "\"networks\":[]}]}"),
             &c);
    assert_int_equal(c.n_acl_accounts, 1);
    assert_int_equal(c.acl_accounts[0].n_nets, 0);
    assert_int_equal(c.acl_accounts[0].role, NS_ACL_ROLE_READER);
    ns_cluster_config_close(&c);
}

static void ipv4_addresses(void **state)
{
    (void)state;
    static const char *const good[] = {
        "127.0.0.1:1", "0.0.0.0:65535",         "255.255.255.255:9876",
        "1.2.3.4:05",  "001.002.003.004:00080", /* 21 characters: the longest
                                                   accepted */
    };
    static const char *const bad[] = {
        NULL,
        "",
        "localhost:9876",
        "127.0.0.1",
        "127.0.0.1:",
        "127.0.0.1:0",
        "127.0.0.1:65536",
        "256.0.0.1:5",
        "1.2.3:4",
        "1.2.3.4.5:6",
        " 1.2.3.4:5",
        "1.2.3.4: 5",
        "+1.2.3.4:5",
        "1.2.3.4:5x",
        "1.2.3.4:5 ",
        "1.2.3.4:-5",
        "[::1]:9876",
        "0001.002.003.004:0008",  /* four digits in a part */
        "001.002.003.004:000080", /* 22 characters */
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        if (!ns_cluster_config_addr_is_ipv4(good[i])) {
            print_error("refused %s\n", good[i]);
            fail();
        }
    }
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        if (ns_cluster_config_addr_is_ipv4(bad[i])) {
            print_error("accepted %s\n", bad[i]);
            fail();
        }
    }
}

static void node_rules(void **state)
{
    (void)state;
    assert_rejected("{\"nodes\":[5]}", "nodes[0] is not an object");
    assert_rejected("{\"nodes\":{\"id\":1}}", "\"nodes\" must be a non-empty");
    assert_rejected("{\"nodes\":[{\"id\":0,\"raft\":\"127.0.0.1:1\","
                    "\"client\":\"127.0.0.1:2\",\"bootstrap\":true}]}",
                    "\"id\" must be an integer >= 1");
    assert_rejected("{\"nodes\":[{\"id\":1.5,\"raft\":\"127.0.0.1:1\","
                    "\"client\":\"127.0.0.1:2\",\"bootstrap\":true}]}",
                    "\"id\" must be an integer >= 1");
    assert_rejected("{\"nodes\":[{\"id\":\"1\",\"raft\":\"127.0.0.1:1\","
                    "\"client\":\"127.0.0.1:2\",\"bootstrap\":true}]}",
                    "\"id\" must be an integer >= 1");
    assert_rejected("{\"nodes\":[{\"id\":9007199254740992,"
                    "\"raft\":\"127.0.0.1:1\",\"client\":\"127.0.0.1:2\","
                    "\"bootstrap\":true}]}",
                    "\"id\" must be an integer >= 1");
    assert_rejected("{\"nodes\":[{\"id\":1,\"raft\":9886,"
                    "\"client\":\"127.0.0.1:2\",\"bootstrap\":true}]}",
                    "nodes[0]: missing string \"raft\"");
    assert_rejected("{\"nodes\":[" N1 "\"http\":\"127.0.0.1\","
                    "\"bootstrap\":true}]}",
                    "nodes[0]: \"http\" is \"127.0.0.1\", want an IPv4");
    assert_rejected("{\"nodes\":[" N1 "\"http\":null,\"bootstrap\":true}]}",
                    "nodes[0]: missing string \"http\"");
    assert_rejected("{\"nodes\":[" N1 "\"bootstrap\":\"yes\"}]}",
                    "nodes[0]: \"bootstrap\" must be true or false");
    assert_rejected("{\"nodes\":[" N1 "\"bootstrap\":true}," N2
                    "\"bootstrap\":1}]}",
                    "nodes[1]: \"bootstrap\" must be true or false");
    /* raft of node 2 = http of node 1 */
    assert_rejected("{\"nodes\":[" N1 "\"http\":\"127.0.0.1:7\","
                    "\"bootstrap\":true},{\"id\":2,\"raft\":\"127.0.0.1:7\","
                    "\"client\":\"127.0.0.1:8\"}]}",
                    "nodes 1 and 2 share an address");
    /* one node may not repeat its own address either way: only pairs of
     * nodes are compared */
    struct ns_cluster_config c;
    parse_ok("{\"nodes\":[{\"id\":1,\"raft\":\"127.0.0.1:1\","
             "\"client\":\"127.0.0.1:1\",\"bootstrap\":true}]}",
             &c);
    ns_cluster_config_close(&c);
}

static void node_count_bound(void **state)
{
    (void)state;
    char text[NS_CLUSTER_MAX_NODES * 100 + 200];
    for (size_t n = NS_CLUSTER_MAX_NODES; n <= NS_CLUSTER_MAX_NODES + 1; n++) {
        size_t len = (size_t)snprintf(text, sizeof text, "{\"nodes\":[");
        for (size_t i = 0; i < n; i++) {
            len += (size_t)snprintf(
                text + len, sizeof text - len,
                "%s{\"id\":%zu,\"raft\":\"10.0.%zu.1:1\","
                "\"client\":\"10.0.%zu.1:2\",\"bootstrap\":true}",
                i > 0 ? "," : "", i + 1, i, i);
        }
        snprintf(text + len, sizeof text - len, "]}");
        if (n == NS_CLUSTER_MAX_NODES) {
            struct ns_cluster_config c;
            parse_ok(text, &c);
            assert_int_equal(c.n_nodes, NS_CLUSTER_MAX_NODES);
            ns_cluster_config_close(&c);
        } else {
            assert_rejected(text, "more than 64 nodes");
        }
    }
}

static void top_level_rules(void **state)
{
    (void)state;
    assert_rejected("{\"secret\":\"x\",\"secretFile\":\"f\",\"nodes\":[" N1
                    "\"bootstrap\":true}]}",
                    "give \"secret\" or \"secretFile\", not both");
    assert_rejected("{\"secretFile\":\"\",\"nodes\":[" N1
                    "\"bootstrap\":true}]}",
                    "\"secretFile\" must be a non-empty path");
    assert_rejected("{\"secretFile\":5,\"nodes\":[" N1 "\"bootstrap\":true}]}",
                    "\"secretFile\" must be a non-empty path");
    assert_rejected("{\"electionTimeoutMs\":0,\"nodes\":[" N1
                    "\"bootstrap\":true}]}",
                    "\"electionTimeoutMs\" must be an integer 1..600000");
    assert_rejected("{\"electionTimeoutMs\":600001,\"nodes\":[" N1
                    "\"bootstrap\":true}]}",
                    "\"electionTimeoutMs\" must be an integer 1..600000");
    assert_rejected("{\"heartbeatMs\":1.5,\"nodes\":[" N1
                    "\"bootstrap\":true}]}",
                    "\"heartbeatMs\" must be an integer 1..600000");
    assert_rejected("{\"heartbeatMs\":\"50\",\"nodes\":[" N1
                    "\"bootstrap\":true}]}",
                    "\"heartbeatMs\" must be an integer 1..600000");
    assert_rejected("{\"snapshotThreshold\":1073741825,\"nodes\":[" N1
                    "\"bootstrap\":true}]}",
                    "\"snapshotThreshold\" must be an integer 1..1073741824");
    assert_rejected("{\"forkStateBytes\":-1,\"nodes\":[" N1
                    "\"bootstrap\":true}]}",
                    "\"forkStateBytes\" must be an integer 1..1073741824");
    assert_rejected("{\"commandVersion\":1,\"nodes\":[" N1
                    "\"bootstrap\":true}]}",
                    "\"commandVersion\" must be an integer 2..3");
    assert_rejected("{\"commandVersion\":4,\"nodes\":[" N1
                    "\"bootstrap\":true}]}",
                    "\"commandVersion\" must be an integer 2..3");
    assert_rejected("{\"nodes\":[" N1 "\"bootstrap\":true}],\"namesrv\":[]}",
                    "\"namesrv\" must be an object");
    assert_rejected("{\"nodes\":[" N1 "\"bootstrap\":true}],"
                    "\"namesrv\":{\"a\":[1]}}",
                    "namesrv.a must be a string, number or boolean");
    assert_rejected("{\"nodes\":[" N1 "\"bootstrap\":true}],"
                    "\"namesrv\":{\"b\":null}}",
                    "namesrv.b must be a string, number or boolean");
    assert_rejected("", "not valid JSON");
    /* a typo'd key is named, not silently left at its default */
    assert_rejected("{\"electionTimeoutMS\":500,\"nodes\":[" N1
                    "\"bootstrap\":true}]}",
                    "unknown key \"electionTimeoutMS\" (did you mean "
                    "\"electionTimeoutMs\"?)");
    assert_rejected("{\"zone\":1,\"nodes\":[" N1 "\"bootstrap\":true}]}",
                    "unknown key \"zone\"");
    assert_rejected("{\"nodes\":[" N1 "\"bootstrp\":true}]}",
                    "nodes[0]: unknown key \"bootstrp\"");
    /* cJSON stops after the first value: text after it is not read (this
     * is how raftns has always read cluster files). */
    struct ns_cluster_config c;
    parse_ok("{\"nodes\":[" N1 "\"bootstrap\":true}]} x", &c);
    assert_int_equal(c.n_nodes, 1);
    ns_cluster_config_close(&c);
    assert_rejected("\"text\"", "top level must be an object");
}

static void acl_rules(void **state)
{
    (void)state;
    assert_rejected(ACL_FILE("{\"accounts\":{}}"), "\"acl\" must be");
    assert_rejected(ACL_FILE("{\"accounts\":[5]}"),
                    "acl.accounts[0] needs string accessKey");
    assert_rejected(ACL_FILE("{\"accounts\":[{\"accessKey\":\"a\","
                             "\"secretKey\":\"s\",\"role\":\"admin\","
                             "\"networks\":\"10.0.0.0/8\"}]}"),
                    "acl.accounts[0].networks must be an array");
    assert_rejected(ACL_FILE("{\"accounts\":[{\"accessKey\":\"a\","
                             "\"secretKey\":\"s\",\"role\":\"admin\","
                             "\"networks\":[8]}]}"),
                    "acl.accounts[0].networks: not an IPv4 CIDR");
    char nets[NS_ACL_MAX_NETS * 16 + 64];
    size_t len = 0;
    for (int i = 0; i <= NS_ACL_MAX_NETS; i++) {
        len += (size_t)snprintf(nets + len, sizeof nets - len,
                                "%s\"10.%d.0.0/16\"", i > 0 ? "," : "", i);
    }
    char text[sizeof nets + 256];
    snprintf(text, sizeof text,
             ACL_FILE("{\"accounts\":[{\"accessKey\":\"a\",\"secretKey\":\"s\","
                      "\"role\":\"admin\",\"networks\":[%s]}]}"),
             nets);
    assert_rejected(text, "must be an array of at most 64 CIDR strings");
}

/* A refused file leaves nothing behind: the struct is empty again. */
static void refused_file_leaves_struct_empty(void **state)
{
    (void)state;
    struct ns_cluster_config c;
    char err[256];
    const char *text =
        "{\"secret\":\"s\",\"namesrv\":{\"a\":\"b\"},\"nodes\":[" N1
        "\"bootstrap\":true}," N1 "\"bootstrap\":true}]}";
    ns_cluster_config_init(&c);
    assert_int_equal(
        ns_cluster_config_parse(text, strlen(text), &c, err, sizeof err),
        NS_EPROTO);
    assert_null(c.nodes);
    assert_int_equal(c.n_nodes, 0);
    assert_null(c.secret);
    assert_int_equal(c.namesrv.n, 0);
    ns_cluster_config_close(&c);
}

/* Over NS_CLUSTER_FILE_MAX the buffer is refused before any JSON is read. */
static void size_bound(void **state)
{
    (void)state;
    size_t len = NS_CLUSTER_FILE_MAX + 1;
    char *text = malloc(len);
    assert_non_null(text);
    memset(text, ' ', len);
    const char *body = "{\"nodes\":[" N1 "\"bootstrap\":true}]}";
    memcpy(text, body, strlen(body));
    struct ns_cluster_config c;
    char err[256];
    ns_cluster_config_init(&c);
    assert_int_equal(ns_cluster_config_parse(text, len, &c, err, sizeof err),
                     NS_EPROTO);
    assert_non_null(strstr(err, "file larger than 1048576 bytes"));
    /* the same text one byte shorter is fine */
    assert_int_equal(
        ns_cluster_config_parse(text, len - 1, &c, err, sizeof err), 0);
    ns_cluster_config_close(&c);
    free(text);
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
        cmocka_unit_test(full_file_values),
        cmocka_unit_test(secret_file_and_empty_acl),
        cmocka_unit_test(ipv4_addresses),
        cmocka_unit_test(node_rules),
        cmocka_unit_test(node_count_bound),
        cmocka_unit_test(top_level_rules),
        cmocka_unit_test(acl_rules),
        cmocka_unit_test(refused_file_leaves_struct_empty),
        cmocka_unit_test(size_bound),
        cmocka_unit_test(allocation_failures),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
