/* Handlers of the private codes NS_CODE_LIVENESS_REPORT (raftns/codes.h): a
 * follower's batch of brokers it heard from and connections that closed, and
 * NS_CODE_BROKER_LIVENESS: this node's table, for raftnsctl brokers. The
 * report's body format and the merge are in liveness.c; this file checks the
 * secret and the sender and answers. */
#include <stdlib.h>

#include "cluster/cluster.h"
#include "raftns/codes.h"
#include "raftns/err.h"
#include "raftns/json.h"
#include "raftns/log.h"
#include "gateway/gateway_int.h"

int ns_handle_liveness_report(struct ns_req *req)
{
    if (!ns_handle_private_is_signed(req)) {
        return 0;
    }
    int64_t from = 0;
    if (!ns_cmd_ext_int64(req->cmd, NS_EXT_FROM, &from) || from <= 0) {
        return ns_reply_simple(&req->to, NS_CODE_SYSTEM_ERROR,
                               "liveness report without a sender id");
    }
    int rv = ns_liveness_merge_report(req->gw->live, (uint64_t)from,
                                      req->cmd->body, req->cmd->body_len);
    if (rv == NS_EPROTO) {
        NS_LOG(NS_LOG_WARN, "liveness: malformed report from node %lld",
               (long long)from);
        return ns_reply_simple(&req->to, NS_CODE_SYSTEM_ERROR,
                               "malformed liveness report");
    }
    if (rv != 0) {
        return ns_reply_write_error(&req->to, rv);
    }
    return ns_reply_simple(&req->to, NS_CODE_SUCCESS, NULL);
}

static void put_age(struct ns_json_writer *w, const char *key, uint64_t now,
                    uint64_t then, bool known)
{
    ns_json_write_key(w, key);
    ns_json_write_int(w, known ? (int64_t)(now >= then ? now - then : 0) : -1);
}

static void list_one(void *arg, const struct ns_live *e, uint64_t now)
{
    struct ns_json_writer *w = arg;
    ns_json_write_obj_begin(w);
    ns_json_write_key(w, "brokerAddr");
    ns_json_write_str(w, e->addr);
    ns_json_write_key(w, "cluster");
    ns_json_write_str(w, e->cluster);
    ns_json_write_key(w, "heardHere");
    ns_json_write_bool(w, e->heard);
    ns_json_write_key(w, "holders");
    ns_json_write_arr_begin(w);
    for (uint8_t i = 0; i < e->n_holders; i++) {
        ns_json_write_int(w, (int64_t)e->holders[i]);
    }
    ns_json_write_arr_end(w);
    /* ms since this node itself heard the broker (-1: never), and since any
     * node did as far as this one knows (the leader's merged view) */
    put_age(w, "lastHeartbeatAgoMs", now, e->local_seen_ms, e->heard);
    put_age(w, "seenAgoMs", now, e->seen_ms, true);
    ns_json_write_key(w, "timeoutMs");
    ns_json_write_int(w, (int64_t)e->timeout_ms);
    ns_json_write_obj_end(w);
}

int ns_handle_broker_liveness(struct ns_req *req)
{
    struct ns_gateway *gw = req->gw;
    struct ns_buf b;
    struct ns_json_writer w;
    ns_buf_init(&b);
    ns_json_write_init(&w, &b, NS_JSON_STANDARD);
    ns_json_write_obj_begin(&w);
    ns_json_write_key(&w, "brokers");
    ns_json_write_arr_begin(&w);
    ns_liveness_each(gw->live, list_one, &w);
    ns_json_write_arr_end(&w);
    ns_json_write_key(&w, "leader");
    ns_json_write_bool(&w, ns_node_is_leader(gw->node));
    ns_json_write_key(&w, "node");
    ns_json_write_int(&w, (int64_t)ns_node_id(gw->node));
    ns_json_write_obj_end(&w);
    int rv = ns_reply_buf(&req->to, b.err, &b);
    ns_buf_close(&b);
    return rv;
}
