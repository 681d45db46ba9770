/* The write path (docs/exactly-once.md, docs/waits.md): ns_cluster_submit
 * stamps a client's write with a request id and replicates it: on the leader
 * through the de-duplication step (dedup.c); on a follower
 * forwarded with NS_CODE_FORWARD (parked while no leader is known, sent again
 * after a failure with the same id), answered once THIS node applied it. The
 * leader's half of a forwarded write is ns_cluster_accept_forward. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster/cluster_int.h"
#include "raftns/alloc.h"
#include "raftns/cluster_config.h"
#include "raftns/codes.h"
#include "raftns/command.h"
#include "raftns/err.h"
#include "raftns/log.h"
#include "raftns/metrics.h"

/* A forwarded command this large is resent with a growing pause, not on every
 * tick: each resend copies it to the leader again. */
#define BIG_COMMAND (1024u * 1024u)
#define BIG_RETRY_MS 200
#define BIG_RETRY_MAX_MS 1000

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
    struct ns_wait wait; /* parked: waiting for a leader */
};

/* A copy of a forwarded write waiting for its echo (test hook only). */
struct echo {
    struct echo *next;
    uint64_t due; /* uv_now */
    size_t len;
    uint8_t bytes[];
};

/* Wall-clock microseconds: a run that grows from one process to the next as
 * long as the clock does not go back (stamp() copes if it did). */
static uint64_t reqid_new_run(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void stamp(struct ns_cluster *cl, struct ns_reqid *out)
{
#ifdef RAFTNS_BREAK_NO_REQID
    /* TEST-ONLY MUTANT: writes carry no request id */
    memset(out, 0, sizeof *out);
    return;
#endif
    const struct ns_reqid_origin *mine =
        ns_reqid_find(&cl->state->reqids, cl->id);
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

/* --- this node's writes --- */

static void park(struct fwd *f);
static void route(struct fwd *f);

/* A FORWARD request carrying an encoded command (borrowed). */
static void forward_request(struct ns_cmd *req, const uint8_t *bytes,
                            size_t len)
{
    ns_cmd_init(req);
    req->code = NS_CODE_FORWARD;
    req->language = NS_LANG_OTHER;
    req->ser = NS_SER_JSON;
    req->body = bytes;
    req->body_len = len;
}

/* --- the test hook's late copies --- */

static void schedule_echo(struct ns_cluster *cl, const struct fwd *f)
{
    struct echo *e = ns_malloc(sizeof *e + f->len);
    if (e == NULL) {
        return;
    }
    e->due = ns_cluster_now(cl) + cl->test_echo_ms;
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
    uint64_t now = ns_cluster_now(cl);
    struct echo **pp = &cl->echoes;
    while (*pp != NULL) {
        struct echo *e = *pp;
        if (e->due > now) {
            pp = &e->next;
            continue;
        }
        *pp = e->next;
        struct ns_cmd req;
        forward_request(&req, e->bytes, e->len);
        int rv = ns_cluster_leader_request(cl, &req, cl->waits->peer_request_ms,
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
    if (ns_cluster_now(cl) >= f->deadline) {
        finish(f, NS_ETIMEDOUT, 0, NULL);
        return;
    }
    ns_cluster_wait_again(cl, &f->wait);
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

static int set_ext_u64(struct ns_cmd *c, const char *key, uint64_t v)
{
    char text[24];
    snprintf(text, sizeof text, "%llu", (unsigned long long)v);
    return ns_cmd_ext_set(c, key, text);
}

int ns_cluster_forward_answer(struct ns_cmd *reply, uint64_t index,
                              const struct ns_apply_result *res)
{
    int rv = set_ext_u64(reply, NS_EXT_INDEX, index);
    if (res != NULL) {
        rv |= set_ext_u64(reply, NS_EXT_RES_TYPE, (uint64_t)res->type);
        rv |= set_ext_u64(reply, NS_EXT_REG_STATUS, (uint64_t)res->reg.status);
        rv |= set_ext_u64(reply, NS_EXT_COUNT, (uint64_t)res->count);
        if (res->reg.master_addr != NULL) {
            rv |=
                ns_cmd_ext_set(reply, NS_EXT_REG_MASTER, res->reg.master_addr);
        }
        if (res->reg.ha_addr != NULL) {
            rv |= ns_cmd_ext_set(reply, NS_EXT_REG_HA, res->reg.ha_addr);
        }
        if (res->reqid != NS_REQID_NEW) {
            rv |= set_ext_u64(reply, NS_EXT_REQID, (uint64_t)res->reqid);
            ns_metrics_write_copy(res->reqid == NS_REQID_STALE);
        }
    }
    return rv != 0 ? NS_ENOMEM : 0;
}

/* Reads what ns_cluster_forward_answer wrote. */
static void forward_reply(void *arg, int status, const struct ns_cmd *reply)
{
    struct fwd *f = arg;
    struct ns_cluster *cl = f->cl;
    int64_t index = 0, type = 0, reg_status = 0, count = 0, verdict = 0;
    if (status != 0 || reply->code != NS_CODE_SUCCESS ||
        !ns_cmd_ext_int64(reply, NS_EXT_INDEX, &index) || index <= 0) {
        if (status == 0) {
            NS_LOG(NS_LOG_INFO, "forward: leader answered %d (%s); retrying",
                   (int)reply->code,
                   reply->remark != NULL ? reply->remark : "");
        }
#ifdef RAFTNS_BREAK_FORWARD_ONCE
        /* TEST-ONLY MUTANT: a forward that failed is not sent again */
        finish(f, status != 0 ? status : NS_EIO, 0, NULL);
        return;
#endif
        park(f);
        return;
    }
    ns_cmd_ext_int64(reply, NS_EXT_RES_TYPE, &type);
    ns_cmd_ext_int64(reply, NS_EXT_REG_STATUS, &reg_status);
    ns_cmd_ext_int64(reply, NS_EXT_COUNT, &count);
    ns_cmd_ext_int64(reply, NS_EXT_REQID, &verdict);
    f->index = (uint64_t)index;
    f->res.reqid = verdict == NS_REQID_DUPLICATE ? NS_REQID_DUPLICATE
                   : verdict == NS_REQID_STALE   ? NS_REQID_STALE
                                                 : NS_REQID_NEW;
    f->res.type = (enum ns_command_type)type;
    f->res.reg.status = (enum ns_register_status)reg_status;
    f->res.reg.master_addr = dup_ext(reply, NS_EXT_REG_MASTER);
    f->res.reg.ha_addr = dup_ext(reply, NS_EXT_REG_HA);
    f->res.count = (int32_t)count;
    uint64_t now = ns_cluster_now(cl);
    uint64_t wait = f->deadline > now ? f->deadline - now : 0;
    if (wait < cl->waits->apply_min_ms) {
        wait = cl->waits->apply_min_ms;
    }
    uint64_t want = f->index;
#ifdef RAFTNS_BREAK_ACK_BEFORE_APPLY
    want = 0; /* TEST-ONLY MUTANT: answer before this node applied it */
#endif
    int rv = ns_node_wait_applied(cl->node, want, wait, applied_here, f);
    if (rv != 0) {
        finish(f, rv, 0, NULL);
    }
}

static void route(struct fwd *f)
{
    struct ns_cluster *cl = f->cl;
    if (cl->stopping || ns_cluster_now(cl) >= f->deadline) {
        park(f); /* finishes it */
        return;
    }
    bool here = ns_node_is_leader(cl->node);
#ifdef RAFTNS_BREAK_FORWARD_LOCAL
    here = true; /* TEST-ONLY MUTANT: a follower proposes to its own node */
#endif
    if (here) {
        int rv = ns_dedup_propose(cl, f->bytes, f->len, true, local_done, f);
        if (rv != 0) {
            finish(f, rv, 0, NULL);
        }
        return;
    }
    if (ns_cluster_now(cl) < f->not_before) {
        park(f);
        return;
    }
    if (f->len >= BIG_COMMAND) {
        uint64_t pause = (uint64_t)BIG_RETRY_MS
                         << (f->n_sends < 4 ? f->n_sends : 4);
        f->not_before = ns_cluster_now(cl) +
                        (pause < BIG_RETRY_MAX_MS ? pause : BIG_RETRY_MAX_MS);
    }
    f->n_sends++;
    struct ns_cmd req;
    forward_request(&req, f->bytes, f->len);
    /* A resend may find its first copy applied (or applying later): its id
     * must reach the log, never be joined or short-cut. */
    if (f->n_sends > 1 && ns_cmd_ext_set(&req, NS_EXT_RESEND, "true") != 0) {
        ns_cmd_close(&req);
        park(f);
        return;
    }
    uint64_t left = f->deadline - ns_cluster_now(cl);
    int rv = ns_cluster_leader_request(cl, &req, left, forward_reply, f);
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

static void break_ack_early(struct ns_cluster *cl, ns_node_index_cb *cb,
                            void **arg)
{
    struct early_ack *e = ns_calloc(1, sizeof *e);
    if (ns_node_is_leader(cl->node) || e == NULL) {
        ns_free(e);
        return;
    }
    e->cb = *cb;
    e->arg = *arg;
    if (ns_node_wait_applied(cl->node, 0, 0, early_ack_fire, e) != 0) {
        ns_free(e);
        return;
    }
    *cb = early_ack_drop;
    *arg = NULL;
}
#endif

/* A client's write: on the leader here, else forwarded, waiting at most
 * the write wait for a leader; cb once THIS node applied it. */
static void parked_retry(void *data)
{
    route(data);
}

static int submit_anywhere(struct ns_cluster *cl, const uint8_t *bytes,
                           size_t len, ns_node_index_cb cb, void *arg)
{
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
    break_ack_early(cl, &cb, &arg);
#endif
    f->cl = cl;
    f->bytes = copy;
    f->len = len;
    f->cb = cb;
    f->arg = arg;
    f->wait.retry = parked_retry;
    f->wait.data = f;
    f->deadline = ns_cluster_now(cl) + cl->waits->write_ms;
    /* Never call back before returning: start on the next tick when no
     * leader is known, else now (callbacks of raft/peer are always later). */
    if (ns_node_is_leader(cl->node) || ns_cluster_aim_leader(cl) == 0) {
        route(f);
    } else {
        park(f);
    }
    return 0;
}

/* The newest command format this node may write: the cluster file's
 * commandVersion while a rolling upgrade has nodes that read no newer. */
static uint8_t command_version(const struct ns_cluster *cl)
{
    return cl->file != NULL && cl->file->command_version != 0
               ? (uint8_t)cl->file->command_version
               : NS_COMMAND_VERSION;
}

int ns_cluster_submit(struct ns_cluster *cl, const struct ns_command *c,
                      enum ns_submit_from from, ns_node_index_cb cb, void *arg)
{
    if (cl->stopping) {
        return NS_ESHUTDOWN;
    }
    if (from == NS_SUBMIT_LEADER && !ns_node_is_leader(cl->node)) {
        return NS_ENOTLEADER;
    }
    /* A client's write gets one id for every copy the forwarding may send:
     * the state machine applies it once. */
    struct ns_command stamped = *c; /* shallow: only encoded */
    if (from == NS_SUBMIT_CLIENT) {
        stamp(cl, &stamped.reqid);
    }
    struct ns_buf b;
    ns_buf_init(&b);
    int rv = ns_command_encode_as(&stamped, command_version(cl), &b);
    if (rv == 0 && b.err != 0) {
        rv = b.err;
    }
    if (rv == 0) {
        ns_metrics_command_written(b.data[0]);
        rv = from == NS_SUBMIT_CLIENT
                 ? submit_anywhere(cl, b.data, b.len, cb, arg)
                 : ns_dedup_propose(cl, b.data, b.len, true, cb, arg);
    }
    ns_buf_close(&b);
    return rv;
}

int ns_cluster_accept_forward(struct ns_cluster *cl, const uint8_t *bytes,
                              size_t len, bool resend, ns_node_index_cb cb,
                              void *arg)
{
    return ns_dedup_propose(cl, bytes, len, !resend, cb, arg);
}

void ns_cluster_submit_tick(struct ns_cluster *cl)
{
    if (cl->echoes != NULL) {
        fire_echoes(cl);
    }
}

void ns_cluster_submit_init(struct ns_cluster *cl)
{
    cl->reqid_run = reqid_new_run();
    const char *echo = getenv("RAFTNS_TEST_FORWARD_ECHO_MS");
    if (echo != NULL && echo[0] != '\0') {
        cl->test_echo_ms = strtoull(echo, NULL, 10);
        NS_LOG(NS_LOG_WARN,
               "cluster: test hook: every forwarded write is sent again "
               "after %llu ms",
               (unsigned long long)cl->test_echo_ms);
    }
}

void ns_cluster_submit_close(struct ns_cluster *cl)
{
    while (cl->echoes != NULL) {
        struct echo *e = cl->echoes;
        cl->echoes = e->next;
        ns_free(e);
    }
}
