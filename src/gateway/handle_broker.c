/* Handlers of the broker codes: 103 REGISTER_BROKER (validation, the heartbeat
 * short-cut, proposal; big bodies are decoded off the loop by
 * register_async.c), 104 UNREGISTER_BROKER, 322 QUERY_DATA_VERSION and 904
 * BROKER_HEARTBEAT (docs/protocol.md §5.2-§5.4). Table semantics are in
 * src/route; liveness in liveness.c. */
#include <stdio.h>
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/codes.h"
#include "raftns/config.h"
#include "raftns/crc32.h"
#include "raftns/err.h"
#include "raftns/kv.h"
#include "raftns/log.h"
#include "raftns/metrics.h"
#include "raftns/route.h"
#include "gateway/register_memo.h"
#include "gateway/gateway_int.h"

/* What Java 4.9.8 answers when a handler throws, derived from
 * DefaultRequestProcessor (docs/compat.md): the exception's text (as Java 8
 * prints a NullPointerException) and its first stack frame, whose line is
 * fixed by the 4.9.8 source. */
#define NPE_AT(method, line)                                                   \
    "java.lang.NullPointerException, "                                         \
    "org.apache.rocketmq.namesrv.processor.DefaultRequestProcessor." method    \
    "(DefaultRequestProcessor.java:" #line ")"
/* brokerId missing or not a long: unboxing the null Long throws. */
#define REMARK_NPE_REGISTER NPE_AT("registerBrokerWithFilterServer", 252)
#define REMARK_NPE_REGISTER_OLD NPE_AT("registerBroker", 332)
#define REMARK_NPE_UNREGISTER NPE_AT("unregisterBroker", 359)
#define REMARK_BAD_BODY                                                        \
    "org.apache.rocketmq.remoting.exception.RemotingCommandException: "        \
    "Failed to decode RegisterBrokerBody, "                                    \
    "org.apache.rocketmq.namesrv.processor.DefaultRequestProcessor."           \
    "registerBrokerWithFilterServer(DefaultRequestProcessor.java:241)"
/* QUERY_DATA_VERSION without a body: new String(null) throws. */
#define REMARK_NPE_NO_BODY "java.lang.NullPointerException"

static const char *ext_or_empty(const struct ns_cmd *cmd, const char *key)
{
    const char *v = ns_cmd_ext_find(cmd, key);
    return v != NULL ? v : "";
}

/* Appends the ORDER_TOPIC_CONFIG KVTable when it exists and the setting allows
 * it. */
static int add_order_body(struct ns_gateway *gw, struct ns_buf *body)
{
    const struct ns_settings *st = ns_config_settings(gw->state->config);
    if (!st->return_order_topic_config_to_broker ||
        !ns_kv_has_namespace(gw->state->kv, NS_KV_ORDER_TOPIC_CONFIG)) {
        return 0;
    }
    int rv =
        ns_kv_encode_namespace(gw->state->kv, NS_KV_ORDER_TOPIC_CONFIG, body);
    return rv != 0 ? rv : body->err;
}

/* SUCCESS with extFields ({} or master/ha) and the order-config body. */
static int reply_registered(struct ns_gateway *gw, const struct ns_reply_to *to,
                            const char *master_addr, const char *ha_addr)
{
    struct ns_cmd reply;
    struct ns_buf body;
    int rv = NS_ENOMEM;
    ns_reply_init(&reply, to, NS_CODE_SUCCESS);
    ns_buf_init(&body);
    reply.has_ext = true;
    if (ha_addr != NULL &&
        ns_cmd_ext_set(&reply, "haServerAddr", ha_addr) != 0) {
        goto err;
    }
    if (master_addr != NULL &&
        ns_cmd_ext_set(&reply, "masterAddr", master_addr) != 0) {
        goto err;
    }
    if (add_order_body(gw, &body) != 0) {
        goto err;
    }
    reply.body = body.data;
    reply.body_len = body.len;
    rv = ns_reply_send(to, &reply);
    ns_buf_close(&body);
    return rv;
err:
    ns_cmd_close(&reply);
    ns_buf_close(&body);
    return rv;
}

static int reply_error_ext(const struct ns_reply_to *to, const char *remark)
{
    struct ns_cmd reply;
    ns_reply_init(&reply, to, NS_CODE_SYSTEM_ERROR);
    reply.has_ext = true;
    if (ns_cmd_set_remark(&reply, remark) != 0) {
        ns_cmd_close(&reply);
        return NS_ENOMEM;
    }
    return ns_reply_send(to, &reply);
}

/* What a registration's or unregistration's answer needs for the liveness
 * table (p->data, one block). */
struct broker_key {
    uint64_t timeout_ms;
    char *cluster, *addr; /* into text */
    char text[];
};

static void keep_broker_key(struct ns_pending *p, const char *cluster,
                            const char *addr, uint64_t timeout_ms)
{
    size_t lc = strlen(cluster) + 1, la = strlen(addr) + 1;
    struct broker_key *k = ns_malloc(sizeof *k + lc + la);
    if (k == NULL) {
        NS_LOG(NS_LOG_WARN, "register: out of memory for liveness bookkeeping");
        return;
    }
    k->timeout_ms = timeout_ms;
    k->cluster = memcpy(k->text, cluster, lc);
    k->addr = memcpy(k->text + lc, addr, la);
    p->data = k;
}

static void register_done(struct ns_pending *p, int status,
                          const struct ns_apply_result *res)
{
    const struct broker_key *k = p->data;
    if (status != 0) {
        ns_reply_write_error(&p->to, status);
        return;
    }
    const struct ns_register_result *r = &res->reg;
    if (r->status == NS_REGISTER_FAILED) {
        reply_error_ext(&p->to, "register broker failed");
        return;
    }
    if (r->status == NS_REGISTER_OK && k != NULL) {
        ns_liveness_register(p->gw->live, k->cluster, k->addr,
                             ns_gateway_now(p->gw), k->timeout_ms, p->to.conn);
    }
    reply_registered(p->gw, &p->to, r->master_addr, r->ha_addr);
}

int ns_handle_broker_check_crc(const struct ns_cmd *cmd)
{
    int32_t want = 0;
    const char *text = ns_cmd_ext_find(cmd, "bodyCrc32");
    /* Java leaves an unparsable bodyCrc32 at its default 0 and so skips the
     * check; raftns refuses it instead (docs/compat.md). */
    if (text != NULL && !ns_json_number_parse_int32(text, &want)) {
        return -1;
    }
    if (want == 0) {
        return 0;
    }
    uint32_t crc = ns_crc32(cmd->body, cmd->body_len);
    return (int32_t)(crc & 0x7FFFFFFF) == want ? 0 : -1;
}

int ns_handle_broker_fill_header(const struct ns_cmd *cmd,
                                 struct ns_register *reg)
{
    reg->cluster = ns_strdup(ext_or_empty(cmd, "clusterName"));
    reg->broker_name = ns_strdup(ext_or_empty(cmd, "brokerName"));
    reg->broker_addr = ns_strdup(ext_or_empty(cmd, "brokerAddr"));
    const char *ha = ns_cmd_ext_find(cmd, "haServerAddr");
    const char *zone = ns_cmd_ext_find(cmd, "__ZONE_NAME");
    reg->ha_addr = ha != NULL ? ns_strdup(ha) : NULL;
    reg->zone = zone != NULL ? ns_strdup(zone) : NULL;
    if (reg->cluster == NULL || reg->broker_name == NULL ||
        reg->broker_addr == NULL || (ha != NULL && reg->ha_addr == NULL) ||
        (zone != NULL && reg->zone == NULL)) {
        return NS_ENOMEM;
    }
    reg->broker_id = 0;
    ns_cmd_ext_int64(cmd, "brokerId", &reg->broker_id);
    reg->heartbeat_timeout_ms = NS_DEFAULT_HEARTBEAT_TIMEOUT_MS;
    ns_cmd_ext_int64(cmd, "heartbeatTimeoutMillis", &reg->heartbeat_timeout_ms);
    if (reg->heartbeat_timeout_ms <= 0) {
        reg->heartbeat_timeout_ms = NS_DEFAULT_HEARTBEAT_TIMEOUT_MS;
    }
    bool acting = false;
    ns_cmd_ext_bool(cmd, "enableActingMaster", &acting);
    /* Absent = an "old" (4.9.x) broker. */
    reg->acting_master = ns_cmd_ext_find(cmd, "enableActingMaster") == NULL ? -1
                         : acting                                           ? 1
                                                                            : 0;
    return 0;
}

/* Whether an unchanged re-registration may be answered from this node's own
 * table (the heartbeat short-cut), without the leader. "Registered" is only
 * true if the leader's table says so and the leader will hear of the broker's
 * liveness; this node's table says the same only while it is ready (it has
 * applied everything the leader had applied when it joined) and not diverged,
 * and only while it is in touch with a leader (ns_node_has_leader_contact: the
 * leader itself, or a follower heard from it within an election timeout). A
 * node that restarted and is catching up, or that sits in a minority, forwards
 * the registration instead: the leader answers it from its table without a
 * log entry (handle_cluster.c) or replicates it, and a minority node answers
 * the write error after the write wait (raftns/waits.h) rather than a false
 * success. */
static bool may_short_cut(const struct ns_gateway *gw)
{
    return ns_node_is_ready(gw->node) && !ns_node_is_diverged(gw->node) &&
           ns_node_has_leader_contact(gw->node) &&
           ns_liveness_may_short_cut(gw->live);
}

/* Heartbeat short-cut: a re-registration the de-duplication step finds
 * already held (held: 1, or the error it met) only refreshes liveness; a
 * slave's reply carries its master's addresses as the FSM would compute them
 * (master, from the step). */
static int reply_unchanged(struct ns_req *req, const struct ns_register *reg,
                           int held, const struct ns_register_result *master)
{
    struct ns_gateway *gw = req->gw;
    int rv = held == 1 ? 0 : held;
    if (rv == 0) {
        rv = ns_liveness_register(
            gw->live, reg->cluster, reg->broker_addr, ns_gateway_now(gw),
            (uint64_t)reg->heartbeat_timeout_ms, req->conn);
    }
    if (rv == 0) {
        rv = reply_registered(gw, &req->to, master->master_addr,
                              master->ha_addr);
    }
    return rv;
}

/* A registration the memo found held at the route's current epoch: the
 * de-duplication step's answer (held: 1, or the error it met), without
 * asking it again; only the master's addresses are looked up. */
static int held_at_checked_epoch(const struct ns_gateway *gw,
                                 const struct ns_register *reg,
                                 struct ns_register_result *master)
{
    int rv = ns_route_find_master(gw->state->route, reg, master);
    return rv != 0 ? rv : 1;
}

int ns_handle_broker_finish(struct ns_req *req, struct ns_command *c,
                            bool crc_bad, int rv, const char *errmsg)
{
    struct ns_gateway *gw = req->gw;
    const struct ns_settings *st = ns_config_settings(gw->state->config);
    bool delete_missing = st->delete_topic_with_broker_registration;
    struct ns_register *reg = &c->u.reg;
    if (crc_bad) {
        return reply_error_ext(&req->to, "crc32 not match");
    }
    if (rv == NS_ETOOBIG) {
        ns_metrics_limit(NS_LIMIT_TOPICS);
        NS_LOG(NS_LOG_WARN, "conn %llu %s: register refused: %s",
               (unsigned long long)req->conn->id, req->conn->peer, errmsg);
    }
    if (rv == NS_ETOOBIG) {
        return reply_error_ext(&req->to, errmsg);
    }
    if (rv == NS_EPROTO) {
        /* Java: RegisterBrokerBody.decode throws and is wrapped; requests
         * older than V3_0_11 see the fastjson exception itself. */
        return ns_reply_exception(&req->to,
                                  req->cmd->version >= 37 ? REMARK_BAD_BODY
                                  : errmsg[0]             ? errmsg
                                              : "com.alibaba.fastjson."
                                                "JSONException");
    }
    if (rv != 0) {
        return rv;
    }
    int64_t id;
    if (!ns_cmd_ext_int64(req->cmd, "brokerId", &id)) {
        return ns_reply_exception(&req->to, req->cmd->version >= 37
                                                ? REMARK_NPE_REGISTER
                                                : REMARK_NPE_REGISTER_OLD);
    }
    uint64_t epoch = ns_route_epoch(gw->state->route);
    struct ns_register_result master;
    int held = may_short_cut(gw)
                   ? ns_dedup_registration_held(gw->cluster, reg, &master)
                   : 0;
    if (held != 0) {
        rv = reply_unchanged(req, reg, held, &master);
        ns_register_result_close(&master);
        /* A DataVersion without a timestamp takes the decode time: such a
         * body does not decode the same twice, so it is not remembered. */
        if (rv == 0 && reg->dv.timestamp != c->leader_time_ms) {
            ns_register_memo_put(&gw->memo, req->cmd, reg, epoch,
                                 delete_missing);
        }
        return rv;
    }
    struct ns_pending *p = NULL;
    rv = ns_propose(req, c, register_done, &p);
    if (rv == 0) {
        keep_broker_key(p, reg->cluster, reg->broker_addr,
                        (uint64_t)reg->heartbeat_timeout_ms);
    } else if (rv != NS_ENOMEM) {
        rv = ns_reply_write_error(&req->to, rv);
    }
    return rv;
}

int ns_handle_register_broker(struct ns_req *req)
{
    struct ns_gateway *gw = req->gw;
    const struct ns_cmd *cmd = req->cmd;
    const struct ns_settings *st = ns_config_settings(gw->state->config);
    bool delete_missing = st->delete_topic_with_broker_registration;
    /* The same request bytes as a remembered one decode to the same
     * registration (and pass the same CRC check): only the route check is
     * repeated, and only when this server's route changed since it last
     * passed. */
    struct ns_register_memo *known =
        may_short_cut(gw) ? ns_register_memo_find(&gw->memo, cmd) : NULL;
    if (known != NULL) {
        const struct ns_register *kreg = ns_register_memo_reg(known);
        uint64_t epoch = ns_route_epoch(gw->state->route);
        struct ns_register_result master;
        int held = ns_register_memo_is_current(known, epoch, delete_missing)
                       ? held_at_checked_epoch(gw, kreg, &master)
                       : ns_dedup_registration_held(gw->cluster, kreg, &master);
        if (held != 0) {
            ns_register_memo_mark(known, epoch, delete_missing);
            int rv = reply_unchanged(req, kreg, held, &master);
            ns_register_result_close(&master);
            return rv;
        }
        ns_register_memo_drop(&gw->memo, cmd);
    }
    bool compressed = false;
    ns_cmd_ext_bool(cmd, "compressed", &compressed);
    if (ns_register_async_wanted(cmd, compressed)) {
        return ns_register_async_start(req, compressed);
    }
    bool crc_bad = ns_handle_broker_check_crc(cmd) != 0;
    struct ns_command c;
    ns_command_init(&c, NS_CMD_REGISTER_BROKER);
    ns_register_init(&c.u.reg);
    c.leader_time_ms = ns_clock_wall_ms();
    char errmsg[256] = "";
    int rv = ns_handle_broker_fill_header(cmd, &c.u.reg);
    if (rv == 0 && !crc_bad) {
        rv = ns_register_decode_body(&c.u.reg, cmd->version, compressed,
                                     cmd->body, cmd->body_len, c.leader_time_ms,
                                     errmsg, sizeof errmsg);
    }
    if (rv != NS_ENOMEM) {
        rv = ns_handle_broker_finish(req, &c, crc_bad, rv, errmsg);
    }
    ns_command_close(&c);
    return rv;
}

static void unregister_done(struct ns_pending *p, int status,
                            const struct ns_apply_result *res)
{
    const struct broker_key *k = p->data;
    if (status == 0 && k != NULL) {
        ns_liveness_remove(p->gw->live, k->cluster, k->addr);
    }
    ns_propose_simple_done(p, status, res);
}

int ns_handle_unregister_broker(struct ns_req *req)
{
    struct ns_command c;
    int rv = NS_ENOMEM;
    int64_t id;
    if (!ns_cmd_ext_int64(req->cmd, "brokerId", &id)) {
        return ns_reply_exception(&req->to, REMARK_NPE_UNREGISTER);
    }
    ns_command_init(&c, NS_CMD_UNREGISTER_BROKERS);
    c.leader_time_ms = ns_clock_wall_ms();
    c.u.brokers.refs = ns_calloc(1, sizeof *c.u.brokers.refs);
    if (c.u.brokers.refs == NULL) {
        goto out;
    }
    c.u.brokers.n = 1;
    struct ns_broker_ref *ref = &c.u.brokers.refs[0];
    ref->cluster = ns_strdup(ext_or_empty(req->cmd, "clusterName"));
    ref->broker_addr = ns_strdup(ext_or_empty(req->cmd, "brokerAddr"));
    ref->broker_name = ns_strdup(ext_or_empty(req->cmd, "brokerName"));
    ns_cmd_ext_int64(req->cmd, "brokerId", &ref->broker_id);
    if (ref->cluster == NULL || ref->broker_addr == NULL ||
        ref->broker_name == NULL) {
        goto out;
    }
    struct ns_pending *p = NULL;
    rv = ns_propose(req, &c, unregister_done, &p);
    if (rv == 0) {
        keep_broker_key(p, ref->cluster, ref->broker_addr, 0);
    } else if (rv != NS_ENOMEM) {
        rv = ns_reply_write_error(&req->to, rv);
    }
out:
    ns_command_close(&c);
    return rv;
}

int ns_handle_query_data_version(struct ns_req *req)
{
    struct ns_gateway *gw = req->gw;
    const char *cluster = ext_or_empty(req->cmd, "clusterName");
    const char *addr = ext_or_empty(req->cmd, "brokerAddr");
    struct ns_data_version dv;
    if (req->cmd->body_len == 0) {
        return ns_reply_exception(&req->to, REMARK_NPE_NO_BODY);
    }
    const char *bad = NULL;
    int drv = ns_data_version_decode(req->cmd->body, req->cmd->body_len,
                                     ns_clock_wall_ms(), &dv, &bad);
    if (drv == NS_ENOMEM) {
        return drv;
    }
    if (drv == NS_EPROTO) {
        char remark[128];
        snprintf(remark, sizeof remark,
                 "com.alibaba.fastjson.JSONException: %s%s",
                 bad != NULL ? "parseLong error, field : " : "syntax error",
                 bad != NULL ? bad : "");
        return ns_reply_exception(&req->to, remark);
    }
    bool have = drv == 0; /* NS_ENOTFOUND: Java's null DataVersion */
    const struct ns_data_version *stored =
        ns_route_find_data_version(gw->state->route, cluster, addr);
    /* 4.9.8's DataVersion.equals: timestamp and counter (no stateVersion). */
    bool changed = !have || stored == NULL || stored->counter != dv.counter ||
                   stored->timestamp != dv.timestamp;
    if (!changed) {
        /* As Java: only an unchanged version refreshes the broker; a changed
         * one is followed by a registration. */
        ns_liveness_touch(gw->live, cluster, addr, ns_gateway_now(gw));
    }

    struct ns_cmd reply;
    struct ns_buf body;
    int rv = NS_ENOMEM;
    ns_reply_init(&reply, &req->to, NS_CODE_SUCCESS);
    ns_buf_init(&body);
    if (ns_cmd_ext_set(&reply, "changed", changed ? "true" : "false") != 0) {
        goto err;
    }
    if (stored != NULL) {
        ns_data_version_encode(stored, &body);
        if (body.err != 0) {
            goto err;
        }
        reply.body = body.data;
        reply.body_len = body.len;
    }
    rv = ns_reply_send(&req->to, &reply);
    ns_buf_close(&body);
    return rv;
err:
    ns_cmd_close(&reply);
    ns_buf_close(&body);
    return rv;
}

int ns_handle_broker_heartbeat(struct ns_req *req)
{
    ns_liveness_touch(req->gw->live, ext_or_empty(req->cmd, "clusterName"),
                      ext_or_empty(req->cmd, "brokerAddr"),
                      ns_gateway_now(req->gw));
    return ns_reply_simple(&req->to, NS_CODE_SUCCESS, NULL);
}
