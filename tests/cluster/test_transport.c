/* In-process test of raftns's raft transport (raft/node/node_transport.c):
 * three real ns_node instances on one libuv loop, over TCP on 127.0.0.1 with
 * temp data dirs, elect a leader, replicate a few hundred commands through the
 * authenticating, checking relay, reach equal applied indexes and digests, and
 * stop cleanly with uv_loop_close() == 0. A node with another secret never
 * joins. The same runs again under raftTls (TLS 1.3, mutual certificates of
 * tests/security/gen_certs.sh), where a node with a certificate of another CA
 * and one without TLS never join. It is not a protocol attack suite
 * (tests/security does that). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>

#include <cmocka.h>

#include "free_port.h"
#include <uv.h>

#include "raftns/alloc.h"
#include "raftns/buf.h"
#include "raftns/command.h"
#include "raftns/err.h"
#include "raftns/fsm.h"
#include "raftns/json.h"
#include "raftns/log.h"
#include "raftns/node.h"

#define N 3
#define N_COMMANDS 300
#define N_BIG 24 /* of them with 1 MiB values (snapshot test) */
#define DEADLINE_MS 30000

/* A node's raft peer TLS: none, a certificate of the cluster's CA, or one of
 * another CA (which also trusts only that CA). */
enum tls_id { TLS_NONE, TLS_GOOD, TLS_ROGUE };
static const enum tls_id NO_TLS[N] = {TLS_NONE, TLS_NONE, TLS_NONE};
static const enum tls_id ALL_TLS[N] = {TLS_GOOD, TLS_GOOD, TLS_GOOD};
static const char *const SECRETS[N] = {"cluster-secret-for-tests",
                                       "cluster-secret-for-tests",
                                       "cluster-secret-for-tests"};
static char cert_dir[64]; /* made by the group setup */

struct cluster {
    uv_loop_t loop;
    char dir[N][64];
    char addr[N][32];
    struct ns_state state[N];
    struct ns_node *node[N];
    bool stopped[N];
    unsigned acked, failed;
    int first_failure; /* the status of the first failed write, 0 = none */
    unsigned want;     /* answers answered_want waits for */
    int leader;        /* index, -1 = none */
};

/* Every temp dir made, removed by the group teardown even after a failed
 * assertion. */
static char made_dirs[2 * N][64];
static int n_made_dirs;

static int remove_dirs(void **state)
{
    (void)state;
    for (int i = 0; i < n_made_dirs; i++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "rm -rf %s", made_dirs[i]);
        if (system(cmd) != 0) {
            return -1;
        }
    }
    n_made_dirs = 0;
    return 0;
}

static int make_certs(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cert_dir, sizeof cert_dir, "/tmp/raftns-transport-certs-XXXXXX");
    if (mkdtemp(cert_dir) == NULL) {
        return -1;
    }
    snprintf(cmd, sizeof cmd, "%s %s", NS_GEN_CERTS, cert_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static int remove_certs(void **state)
{
    (void)state;
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf %s", cert_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static bool run_until(struct cluster *c, bool (*pred)(struct cluster *))
{
    uint64_t end = uv_now(&c->loop) + DEADLINE_MS;
    while (!pred(c) && uv_now(&c->loop) < end) {
        uv_run(&c->loop, UV_RUN_ONCE);
    }
    return pred(c);
}

/* Creates N nodes, all bootstrap voters (node i with secrets[i] and TLS
 * tls[i]), and starts the first n_start of them; snapshot_threshold 0 is the
 * default. */
static struct cluster *cluster_create(const char *const secrets[N],
                                      const enum tls_id tls[N], int n_start,
                                      unsigned snapshot_threshold,
                                      unsigned election_ms)
{
    char files[N][3][96];
    struct cluster *c = calloc(1, sizeof *c);
    assert_non_null(c);
    ns_json_use_ns_alloc();
    ns_log_threshold = NS_LOG_WARN;
    signal(SIGPIPE, SIG_IGN); /* as src/main.c: a peer may close first */
    assert_int_equal(uv_loop_init(&c->loop), 0);
    c->leader = -1;
    struct ns_node_member boot[N];
    for (int i = 0; i < N; i++) {
        snprintf(c->dir[i], sizeof c->dir[i], "/tmp/raftns-transport-XXXXXX");
        assert_non_null(mkdtemp(c->dir[i]));
        assert_true(n_made_dirs < 2 * N);
        memcpy(made_dirs[n_made_dirs++], c->dir[i], sizeof c->dir[i]);
        snprintf(c->addr[i], sizeof c->addr[i], "127.0.0.1:%d", free_port());
        boot[i] = (struct ns_node_member){.id = (uint64_t)i + 1,
                                          .raft_addr = c->addr[i]};
    }
    for (int i = 0; i < N; i++) {
        const char *who = tls[i] == TLS_ROGUE ? "rogue-node" : "server";
        snprintf(files[i][0], sizeof files[i][0], "%s/%s.pem", cert_dir, who);
        snprintf(files[i][1], sizeof files[i][1], "%s/%s.key", cert_dir, who);
        snprintf(files[i][2], sizeof files[i][2], "%s/%s.pem", cert_dir,
                 tls[i] == TLS_ROGUE ? "rogue-ca" : "ca");
        bool on = tls[i] != TLS_NONE;
        assert_int_equal(ns_state_init(&c->state[i]), 0);
        struct ns_node_config cfg = {
            .id = (uint64_t)i + 1,
            .data_dir = c->dir[i],
            .raft_addr = c->addr[i],
            .election_timeout_ms = election_ms,
            .heartbeat_ms = 100,
            .bootstrap = boot,
            .n_bootstrap = N,
            .secret = secrets[i],
            .snapshot_threshold = snapshot_threshold,
            .snapshot_trailing = snapshot_threshold / 4,
            .tls_cert_path = on ? files[i][0] : NULL,
            .tls_key_path = on ? files[i][1] : NULL,
            .tls_ca_path = on ? files[i][2] : NULL,
        };
        assert_int_equal(
            ns_node_create(&c->loop, &cfg, &c->state[i], &c->node[i]), 0);
    }
    for (int i = 0; i < n_start; i++) {
        assert_int_equal(ns_node_start(c->node[i]), 0);
    }
    return c;
}

static struct cluster *cluster_start(const char *const secrets[N],
                                     const enum tls_id tls[N])
{
    return cluster_create(secrets, tls, N, 0, 1000);
}

static void node_stopped(void *arg)
{
    bool *flag = arg;
    *flag = true;
}

static bool all_stopped(struct cluster *c)
{
    for (int i = 0; i < N; i++) {
        if (!c->stopped[i]) {
            return false;
        }
    }
    return true;
}

static void cluster_stop(struct cluster *c)
{
    for (int i = 0; i < N; i++) {
        ns_node_stop(c->node[i], node_stopped, &c->stopped[i]);
    }
    assert_true(run_until(c, all_stopped));
    uv_run(&c->loop, UV_RUN_DEFAULT); /* libraft's last close callbacks */
    for (int i = 0; i < N; i++) {
        ns_node_destroy(c->node[i]);
        ns_state_close(&c->state[i]);
    }
    assert_int_equal(uv_loop_close(&c->loop), 0);
    free(c);
}

static bool has_leader(struct cluster *c)
{
    for (int i = 0; i < N; i++) {
        if (ns_node_is_leader(c->node[i])) {
            c->leader = i;
            return true;
        }
    }
    return false;
}

static void apply_cb(void *arg, int status, const struct ns_apply_result *res)
{
    struct cluster *c = arg;
    (void)res;
    if (status == 0) {
        c->acked++;
    } else {
        c->first_failure = c->failed == 0 ? status : c->first_failure;
        c->failed++;
    }
}

/* Proposes KV put k with a value of value_len bytes (0: a short one). */
static void propose_kv_sized(struct cluster *c, int node, unsigned k,
                             size_t value_len)
{
    struct ns_command cmd;
    struct ns_buf b;
    char key[32];
    snprintf(key, sizeof key, "key-%u", k);
    ns_command_init(&cmd, NS_CMD_KV_PUT);
    cmd.u.kv.ns = ns_strdup("transport");
    cmd.u.kv.key = ns_strdup(key);
    if (value_len == 0) {
        cmd.u.kv.value = ns_strdup("value-value-value");
    } else {
        cmd.u.kv.value = ns_malloc(value_len + 1);
        assert_non_null(cmd.u.kv.value);
        memset(cmd.u.kv.value, 'a' + (int)(k % 26), value_len);
        cmd.u.kv.value[value_len] = '\0';
    }
    ns_buf_init(&b);
    assert_int_equal(ns_command_encode(&cmd, &b), 0);
    assert_int_equal(ns_node_propose(c->node[node], b.data, b.len, apply_cb, c),
                     0);
    ns_buf_close(&b);
    ns_command_close(&cmd);
}

static void propose_kv(struct cluster *c, int node, unsigned k)
{
    propose_kv_sized(c, node, k, 0);
}

static bool all_answered(struct cluster *c)
{
    return c->acked + c->failed == N_COMMANDS;
}

/* The index of the newest snapshot raft_uv stored in dir
 * (snapshot-TERM-INDEX-TIMESTAMP), 0 if none. */
static unsigned long long newest_snapshot(const char *dir)
{
    unsigned long long newest = 0;
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        unsigned long long term, index, ts;
        if (sscanf(e->d_name, "snapshot-%llu-%llu-%llu", &term, &index, &ts) ==
                3 &&
            index > newest) {
            newest = index;
        }
    }
    closedir(d);
    return newest;
}

static bool answered_want(struct cluster *c)
{
    return c->acked + c->failed >= c->want;
}

static bool all_applied_equal(struct cluster *c)
{
    uint64_t want = ns_node_last_applied(c->node[c->leader]);
    for (int i = 0; i < N; i++) {
        if (ns_node_last_applied(c->node[i]) != want) {
            return false;
        }
    }
    return want >= N_COMMANDS;
}

static void three_nodes_replicate(const enum tls_id tls[N])
{
    struct cluster *c = cluster_start(SECRETS, tls);
    assert_true(run_until(c, has_leader));
    for (unsigned k = 0; k < N_COMMANDS; k++) {
        propose_kv(c, c->leader, k);
    }
    assert_true(run_until(c, all_answered));
    assert_int_equal(c->failed, 0);
    assert_true(run_until(c, all_applied_equal));
    uint64_t d0 = 0;
    assert_int_equal(ns_snapshot_digest(&c->state[0], &d0), 0);
    for (int i = 1; i < N; i++) {
        uint64_t d = 0;
        assert_int_equal(ns_snapshot_digest(&c->state[i], &d), 0);
        assert_int_equal(d, d0);
    }
    for (int i = 0; i < N; i++) {
        struct ns_node_peer_stats st;
        ns_node_peer_stats(c->node[i], &st);
        assert_true(st.accepted >= 1);
        assert_true(st.connected >= 1);
        assert_int_equal(st.violations, 0);
        assert_int_equal(st.refused, 0);
    }
    cluster_stop(c);
}

static void test_three_nodes_replicate(void **state)
{
    (void)state;
    three_nodes_replicate(NO_TLS);
}

static void test_tls_three_nodes_replicate(void **state)
{
    (void)state;
    three_nodes_replicate(ALL_TLS);
}

static bool applied_and_same_digest(struct cluster *c)
{
    if (!all_applied_equal(c)) {
        return false;
    }
    uint64_t d0 = 0, d = 0;
    ns_snapshot_digest(&c->state[0], &d0);
    for (int i = 1; i < N; i++) {
        ns_snapshot_digest(&c->state[i], &d);
        if (d != d0) {
            return false;
        }
    }
    return true;
}

/* Node 3 starts after the others compacted their log: it can only catch up by
 * an InstallSnapshot (of over 24 MiB), whose header, configuration and
 * streamed payload pass the checker. */
static void late_node_gets_snapshot(const enum tls_id tls[N])
{
    /* A follower takes a while over a 24 MiB burst through TLS under ASan on
     * busy CI cores: once there every write of the burst failed, as a lost
     * leadership fails them. 2 s of election timeout (1 s elsewhere) leaves a
     * slow answer time; the failure message names the status. */
    struct cluster *c = cluster_create(SECRETS, tls, 2, 32, 2000);
    assert_true(run_until(c, has_leader));
    /* 24 MiB of 1 MiB values: AppendEntries and a snapshot far over the
     * relay's 4 MiB write queue bound, so backpressure pauses and resumes. */
    for (unsigned k = 0; k < N_COMMANDS; k++) {
        propose_kv_sized(c, c->leader, k, k < N_BIG ? 1u << 20 : 0);
    }
    assert_true(run_until(c, all_answered));
    /* raft takes a snapshot only right after an apply (its src/replication.c,
     * shouldTakeSnapshot): when the burst is applied while one is being
     * written, the next waits for a later apply. Small writes one at a time
     * give it those until the leader's stored snapshot covers the burst, so
     * node 3 can only be fed by InstallSnapshot, however fast the burst
     * committed. */
    for (unsigned k = 0; newest_snapshot(c->dir[c->leader]) < N_COMMANDS; k++) {
        assert_true(k < 10000);
        c->want = c->acked + c->failed + 1;
        propose_kv(c, c->leader, N_COMMANDS + k);
        assert_true(run_until(c, answered_want));
    }
    if (c->failed != 0) {
        fail_msg("%u of %u writes failed, the first with %s", c->failed,
                 c->acked + c->failed, ns_strerror(c->first_failure));
    }
    assert_int_equal(ns_node_start(c->node[2]), 0);
    if (!run_until(c, applied_and_same_digest)) {
        for (int i = 0; i < N; i++) {
            uint64_t d = 0;
            ns_snapshot_digest(&c->state[i], &d);
            print_message("node %d: term %llu commit %llu applied %llu leader "
                          "%llu digest %016llx\n",
                          i + 1, (unsigned long long)ns_node_term(c->node[i]),
                          (unsigned long long)ns_node_commit_index(c->node[i]),
                          (unsigned long long)ns_node_last_applied(c->node[i]),
                          (unsigned long long)ns_node_leader_id(c->node[i]),
                          (unsigned long long)d);
        }
        fail_msg("node 3 did not catch up with the same state");
    }
    /* raft 0.15's two traps on this path (docs/raft-0.15.md §18, §19): how
     * often the node stepped around them, for the log */
    print_message("node 3: %llu InstallSnapshot held, %llu AppendEntries "
                  "from index 1 dropped\n",
                  (unsigned long long)ns_node_installs_held(c->node[2]),
                  (unsigned long long)ns_node_appends_dropped(c->node[2]));
    for (int i = 0; i < N; i++) {
        struct ns_node_peer_stats st;
        ns_node_peer_stats(c->node[i], &st);
        assert_int_equal(st.violations, 0);
    }
    cluster_stop(c);
}

static void test_late_node_gets_snapshot(void **state)
{
    (void)state;
    late_node_gets_snapshot(NO_TLS);
}

/* Under TLS the 24 MiB go through the session both ways, paused and resumed
 * with its buffers counted. */
static void test_tls_late_node_gets_snapshot(void **state)
{
    (void)state;
    late_node_gets_snapshot(ALL_TLS);
}

static bool refused_and_committed(struct cluster *c)
{
    struct ns_node_peer_stats s0, s1, s2;
    ns_node_peer_stats(c->node[0], &s0);
    ns_node_peer_stats(c->node[1], &s1);
    ns_node_peer_stats(c->node[2], &s2);
    return has_leader(c) && c->acked == 10 && s0.refused > 0 &&
           s1.refused > 0 && s2.refused > 0 &&
           ns_node_last_applied(c->node[0]) == ns_node_last_applied(c->node[1]);
}

/* Node 3 (secrets[2], tls[2]) must never join the other two. */
static void outsider_never_joins(const char *const secrets[N],
                                 const enum tls_id tls[N])
{
    struct cluster *c = cluster_start(secrets, tls);
    assert_true(run_until(c, has_leader));
    assert_true(c->leader != 2);
    for (unsigned k = 0; k < 10; k++) {
        propose_kv(c, c->leader, k);
    }
    assert_true(run_until(c, refused_and_committed));
    /* Node 3 has heard nothing from the others: no leader, nothing applied,
     * no violations (it never got past the handshake). */
    assert_int_equal(ns_node_leader_id(c->node[2]), 0);
    assert_true(ns_node_last_applied(c->node[2]) <
                ns_node_last_applied(c->node[c->leader]));
    struct ns_node_peer_stats st;
    ns_node_peer_stats(c->node[2], &st);
    assert_int_equal(st.accepted, 0);
    assert_int_equal(st.connected, 0);
    assert_int_equal(st.violations, 0);
    cluster_stop(c);
}

static void test_other_secret_never_joins(void **state)
{
    (void)state;
    static const char *const secrets[N] = {"cluster-secret-for-tests",
                                           "cluster-secret-for-tests",
                                           "a-different-secret"};
    outsider_never_joins(secrets, NO_TLS);
}

/* The right secret but a certificate of another CA: refused both ways by the
 * TLS handshake, before the HMAC one. */
static void test_tls_other_ca_never_joins(void **state)
{
    (void)state;
    static const enum tls_id tls[N] = {TLS_GOOD, TLS_GOOD, TLS_ROGUE};
    outsider_never_joins(SECRETS, tls);
}

/* The right secret and no TLS at all: its HELLO is no ClientHello, and the
 * others' ClientHello is no HELLO. */
static void test_tls_plain_node_never_joins(void **state)
{
    (void)state;
    static const enum tls_id tls[N] = {TLS_GOOD, TLS_GOOD, TLS_NONE};
    outsider_never_joins(SECRETS, tls);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_three_nodes_replicate, remove_dirs),
        cmocka_unit_test_teardown(test_other_secret_never_joins, remove_dirs),
        cmocka_unit_test_teardown(test_late_node_gets_snapshot, remove_dirs),
        cmocka_unit_test_teardown(test_tls_three_nodes_replicate, remove_dirs),
        cmocka_unit_test_teardown(test_tls_other_ca_never_joins, remove_dirs),
        cmocka_unit_test_teardown(test_tls_plain_node_never_joins, remove_dirs),
        cmocka_unit_test_teardown(test_tls_late_node_gets_snapshot,
                                  remove_dirs),
    };
    return cmocka_run_group_tests(tests, make_certs, remove_certs);
}
