/* Handlers of the RocketMQ 5 controller codes (docs/controller.md §3): 904 in
 * its controller meaning, 1001-1006 and 1009-1013, with Java's header fields,
 * bodies, codes and remarks. Leader-only codes are parsed here, decided and
 * committed one at a time by the controller room (src/controller/), and
 * answered here once their event was applied. Every code answers
 * REQUEST_CODE_NOT_SUPPORTED while enableControllerInNamesrv is off, as
 * before. It does not decide anything itself (raft/controller_decide.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "raftns/alloc.h"
#include "raftns/codes.h"
#include "raftns/config.h"
#include "raftns/err.h"
#include "raftns/json.h"
#include "raftns/log.h"
#include "cluster/cluster.h"
#include "controller/controller.h"
#include "gateway/gateway_int.h"

#define NOT_LEADER_REMARK "The controller is not in leader state"

static struct ns_controller *ctl_of(const struct ns_req *req)
{
    return req->gw->controller;
}

static int not_supported(struct ns_req *req)
{
    return ns_reply_remarkf(&req->to, NS_CODE_REQUEST_CODE_NOT_SUPPORTED,
                            " request type %d not supported",
                            (int)req->cmd->code);
}

/* --- 904 --- */

static int32_t ext_i32(const struct ns_cmd *c, const char *k, int32_t dflt)
{
    int32_t v;
    return ns_cmd_ext_int32(c, k, &v) ? v : dflt;
}

static int64_t ext_i64(const struct ns_cmd *c, const char *k, int64_t dflt)
{
    int64_t v;
    return ns_cmd_ext_int64(c, k, &v) ? v : dflt;
}

static const char *ext_or_empty(const struct ns_cmd *c, const char *k)
{
    const char *v = ns_cmd_ext_find(c, k);
    return v != NULL ? v : "";
}

/* On the shared port a 904 refreshes both the route's liveness (the name
 * server's meaning) and the controller's heartbeats (docs/controller.md §6). */
int ns_handle_controller_heartbeat(struct ns_req *req)
{
    struct ns_controller *c = ctl_of(req);
    if (!c->set.enabled) {
        return ns_handle_broker_heartbeat(req);
    }
    const struct ns_cmd *cmd = req->cmd;
    ns_liveness_touch(req->gw->live, ext_or_empty(cmd, "clusterName"),
                      ext_or_empty(cmd, "brokerAddr"), ns_gateway_now(req->gw));
    int64_t id;
    /* A heartbeat counts where the broker sent it: one another node relayed
     * (this node was not ready there) names no connection of the broker's,
     * whose close would look like its death. */
    bool relayed = req->to.served_by != 0 || req->conn == NULL;
    if (!ns_cmd_ext_int64(cmd, "brokerId", &id)) {
        return ns_reply_simple(&req->to, NS_CODE_CONTROLLER_INVALID_REQUEST,
                               "Heart beat with empty brokerId");
    }
    struct ns_ctl_beat_in in = {
        .cluster = ext_or_empty(cmd, "clusterName"),
        .broker_name = ext_or_empty(cmd, "brokerName"),
        .addr = ns_cmd_ext_find(cmd, "brokerAddr"),
        .id = id,
        .timeout_ms = ext_i64(cmd, "heartbeatTimeoutMills", 10000),
        .epoch = ext_i32(cmd, "epoch", -1),
        .max_offset = ext_i64(cmd, "maxOffset", -1),
        .confirm_offset = ext_i64(cmd, "confirmOffset", -1),
        .priority = ext_i32(cmd, "electionPriority", NS_CTL_DEFAULT_PRIORITY),
        .conn_id = req->conn != NULL ? req->conn->id : 0,
    };
    int rv = relayed ? 0 : ns_controller_beat(c, &in);
    if (rv == NS_ETOOBIG) {
        return ns_reply_simple(&req->to, NS_CODE_SYSTEM_BUSY,
                               "too many brokers heartbeating");
    }
    if (rv != 0) {
        return rv;
    }
    return ns_reply_simple(&req->to, NS_CODE_SUCCESS, "Heart beat success");
}

/* --- 1005 --- */

/* Where node id serves the controller: its controllerDLegerPeers entry, else
 * its client address. Borrowed or NULL. */
static const char *serving_addr(const struct ns_gateway *gw, uint64_t id)
{
    const char *addr = ns_controller_peer_addr(gw->controller, id);
    if (addr == NULL) {
        addr = ns_cluster_client_addr(gw->cluster, id);
    }
    /* a node without a cluster file knows only its own address */
    if (addr == NULL && id == ns_node_id(gw->node)) {
        addr = gw->net->client_addr;
    }
    return addr;
}

static int put_member(struct ns_buf *peers, const struct ns_gateway *gw,
                      uint64_t id)
{
    const char *addr = serving_addr(gw, id);
    return ns_buf_printf(peers, "n%llu:%s;", (unsigned long long)id,
                         addr ? addr : "");
}

/* Answered from this node's raft view: brokers find the leader here. */
int ns_handle_controller_metadata(struct ns_req *req)
{
    struct ns_gateway *gw = req->gw;
    if (!ctl_of(req)->set.enabled) {
        return not_supported(req);
    }
    struct ns_cmd reply;
    ns_reply_init(&reply, &req->to, NS_CODE_SUCCESS);
    reply.has_ext = true;
    uint64_t leader = ns_node_leader_id(gw->node);
    const char *leader_addr = leader ? serving_addr(gw, leader) : NULL;
    char id[32];
    snprintf(id, sizeof id, "n%llu", (unsigned long long)leader);
    struct ns_buf peers;
    ns_buf_init(&peers);
    struct ns_node_member *ms = NULL;
    size_t n = 0;
    int rv = ns_node_members(gw->node, &ms, &n);
    for (size_t i = 0; rv == 0 && i < n; i++) {
        rv = put_member(&peers, gw, ms[i].id);
    }
    ns_free(ms);
    if (rv == 0 && n == 0) {
        rv = put_member(&peers, gw, ns_node_id(gw->node));
    }
    ns_buf_put_u8(&peers, 0);
    rv = rv ? rv : peers.err;
    if (rv == 0) {
        rv = ns_cmd_ext_set(&reply, "group", ctl_of(req)->set.group);
    }
    if (rv == 0 && leader != 0) {
        rv = ns_cmd_ext_set(&reply, "controllerLeaderId", id);
    }
    if (rv == 0 && leader_addr != NULL) {
        rv = ns_cmd_ext_set(&reply, "controllerLeaderAddress", leader_addr);
    }
    if (rv == 0) {
        rv = ns_cmd_ext_set(&reply, "isLeader",
                            ns_node_role(gw->node) == NS_ROLE_LEADER ? "true"
                                                                     : "false");
    }
    if (rv == 0) {
        rv = ns_cmd_ext_set(&reply, "peers", (const char *)peers.data);
    }
    ns_buf_close(&peers);
    if (rv != 0) {
        ns_cmd_close(&reply);
        return NS_ENOMEM;
    }
    return ns_reply_send(&req->to, &reply);
}

/* --- 1009, 1010 (this node only) --- */

int ns_handle_controller_get_config(struct ns_req *req)
{
    if (!ctl_of(req)->set.enabled) {
        return not_supported(req);
    }
    struct ns_buf b;
    ns_buf_init(&b);
    ns_controller_encode_settings(ctl_of(req), &b, true);
    int rv = ns_reply_buf(&req->to, 0, &b);
    ns_buf_close(&b);
    return rv;
}

int ns_handle_controller_update_config(struct ns_req *req)
{
    if (!ctl_of(req)->set.enabled) {
        return not_supported(req);
    }
    const struct ns_cmd *cmd = req->cmd;
    if (cmd->body_len == 0) {
        return ns_reply_simple(&req->to, NS_CODE_SUCCESS, NULL);
    }
    struct ns_props p;
    ns_props_init(&p);
    int rv = ns_props_parse((const char *)cmd->body, cmd->body_len, &p);
    if (rv == NS_EPROTO) {
        rv = ns_reply_simple(&req->to, NS_CODE_SYSTEM_ERROR,
                             "string2Properties error");
        goto out;
    }
    if (rv != 0) {
        goto out;
    }
    for (size_t i = 0; i < p.n; i++) {
        const char *k = p.items[i].key;
        if (strcmp(k, "configBlackList") == 0 ||
            strcmp(k, "configStorePath") == 0 ||
            strcmp(k, "rocketmqHome") == 0) {
            rv = ns_reply_simple(&req->to, NS_CODE_NO_PERMISSION,
                                 "Can not update config in black list.");
            goto out;
        }
    }
    rv = ns_controller_update_settings(ctl_of(req), &p);
    if (rv == 0) {
        rv = ns_reply_simple(&req->to, NS_CODE_SUCCESS, NULL);
    }
out:
    ns_props_close(&p);
    return rv;
}

/* --- the leader-only codes --- */

static void put_ids(struct ns_json_writer *w, const int64_t *ids, size_t n)
{
    ns_json_write_arr_begin(w);
    for (size_t i = 0; i < n; i++) {
        ns_json_write_int(w, ids[i]);
    }
    ns_json_write_arr_end(w);
}

static void put_set(struct ns_buf *b, const struct ns_ctl_reply *r)
{
    struct ns_json_writer w;
    ns_json_write_init(&w, b, NS_JSON_LEGACY);
    ns_json_write_obj_begin(&w);
    ns_json_write_key(&w, "syncStateSet");
    put_ids(&w, r->set, r->n_set);
    ns_json_write_key(&w, "syncStateSetEpoch");
    ns_json_write_int(&w, r->set_epoch);
    ns_json_write_obj_end(&w);
}

/* ElectMasterResponseBody; the members are the group's as now applied. */
static void put_elect(struct ns_buf *b, const struct ns_ctl_reply *r,
                      const struct ns_ctl_group *g)
{
    struct ns_json_writer w;
    ns_json_write_init(&w, b, NS_JSON_LEGACY);
    ns_json_write_obj_begin(&w);
    if (r->with_members && g != NULL) {
        ns_json_write_key(&w, "brokerMemberGroup");
        ns_json_write_obj_begin(&w);
        ns_json_write_key(&w, "brokerAddrs");
        ns_json_write_obj_begin(&w);
        for (size_t i = 0; i < g->n_members; i++) {
            ns_json_write_key_int(&w, g->members[i].id);
            ns_json_write_str(&w, g->members[i].addr);
        }
        ns_json_write_obj_end(&w);
        ns_json_write_key(&w, "brokerName");
        ns_json_write_str(&w, g->broker_name);
        ns_json_write_key(&w, "cluster");
        ns_json_write_str(&w, g->cluster);
        ns_json_write_obj_end(&w);
    }
    ns_json_write_key(&w, "syncStateSet");
    put_ids(&w, r->set, r->n_set);
    ns_json_write_obj_end(&w);
}

static void put_replica(struct ns_json_writer *w, const struct ns_ctl_group *g,
                        const struct ns_ctl_member *m, bool alive)
{
    ns_json_write_obj_begin(w);
    ns_json_write_key(w, "alive");
    ns_json_write_bool(w, alive);
    if (m->addr != NULL) {
        ns_json_write_key(w, "brokerAddress");
        ns_json_write_str(w, m->addr);
    }
    ns_json_write_key(w, "brokerId");
    ns_json_write_int(w, m->id);
    ns_json_write_key(w, "brokerName");
    ns_json_write_str(w, g->broker_name);
    ns_json_write_obj_end(w);
}

static void put_replicas(struct ns_json_writer *w, const struct ns_ctl_group *g,
                         const struct ns_controller *c, bool in_sync)
{
    ns_json_write_arr_begin(w);
    for (size_t i = 0; i < g->n_members; i++) {
        const struct ns_ctl_member *m = &g->members[i];
        if (ns_ctl_in_sync(g, m->id) == in_sync) {
            put_replica(w, g, m,
                        ns_ctl_live_alive(&c->live, g->cluster, g->broker_name,
                                          m->id, ns_controller_now(c)));
        }
    }
    ns_json_write_arr_end(w);
}

/* 1006's BrokerReplicasInfo over the names of the request (a JSON array);
 * unknown names are skipped. */
static void put_replicas_info(struct ns_buf *b, const struct ns_controller *c,
                              const cJSON *names)
{
    struct ns_json_writer w;
    ns_json_write_init(&w, b, NS_JSON_LEGACY);
    ns_json_write_obj_begin(&w);
    ns_json_write_key(&w, "replicasInfoTable");
    ns_json_write_obj_begin(&w);
    const cJSON *it;
    cJSON_ArrayForEach(it, names)
    {
        const struct ns_ctl_group *g =
            cJSON_IsString(it) ? ns_ctl_find(&c->state->ctl, it->valuestring)
                               : NULL;
        if (g == NULL) {
            continue;
        }
        const struct ns_ctl_member *m =
            g->has_master ? ns_ctl_find_member(g, g->master_id) : NULL;
        ns_json_write_key(&w, g->broker_name);
        ns_json_write_obj_begin(&w);
        ns_json_write_key(&w, "inSyncReplicas");
        put_replicas(&w, g, c, true);
        if (m != NULL && m->addr != NULL) {
            ns_json_write_key(&w, "masterAddress");
            ns_json_write_str(&w, m->addr);
        }
        if (g->has_master) {
            ns_json_write_key(&w, "masterBrokerId");
            ns_json_write_int(&w, g->master_id);
        }
        ns_json_write_key(&w, "masterEpoch");
        ns_json_write_int(&w, g->master_epoch);
        ns_json_write_key(&w, "notInSyncReplicas");
        put_replicas(&w, g, c, false);
        ns_json_write_key(&w, "syncStateSetEpoch");
        ns_json_write_int(&w, g->sync_epoch);
        ns_json_write_obj_end(&w);
    }
    ns_json_write_obj_end(&w);
    ns_json_write_obj_end(&w);
}

static int set_long(struct ns_cmd *reply, const char *key, int64_t v)
{
    char text[24];
    snprintf(text, sizeof text, "%lld", (long long)v);
    return ns_cmd_ext_set(reply, key, text);
}

/* The response header of each code (Java sends its non-null fields also on
 * error codes; 1006 and 1011 have none). */
static int put_header(struct ns_cmd *reply, const struct ns_controller_op *op)
{
    const struct ns_ctl_reply *r = &op->d.reply;
    int32_t code = op->cmd.code;
    int rv = 0;
    reply->has_ext = code != NS_CODE_CONTROLLER_GET_SYNC_STATE_DATA &&
                     code != NS_CODE_CLEAN_BROKER_DATA;
    if (code == NS_CODE_CONTROLLER_GET_NEXT_BROKER_ID ||
        code == NS_CODE_CONTROLLER_APPLY_BROKER_ID ||
        code == NS_CODE_CONTROLLER_REGISTER_BROKER) {
        if (op->req.cluster != NULL) {
            rv = ns_cmd_ext_set(reply, "clusterName", op->req.cluster);
        }
        if (rv == 0 && op->req.broker_name != NULL) {
            rv = ns_cmd_ext_set(reply, "brokerName", op->req.broker_name);
        }
    }
    if (rv == 0 && r->has_next_id) {
        rv = set_long(reply, "nextBrokerId", r->next_id);
    }
    if (rv == 0 && r->has_master_id) {
        rv = set_long(reply, "masterBrokerId", r->master_id);
    }
    if (rv == 0 && r->master_addr != NULL) {
        rv = ns_cmd_ext_set(reply, "masterAddress", r->master_addr);
    }
    if (rv == 0 && r->has_master_epoch) {
        rv = set_long(reply, "masterEpoch", r->master_epoch);
    }
    if (rv == 0 && r->has_sync_epoch) {
        rv = set_long(reply, "syncStateSetEpoch", r->sync_epoch);
    }
    if (rv == 0 && r->has_new_sync_epoch) {
        rv = set_long(reply, "newSyncStateSetEpoch", r->new_sync_epoch);
    }
    return rv;
}

static void op_done(struct ns_controller_op *op, int status)
{
    struct ns_pending *p = op->pending;
    op->pending = NULL;
    const struct ns_reply_to *to = &p->to;
    const struct ns_ctl_decision *d = &op->d;
    struct ns_controller *c = op->ctl;
    if (status != 0) {
        ns_reply_write_error(to, status);
        goto out;
    }
    if (d->code == NS_CODE_CONTROLLER_NOT_LEADER) {
        ns_reply_simple(to, d->code, NOT_LEADER_REMARK);
        goto out;
    }
    struct ns_cmd reply;
    struct ns_buf body;
    ns_buf_init(&body);
    ns_reply_init(&reply, to, d->code);
    int rv = put_header(&reply, op);
    if (rv == 0 && d->remark[0] != '\0') {
        rv = ns_cmd_set_remark(&reply, d->remark);
    }
    if (op->cmd.code == NS_CODE_CONTROLLER_GET_SYNC_STATE_DATA) {
        cJSON *names = op->cmd.body_len
                           ? cJSON_ParseWithLength((const char *)op->cmd.body,
                                                   op->cmd.body_len)
                           : NULL;
        if (!cJSON_IsArray(names) || cJSON_GetArraySize(names) == 0) {
            reply.code = NS_CODE_SYSTEM_ERROR;
            rv = rv ? rv
                    : ns_cmd_set_remark(&reply, "not set any response code");
        } else {
            put_replicas_info(&body, c, names);
        }
        cJSON_Delete(names);
    } else if (d->reply.elect_body) {
        put_elect(&body, &d->reply,
                  ns_ctl_find(&c->state->ctl, op->req.broker_name));
    } else if (d->reply.has_set && d->code == 0) {
        put_set(&body, &d->reply);
    }
    rv = rv ? rv : body.err;
    if (rv != 0) {
        ns_cmd_close(&reply);
        ns_reply_write_error(to, NS_ENOMEM);
    } else {
        reply.body = body.len ? body.data : NULL;
        reply.body_len = body.len;
        ns_reply_send(to, &reply);
    }
    ns_buf_close(&body);
out:
    ns_pending_finish(p, status, 0, NULL);
}

static void pending_noop(struct ns_pending *p, int status,
                         const struct ns_apply_result *res)
{
    (void)p;
    (void)status;
    (void)res;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* 1001's body: SyncStateSet {syncStateSet: ids, syncStateSetEpoch}. The ids
 * are sorted and made distinct (a Java Set). NS_EPROTO when absent or not
 * an object (Java's handler fails on it). */
static int parse_set(struct ns_controller_op *op)
{
    cJSON *j = op->cmd.body_len
                   ? cJSON_ParseWithLength((const char *)op->cmd.body,
                                           op->cmd.body_len)
                   : NULL;
    int rv = cJSON_IsObject(j) ? 0 : NS_EPROTO;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "syncStateSet");
    int n = cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : 0;
    if (rv == 0 && n > NS_CTL_MAX_MEMBERS) {
        rv = NS_EPROTO;
    }
    if (rv == 0 &&
        (op->ids = ns_malloc((size_t)(n ? n : 1) * sizeof *op->ids)) == NULL) {
        rv = NS_ENOMEM;
    }
    size_t k = 0;
    const cJSON *it;
    const cJSON *from = rv == 0 ? arr : (const cJSON *)NULL;
    cJSON_ArrayForEach(it, from)
    {
        if (cJSON_IsNumber(it)) {
            op->ids[k++] = (int64_t)it->valuedouble;
        } else if (cJSON_IsString(it)) {
            op->ids[k++] = strtoll(it->valuestring, NULL, 10);
        }
    }
    if (rv == 0) {
        qsort(op->ids, k, sizeof *op->ids, cmp_i64);
        size_t m = 0;
        for (size_t i = 0; i < k; i++) {
            if (m == 0 || op->ids[m - 1] != op->ids[i]) {
                op->ids[m++] = op->ids[i];
            }
        }
        op->req.ids = op->ids;
        op->req.n_ids = m;
        op->req.set_epoch =
            (int32_t)ns_json_get_int64(j, "syncStateSetEpoch", 0);
    }
    cJSON_Delete(j);
    return rv;
}

static void parse_request(struct ns_controller_op *op)
{
    const struct ns_cmd *cmd = &op->cmd;
    struct ns_ctl_request *r = &op->req;
    r->cluster = ns_cmd_ext_find(cmd, "clusterName");
    r->broker_name = ns_cmd_ext_find(cmd, "brokerName");
    r->broker_addr = ns_cmd_ext_find(cmd, "brokerAddress");
    r->check_code = ns_cmd_ext_find(cmd, "registerCheckCode");
    const char *id_key = cmd->code == NS_CODE_CONTROLLER_APPLY_BROKER_ID
                             ? "appliedBrokerId"
                         : cmd->code == NS_CODE_CONTROLLER_ALTER_SYNC_STATE_SET
                             ? "masterBrokerId"
                             : "brokerId";
    r->has_id = ns_cmd_ext_int64(cmd, id_key, &r->id);
    r->has_master_epoch =
        ns_cmd_ext_int32(cmd, "masterEpoch", &r->master_epoch);
    bool b = false;
    r->designate = ns_cmd_ext_bool(cmd, "designateElect", &b) && b;
    r->ids_text = ns_cmd_ext_find(cmd, "brokerControllerIdsToClean");
    b = false;
    r->clean_living = ns_cmd_ext_bool(cmd, "isCleanLivingBroker", &b) && b;
}

static ns_controller_decide decide_of(int32_t code)
{
    switch (code) {
    case NS_CODE_CONTROLLER_ALTER_SYNC_STATE_SET:
        return ns_ctl_decide_alter;
    case NS_CODE_CONTROLLER_ELECT_MASTER:
        return ns_ctl_decide_elect;
    case NS_CODE_CONTROLLER_REGISTER_BROKER:
        return ns_ctl_decide_register;
    case NS_CODE_CONTROLLER_GET_REPLICA_INFO:
        return ns_ctl_decide_replica_info;
    case NS_CODE_CLEAN_BROKER_DATA:
        return ns_ctl_decide_clean;
    case NS_CODE_CONTROLLER_GET_NEXT_BROKER_ID:
        return ns_ctl_decide_next_id;
    case NS_CODE_CONTROLLER_APPLY_BROKER_ID:
        return ns_ctl_decide_apply_id;
    default:
        return NULL; /* 1006: answered from the state in op_done */
    }
}

/* 1001-1004, 1006, 1011-1013: queued on the leader, answered after apply. */
int ns_handle_controller_queued(struct ns_req *req)
{
    struct ns_controller *c = ctl_of(req);
    if (!c->set.enabled) {
        return not_supported(req);
    }
    if (!ns_node_is_leader(req->gw->node)) {
        c->stats.not_leader++;
        return ns_reply_simple(&req->to, NS_CODE_CONTROLLER_NOT_LEADER,
                               NOT_LEADER_REMARK);
    }
    if (c->n_queued >= NS_CONTROLLER_MAX_QUEUED) {
        /* Java's event queue holds 1024; a flood waits its turn elsewhere */
        return ns_reply_simple(&req->to, NS_CODE_SYSTEM_BUSY,
                               "controller request queue is full");
    }
    struct ns_controller_op *op = ns_calloc(1, sizeof *op);
    if (op == NULL) {
        return NS_ENOMEM;
    }
    if (ns_cmd_copy(req->cmd, &op->cmd) != 0) {
        ns_free(op);
        return NS_ENOMEM;
    }
    parse_request(op);
    if (req->cmd->code == NS_CODE_CONTROLLER_ALTER_SYNC_STATE_SET) {
        int rv = parse_set(op);
        if (rv != 0) {
            ns_cmd_close(&op->cmd);
            ns_free(op->ids);
            ns_free(op);
            return rv == NS_ENOMEM
                       ? rv
                       : ns_reply_simple(&req->to, NS_CODE_SYSTEM_ERROR,
                                         "java.lang.NullPointerException");
        }
    }
    op->pending = ns_pending_new(req, pending_noop);
    if (op->pending == NULL) {
        ns_cmd_close(&op->cmd);
        ns_free(op->ids);
        ns_free(op);
        return NS_ENOMEM;
    }
    op->decide = decide_of(req->cmd->code);
    op->done = op_done;
    ns_controller_submit(c, op);
    return 0;
}
