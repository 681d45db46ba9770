/* The cluster side of a server (docs/design.md §4, §6): the leader connection
 * and the signatures of private requests, readiness through the leader's read
 * index, the first leader's record of the members' addresses, and the cluster
 * tick. Writes are cluster_submit.c; the handlers of the private codes are
 * the gateway's (gateway/handle_cluster.c), over this API. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "cluster/cluster_int.h"
#include "raftns/alloc.h"
#include "raftns/cluster_config.h"
#include "raftns/codes.h"
#include "raftns/command.h"
#include "raftns/err.h"
#include "raftns/log.h"
#include "raftns/metrics.h"
#include "raftns/sign.h"

int ns_cluster_create(uv_loop_t *loop, const struct ns_server_config *cfg,
                      struct ns_state *state, struct ns_node *node,
                      const struct ns_waits *waits, struct ns_cluster **out)
{
    struct ns_cluster *cl = ns_calloc(1, sizeof *cl);
    if (cl == NULL) {
        return NS_ENOMEM;
    }
    cl->loop = loop;
    cl->state = state;
    cl->node = node;
    cl->waits = waits;
    cl->id = cfg->id != 0 ? cfg->id : 1;
    cl->file = cfg->cluster;
    cl->secret = ns_strdup(cfg->secret != NULL ? cfg->secret : "");
    if (cl->secret == NULL) {
        ns_free(cl->secret);
        ns_free(cl);
        return NS_ENOMEM;
    }
    if (RAND_bytes(cl->nonce_prefix, sizeof cl->nonce_prefix) != 1) {
        NS_LOG(NS_LOG_ERROR, "cluster: no random bytes for a nonce prefix");
        ns_free(cl->secret);
        ns_free(cl);
        return NS_EIO;
    }
    ns_wait_list_init(&cl->waiting);
    ns_replay_init(&cl->replay, 0, NS_SIGN_WINDOW_MS);
    ns_cluster_submit_init(cl);
    ns_integrity_init(&cl->integrity, loop, state, node, cl);
    const char *delay = getenv("RAFTNS_TEST_READY_DELAY_MS");
    if (delay != NULL && delay[0] != '\0') {
        cl->test_ready_delay_ms = strtoull(delay, NULL, 10);
        NS_LOG(NS_LOG_WARN, "cluster: test hook: readiness delayed by %llu ms",
               (unsigned long long)cl->test_ready_delay_ms);
    }
    *out = cl;
    return 0;
}

void ns_cluster_set_tick_hook(struct ns_cluster *cl, void (*fn)(void *ctx),
                              void *ctx)
{
    cl->tick_hook = fn;
    cl->tick_ctx = ctx;
}

uint64_t ns_cluster_self_id(const struct ns_cluster *cl)
{
    return cl->id;
}

const char *ns_cluster_secret(const struct ns_cluster *cl)
{
    return cl->secret;
}

const char *ns_cluster_client_addr(const struct ns_cluster *cl, uint64_t id)
{
    const struct ns_state *st = cl->state;
    for (size_t i = 0; i < st->n_members; i++) {
        if (st->members[i].id == id && st->members[i].client_addr != NULL &&
            st->members[i].client_addr[0] != '\0') {
            return st->members[i].client_addr;
        }
    }
    const struct ns_cluster_config *f = cl->file;
    const struct ns_cluster_node *nd =
        f != NULL ? ns_cluster_config_find(f, id) : NULL;
    return nd != NULL ? nd->client_addr : NULL;
}

/* At most one refusal line per this many ms, so a flood of forged private
 * requests cannot fill the disk; the rest are only counted. */
#define REFUSAL_LOG_INTERVAL_MS 1000

static void refuse_private(struct ns_cluster *cl, const struct ns_cmd *cmd,
                           uint64_t conn_id, const char *peer, const char *why)
{
    uint64_t now = ns_cluster_now(cl);
    cl->n_refused++;
    ns_metrics_private_refused();
    if (now >= cl->next_refusal_log_ms) {
        cl->next_refusal_log_ms = now + REFUSAL_LOG_INTERVAL_MS;
        NS_LOG(NS_LOG_WARN,
               "conn %llu %s: private code %d refused: %s (%llu refused so "
               "far)",
               (unsigned long long)conn_id, peer, (int)cmd->code, why,
               (unsigned long long)cl->n_refused);
    }
}

const char *ns_cluster_check_signed(struct ns_cluster *cl,
                                    const struct ns_cmd *cmd, uint64_t conn_id,
                                    const char *peer)
{
#ifdef RAFTNS_MUTANT_PRIVATE_UNSIGNED
    return NULL;
#endif
    uint8_t nonce[NS_SIGN_NONCE_LEN];
    int64_t ts = 0;
    const char *why = "signature check failed";
    int64_t now = ns_clock_wall_ms();
    int rv = ns_sign_verify(cmd, cl->secret, strlen(cl->secret), now, nonce,
                            &ts, &why);
    if (rv == 0) {
        rv = ns_replay_check(&cl->replay, nonce, ts, now);
        why = rv == NS_EPERM   ? "replayed request (nonce already seen)"
              : rv == NS_EBUSY ? "too many signed requests in the window"
                               : why;
    }
    if (rv == 0) {
        return NULL;
    }
    refuse_private(cl, cmd, conn_id, peer, why);
    return why;
}

int ns_cluster_sign(struct ns_cluster *cl, struct ns_cmd *req)
{
    uint8_t nonce[NS_SIGN_NONCE_LEN];
    memcpy(nonce, cl->nonce_prefix, sizeof cl->nonce_prefix);
    uint64_t count = cl->nonces_used++;
    for (size_t i = sizeof cl->nonce_prefix; i < sizeof nonce; i++) {
        nonce[i] = (uint8_t)(count >> (8 * (sizeof nonce - 1 - i)));
    }
    const char *secret = cl->secret;
    return ns_sign_request(req, secret, strlen(secret), ns_clock_wall_ms(),
                           nonce);
}

/* --- the leader connection --- */

int ns_cluster_aim_leader(struct ns_cluster *cl)
{
    uint64_t leader = ns_node_leader_id(cl->node);
    if (leader == 0 || leader == cl->id || cl->leader_peer == NULL) {
        return NS_ENOTLEADER;
    }
    const char *addr = ns_cluster_client_addr(cl, leader);
    if (addr == NULL) {
        return NS_ENOTLEADER;
    }
    cl->peer_leader_id = leader;
    return ns_peer_set_addr(cl->leader_peer, addr);
}

static int add_auth(struct ns_cluster *cl, struct ns_cmd *req)
{
    char from[24];
    snprintf(from, sizeof from, "%llu", (unsigned long long)cl->id);
    if (ns_cmd_ext_set(req, NS_EXT_FROM, from) != 0) {
        return NS_ENOMEM;
    }
    return ns_cluster_sign(cl, req); /* last: it covers every field */
}

/* Aims, signs and hands req to the leader connection: a request with a reply
 * (cb) or, with cb NULL, a oneway one. */
static int to_leader(struct ns_cluster *cl, struct ns_cmd *req,
                     uint64_t timeout_ms, ns_peer_reply_cb cb, void *arg)
{
    if (cl->stopping) {
        return NS_ENOTLEADER;
    }
    int rv = ns_cluster_aim_leader(cl);
    if (rv == 0) {
        rv = add_auth(cl, req);
    }
    if (rv == 0) {
        rv = cb != NULL
                 ? ns_peer_request(cl->leader_peer, req, timeout_ms, cb, arg)
                 : ns_peer_oneway(cl->leader_peer, req);
        if (rv == NS_ENOTFOUND) {
            rv = NS_ENOTLEADER;
        }
    }
    return rv;
}

int ns_cluster_leader_request(struct ns_cluster *cl, struct ns_cmd *req,
                              uint64_t timeout_ms, ns_peer_reply_cb cb,
                              void *arg)
{
    return cb != NULL ? to_leader(cl, req, timeout_ms, cb, arg) : NS_EINVAL;
}

int ns_cluster_leader_oneway(struct ns_cluster *cl, struct ns_cmd *req)
{
    return to_leader(cl, req, 0, NULL, NULL);
}

/* --- readiness: the leader's read index as of joining --- */

static void read_index_reply(void *arg, int status, const struct ns_cmd *reply)
{
    struct ns_cluster *cl = arg;
    int64_t index = 0;
    cl->read_index_inflight = false;
    if (cl->stopping) {
        return;
    }
    if (status == 0 && reply->code == NS_CODE_SUCCESS &&
        ns_cmd_ext_int64(reply, NS_EXT_INDEX, &index) && index >= 0) {
        NS_LOG(NS_LOG_INFO, "cluster: leader read index %lld; catching up",
               (long long)index);
        if (cl->test_ready_delay_ms > 0) {
            cl->delayed_index = (uint64_t)index;
            cl->delayed_until = ns_cluster_now(cl) + cl->test_ready_delay_ms;
            cl->test_ready_delay_ms = 0; /* once, at the first join */
            return;
        }
        ns_node_set_ready_index(cl->node, (uint64_t)index);
    }
}

static void release_delayed_index(struct ns_cluster *cl)
{
    if (cl->delayed_until != 0 && ns_cluster_now(cl) >= cl->delayed_until) {
        cl->delayed_until = 0;
        ns_node_set_ready_index(cl->node, cl->delayed_index);
    }
}

static void ask_read_index(struct ns_cluster *cl)
{
    if (cl->read_index_inflight || ns_node_is_ready(cl->node) ||
        cl->delayed_until != 0) {
        return;
    }
    struct ns_cmd req;
    ns_cmd_init(&req);
    req.code = NS_CODE_READ_INDEX;
    req.language = NS_LANG_OTHER;
    int rv = ns_cluster_leader_request(cl, &req, cl->waits->peer_request_ms,
                                       read_index_reply, cl);
    ns_cmd_close(&req);
    cl->read_index_inflight = rv == 0;
}

/* --- member addresses: the first leader records the file's members --- */

static bool member_known(const struct ns_state *st,
                         const struct ns_cluster_node *nd)
{
    for (size_t i = 0; i < st->n_members; i++) {
        const struct ns_member *m = &st->members[i];
        if (m->id == nd->id) {
            return m->client_addr != NULL &&
                   strcmp(m->client_addr, nd->client_addr) == 0 &&
                   m->raft_addr != NULL &&
                   strcmp(m->raft_addr, nd->raft_addr) == 0;
        }
    }
    return false;
}

static void record_done(void *arg, int status, uint64_t index,
                        const struct ns_apply_result *res)
{
    (void)arg;
    (void)res;
    if (status != 0) {
        NS_LOG(NS_LOG_WARN, "cluster: recording a member failed: %s",
               ns_strerror(status));
    } else {
        NS_LOG(NS_LOG_DEBUG, "cluster: member recorded at index %llu",
               (unsigned long long)index);
    }
}

int ns_cluster_propose_member(struct ns_cluster *cl, uint64_t id,
                              const char *raft_addr, const char *client_addr,
                              const char *http_addr, ns_node_index_cb cb,
                              void *arg)
{
    struct ns_command c;
    ns_command_init(&c, NS_CMD_SET_MEMBER);
    c.leader_time_ms = ns_clock_wall_ms();
    c.u.member.id = id;
    c.u.member.raft_addr = (char *)raft_addr; /* borrowed: never closed */
    c.u.member.client_addr = (char *)client_addr;
    c.u.member.http_addr = (char *)http_addr;
    return ns_cluster_submit(cl, &c, NS_SUBMIT_LEADER,
                             cb != NULL ? cb : record_done, arg);
}

static void record_members(struct ns_cluster *cl)
{
    if (cl->members_recorded || cl->file == NULL ||
        !ns_node_is_leader(cl->node)) {
        return;
    }
    cl->members_recorded = true;
    for (size_t i = 0; i < cl->file->n_nodes; i++) {
        const struct ns_cluster_node *nd = &cl->file->nodes[i];
        if (!nd->bootstrap || member_known(cl->state, nd)) {
            continue;
        }
        int rv = ns_cluster_propose_member(cl, nd->id, nd->raft_addr,
                                           nd->client_addr, nd->http_addr, NULL,
                                           NULL);
        if (rv != 0) {
            NS_LOG(NS_LOG_WARN, "cluster: cannot record member %llu: %s",
                   (unsigned long long)nd->id, ns_strerror(rv));
        }
    }
}

/* --- waiting for the cluster --- */

void ns_cluster_wait_again(struct ns_cluster *cl, struct ns_wait *w)
{
    ns_wait_list_add(&cl->waiting, w);
}

bool ns_cluster_is_stopping(const struct ns_cluster *cl)
{
    return cl == NULL || cl->stopping;
}

uint64_t ns_cluster_leaderless_since(const struct ns_cluster *cl)
{
    return cl->leaderless_since;
}

static void run_waiting(struct ns_cluster *cl)
{
    ns_wait_list_run(&cl->waiting);
}

/* --- events --- */

void ns_cluster_on_change(struct ns_cluster *cl)
{
    if (cl == NULL || cl->stopping) {
        return;
    }
    uint64_t leader = ns_node_leader_id(cl->node);
    if (leader != 0) {
        cl->leaderless_since = 0;
    } else if (cl->leaderless_since == 0) {
        cl->leaderless_since = ns_cluster_now(cl);
    }
    if (leader != cl->peer_leader_id) {
        ns_cluster_aim_leader(cl);
        if ((leader == 0 || leader == cl->id) && cl->leader_peer != NULL) {
            ns_peer_set_addr(cl->leader_peer, NULL);
            cl->peer_leader_id = 0;
        }
    }
    if (!ns_node_is_leader(cl->node)) {
        cl->members_recorded = false;
    }
    record_members(cl);
    if (cl->tick_hook != NULL) {
        cl->tick_hook(cl->tick_ctx); /* the composition root's (ACL seed) */
    }
    release_delayed_index(cl);
    if (leader != 0 && leader != cl->id) {
        ask_read_index(cl);
    }
    ns_cluster_submit_tick(cl);
    run_waiting(cl);
}

static void tick_cb(uv_timer_t *t)
{
    ns_cluster_on_change(t->data);
}

void ns_cluster_start(struct ns_cluster *cl, struct ns_tls_ctx *const *peer_tls)
{
    if (ns_peer_create(cl->loop, &cl->leader_peer) != 0) {
        NS_LOG(NS_LOG_ERROR, "cluster: out of memory for the leader peer");
    } else {
        ns_peer_use_tls(cl->leader_peer, peer_tls);
    }
    uv_timer_init(cl->loop, &cl->timer);
    cl->timer.data = cl;
    uv_timer_start(&cl->timer, tick_cb, NS_CLUSTER_TICK_MS, NS_CLUSTER_TICK_MS);
    cl->started = true;
}

void ns_cluster_start_driven(struct ns_cluster *cl,
                             const struct ns_peer_factory *peers)
{
    if (peers->create(peers->arg, &cl->leader_peer) != 0) {
        NS_LOG(NS_LOG_ERROR, "cluster: out of memory for the leader peer");
        cl->leader_peer = NULL;
    }
    /* initialised (ns_cluster_stop closes it), never started */
    uv_timer_init(cl->loop, &cl->timer);
    cl->timer.data = cl;
    cl->driven = true;
    cl->started = true;
}

void ns_cluster_set_clock(struct ns_cluster *cl, const struct ns_clock *clock)
{
    cl->clock = clock;
    cl->integrity.clock = clock;
}

static void timer_closed(uv_handle_t *h)
{
    struct ns_cluster *cl = h->data;
    cl->started = false;
}

void ns_cluster_stop(struct ns_cluster *cl)
{
    if (cl == NULL || cl->stopping) {
        return;
    }
    cl->stopping = true;
    /* Each waiting request finishes now (shutdown); a retry that waited again
     * anyway would be lost with the cluster. */
    run_waiting(cl);
    if (!ns_wait_list_is_empty(&cl->waiting)) {
        NS_LOG(NS_LOG_ERROR, "cluster: a request kept waiting after stop");
    }
    ns_peer_close(cl->leader_peer, NULL, NULL);
    cl->leader_peer = NULL;
    if (cl->started) {
        uv_close((uv_handle_t *)&cl->timer, timer_closed);
    }
}

void ns_cluster_destroy(struct ns_cluster *cl)
{
    if (cl == NULL) {
        return;
    }
    ns_replay_close(&cl->replay);
    ns_cluster_submit_close(cl);
    ns_integrity_close(&cl->integrity);
    ns_free(cl->secret);
    ns_free(cl);
}
