/* Handlers of the private codes (include/raftns/codes.h): forwarded writes and
 * read indexes on the leader, member list/add/remove/assign (promote, demote)
 * and leader transfer; the client side of these codes is cluster.c and
 * cluster_submit.c (nodes) and tools/ctl_cluster.c (raftnsctl). Held reads
 * (raftnsConsistent) are held_read.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster.h"
#include "gateway/gateway_int.h"
#include "gateway/member_check.h"
#include "raftns/alloc.h"
#include "raftns/cluster_config.h"
#include "raftns/codes.h"
#include "raftns/command.h"
#include "raftns/config.h"
#include "raftns/err.h"
#include "raftns/json.h"
#include "raftns/log.h"

struct member_op {
    uint64_t id;
    int role; /* enum ns_node_member_role: MEMBER_ADD's and MEMBER_ASSIGN's */
    int32_t code; /* the request's */
    char raft[64];
    char client[64];
    char http[64];
    char why[384]; /* the remark of a failure, once known */
    int status;    /* a failed add's, while its addresses are removed */
};

/* A request relayed to the leader: a transfer whose answer is lost when this
 * node re-aims its leader connection still moved the leadership. */
struct relayed {
    bool transfer;
    uint64_t target;     /* 0 = raft picks */
    uint64_t old_leader; /* the leader the request went to */
    struct ns_wait wait;
    uint64_t deadline; /* uv_now: waiting for the next leader until then */
    int status;        /* the relay's failure, answered if none shows up */
};

static int set_ext_u64(struct ns_cmd *c, const char *key, uint64_t v)
{
    char text[24];
    snprintf(text, sizeof text, "%llu", (unsigned long long)v);
    return ns_cmd_ext_set(c, key, text);
}

/* --- FORWARD --- */

static void forward_done(struct ns_pending *p, int status,
                         const struct ns_apply_result *res)
{
    if (status != 0) {
        ns_reply_write_error(&p->to, status);
        return;
    }
    struct ns_cmd reply;
    ns_reply_init(&reply, &p->to, NS_CODE_SUCCESS);
    if (ns_cluster_forward_answer(&reply, p->index, res) != 0) {
        ns_cmd_close(&reply);
        ns_reply_simple(&p->to, NS_CODE_SYSTEM_ERROR, "out of memory");
        return;
    }
    ns_reply_send(&p->to, &reply);
}

/* A forwarded write waiting on the leader: the node it came from (the
 * request id's origin) learns the commit by a notice (raft/node/node_notice.c)
 * once the entries went to it, not by the leader's next message: it answers
 * its client only after applying the entry itself. */
struct forwarded {
    struct ns_pending *p;
    struct ns_node *node;
    uint64_t origin;
};

static void forwarded_cb(void *arg, int status, uint64_t index,
                         const struct ns_apply_result *res)
{
    struct forwarded *fw = arg;
    if (status == 0) {
        ns_node_notify_commit(fw->node, fw->origin, index);
    }
    ns_pending_finish(fw->p, status, index, res);
    ns_free(fw);
}

/* The de-duplication step on the leader (ns_dedup_registration_held): a
 * forwarded registration that the leader's state already holds exactly (an
 * identical one from another node was applied a moment ago) is answered
 * without a log entry: the index is the leader's applied index, which the
 * forwarding node waits for. Not for a resend: its request id must reach the
 * log (docs/exactly-once.md). Returns 1 when answered, 0 when not applicable,
 * or NS_ENOMEM. */
static int answer_applied_registration(struct ns_req *req,
                                       const struct ns_command *c)
{
    struct ns_gateway *gw = req->gw;
    if (c->type != NS_CMD_REGISTER_BROKER ||
        !ns_liveness_may_short_cut(gw->live)) {
        return 0;
    }
    struct ns_apply_result res;
    memset(&res, 0, sizeof res);
    res.type = NS_CMD_REGISTER_BROKER;
    int held = ns_dedup_registration_held(gw->cluster, &c->u.reg, &res.reg);
    if (held == 0) {
        return 0;
    }
    /* The leader counts the broker heard now, not at the forwarding node's
     * next report (docs/readiness.md); the connection is that node's. */
    struct ns_pending *p = NULL;
    if ((held == 1 &&
         ns_liveness_register(gw->live, c->u.reg.cluster, c->u.reg.broker_addr,
                              ns_gateway_now(gw),
                              (uint64_t)c->u.reg.heartbeat_timeout_ms,
                              NULL) != 0) ||
        (p = ns_pending_new(req, forward_done)) == NULL) {
        ns_fsm_result_close(&res);
        return NS_ENOMEM;
    }
    if (held != 1) {
        ns_fsm_result_close(&res);
        ns_pending_finish(p, held, 0, NULL);
        return 1;
    }
    NS_LOG(NS_LOG_DEBUG, "forward: registration already applied; no entry");
    ns_node_notify_commit(gw->node, c->reqid.origin,
                          ns_node_last_applied(gw->node));
    ns_pending_finish(p, 0, ns_node_last_applied(gw->node), &res);
    ns_fsm_result_close(&res);
    return 1;
}

static int handle_forward(struct ns_req *req)
{
    struct ns_gateway *gw = req->gw;
    if (!ns_node_is_leader(gw->node)) {
        return ns_reply_simple(&req->to, NS_CODE_SYSTEM_ERROR,
                               "raftns: not the leader");
    }
    struct ns_command c;
    int rv = ns_command_decode(req->cmd->body, req->cmd->body_len, &c);
    if (rv == NS_ENOMEM) {
        return rv;
    }
    if (rv != 0) {
        NS_LOG(NS_LOG_WARN, "forward: undecodable command from %s refused",
               req->conn->peer);
        return ns_reply_simple(&req->to, NS_CODE_SYSTEM_ERROR,
                               "raftns: forwarded command does not decode");
    }
    if (!ns_command_is_client_write(c.type)) {
        NS_LOG(NS_LOG_WARN,
               "forward: command type %d from %s refused: only the leader "
               "creates it",
               (int)c.type, req->conn->peer);
        ns_command_close(&c);
        return ns_reply_remarkf(&req->to, NS_CODE_NO_PERMISSION,
                                "raftns: command type %d cannot be forwarded",
                                (int)c.type);
    }
    bool resend = false;
    ns_cmd_ext_bool(req->cmd, NS_EXT_RESEND, &resend);
    rv = resend ? 0 : answer_applied_registration(req, &c);
    uint64_t origin = c.reqid.origin;
    ns_command_close(&c);
    if (rv != 0) {
        return rv == 1 ? 0 : rv;
    }
    struct forwarded *fw = ns_calloc(1, sizeof *fw);
    struct ns_pending *p =
        fw != NULL ? ns_pending_new(req, forward_done) : NULL;
    if (p == NULL) {
        ns_free(fw);
        return NS_ENOMEM;
    }
    fw->p = p;
    fw->node = gw->node;
    fw->origin = origin;
    rv =
        ns_cluster_accept_forward(gw->cluster, req->cmd->body,
                                  req->cmd->body_len, resend, forwarded_cb, fw);
    if (rv != 0) {
        ns_free(fw);
        ns_pending_finish(p, rv, 0, NULL);
    }
    return 0;
}

/* --- READ_INDEX --- */

static void read_index_done(struct ns_pending *p, int status,
                            const struct ns_apply_result *res)
{
    (void)res;
    if (status != 0) {
        ns_reply_write_error(&p->to, status);
        return;
    }
    struct ns_cmd reply;
    ns_reply_init(&reply, &p->to, NS_CODE_SUCCESS);
    if (set_ext_u64(&reply, NS_EXT_INDEX, p->index) != 0 ||
        set_ext_u64(&reply, NS_EXT_LEADER, ns_node_id(p->gw->node)) != 0) {
        ns_cmd_close(&reply);
        return;
    }
    ns_reply_send(&p->to, &reply);
}

static void read_index_cb(void *arg, int status, uint64_t index)
{
    ns_pending_finish(arg, status, index, NULL);
}

static int handle_read_index(struct ns_req *req)
{
    if (!ns_node_is_leader(req->gw->node)) {
        return ns_reply_simple(&req->to, NS_CODE_SYSTEM_ERROR,
                               "raftns: not the leader");
    }
    struct ns_pending *p = ns_pending_new(req, read_index_done);
    if (p == NULL) {
        return NS_ENOMEM;
    }
    int rv = ns_node_read_index(req->gw->node, read_index_cb, p);
    if (rv != 0) {
        ns_pending_finish(p, rv, 0, NULL);
    }
    return 0;
}

/* --- MEMBER_LIST --- */

static const struct ns_member *find_member(const struct ns_state *st,
                                           uint64_t id)
{
    for (size_t i = 0; i < st->n_members; i++) {
        if (st->members[i].id == id) {
            return &st->members[i];
        }
    }
    return NULL;
}

static const char *or_empty(const char *s)
{
    return s != NULL ? s : "";
}

static int handle_member_list(struct ns_req *req)
{
    struct ns_gateway *gw = req->gw;
    struct ns_node_member *m = NULL;
    size_t n = 0;
    if (ns_node_members(gw->node, &m, &n) != 0) {
        return NS_ENOMEM;
    }
    static const char *const roles[] = {"voter", "standby", "spare"};
    struct ns_buf b;
    struct ns_json_writer w;
    ns_buf_init(&b);
    ns_json_write_init(&w, &b, NS_JSON_STANDARD);
    ns_json_write_obj_begin(&w);
    ns_json_write_key(&w, "appliedIndex");
    ns_json_write_int(&w, (int64_t)ns_node_last_applied(gw->node));
    ns_json_write_key(&w, "commitIndex");
    ns_json_write_int(&w, (int64_t)ns_node_commit_index(gw->node));
    ns_json_write_key(&w, "leader");
    ns_json_write_int(&w, (int64_t)ns_node_leader_id(gw->node));
    ns_json_write_key(&w, "members");
    ns_json_write_arr_begin(&w);
    for (size_t i = 0; i < n; i++) {
        const struct ns_member *sm = find_member(gw->state, m[i].id);
        ns_json_write_obj_begin(&w);
        /* a node without a cluster file records no addresses: its own
         * client address is still known */
        const char *client = sm != NULL ? sm->client_addr : NULL;
        if (client == NULL && m[i].id == ns_node_id(gw->node)) {
            client = gw->net->client_addr;
        }
        ns_json_write_key(&w, "client");
        ns_json_write_str(&w, or_empty(client));
        ns_json_write_key(&w, "http");
        ns_json_write_str(&w, or_empty(sm != NULL ? sm->http_addr : NULL));
        ns_json_write_key(&w, "id");
        ns_json_write_int(&w, (int64_t)m[i].id);
        ns_json_write_key(&w, "raft");
        ns_json_write_str(&w, m[i].raft_addr);
        ns_json_write_key(&w, "role");
        ns_json_write_str(&w, roles[m[i].role % 3]);
        ns_json_write_obj_end(&w);
    }
    ns_json_write_arr_end(&w);
    ns_json_write_key(&w, "term");
    ns_json_write_int(&w, (int64_t)ns_node_term(gw->node));
    ns_json_write_obj_end(&w);
    ns_free(m);
    int rv = ns_reply_buf(&req->to, b.err, &b);
    ns_buf_close(&b);
    return rv;
}

/* --- admin codes on a follower: relayed to the leader --- */

static void reply_leader(struct ns_pending *p);

static bool transfer_moved(const struct ns_pending *p)
{
    const struct relayed *rl = p->data;
    uint64_t leader = ns_node_leader_id(p->gw->node);
    return rl != NULL && rl->transfer && leader != 0 &&
           (rl->target != 0 ? leader == rl->target : leader != rl->old_leader);
}

/* A relayed transfer whose answer was lost while no leader is known yet (an
 * election runs because of it): the next known leader says whether it moved.
 * Retried on every cluster tick (ns_cluster_wait_again), the admin-leader wait
 * at most. */
static void transfer_wait_retry(void *data)
{
    struct ns_pending *p = data;
    struct relayed *rl = p->data;
    struct ns_gateway *gw = p->gw;
    uint64_t leader = ns_node_leader_id(gw->node);
    if (transfer_moved(p)) {
        reply_leader(p);
    } else if (leader == 0 && !gw->stopping &&
               !ns_cluster_is_stopping(gw->cluster) &&
               uv_now(gw->loop) < rl->deadline) {
        ns_cluster_wait_again(gw->cluster, &rl->wait);
        return;
    } else {
        ns_reply_remarkf(&p->to, NS_CODE_SYSTEM_ERROR,
                         "raftns: leader %llu unreachable (%s) and the "
                         "leadership did not move (leader now: %llu)",
                         (unsigned long long)rl->old_leader,
                         ns_strerror(rl->status), (unsigned long long)leader);
    }
    ns_pending_finish(p, 0, 0, NULL);
}

static void proxy_reply(void *arg, int status, const struct ns_cmd *reply)
{
    struct ns_pending *p = arg;
    struct relayed *rl = p->data; /* NULL when out of memory */
    if (status != 0 && transfer_moved(p)) {
        /* a relayed transfer: the leader connection was re-aimed at the new
         * leader before the old one's answer arrived; the move happened */
        reply_leader(p);
    } else if (status != 0 && rl != NULL && rl->transfer) {
        rl->status = status;
        rl->deadline = uv_now(p->gw->loop) + p->gw->waits->admin_leader_ms;
        rl->wait.retry = transfer_wait_retry;
        rl->wait.data = p;
        transfer_wait_retry(p);
        return; /* it finishes p */
    } else if (status != 0) {
        ns_reply_remarkf(&p->to, NS_CODE_SYSTEM_ERROR,
                         "raftns: leader %llu unreachable from node %llu: %s",
                         (unsigned long long)(rl != NULL ? rl->old_leader : 0),
                         (unsigned long long)ns_node_id(p->gw->node),
                         ns_strerror(status));
    } else {
        struct ns_cmd out;
        ns_reply_init(&out, &p->to, reply->code);
        int rv = reply->remark ? ns_cmd_set_remark(&out, reply->remark) : 0;
        for (size_t i = 0; rv == 0 && i < reply->n_ext; i++) {
            rv = ns_cmd_ext_set(&out, reply->ext[i].key, reply->ext[i].value);
        }
        if (rv == 0) {
            ns_reply_send(&p->to, &out);
        } else {
            ns_cmd_close(&out);
        }
    }
    ns_pending_finish(p, 0, 0, NULL);
}

static void nothing_done(struct ns_pending *p, int status,
                         const struct ns_apply_result *res)
{
    (void)p;
    (void)status;
    (void)res;
}

static int proxy_to_leader(struct ns_req *req)
{
    struct ns_cmd fwd;
    ns_cmd_init(&fwd);
    fwd.code = req->cmd->code;
    fwd.language = NS_LANG_OTHER;
    int rv = 0;
    for (size_t i = 0; rv == 0 && i < req->cmd->n_ext; i++) {
        rv = ns_cmd_ext_set(&fwd, req->cmd->ext[i].key, req->cmd->ext[i].value);
    }
    struct ns_pending *p = rv == 0 ? ns_pending_new(req, nothing_done) : NULL;
    if (p == NULL) {
        ns_cmd_close(&fwd);
        return NS_ENOMEM;
    }
    int64_t target = 0;
    struct relayed *rl = ns_calloc(1, sizeof *rl); /* for proxy_reply */
    if (rl != NULL) {
        rl->transfer = fwd.code == NS_CODE_LEADER_TRANSFER;
        rl->target =
            ns_cmd_ext_int64(req->cmd, NS_EXT_ID, &target) && target > 0
                ? (uint64_t)target
                : 0;
        rl->old_leader = ns_node_leader_id(req->gw->node);
        p->data = rl;
    }
    rv = ns_cluster_leader_request(
        req->gw->cluster, &fwd, req->gw->waits->admin_relay_ms, proxy_reply, p);
    ns_cmd_close(&fwd);
    if (rv != 0) {
        ns_pending_finish(p, 0, 0, NULL);
        return ns_reply_simple(&req->to, NS_CODE_SYSTEM_ERROR,
                               "raftns: no leader known; retry");
    }
    return 0;
}

/* --- MEMBER_ADD / MEMBER_REMOVE / LEADER_TRANSFER --- */

static void change_done(struct ns_pending *p, int status,
                        const struct ns_apply_result *res)
{
    struct member_op *op = p->data;
    (void)res;
    if (status != 0) {
        if (op->why[0] == '\0') {
            ns_member_change_error(op->code, op->id, status, NULL, op->why,
                                   sizeof op->why);
        }
        ns_reply_simple(&p->to, NS_CODE_SYSTEM_ERROR, op->why);
        return;
    }
    reply_leader(p);
}

/* SUCCESS with the leader this node knows now. */
static void reply_leader(struct ns_pending *p)
{
    struct ns_cmd reply;
    ns_reply_init(&reply, &p->to, NS_CODE_SUCCESS);
    if (set_ext_u64(&reply, NS_EXT_LEADER, ns_node_leader_id(p->gw->node))) {
        ns_cmd_close(&reply);
        return;
    }
    ns_reply_send(&p->to, &reply);
}

static void add_undone(void *arg, int status, uint64_t index,
                       const struct ns_apply_result *res)
{
    struct ns_pending *p = arg;
    struct member_op *op = p->data;
    (void)index;
    (void)res;
    if (status != 0) {
        NS_LOG(NS_LOG_WARN,
               "cluster: the addresses of member %llu could not "
               "be removed: %s",
               (unsigned long long)op->id, ns_strerror(status));
    }
    ns_pending_finish(p, op->status, 0, NULL);
}

static void change_cb(void *arg, int status, const char *errmsg)
{
    struct ns_pending *p = arg;
    struct member_op *op = p->data;
    if (status != 0) {
        ns_member_change_error(op->code, op->id, status, errmsg, op->why,
                               sizeof op->why);
        NS_LOG(NS_LOG_WARN, "cluster: %s", op->why);
    }
    if (status != 0 && op->code == NS_CODE_MEMBER_ADD) {
        /* the addresses were recorded first (add_recorded): without this a
         * member that never joined stays in /status for good. The answer
         * waits for the removal, so a status read after it is clean. */
        op->status = status;
        if (ns_cluster_propose_member(p->gw->cluster, op->id, NULL, NULL, NULL,
                                      add_undone, p) == 0) {
            return;
        }
    }
    ns_pending_finish(p, status, 0, NULL);
}

static void add_recorded(void *arg, int status, uint64_t index,
                         const struct ns_apply_result *res)
{
    (void)index;
    (void)res;
    struct ns_pending *p = arg;
    struct member_op *op = p->data;
    if (status == 0) {
        status = ns_node_member_add(p->gw->node, op->id, op->raft, op->role,
                                    change_cb, p);
        if (status == 0) {
            return;
        }
        change_cb(p, status, NULL); /* undoes the recorded addresses */
        return;
    }
    ns_pending_finish(p, status, 0, NULL);
}

static void leftover_removed(void *arg, int status, uint64_t index,
                             const struct ns_apply_result *res)
{
    (void)index;
    (void)res;
    ns_pending_finish(arg, status, 0, NULL);
}

static void remove_cb(void *arg, int status, const char *errmsg)
{
    struct ns_pending *p = arg;
    struct member_op *op = p->data;
    (void)errmsg;
    if (status == 0) {
        status = ns_cluster_propose_member(p->gw->cluster, op->id, NULL, NULL,
                                           NULL, NULL, NULL);
        /* the reply does not wait for the address removal */
    }
    ns_pending_finish(p, status, 0, NULL);
}

/* Removing the leader: after the transfer, the remove is relayed to the new
 * leader once this node knows it (a cluster wait, retried every tick; the
 * admin-leader wait at most). It is either waiting or in flight, never both. */
struct relay {
    struct ns_wait wait;
    struct ns_pending *p;
    uint64_t deadline;
};

static void relay_fail(struct relay *r, int status)
{
    struct ns_pending *p = r->p;
    ns_free(r);
    ns_reply_remarkf(&p->to, NS_CODE_SYSTEM_ERROR,
                     "raftns: leadership transferred, but the removal was "
                     "not relayed: %s",
                     ns_strerror(status));
    ns_pending_finish(p, 0, 0, NULL);
}

/* The new leader may not have applied its barrier yet ("retry"): answers
 * other than SUCCESS are retried until the deadline, then passed on. */
static void relay_reply(void *arg, int status, const struct ns_cmd *reply)
{
    struct relay *r = arg;
    struct ns_pending *p = r->p;
    struct ns_gateway *gw = p->gw;
    bool ok = status == 0 && reply->code == NS_CODE_SUCCESS;
    if (ok || gw->stopping || ns_cluster_is_stopping(gw->cluster) ||
        ns_gateway_now(gw) >= r->deadline) {
        ns_free(r);
        proxy_reply(p, status, reply); /* answers and finishes p */
        return;
    }
    ns_cluster_wait_again(gw->cluster, &r->wait);
}

static void relay_retry(void *data)
{
    struct relay *r = data;
    struct ns_pending *p = r->p;
    struct ns_gateway *gw = p->gw;
    struct member_op *op = p->data;
    uint64_t leader = ns_node_leader_id(gw->node);
    if (gw->stopping || ns_cluster_is_stopping(gw->cluster)) {
        relay_fail(r, NS_ESHUTDOWN);
        return;
    }
    if (leader == 0 || leader == ns_node_id(gw->node)) {
        if (ns_gateway_now(gw) >= r->deadline) {
            relay_fail(r, NS_ETIMEDOUT);
        } else {
            ns_cluster_wait_again(gw->cluster, &r->wait);
        }
        return;
    }
    struct ns_cmd fwd;
    ns_cmd_init(&fwd);
    fwd.code = NS_CODE_MEMBER_REMOVE;
    fwd.language = NS_LANG_OTHER;
    char id[24];
    snprintf(id, sizeof id, "%llu", (unsigned long long)op->id);
    int rv = ns_cmd_ext_set(&fwd, NS_EXT_ID, id);
    if (rv == 0) {
        rv = ns_cluster_leader_request(
            gw->cluster, &fwd, gw->waits->admin_relay_ms, relay_reply, r);
    }
    ns_cmd_close(&fwd);
    if (rv == 0) {
        return; /* in flight */
    }
    if (ns_gateway_now(gw) >= r->deadline) {
        relay_fail(r, rv);
    } else {
        ns_cluster_wait_again(gw->cluster, &r->wait);
    }
}

static void self_transfer_cb(void *arg, int status, const char *errmsg)
{
    struct ns_pending *p = arg;
    struct relay *r = status == 0 ? ns_calloc(1, sizeof *r) : NULL;
    if (r == NULL) {
        ns_reply_remarkf(&p->to, NS_CODE_SYSTEM_ERROR,
                         "raftns: leadership transfer before removal failed: "
                         "%s",
                         errmsg != NULL ? errmsg
                         : status != 0  ? ns_strerror(status)
                                        : "out of memory");
        ns_pending_finish(p, 0, 0, NULL);
        return;
    }
    r->p = p;
    r->deadline = ns_gateway_now(p->gw) + p->gw->waits->admin_leader_ms;
    r->wait.retry = relay_retry;
    r->wait.data = r;
    relay_retry(r);
}

static bool copy_addr(const struct ns_cmd *c, const char *key, char *out,
                      size_t cap, bool required)
{
    const char *v = ns_cmd_ext_find(c, key);
    if (v == NULL || v[0] == '\0') {
        out[0] = '\0';
        return !required;
    }
    if (!ns_cluster_config_addr_is_ipv4(v) || strlen(v) >= cap) {
        return false;
    }
    snprintf(out, cap, "%s", v);
    return true;
}

/* raftnsRole: absent (MEMBER_ADD: voter), "voter" or "standby". */
static bool parse_role(const struct ns_cmd *c, bool required, int *role)
{
    const char *v = ns_cmd_ext_find(c, NS_EXT_ROLE);
    if (v == NULL || v[0] == '\0') {
        *role = NS_MEMBER_VOTER;
        return !required;
    }
    *role = strcmp(v, "voter") == 0     ? NS_MEMBER_VOTER
            : strcmp(v, "standby") == 0 ? NS_MEMBER_STANDBY
                                        : -1;
    return *role >= 0;
}

/* The role of member id in the current configuration (enum
 * ns_node_member_role), -1 when it is not a member, or -2 without memory. */
static int member_role(struct ns_gateway *gw, uint64_t id)
{
    struct ns_node_member *m = NULL;
    size_t n = 0;
    if (ns_node_members(gw->node, &m, &n) != 0) {
        return -2;
    }
    int have = -1;
    for (size_t i = 0; i < n; i++) {
        if (m[i].id == id) {
            have = m[i].role;
        }
    }
    ns_free(m);
    return have;
}

/* MEMBER_ASSIGN's and LEADER_TRANSFER's checks with the current
 * configuration, so the answer names the member: NULL when the change may go
 * on, else the refusal's remark (static or in buf). */
static const char *role_refusal(struct ns_gateway *gw, int32_t code,
                                uint64_t id, int role, char *buf, size_t len)
{
    static const char *const names[] = {"voter", "standby", "spare"};
    int have = member_role(gw, id);
    if (have == -2) {
        return "raftns: out of memory";
    }
    if (code == NS_CODE_LEADER_TRANSFER) {
        if (have < 0 || have == NS_MEMBER_VOTER) {
            return NULL; /* raft's own answer names an unknown id */
        }
        snprintf(buf, len,
                 "raftns: member %llu is a %s and cannot lead; promote it "
                 "first (raftnsctl member promote %llu)",
                 (unsigned long long)id, names[have % 3],
                 (unsigned long long)id);
    } else if (have < 0) {
        snprintf(buf, len, "raftns: no member %llu (raftnsctl member list)",
                 (unsigned long long)id);
    } else if (have == role) {
        snprintf(buf, len, "raftns: member %llu is already a %s",
                 (unsigned long long)id, names[role % 3]);
    } else if (id == ns_node_id(gw->node) && role != NS_MEMBER_VOTER) {
        snprintf(buf, len,
                 "raftns: member %llu is the leader; transfer leadership "
                 "first (raftnsctl leader transfer)",
                 (unsigned long long)id);
    } else if (role == NS_MEMBER_VOTER &&
               !ns_node_heard_recently(gw->node, id)) {
        /* a down voter would count for the majority at once */
        snprintf(buf, len,
                 "raftns: member %llu does not answer the leader; start it "
                 "(or check its address and secret) before promoting it",
                 (unsigned long long)id);
    } else {
        return NULL;
    }
    return buf;
}

static int handle_change(struct ns_req *req)
{
    struct ns_gateway *gw = req->gw;
    if (!ns_node_is_leader(gw->node)) {
        return proxy_to_leader(req);
    }
    int32_t code = req->cmd->code;
    int64_t id = 0;
    bool has_id = ns_cmd_ext_int64(req->cmd, NS_EXT_ID, &id);
    if (code != NS_CODE_LEADER_TRANSFER && (!has_id || id <= 0)) {
        return ns_reply_simple(&req->to, NS_CODE_SYSTEM_ERROR,
                               "raftns: raftnsId (member id >= 1) required");
    }
    struct member_op *op = ns_calloc(1, sizeof *op);
    if (op == NULL) {
        return NS_ENOMEM;
    }
    op->id = id > 0 ? (uint64_t)id : 0;
    if ((code == NS_CODE_MEMBER_ADD || code == NS_CODE_MEMBER_ASSIGN) &&
        !parse_role(req->cmd, code == NS_CODE_MEMBER_ASSIGN, &op->role)) {
        ns_free(op);
        return ns_reply_simple(&req->to, NS_CODE_SYSTEM_ERROR,
                               "raftns: raftnsRole must be voter or standby");
    }
    if (code == NS_CODE_MEMBER_ASSIGN ||
        (code == NS_CODE_LEADER_TRANSFER && op->id != 0)) {
        char why[160];
        const char *refused =
            role_refusal(gw, code, op->id, op->role, why, sizeof why);
        if (refused != NULL) {
            ns_free(op);
            return ns_reply_simple(&req->to, NS_CODE_SYSTEM_ERROR, refused);
        }
    }
    op->code = code;
    if (code == NS_CODE_MEMBER_ADD &&
        (!copy_addr(req->cmd, NS_EXT_RAFT_ADDR, op->raft, sizeof op->raft,
                    true) ||
         !copy_addr(req->cmd, NS_EXT_CLIENT_ADDR, op->client, sizeof op->client,
                    true) ||
         !copy_addr(req->cmd, NS_EXT_HTTP_ADDR, op->http, sizeof op->http,
                    false))) {
        ns_free(op);
        return ns_reply_simple(
            &req->to, NS_CODE_SYSTEM_ERROR,
            "raftns: raftnsRaftAddr and raftnsClientAddr (IPv4 a.b.c.d:port) "
            "required");
    }
    bool self_remove =
        code == NS_CODE_MEMBER_REMOVE && op->id == ns_node_id(gw->node);
    int checked = self_remove ? 0 : ns_member_check(req, op->id, op->raft);
    if (checked != 0 && checked != 2) {
        ns_free(op);
        return checked == 1 ? 0 : checked;
    }
    struct ns_pending *p =
        ns_pending_new(req, self_remove ? nothing_done : change_done);
    if (p == NULL) {
        ns_free(op);
        return NS_ENOMEM;
    }
    p->data = op;
    int rv;
    if (code == NS_CODE_MEMBER_ADD) {
        /* addresses first, so the new member's client port is known */
        rv = ns_cluster_propose_member(
            gw->cluster, op->id, op->raft, op->client,
            op->http[0] ? op->http : NULL, add_recorded, p);
    } else if (self_remove) {
        /* the leader removes itself: hand leadership over, then relay */
        rv = ns_node_transfer(gw->node, 0, self_transfer_cb, p);
    } else if (checked == 2) {
        /* no raft member, only addresses left by an add that failed before
         * this check existed: removing them is the whole removal */
        rv = ns_cluster_propose_member(gw->cluster, op->id, NULL, NULL, NULL,
                                       leftover_removed, p);
    } else if (code == NS_CODE_MEMBER_REMOVE) {
        rv = ns_node_member_remove(gw->node, op->id, remove_cb, p);
    } else if (code == NS_CODE_MEMBER_ASSIGN) {
        rv = ns_node_member_assign(gw->node, op->id, op->role, change_cb, p);
    } else {
        if (op->id != 0 && op->id == ns_node_id(gw->node)) {
            ns_pending_finish(p, 0, 0, NULL); /* already the leader */
            return 0;
        }
        rv = ns_node_transfer(gw->node, op->id, change_cb, p);
    }
    if (rv != 0 && self_remove) {
        ns_reply_remarkf(&req->to, NS_CODE_SYSTEM_ERROR,
                         "raftns: cannot hand over leadership to remove this "
                         "node: %s",
                         ns_strerror(rv));
    }
    if (rv != 0) {
        ns_pending_finish(p, rv, 0, NULL);
    }
    return 0;
}

/* --- entry point --- */

/* Cluster administration needs an admin signature with ACL on; member list a
 * reader's. Node-to-node codes (forwarded writes, read indexes) and requests
 * a node relays for a client it already checked (they carry raftnsFrom next to
 * a valid cluster secret) are not checked again. While the account table is
 * empty, the ACL codes need only the cluster secret: that is how the first
 * admin account of a cluster without seed accounts is created. */
static enum ns_acl_role private_role(const struct ns_req *req)
{
    const struct ns_cmd *cmd = req->cmd;
    if (ns_cmd_ext_find(cmd, NS_EXT_FROM) != NULL ||
        ((cmd->code == NS_CODE_ACL_UPDATE || cmd->code == NS_CODE_ACL_LIST) &&
         req->gw->state->acl.n == 0)) {
        return NS_ACL_ROLE_NONE;
    }
    switch (cmd->code) {
    case NS_CODE_MEMBER_LIST:
        return NS_ACL_ROLE_READER;
    case NS_CODE_MEMBER_ADD:
    case NS_CODE_MEMBER_REMOVE:
    case NS_CODE_MEMBER_ASSIGN:
    case NS_CODE_LEADER_TRANSFER:
    case NS_CODE_ACL_UPDATE:
    case NS_CODE_ACL_LIST:
        return NS_ACL_ROLE_ADMIN;
    default:
        return NS_ACL_ROLE_NONE;
    }
}

bool ns_handle_private_is_signed(struct ns_req *req)
{
    const char *why = ns_cluster_check_signed(req->gw->cluster, req->cmd,
                                              req->conn->id, req->conn->peer);
    if (why == NULL) {
        return true;
    }
    ns_reply_remarkf(&req->to, NS_CODE_NO_PERMISSION,
                     "raftns: private request refused: %s", why);
    return false;
}

int ns_handle_private(struct ns_req *req)
{
    if (!ns_handle_private_is_signed(req)) {
        return 0;
    }
    if (!ns_acl_gate_allows(req, private_role(req))) {
        return 0;
    }
    switch (req->cmd->code) {
    case NS_CODE_FORWARD:
        return handle_forward(req);
    case NS_CODE_READ_INDEX:
        return handle_read_index(req);
    case NS_CODE_READ_FORWARD:
        return ns_held_read_serve(req);
    case NS_CODE_MEMBER_LIST:
        return handle_member_list(req);
    case NS_CODE_MEMBER_ADD:
    case NS_CODE_MEMBER_REMOVE:
    case NS_CODE_MEMBER_ASSIGN:
    case NS_CODE_LEADER_TRANSFER:
        return handle_change(req);
    case NS_CODE_ACL_UPDATE:
        return ns_handle_acl_update(req);
    case NS_CODE_ACL_LIST:
        return ns_handle_acl_list(req);
    default:
        return ns_reply_remarkf(&req->to, NS_CODE_REQUEST_CODE_NOT_SUPPORTED,
                                " request type %d not supported",
                                (int)req->cmd->code);
    }
}
