/* The observer's life cycle, the /status JSON document (also the body of the
 * private NS_CODE_STATUS reply) and the gauges of /metrics. It reads the node,
 * the state and the server (through raftns/server.h); it changes none of
 * them. HTTP framing is in http.c; the divergence work it ticks is the
 * cluster's (cluster/integrity.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/codes.h"
#include "raftns/err.h"
#include "raftns/json.h"
#include "raftns/log.h"
#include "observe/observe_int.h"

static const char *role_text(int role)
{
    switch (role) {
    case NS_ROLE_FOLLOWER:
        return "follower";
    case NS_ROLE_CANDIDATE:
        return "candidate";
    case NS_ROLE_LEADER:
        return "leader";
    default:
        return "unavailable";
    }
}

static const char *member_role_text(int role)
{
    switch (role) {
    case NS_MEMBER_VOTER:
        return "voter";
    case NS_MEMBER_STANDBY:
        return "standby";
    case NS_MEMBER_SPARE:
        return "spare";
    default:
        return "none";
    }
}

/* Test hook (documented in metrics.h): RAFTNS_TEST_CORRUPT_AT=<index>. */
static uint64_t corrupt_from_env(void)
{
    const char *v = getenv("RAFTNS_TEST_CORRUPT_AT");
    if (v == NULL || v[0] == '\0') {
        return 0;
    }
    return strtoull(v, NULL, 10);
}

/* Test hook: RAFTNS_TEST_FETCH_CHUNK=<bytes> makes this node serve its state
 * copy in chunks that small (recovery.c), so tests cover a copy of several
 * chunks. */
static size_t fetch_chunk_from_env(void)
{
    const char *v = getenv("RAFTNS_TEST_FETCH_CHUNK");
    if (v == NULL || v[0] == '\0') {
        return 0;
    }
    return (size_t)strtoull(v, NULL, 10);
}

int ns_observe_create(uv_loop_t *loop, const struct ns_observe_config *cfg,
                      struct ns_state *state, struct ns_node *node,
                      struct ns_server *server, struct ns_observe **out)
{
    struct ns_observe *o = ns_calloc(1, sizeof *o);
    if (o == NULL) {
        return NS_ENOMEM;
    }
    o->loop = loop;
    o->state = state;
    o->node = node;
    o->srv = server;
    if (cfg->http_addr != NULL) {
        snprintf(o->http_addr, sizeof o->http_addr, "%s", cfg->http_addr);
    }
    uint64_t corrupt = cfg->test_corrupt_at;
    if (corrupt == 0) {
        corrupt = corrupt_from_env();
    }
    o->ig = ns_cluster_integrity(ns_server_cluster(server));
    ns_integrity_configure(o->ig, cfg->checkpoint_entries, cfg->checkpoint_ms,
                           corrupt, fetch_chunk_from_env());
    *out = o;
    return 0;
}

void ns_observe_tick(struct ns_observe *o)
{
    if (o->stopping) {
        return;
    }
    ns_integrity_tick(o->ig);
}

/* NS_CODE_STATUS on the client port answers the same document as /status. */
static int status_cb(void *ctx, struct ns_buf *out)
{
    return ns_observe_status_json(ctx, out);
}

static void timer_cb(uv_timer_t *t)
{
    ns_observe_tick(t->data);
}

int ns_observe_start(struct ns_observe *o)
{
    uv_timer_init(o->loop, &o->timer);
    o->timer.data = o;
    o->n_open_handles = 1;
    o->started = true;
    uv_timer_start(&o->timer, timer_cb, NS_CKPT_TICK_MS, NS_CKPT_TICK_MS);
    ns_integrity_start(o->ig);
    ns_node_set_apply_hook(o->node, ns_checkpoint_on_apply, o->ig);
    ns_server_set_status(o->srv, status_cb, o);
    if (o->ig->ckpt.corrupt_at != 0) {
        NS_LOG(NS_LOG_WARN,
               "observe: TEST HOOK active: state corrupts itself at index "
               "%" PRIu64,
               o->ig->ckpt.corrupt_at);
    }
    if (o->ig->recovery.chunk != 0) {
        NS_LOG(NS_LOG_WARN,
               "observe: TEST HOOK active: state copies served in chunks of "
               "%zu bytes",
               o->ig->recovery.chunk);
    }
    if (o->http_addr[0] == '\0') {
        return 0;
    }
    return ns_http_start(o);
}

int ns_observe_http_port(const struct ns_observe *o)
{
    return o->http_port;
}

void ns_observe_handle_closed(uv_handle_t *h)
{
    struct ns_observe *o = h->data;
    if (--o->n_open_handles == 0 && o->stop_cb != NULL) {
        o->stop_cb(o->stop_arg);
    }
}

void ns_observe_stop(struct ns_observe *o, ns_observe_stop_cb cb, void *arg)
{
    if (o->stopping) {
        return;
    }
    o->stopping = true;
    o->stop_cb = cb;
    o->stop_arg = arg;
    if (!o->started) {
        if (cb != NULL) {
            cb(arg);
        }
        return;
    }
    ns_node_set_apply_hook(o->node, NULL, NULL);
    ns_server_set_status(o->srv, NULL, NULL);
    ns_integrity_stop(o->ig);
    ns_http_stop(o);
    uv_close((uv_handle_t *)&o->timer, ns_observe_handle_closed);
}

void ns_observe_destroy(struct ns_observe *o)
{
    ns_free(o); /* the divergence state is the cluster's */
}

bool ns_observe_is_diverged(const struct ns_observe *o)
{
    return ns_node_is_diverged(o->node);
}

bool ns_observe_is_healthy(const struct ns_observe *o)
{
    return ns_node_is_ready(o->node) && !ns_observe_is_diverged(o);
}

static const struct ns_member *find_member(const struct ns_state *s,
                                           uint64_t id)
{
    for (size_t i = 0; i < s->n_members; i++) {
        if (s->members[i].id == id) {
            return &s->members[i];
        }
    }
    return NULL;
}

static void put_addr(struct ns_json_writer *w, const char *key,
                     const char *addr)
{
    ns_json_write_key(w, key);
    ns_json_write_str(w, addr != NULL ? addr : "");
}

static void put_hex(struct ns_json_writer *w, const char *key, uint64_t v)
{
    char hex[24];
    snprintf(hex, sizeof hex, "%016" PRIx64, v);
    ns_json_write_key(w, key);
    ns_json_write_str(w, hex);
}

/* A member's address, falling back to this node's own configured addresses
 * while the replicated member table does not know it yet. */
static const char *addr_of(const struct ns_observe *o, uint64_t id,
                           const char *known, int which)
{
    if ((known != NULL && known[0] != '\0') || id != ns_node_id(o->node)) {
        return known;
    }
    return which == 0 ? ns_server_client_addr(o->srv) : o->http_addr;
}

static void put_member(struct ns_json_writer *w, const struct ns_observe *o,
                       uint64_t id, const struct ns_member *m,
                       const char *raft_addr, const char *role, bool leader)
{
    ns_json_write_obj_begin(w);
    ns_json_write_key(w, "id");
    ns_json_write_int(w, (int64_t)id);
    put_addr(w, "raft",
             raft_addr != NULL ? raft_addr : (m ? m->raft_addr : NULL));
    put_addr(w, "client", addr_of(o, id, m ? m->client_addr : NULL, 0));
    put_addr(w, "http", addr_of(o, id, m ? m->http_addr : NULL, 1));
    ns_json_write_key(w, "role");
    ns_json_write_str(w, role);
    ns_json_write_key(w, "voter");
    ns_json_write_bool(w, strcmp(role, "voter") == 0);
    ns_json_write_key(w, "leader");
    ns_json_write_bool(w, leader);
    ns_json_write_obj_end(w);
}

/* The raft configuration joined with the replicated addresses; members only
 * in the replicated table get role "none". */
static int put_members(struct ns_json_writer *w, const struct ns_observe *o,
                       uint64_t leader_id)
{
    struct ns_node_member *conf = NULL;
    size_t n_conf = 0;
    int rv = ns_node_members(o->node, &conf, &n_conf);
    if (rv != 0) {
        return rv;
    }
    ns_json_write_key(w, "members");
    ns_json_write_arr_begin(w);
    for (size_t i = 0; i < n_conf; i++) {
        put_member(w, o, conf[i].id, find_member(o->state, conf[i].id),
                   conf[i].raft_addr, member_role_text(conf[i].role),
                   conf[i].id == leader_id);
    }
    for (size_t i = 0; i < o->state->n_members; i++) {
        const struct ns_member *m = &o->state->members[i];
        bool in_conf = false;
        for (size_t j = 0; j < n_conf; j++) {
            in_conf = in_conf || conf[j].id == m->id;
        }
        if (!in_conf) {
            put_member(w, o, m->id, m, NULL, "none", false);
        }
    }
    ns_json_write_arr_end(w);
    ns_free(conf);
    return 0;
}

static const char *health_text(enum ns_diverge_health h)
{
    switch (h) {
    case NS_DIVERGE_HEALTHY:
        return "healthy";
    case NS_DIVERGE_DIVERGED:
        return "diverged";
    case NS_DIVERGE_RECOVERING:
        return "recovering";
    case NS_DIVERGE_UNJUDGED:
        break;
    }
    return "unjudged";
}

static void put_ids(struct ns_json_writer *w, const char *key,
                    const uint64_t *ids, size_t n)
{
    ns_json_write_key(w, key);
    ns_json_write_arr_begin(w);
    for (size_t i = 0; i < n; i++) {
        ns_json_write_int(w, (int64_t)ids[i]);
    }
    ns_json_write_arr_end(w);
}

/* "divergence": the majority verdicts as this node applied them, its own
 * judgement and recovery, and (leader) the tally's open state. */
static void put_divergence(struct ns_json_writer *w, const struct ns_observe *o)
{
    const struct ns_diverge *dv = ns_node_diverge(o->node);
    const struct ns_verdicts *v = &o->ig->verdicts;
    const struct ns_recovery *r = &o->ig->recovery;
    ns_json_write_key(w, "divergence");
    ns_json_write_obj_begin(w);
    ns_json_write_key(w, "health");
    ns_json_write_str(w, health_text(dv->health));
    ns_json_write_key(w, "verdict_index");
    ns_json_write_int(w, (int64_t)dv->verdict.index);
    put_hex(w, "verdict_digest", dv->verdict.digest);
    put_ids(w, "verdict_healthy", dv->healthy, dv->n_healthy);
    ns_json_write_key(w, "verdicts");
    ns_json_write_int(w, (int64_t)dv->n_verdicts);
    /* Own digests no verdict judged yet: they stay when no majority agreed. */
    struct ns_diverge_mark marks[NS_DIVERGE_RING];
    ns_json_write_key(w, "unjudged");
    ns_json_write_int(w,
                      (int64_t)ns_diverge_unjudged(dv, marks, NS_DIVERGE_RING));
    ns_json_write_key(w, "times_diverged");
    ns_json_write_int(w, (int64_t)dv->n_diverged);
    ns_json_write_key(w, "times_recovered");
    ns_json_write_int(w, (int64_t)dv->n_recovered);
    ns_json_write_key(w, "installs");
    ns_json_write_int(w, (int64_t)dv->n_installs);
    ns_json_write_key(w, "installed_at");
    ns_json_write_int(w, (int64_t)dv->installed_at);
    ns_json_write_key(w, "fetch_attempts");
    ns_json_write_int(w, (int64_t)r->n_attempts);
    ns_json_write_key(w, "fetching");
    ns_json_write_bool(w, r->fetching);
    /* Meaningful on the leader (leading true): its tally, and the
     * checkpoints it left without a verdict for want of a majority. */
    ns_json_write_key(w, "tally");
    ns_json_write_obj_begin(w);
    ns_json_write_key(w, "leading");
    ns_json_write_bool(w, v->leading);
    ns_json_write_key(w, "open_votes");
    ns_json_write_int(w, (int64_t)v->tally.n);
    ns_json_write_key(w, "decided_through");
    ns_json_write_int(w, (int64_t)v->tally.closed_through);
    ns_json_write_key(w, "no_majority_index");
    ns_json_write_int(w, (int64_t)v->tally.no_majority_index);
    ns_json_write_key(w, "no_majority");
    ns_json_write_int(w, (int64_t)v->tally.n_no_majority);
    ns_json_write_key(w, "verdicts_proposed");
    ns_json_write_int(w, (int64_t)v->n_proposed);
    ns_json_write_key(w, "reports_received");
    ns_json_write_int(w, (int64_t)v->n_reports_received);
    ns_json_write_obj_end(w);
    ns_json_write_key(w, "reports_sent");
    ns_json_write_int(w, (int64_t)v->n_reports_sent);
    ns_json_write_obj_end(w);
}

int ns_observe_status_json(const struct ns_observe *o, struct ns_buf *out)
{
    struct ns_json_writer w;
    uint64_t leader_id = ns_node_leader_id(o->node);
    const struct ns_member *lm = find_member(o->state, leader_id);
    ns_json_write_init(&w, out, NS_JSON_STANDARD);
    ns_json_write_obj_begin(&w);
    ns_json_write_key(&w, "id");
    ns_json_write_int(&w, (int64_t)ns_node_id(o->node));
    ns_json_write_key(&w, "role");
    ns_json_write_str(&w, role_text(ns_node_role(o->node)));
    ns_json_write_key(&w, "term");
    ns_json_write_int(&w, (int64_t)ns_node_term(o->node));
    ns_json_write_key(&w, "leader");
    ns_json_write_obj_begin(&w);
    ns_json_write_key(&w, "id");
    ns_json_write_int(&w, (int64_t)leader_id);
    put_addr(&w, "client",
             addr_of(o, leader_id, lm ? lm->client_addr : NULL, 0));
    put_addr(&w, "raft", lm ? lm->raft_addr : NULL);
    put_addr(&w, "http", addr_of(o, leader_id, lm ? lm->http_addr : NULL, 1));
    ns_json_write_obj_end(&w);
    ns_json_write_key(&w, "commit_index");
    ns_json_write_int(&w, (int64_t)ns_node_commit_index(o->node));
    ns_json_write_key(&w, "applied_index");
    ns_json_write_int(&w, (int64_t)ns_node_last_applied(o->node));
    const struct ns_diverge *dv = ns_node_diverge(o->node);
    put_hex(&w, "digest", dv->last.digest);
    ns_json_write_key(&w, "digest_index");
    ns_json_write_int(&w, (int64_t)dv->last.index);
    ns_json_write_key(&w, "ready");
    ns_json_write_bool(&w, ns_node_is_ready(o->node));
    ns_json_write_key(&w, "diverged");
    ns_json_write_bool(&w, ns_observe_is_diverged(o));
    if (dv->judged.index != 0 && ns_diverge_is_diverged(dv)) {
        ns_json_write_key(&w, "diverged_at");
        ns_json_write_int(&w, (int64_t)dv->judged.index);
        put_hex(&w, "diverged_majority_digest", dv->judged.digest);
        put_hex(&w, "diverged_local_digest", dv->judged_local);
    }
    put_divergence(&w, o);
    int rv = put_members(&w, o, leader_id);
    ns_json_write_key(&w, "brokers");
    ns_json_write_int(&w, (int64_t)ns_route_n_brokers(o->state->route));
    ns_json_write_key(&w, "topics");
    ns_json_write_int(&w, (int64_t)ns_route_n_topics(o->state->route));
    ns_json_write_key(&w, "connections");
    ns_json_write_int(&w, (int64_t)ns_server_n_conns(o->srv));
    ns_observe_put_ops(&w, o);
    struct ns_buf cb;
    ns_buf_init(&cb);
    if (ns_server_controller_status(o->srv, &cb)) {
        ns_json_write_key(&w, "controller");
        ns_json_write_raw(&w, (const char *)cb.data, cb.len);
        out->err = out->err ? out->err : cb.err;
    }
    ns_buf_close(&cb);
    ns_json_write_obj_end(&w);
    if (rv == 0 && out->err != 0) {
        rv = out->err;
    }
    return rv;
}

void ns_observe_gauges(const struct ns_observe *o, struct ns_buf *out)
{
    int role = ns_node_role(o->node);
    ns_buf_printf(
        out,
        "# HELP raftns_raft_role Raft role of this node (label role; value 0 "
        "unavailable, 1 follower, 2 candidate, 3 leader).\n"
        "# TYPE raftns_raft_role gauge\n"
        "raftns_raft_role{role=\"%s\"} %d\n"
        "# HELP raftns_raft_is_leader 1 while this node is the leader with its "
        "barrier applied.\n"
        "# TYPE raftns_raft_is_leader gauge\n"
        "raftns_raft_is_leader %d\n"
        "# HELP raftns_raft_term Current raft term.\n"
        "# TYPE raftns_raft_term gauge\n"
        "raftns_raft_term %" PRIu64 "\n"
        "# HELP raftns_raft_commit_index Highest log index this node knows is "
        "committed.\n"
        "# TYPE raftns_raft_commit_index gauge\n"
        "raftns_raft_commit_index %" PRIu64 "\n"
        "# HELP raftns_raft_applied_index Highest log index applied to this "
        "node's state.\n"
        "# TYPE raftns_raft_applied_index gauge\n"
        "raftns_raft_applied_index %" PRIu64 "\n"
        "# HELP raftns_raft_leader_id Id of the leader this node follows (0 "
        "when none is known).\n"
        "# TYPE raftns_raft_leader_id gauge\n"
        "raftns_raft_leader_id %" PRIu64 "\n"
        "# HELP raftns_ready 1 while this node serves reads: log replayed and "
        "a leader known (docs/readiness.md).\n"
        "# TYPE raftns_ready gauge\n"
        "raftns_ready %d\n"
        "# HELP raftns_diverged 1 while a verdict found this node's state "
        "digest outside the majority (until a later one agrees).\n"
        "# TYPE raftns_diverged gauge\n"
        "raftns_diverged %d\n"
        "# HELP raftns_checkpoint_index Log index of the last state digest "
        "checkpoint.\n"
        "# TYPE raftns_checkpoint_index gauge\n"
        "raftns_checkpoint_index %" PRIu64 "\n"
        "# HELP raftns_connections Open client connections.\n"
        "# TYPE raftns_connections gauge\n"
        "raftns_connections %zu\n"
        "# HELP raftns_brokers Brokers in the route table.\n"
        "# TYPE raftns_brokers gauge\n"
        "raftns_brokers %zu\n"
        "# HELP raftns_topics Topics in the route table.\n"
        "# TYPE raftns_topics gauge\n"
        "raftns_topics %zu\n"
        "# HELP raftns_route_encodes_total Route replies encoded (cache "
        "misses).\n"
        "# TYPE raftns_route_encodes_total counter\n"
        "raftns_route_encodes_total %" PRIu64 "\n",
        role_text(role), role, role == NS_ROLE_LEADER ? 1 : 0,
        ns_node_term(o->node), ns_node_commit_index(o->node),
        ns_node_last_applied(o->node), ns_node_leader_id(o->node),
        ns_node_is_ready(o->node) ? 1 : 0, ns_observe_is_diverged(o) ? 1 : 0,
        ns_node_diverge(o->node)->last.index, ns_server_n_conns(o->srv),
        ns_route_n_brokers(o->state->route), ns_route_n_topics(o->state->route),
        ns_route_n_route_encodes(o->state->route));
    const struct ns_diverge *dv = ns_node_diverge(o->node);
    ns_buf_printf(
        out,
        "# HELP raftns_verdict_index Checkpoint index of the last majority "
        "verdict applied.\n"
        "# TYPE raftns_verdict_index gauge\n"
        "raftns_verdict_index %" PRIu64 "\n"
        "# HELP raftns_verdicts_total Majority verdicts applied.\n"
        "# TYPE raftns_verdicts_total counter\n"
        "raftns_verdicts_total %" PRIu64 "\n"
        "# HELP raftns_diverged_total Times a verdict found this node "
        "diverged.\n"
        "# TYPE raftns_diverged_total counter\n"
        "raftns_diverged_total %" PRIu64 "\n"
        "# HELP raftns_recovered_total Times a later verdict agreed again.\n"
        "# TYPE raftns_recovered_total counter\n"
        "raftns_recovered_total %" PRIu64 "\n"
        "# HELP raftns_state_installs_total Healthy states copied from the "
        "leader and installed.\n"
        "# TYPE raftns_state_installs_total counter\n"
        "raftns_state_installs_total %" PRIu64 "\n"
        "# HELP raftns_verdict_no_majority_total Checkpoints this leader "
        "found without a majority digest (no verdict).\n"
        "# TYPE raftns_verdict_no_majority_total counter\n"
        "raftns_verdict_no_majority_total %" PRIu64 "\n",
        dv->verdict.index, dv->n_verdicts, dv->n_diverged, dv->n_recovered,
        dv->n_installs, o->ig->verdicts.tally.n_no_majority);
    struct ns_node_peer_stats ps;
    ns_node_peer_stats(o->node, &ps);
    ns_buf_printf(out,
                  "# HELP raftns_peer_accepted_total Raft peer connections "
                  "authenticated (inbound).\n"
                  "# TYPE raftns_peer_accepted_total counter\n"
                  "raftns_peer_accepted_total %" PRIu64 "\n"
                  "# HELP raftns_peer_connected_total Raft peer connections "
                  "this node opened and authenticated (outbound).\n"
                  "# TYPE raftns_peer_connected_total counter\n"
                  "raftns_peer_connected_total %" PRIu64 "\n"
                  "# HELP raftns_peer_refused_total Raft peer handshakes "
                  "refused (bad MAC, non-member, timeout, cap, TLS).\n"
                  "# TYPE raftns_peer_refused_total counter\n"
                  "raftns_peer_refused_total %" PRIu64 "\n"
                  "# HELP raftns_peer_violations_total Raft peer connections "
                  "closed by the message checker.\n"
                  "# TYPE raftns_peer_violations_total counter\n"
                  "raftns_peer_violations_total %" PRIu64 "\n"
                  "# HELP raftns_peer_backpressure_total Raft peer relay "
                  "reads paused for a full write queue.\n"
                  "# TYPE raftns_peer_backpressure_total counter\n"
                  "raftns_peer_backpressure_total %" PRIu64 "\n",
                  ps.accepted, ps.connected, ps.refused, ps.violations,
                  ps.pauses);
    ns_server_controller_metrics(o->srv, out);
}
