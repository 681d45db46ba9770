/* The cluster side of a server (docs/design.md §4, §6): writes go to the leader
 * (locally on the leader, de-duplicated; forwarded with NS_CODE_FORWARD from a
 * follower) and are answered once THIS node applied them; readiness through
 * the leader's read index; consistent reads; the first leader records the
 * members' addresses. The private request handlers are in handle_cluster.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/rand.h>

#include "peer.h"
#include "raftns/alloc.h"
#include "raftns/cluster_config.h"
#include "raftns/codes.h"
#include "raftns/command.h"
#include "raftns/err.h"
#include "raftns/log.h"
#include "raftns/metrics.h"
#include "raftns/sign.h"
#include "raftns/replay.h"

#define TICK_MS 50
#define PEER_TIMEOUT_MS 3000
#define MIN_APPLY_WAIT_MS 1000
/* A forwarded command this large is resent with a growing pause, not on every
 * tick: each resend copies it to the leader again. */
#define BIG_COMMAND (1024u * 1024u)
#define BIG_RETRY_MS 200
#define BIG_RETRY_MAX_MS 1000

/* Identical pending commands on the leader share one log entry. */
struct shared_waiter {
    ns_node_index_cb cb;
    void *arg;
    struct shared_waiter *next;
};

struct shared {
    struct ns_cluster *cl;
    uint8_t *key; /* command bytes with leader_time_ms zeroed */
    size_t len;
    struct shared_waiter *waiters;
    struct shared *prev, *next;
};

/* A write of this node waiting for (or travelling to) the leader. */
struct fwd {
    struct ns_cluster *cl;
    uint8_t *bytes;
    size_t len;
    ns_node_index_cb cb;
    void *arg;
    uint64_t deadline;
    uint64_t not_before; /* a big command's next send (uv_now) */
    unsigned n_sends;
    uint64_t index;
    struct ns_apply_result res;
    struct fwd *prev, *next; /* in cl->parked while waiting for a leader */
    bool parked;
};

struct ns_cluster {
    struct ns_server *srv;
    uint64_t id;
    char *secret;
    const struct ns_cluster_config *file; /* borrowed, may be NULL */
    struct ns_peer *leader_peer;
    uint64_t peer_leader_id;
    struct fwd *parked;
    struct shared *shared;
    uv_timer_t timer;
    bool started;
    bool stopping;
    bool read_index_inflight;
    bool members_recorded;
    struct ns_replay replay; /* nonces of signed private requests */
    /* Test hook RAFTNS_TEST_READY_DELAY_MS (docs/readiness.md): the leader's
     * read index is only handed to the node this long after it arrived, so a
     * test can hold a restarted follower "not ready" while it knows a leader.
     * 0 = off. */
    uint64_t test_ready_delay_ms;
    uint64_t delayed_index; /* the read index held back */
    uint64_t delayed_until; /* uv_now; 0 = nothing held */
    uint64_t n_refused;     /* private requests refused (metrics) */
    uint64_t next_refusal_log_ms;
    uint64_t reqid_run, reqid_seq; /* this process's request ids */
    /* Test hook RAFTNS_TEST_FORWARD_ECHO_MS (docs/exactly-once.md): every
     * forwarded write is sent to the leader once more this long after its
     * first send, as a connection that delivers late would. 0 = off. */
    uint64_t test_echo_ms;
    struct echo *echoes;
};

/* A copy of a forwarded write waiting for its echo (test hook only). */
struct echo {
    struct echo *next;
    uint64_t due; /* uv_now */
    size_t len;
    uint8_t bytes[];
};

/* Wall-clock microseconds: a run that grows from one process to the next as
 * long as the clock does not go back (ns_cluster_stamp copes if it did). */
static uint64_t reqid_new_run(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int ns_cluster_create(struct ns_server *srv, const struct ns_server_config *cfg)
{
    struct ns_cluster *cl = ns_calloc(1, sizeof *cl);
    if (cl == NULL) {
        return NS_ENOMEM;
    }
    cl->srv = srv;
    cl->id = cfg->id != 0 ? cfg->id : 1;
    cl->file = cfg->cluster;
    cl->secret = ns_strdup(cfg->secret != NULL ? cfg->secret : "");
    if (cl->secret == NULL) {
        ns_free(cl->secret);
        ns_free(cl);
        return NS_ENOMEM;
    }
    ns_replay_init(&cl->replay, 0, NS_SIGN_WINDOW_MS);
    cl->reqid_run = reqid_new_run();
    const char *echo = getenv("RAFTNS_TEST_FORWARD_ECHO_MS");
    if (echo != NULL && echo[0] != '\0') {
        cl->test_echo_ms = strtoull(echo, NULL, 10);
        NS_LOG(NS_LOG_WARN,
               "cluster: test hook: every forwarded write is sent again "
               "after %llu ms",
               (unsigned long long)cl->test_echo_ms);
    }
    const char *delay = getenv("RAFTNS_TEST_READY_DELAY_MS");
    if (delay != NULL && delay[0] != '\0') {
        cl->test_ready_delay_ms = strtoull(delay, NULL, 10);
        NS_LOG(NS_LOG_WARN, "cluster: test hook: readiness delayed by %llu ms",
               (unsigned long long)cl->test_ready_delay_ms);
    }
    srv->cluster = cl;
    return 0;
}

void ns_cluster_stamp(struct ns_server *srv, struct ns_reqid *out)
{
    struct ns_cluster *cl = srv->cluster;
#ifdef RAFTNS_BREAK_NO_REQID /* TEST-ONLY MUTANT: writes carry no request id   \
                              */
    memset(out, 0, sizeof *out);
    return;
#endif
    const struct ns_reqid_origin *mine =
        ns_reqid_find(&srv->state->reqids, cl->id);
    if (mine != NULL && mine->run > cl->reqid_run) {
        /* An earlier process of this node ran with a later clock: its run
         * would make every id of ours stale. */
        NS_LOG(NS_LOG_WARN,
               "forward: request-id run %llu is behind the recorded %llu "
               "(clock went back?); moving past it",
               (unsigned long long)cl->reqid_run,
               (unsigned long long)mine->run);
        cl->reqid_run = mine->run + 1;
        cl->reqid_seq = 0;
    }
    out->origin = cl->id;
    out->run = cl->reqid_run;
    out->seq = ++cl->reqid_seq;
}

uint64_t ns_cluster_self_id(const struct ns_server *srv)
{
    return srv->cluster->id;
}

const char *ns_cluster_secret(const struct ns_server *srv)
{
    return srv->cluster->secret;
}

const char *ns_cluster_client_addr(const struct ns_server *srv, uint64_t id)
{
    const struct ns_state *st = srv->state;
    for (size_t i = 0; i < st->n_members; i++) {
        if (st->members[i].id == id && st->members[i].client_addr != NULL &&
            st->members[i].client_addr[0] != '\0') {
            return st->members[i].client_addr;
        }
    }
    const struct ns_cluster_config *f = srv->cluster->file;
    const struct ns_cluster_node *nd =
        f != NULL ? ns_cluster_config_find(f, id) : NULL;
    return nd != NULL ? nd->client_addr : NULL;
}

/* At most one refusal line per this many ms, so a flood of forged private
 * requests cannot fill the disk; the rest are only counted. */
#define REFUSAL_LOG_INTERVAL_MS 1000

static void refuse_private(struct ns_req *req, const char *why)
{
    struct ns_cluster *cl = req->srv->cluster;
    uint64_t now = uv_now(req->srv->loop);
    cl->n_refused++;
    ns_metrics_private_refused();
    if (now >= cl->next_refusal_log_ms) {
        cl->next_refusal_log_ms = now + REFUSAL_LOG_INTERVAL_MS;
        NS_LOG(NS_LOG_WARN,
               "conn %llu %s: private code %d refused: %s (%llu refused so "
               "far)",
               (unsigned long long)req->conn->id, req->conn->peer,
               (int)req->cmd->code, why, (unsigned long long)cl->n_refused);
    }
    ns_reply_remarkf(&req->to, NS_CODE_NO_PERMISSION,
                     "raftns: private request refused: %s", why);
}

bool ns_cluster_check_signed(struct ns_req *req)
{
#ifdef RAFTNS_MUTANT_PRIVATE_UNSIGNED
    return true;
#endif
    struct ns_cluster *cl = req->srv->cluster;
    uint8_t nonce[NS_SIGN_NONCE_LEN];
    int64_t ts = 0;
    const char *why = "signature check failed";
    int64_t now = ns_wall_ms();
    int rv = ns_sign_verify(req->cmd, cl->secret, strlen(cl->secret), now,
                            nonce, &ts, &why);
    if (rv == 0) {
        rv = ns_replay_check(&cl->replay, nonce, ts, now);
        why = rv == NS_EPERM   ? "replayed request (nonce already seen)"
              : rv == NS_EBUSY ? "too many signed requests in the window"
                               : why;
    }
    if (rv == 0) {
        return true;
    }
    refuse_private(req, why);
    return false;
}

int ns_cluster_sign(const struct ns_server *srv, struct ns_cmd *req)
{
    uint8_t nonce[NS_SIGN_NONCE_LEN];
    if (RAND_bytes(nonce, sizeof nonce) != 1) {
        NS_LOG(NS_LOG_ERROR, "cluster: no random bytes for a nonce");
        return NS_EIO;
    }
    const char *secret = srv->cluster->secret;
    return ns_sign_request(req, secret, strlen(secret), ns_wall_ms(), nonce);
}

/* --- the leader connection --- */

static int aim_leader_peer(struct ns_cluster *cl)
{
    uint64_t leader = ns_node_leader_id(cl->srv->node);
    if (leader == 0 || leader == cl->id || cl->leader_peer == NULL) {
        return NS_ENOTLEADER;
    }
    const char *addr = ns_cluster_client_addr(cl->srv, leader);
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
    return ns_cluster_sign(cl->srv, req); /* last: it covers every field */
}

int ns_cluster_leader_request(struct ns_server *srv, struct ns_cmd *req,
                              uint64_t timeout_ms, ns_peer_reply_cb cb,
                              void *arg)
{
    struct ns_cluster *cl = srv->cluster;
    if (cl->stopping) {
        return NS_ENOTLEADER;
    }
    int rv = aim_leader_peer(cl);
    if (rv == 0) {
        rv = add_auth(cl, req);
    }
    if (rv == 0) {
        rv = ns_peer_request(cl->leader_peer, req, timeout_ms, cb, arg);
        if (rv == NS_ENOTFOUND) {
            rv = NS_ENOTLEADER;
        }
    }
    return rv;
}

int ns_cluster_leader_oneway(struct ns_server *srv, struct ns_cmd *req)
{
    struct ns_cluster *cl = srv->cluster;
    if (cl->stopping) {
        return NS_ENOTLEADER;
    }
    int rv = aim_leader_peer(cl);
    if (rv == 0) {
        rv = add_auth(cl, req);
    }
    if (rv == 0) {
        rv = ns_peer_oneway(cl->leader_peer, req);
        if (rv == NS_ENOTFOUND) {
            rv = NS_ENOTLEADER;
        }
    }
    return rv;
}

/* --- de-duplicated proposals on the leader --- */

static void shared_done(void *arg, int status, uint64_t index,
                        const struct ns_apply_result *res)
{
    struct shared *sh = arg;
    struct ns_cluster *cl = sh->cl;
    if (sh->prev != NULL) {
        sh->prev->next = sh->next;
    } else {
        cl->shared = sh->next;
    }
    if (sh->next != NULL) {
        sh->next->prev = sh->prev;
    }
    struct shared_waiter *w = sh->waiters;
    while (w != NULL) {
        struct shared_waiter *next = w->next;
        w->cb(w->arg, status, index, res);
        ns_free(w);
        w = next;
    }
    ns_free(sh->key);
    ns_free(sh);
}

/* Command layout (raft/command.c): u8 version, u8 type, u64 leader_time_ms,
 * for version 2 the request id (3 x u64), then the payload. */
#define TIME_OFF 2
#define TIME_LEN 8
#define ID_LEN 24

/* Equal but for the leader time, and (any_id) for the request id. */
static bool same_command(const struct shared *sh, const uint8_t *bytes,
                         size_t len, bool any_id)
{
    size_t skip = TIME_LEN;
    if (any_id && len > 0 && bytes[0] == NS_COMMAND_VERSION) {
        skip += ID_LEN;
    }
    if (sh->len != len || len < TIME_OFF + skip) {
        return false;
    }
    return memcmp(sh->key, bytes, TIME_OFF) == 0 &&
           memcmp(sh->key + TIME_OFF + skip, bytes + TIME_OFF + skip,
                  len - TIME_OFF - skip) == 0;
}

int ns_cluster_propose_dedup(struct ns_server *srv, const uint8_t *bytes,
                             size_t len, bool any_id, ns_node_index_cb cb,
                             void *arg)
{
    struct ns_cluster *cl = srv->cluster;
    struct shared_waiter *w = ns_calloc(1, sizeof *w);
    if (w == NULL) {
        return NS_ENOMEM;
    }
    w->cb = cb;
    w->arg = arg;
    for (struct shared *sh = cl->shared; sh != NULL; sh = sh->next) {
        if (same_command(sh, bytes, len, any_id)) {
            w->next = sh->waiters;
            sh->waiters = w;
            NS_LOG(NS_LOG_DEBUG, "forward: identical pending command joined");
            return 0;
        }
    }
    struct shared *sh = ns_calloc(1, sizeof *sh);
    uint8_t *key = ns_malloc(len > 0 ? len : 1);
    if (sh == NULL || key == NULL) {
        ns_free(sh);
        ns_free(key);
        ns_free(w);
        return NS_ENOMEM;
    }
    memcpy(key, bytes, len);
    sh->cl = cl;
    sh->key = key;
    sh->len = len;
    sh->waiters = w;
    int rv = ns_node_propose_indexed(srv->node, bytes, len, shared_done, sh);
    if (rv != 0) {
        ns_free(key);
        ns_free(sh);
        ns_free(w);
        return rv;
    }
    sh->next = cl->shared;
    if (sh->next != NULL) {
        sh->next->prev = sh;
    }
    cl->shared = sh;
    return 0;
}

/* --- this node's writes --- */

static void park(struct fwd *f);
static void route(struct fwd *f);

/* --- the test hook's late copies --- */

static void schedule_echo(struct ns_cluster *cl, const struct fwd *f)
{
    struct echo *e = ns_malloc(sizeof *e + f->len);
    if (e == NULL) {
        return;
    }
    e->due = uv_now(cl->srv->loop) + cl->test_echo_ms;
    e->len = f->len;
    memcpy(e->bytes, f->bytes, f->len);
    e->next = cl->echoes;
    cl->echoes = e;
}

static void echo_answered(void *arg, int status, const struct ns_cmd *reply)
{
    (void)arg;
    NS_LOG(NS_LOG_WARN,
           "cluster: test hook: the late copy of a forwarded write was "
           "answered: %s, code %d, copy verdict %s",
           ns_strerror(status), status == 0 ? (int)reply->code : -1,
           status == 0 && ns_cmd_ext_find(reply, NS_EXT_REQID) != NULL
               ? ns_cmd_ext_find(reply, NS_EXT_REQID)
               : "none");
}

static void fire_echoes(struct ns_cluster *cl)
{
    uint64_t now = uv_now(cl->srv->loop);
    struct echo **pp = &cl->echoes;
    while (*pp != NULL) {
        struct echo *e = *pp;
        if (e->due > now) {
            pp = &e->next;
            continue;
        }
        *pp = e->next;
        struct ns_cmd req;
        ns_cmd_init(&req);
        req.code = NS_CODE_FORWARD;
        req.language = NS_LANG_OTHER;
        req.ser = NS_SER_JSON;
        req.body = e->bytes;
        req.body_len = e->len;
        int rv = ns_cluster_leader_request(cl->srv, &req, PEER_TIMEOUT_MS,
                                           echo_answered, NULL);
        ns_cmd_close(&req);
        NS_LOG(NS_LOG_WARN,
               "cluster: test hook: sent a late copy of a forwarded write: %s",
               ns_strerror(rv));
        ns_free(e);
    }
}

static void finish(struct fwd *f, int status, uint64_t index,
                   const struct ns_apply_result *res)
{
    if (status == 0 && res != NULL && res->reqid == NS_REQID_STALE) {
        status = NS_ESTALE; /* refused by the state machine: not applied */
        res = NULL;
    }
    f->cb(f->arg, status, index, res);
    ns_free(f->res.reg.master_addr);
    ns_free(f->res.reg.ha_addr);
    ns_free(f->bytes);
    ns_free(f);
}

static void park(struct fwd *f)
{
    struct ns_cluster *cl = f->cl;
    if (cl->stopping) {
        finish(f, NS_ESHUTDOWN, 0, NULL);
        return;
    }
    if (uv_now(cl->srv->loop) >= f->deadline) {
        finish(f, NS_ETIMEDOUT, 0, NULL);
        return;
    }
    f->parked = true;
    f->next = cl->parked;
    if (f->next != NULL) {
        f->next->prev = f;
    }
    f->prev = NULL;
    cl->parked = f;
}

static void local_done(void *arg, int status, uint64_t index,
                       const struct ns_apply_result *res)
{
    finish(arg, status, index, res);
}

static void applied_here(void *arg, int status)
{
    struct fwd *f = arg;
    finish(f, status, f->index, status == 0 ? &f->res : NULL);
}

static char *dup_ext(const struct ns_cmd *c, const char *key)
{
    const char *v = ns_cmd_ext_find(c, key);
    return v != NULL ? ns_strdup(v) : NULL;
}

static void forward_reply(void *arg, int status, const struct ns_cmd *reply)
{
    struct fwd *f = arg;
    struct ns_cluster *cl = f->cl;
    int64_t index = 0, type = 0, reg_status = 0, count = 0, verdict = 0;
    if (status != 0 || reply->code != NS_CODE_SUCCESS ||
        !ns_ext_int64(reply, NS_EXT_INDEX, &index) || index <= 0) {
        if (status == 0) {
            NS_LOG(NS_LOG_INFO, "forward: leader answered %d (%s); retrying",
                   (int)reply->code,
                   reply->remark != NULL ? reply->remark : "");
        }
        park(f);
        return;
    }
    ns_ext_int64(reply, NS_EXT_RES_TYPE, &type);
    ns_ext_int64(reply, NS_EXT_REG_STATUS, &reg_status);
    ns_ext_int64(reply, NS_EXT_COUNT, &count);
    ns_ext_int64(reply, NS_EXT_REQID, &verdict);
    f->index = (uint64_t)index;
    f->res.reqid = verdict == NS_REQID_DUPLICATE ? NS_REQID_DUPLICATE
                   : verdict == NS_REQID_STALE   ? NS_REQID_STALE
                                                 : NS_REQID_NEW;
    f->res.type = (enum ns_command_type)type;
    f->res.reg.status = (enum ns_register_status)reg_status;
    f->res.reg.master_addr = dup_ext(reply, NS_EXT_REG_MASTER);
    f->res.reg.ha_addr = dup_ext(reply, NS_EXT_REG_HA);
    f->res.count = (int32_t)count;
    uint64_t now = uv_now(cl->srv->loop);
    uint64_t wait = f->deadline > now ? f->deadline - now : 0;
    if (wait < MIN_APPLY_WAIT_MS) {
        wait = MIN_APPLY_WAIT_MS;
    }
    uint64_t want = f->index;
#ifdef RAFTNS_BREAK_ACK_BEFORE_APPLY
    want = 0; /* TEST-ONLY MUTANT: answer before this node applied it */
#endif
    int rv = ns_node_wait_applied(cl->srv->node, want, wait, applied_here, f);
    if (rv != 0) {
        finish(f, rv, 0, NULL);
    }
}

static void route(struct fwd *f)
{
    struct ns_cluster *cl = f->cl;
    struct ns_server *srv = cl->srv;
    if (cl->stopping || uv_now(srv->loop) >= f->deadline) {
        park(f); /* finishes it */
        return;
    }
    if (ns_node_is_leader(srv->node)) {
        int rv = ns_cluster_propose_dedup(srv, f->bytes, f->len, true,
                                          local_done, f);
        if (rv != 0) {
            finish(f, rv, 0, NULL);
        }
        return;
    }
    if (uv_now(srv->loop) < f->not_before) {
        park(f);
        return;
    }
    if (f->len >= BIG_COMMAND) {
        uint64_t pause = (uint64_t)BIG_RETRY_MS
                         << (f->n_sends < 4 ? f->n_sends : 4);
        f->not_before = uv_now(srv->loop) +
                        (pause < BIG_RETRY_MAX_MS ? pause : BIG_RETRY_MAX_MS);
    }
    f->n_sends++;
    struct ns_cmd req;
    ns_cmd_init(&req);
    req.code = NS_CODE_FORWARD;
    req.language = NS_LANG_OTHER;
    req.ser = NS_SER_JSON;
    req.body = f->bytes;
    req.body_len = f->len;
    /* A resend may find its first copy applied (or applying later): its id
     * must reach the log, never be joined or short-cut. */
    if (f->n_sends > 1 && ns_cmd_ext_set(&req, NS_EXT_RESEND, "true") != 0) {
        ns_cmd_close(&req);
        park(f);
        return;
    }
    uint64_t left = f->deadline - uv_now(srv->loop);
    int rv = ns_cluster_leader_request(srv, &req, left, forward_reply, f);
    ns_cmd_close(&req);
    if (rv != 0) {
        park(f);
        return;
    }
    ns_metrics_forwarded();
    if (cl->test_echo_ms != 0 && f->n_sends == 1) {
        schedule_echo(cl, f);
    }
}

#ifdef RAFTNS_BREAK_ACK_BEFORE_COMMIT
/* TEST-ONLY BREAK (cmake -DRAFTNS_BREAK=ack-before-commit, issue 4): a follower
 * answers SUCCESS on the next node tick, before the write is forwarded or
 * committed; the write still travels to the leader, or is dropped when none
 * answers. */
struct early_ack {
    ns_node_index_cb cb;
    void *arg;
};

static void early_ack_fire(void *arg, int status)
{
    struct early_ack *e = arg;
    struct ns_apply_result res;
    (void)status;
    memset(&res, 0, sizeof res);
    res.reg.status = NS_REGISTER_OK;
    e->cb(e->arg, 0, 0, &res);
    ns_free(e);
}

static void early_ack_drop(void *arg, int status, uint64_t index,
                           const struct ns_apply_result *res)
{
    (void)arg;
    (void)status;
    (void)index;
    (void)res;
}

static void break_ack_early(struct ns_server *srv, ns_node_index_cb *cb,
                            void **arg)
{
    struct early_ack *e = ns_calloc(1, sizeof *e);
    if (ns_node_is_leader(srv->node) || e == NULL) {
        ns_free(e);
        return;
    }
    e->cb = *cb;
    e->arg = *arg;
    if (ns_node_wait_applied(srv->node, 0, 0, early_ack_fire, e) != 0) {
        ns_free(e);
        return;
    }
    *cb = early_ack_drop;
    *arg = NULL;
}
#endif

int ns_cluster_submit(struct ns_server *srv, const uint8_t *bytes, size_t len,
                      ns_node_index_cb cb, void *arg)
{
    struct ns_cluster *cl = srv->cluster;
    if (cl->stopping) {
        return NS_ESHUTDOWN;
    }
    if (len > NS_COMMAND_MAX) {
        /* It could never be forwarded (nor sent to followers in one
         * message): refuse now rather than resend it until the deadline. */
        ns_metrics_limit(NS_LIMIT_COMMAND_SIZE);
        NS_LOG(NS_LOG_WARN,
               "forward: refused a %zu-byte command (at most %u bytes)", len,
               (unsigned)NS_COMMAND_MAX);
        return NS_ETOOBIG;
    }
    struct fwd *f = ns_calloc(1, sizeof *f);
    uint8_t *copy = ns_malloc(len > 0 ? len : 1);
    if (f == NULL || copy == NULL) {
        ns_free(f);
        ns_free(copy);
        return NS_ENOMEM;
    }
    memcpy(copy, bytes, len);
#ifdef RAFTNS_BREAK_ACK_BEFORE_COMMIT
    break_ack_early(srv, &cb, &arg);
#endif
    f->cl = cl;
    f->bytes = copy;
    f->len = len;
    f->cb = cb;
    f->arg = arg;
    f->deadline = uv_now(srv->loop) + NS_NODE_WRITE_WAIT_MS;
    /* Never call back before returning: start on the next tick when no
     * leader is known, else now (callbacks of raft/peer are always later). */
    if (ns_node_is_leader(srv->node) || aim_leader_peer(cl) == 0) {
        route(f);
    } else {
        park(f);
    }
    return 0;
}

static void retry_parked(struct ns_cluster *cl)
{
    struct fwd *list = cl->parked;
    cl->parked = NULL;
    while (list != NULL) {
        struct fwd *f = list;
        list = f->next;
        f->parked = false;
        f->prev = f->next = NULL;
        route(f);
    }
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
        ns_ext_int64(reply, NS_EXT_INDEX, &index) && index >= 0) {
        NS_LOG(NS_LOG_INFO, "cluster: leader read index %lld; catching up",
               (long long)index);
        if (cl->test_ready_delay_ms > 0) {
            cl->delayed_index = (uint64_t)index;
            cl->delayed_until = uv_now(cl->srv->loop) + cl->test_ready_delay_ms;
            cl->test_ready_delay_ms = 0; /* once, at the first join */
            return;
        }
        ns_node_set_ready_index(cl->srv->node, (uint64_t)index);
    }
}

static void release_delayed_index(struct ns_cluster *cl)
{
    if (cl->delayed_until != 0 && uv_now(cl->srv->loop) >= cl->delayed_until) {
        cl->delayed_until = 0;
        ns_node_set_ready_index(cl->srv->node, cl->delayed_index);
    }
}

static void ask_read_index(struct ns_cluster *cl)
{
    struct ns_server *srv = cl->srv;
    if (cl->read_index_inflight || ns_node_is_ready(srv->node) ||
        cl->delayed_until != 0) {
        return;
    }
    struct ns_cmd req;
    ns_cmd_init(&req);
    req.code = NS_CODE_READ_INDEX;
    req.language = NS_LANG_OTHER;
    int rv = ns_cluster_leader_request(srv, &req, PEER_TIMEOUT_MS,
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

int ns_cluster_propose_member(struct ns_server *srv, uint64_t id,
                              const char *raft_addr, const char *client_addr,
                              const char *http_addr, ns_node_index_cb cb,
                              void *arg)
{
    struct ns_command c;
    struct ns_buf b;
    ns_command_init(&c, NS_CMD_SET_MEMBER);
    c.leader_time_ms = ns_wall_ms();
    c.u.member.id = id;
    c.u.member.raft_addr = (char *)raft_addr; /* borrowed: never closed */
    c.u.member.client_addr = (char *)client_addr;
    c.u.member.http_addr = (char *)http_addr;
    ns_buf_init(&b);
    int rv = ns_command_encode(&c, &b);
    if (rv == 0 && b.err != 0) {
        rv = b.err;
    }
    if (rv == 0) {
        rv = ns_cluster_propose_dedup(srv, b.data, b.len, true,
                                      cb != NULL ? cb : record_done, arg);
    }
    ns_buf_close(&b);
    return rv;
}

static void record_members(struct ns_cluster *cl)
{
    struct ns_server *srv = cl->srv;
    if (cl->members_recorded || cl->file == NULL ||
        !ns_node_is_leader(srv->node)) {
        return;
    }
    cl->members_recorded = true;
    for (size_t i = 0; i < cl->file->n_nodes; i++) {
        const struct ns_cluster_node *nd = &cl->file->nodes[i];
        if (!nd->bootstrap || member_known(srv->state, nd)) {
            continue;
        }
        int rv = ns_cluster_propose_member(srv, nd->id, nd->raft_addr,
                                           nd->client_addr, nd->http_addr, NULL,
                                           NULL);
        if (rv != 0) {
            NS_LOG(NS_LOG_WARN, "cluster: cannot record member %llu: %s",
                   (unsigned long long)nd->id, ns_strerror(rv));
        }
    }
}

/* --- events --- */

void ns_cluster_on_change(struct ns_server *srv)
{
    struct ns_cluster *cl = srv->cluster;
    if (cl == NULL || cl->stopping) {
        return;
    }
    uint64_t leader = ns_node_leader_id(srv->node);
    if (leader != cl->peer_leader_id) {
        aim_leader_peer(cl);
        if ((leader == 0 || leader == cl->id) && cl->leader_peer != NULL) {
            ns_peer_set_addr(cl->leader_peer, NULL);
            cl->peer_leader_id = 0;
        }
    }
    if (!ns_node_is_leader(srv->node)) {
        cl->members_recorded = false;
    }
    record_members(cl);
    ns_acl_gate_seed(srv);
    release_delayed_index(cl);
    if (leader != 0 && leader != cl->id) {
        ask_read_index(cl);
    }
    if (cl->echoes != NULL) {
        fire_echoes(cl);
    }
    retry_parked(cl);
    ns_held_read_retry(srv);
}

static void tick_cb(uv_timer_t *t)
{
    ns_cluster_on_change(t->data);
}

void ns_cluster_start(struct ns_server *srv)
{
    struct ns_cluster *cl = srv->cluster;
    if (ns_peer_create(srv->loop, &cl->leader_peer) != 0) {
        NS_LOG(NS_LOG_ERROR, "cluster: out of memory for the leader peer");
    } else {
        ns_peer_use_tls(cl->leader_peer, &srv->tls.peer_ctx);
    }
    uv_timer_init(srv->loop, &cl->timer);
    cl->timer.data = srv;
    uv_timer_start(&cl->timer, tick_cb, TICK_MS, TICK_MS);
    cl->started = true;
}

static void timer_closed(uv_handle_t *h)
{
    struct ns_server *srv = h->data;
    srv->cluster->started = false;
}

void ns_cluster_stop(struct ns_server *srv)
{
    struct ns_cluster *cl = srv->cluster;
    if (cl == NULL || cl->stopping) {
        return;
    }
    cl->stopping = true;
    retry_parked(cl); /* each finishes with NS_ESHUTDOWN */
    ns_held_read_stop(srv);
    ns_peer_close(cl->leader_peer, NULL, NULL);
    cl->leader_peer = NULL;
    if (cl->started) {
        uv_close((uv_handle_t *)&cl->timer, timer_closed);
    }
}

void ns_cluster_destroy(struct ns_server *srv)
{
    struct ns_cluster *cl = srv->cluster;
    if (cl == NULL) {
        return;
    }
    ns_replay_close(&cl->replay);
    while (cl->echoes != NULL) {
        struct echo *e = cl->echoes;
        cl->echoes = e->next;
        ns_free(e);
    }
    ns_free(cl->secret);
    ns_free(cl);
    srv->cluster = NULL;
}
