/* Reading cluster files from disk (src/server/cluster_config_load.c): every
 * file in cluster-configs/ loads (the directory is found from this file's
 * path, globbed at test time), and a file that cannot be read or is too large
 * is refused with a reason. The parser's rules are unit-tested in
 * tests/unit/test_cluster_config.c. */
#include <glob.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "raftns/cluster_config_load.h"
#include "raftns/err.h"

static void configs_dir(char *out, size_t cap)
{
    /* __FILE__ = <repo>/tests/cluster/test_cluster_config_load.c */
    snprintf(out, cap, "%s", __FILE__);
    for (int up = 0; up < 3; up++) {
        char *slash = strrchr(out, '/');
        assert_non_null(slash);
        *slash = '\0';
    }
    size_t len = strlen(out);
    snprintf(out + len, cap - len, "/cluster-configs");
}

static void every_file_loads(void **state)
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
            assert_true(ns_cluster_config_addr_is_ipv4(c.nodes[j].raft_addr));
            assert_true(ns_cluster_config_addr_is_ipv4(c.nodes[j].client_addr));
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

static void directory_is_not_readable(void **state)
{
    (void)state;
    struct ns_cluster_config c;
    char err[256], dir[4096];
    configs_dir(dir, sizeof dir);
    ns_cluster_config_init(&c);
    assert_int_equal(ns_cluster_config_load(dir, &c, err, sizeof err), NS_EIO);
    assert_non_null(strstr(err, "cannot read"));
    ns_cluster_config_close(&c);
}

/* One byte over NS_CLUSTER_FILE_MAX: the loader reads that byte and the parser
 * refuses the size, whatever the content. */
static void too_large_file(void **state)
{
    (void)state;
    char path[] = "/tmp/raftns-cluster-config-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    assert_non_null(f);
    fputs("{\"nodes\":[]", f);
    for (size_t i = 11; i < NS_CLUSTER_FILE_MAX; i++) {
        fputc(' ', f);
    }
    fputc('}', f);
    assert_int_equal(fclose(f), 0);
    struct ns_cluster_config c;
    char err[256];
    ns_cluster_config_init(&c);
    int rv = ns_cluster_config_load(path, &c, err, sizeof err);
    unlink(path);
    assert_int_equal(rv, NS_EPROTO);
    assert_non_null(strstr(err, "file larger than"));
    ns_cluster_config_close(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_file_loads),
        cmocka_unit_test(missing_file),
        cmocka_unit_test(directory_is_not_readable),
        cmocka_unit_test(too_large_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
