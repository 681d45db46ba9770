/* Handlers of the read-only route codes: 105 route by topic, 106 cluster info,
 * topic lists (206, 224, 304, 311-313) and 901 member group (docs/protocol.md
 * §3.2, §5.7, §5.8). They answer from the local state only (dispatch hands a
 * read this node cannot answer to the leader first). */
#include <ctype.h>
#include <string.h>

#include "raftns/codes.h"
#include "raftns/config.h"
#include "raftns/err.h"
#include "raftns/kv.h"
#include "raftns/route.h"
#include "gateway/gateway_int.h"

#define FAQ_URL "https://rocketmq.apache.org/docs/bestPractice/06FAQ"

static const struct ns_settings *settings(const struct ns_req *req)
{
    return ns_config_settings(req->gw->state->config);
}

static bool is_blank(const char *s)
{
    for (; s != NULL && *s != '\0'; s++) {
        if (!isspace((unsigned char)*s)) {
            return false;
        }
    }
    return true;
}

static int not_found(struct ns_req *req, const char *topic)
{
    return ns_reply_remarkf(
        &req->to, NS_CODE_TOPIC_NOT_EXIST,
        "No topic route info in name server for the topic: %s\nSee " FAQ_URL
        " for further details.",
        topic != NULL ? topic : "null");
}

int ns_handle_route(struct ns_req *req)
{
    const struct ns_settings *st = settings(req);
    struct ns_state *state = req->gw->state;
    if (st->need_wait_for_service &&
        ns_gateway_now(req->gw) - req->gw->start_ms <
            (uint64_t)st->wait_seconds_for_service * 1000u) {
        /* Java waits for brokers to re-register after a start; a restarted
         * member of a cluster has the cluster's routes at the leader. */
        if (req->may_forward) {
            return ns_held_read_forward(req, "name server not ready", false);
        }
        return ns_reply_simple(&req->to, NS_CODE_SYSTEM_ERROR,
                               "name server not ready");
    }
    const char *topic = ns_cmd_ext_find(req->cmd, "topic");
    if (topic == NULL) {
        return not_found(req, topic);
    }
    bool standard = false;
    ns_cmd_ext_bool(req->cmd, "acceptStandardJsonOnly", &standard);
    bool zone_mode = false;
    ns_cmd_ext_bool(req->cmd, "__ZONE_MODE", &zone_mode);
    const char *zone = ns_cmd_ext_find(req->cmd, "__ZONE_NAME");
    struct ns_route_query q = {
        .topic = topic,
        .flavour = (req->cmd->version >= 401 || standard) ? NS_JSON_STANDARD
                                                          : NS_JSON_LEGACY,
        .support_acting_master = st->support_acting_master,
        .order_topic_conf =
            st->order_message_enable
                ? ns_kv_find(state->kv, NS_KV_ORDER_TOPIC_CONFIG, topic)
                : NULL,
        .zone_name = (zone_mode && !is_blank(zone)) ? zone : NULL,
    };
    int rv;
    if (q.zone_name != NULL) {
        struct ns_buf body;
        ns_buf_init(&body);
        rv = ns_route_encode_topic_route(state->route, &q, &body);
        if (rv == NS_ENOTFOUND) {
            rv = not_found(req, topic);
        } else {
            rv = ns_reply_buf(&req->to, rv, &body);
        }
        ns_buf_close(&body);
        return rv;
    }
    uint64_t gen =
        ns_config_generation(state->config) + ns_kv_generation(state->kv);
    const uint8_t *body = NULL;
    size_t len = 0;
    rv = ns_route_cached_topic_route(state->route, &q, gen, &body, &len);
    if (rv == NS_ENOTFOUND) {
        return not_found(req, topic);
    }
    if (rv != 0) {
        return rv;
    }
    return ns_reply_body(&req->to, NS_CODE_SUCCESS, body, len);
}

int ns_handle_cluster_info(struct ns_req *req)
{
    struct ns_buf b;
    ns_buf_init(&b);
    int rv = ns_reply_buf(
        &req->to, ns_route_encode_cluster_info(req->gw->state->route, &b), &b);
    ns_buf_close(&b);
    return rv;
}

int ns_handle_all_topics(struct ns_req *req)
{
    if (!settings(req)->enable_all_topic_list) {
        return ns_reply_simple(&req->to, NS_CODE_SYSTEM_ERROR, "disable");
    }
    struct ns_buf b;
    ns_buf_init(&b);
    int rv = ns_reply_buf(
        &req->to, ns_route_encode_all_topics(req->gw->state->route, &b), &b);
    ns_buf_close(&b);
    return rv;
}

int ns_handle_topics_by_cluster(struct ns_req *req)
{
    if (!settings(req)->enable_topic_list) {
        return ns_reply_simple(&req->to, NS_CODE_SYSTEM_ERROR, "disable");
    }
    const char *cluster = ns_cmd_ext_find(req->cmd, "cluster");
    struct ns_buf b;
    ns_buf_init(&b);
    int rv =
        ns_reply_buf(&req->to,
                     ns_route_encode_topics_by_cluster(
                         req->gw->state->route, cluster ? cluster : "", &b),
                     &b);
    ns_buf_close(&b);
    return rv;
}

int ns_handle_system_topics(struct ns_req *req)
{
    struct ns_buf b;
    ns_buf_init(&b);
    int rv = ns_reply_buf(
        &req->to, ns_route_encode_system_topics(req->gw->state->route, &b), &b);
    ns_buf_close(&b);
    return rv;
}

static int unit_list(struct ns_req *req, enum ns_unit_list which)
{
    if (!settings(req)->enable_topic_list) {
        return ns_reply_simple(&req->to, NS_CODE_SYSTEM_ERROR, "disable");
    }
    struct ns_buf b;
    ns_buf_init(&b);
    int rv = ns_reply_buf(
        &req->to, ns_route_encode_unit_topics(req->gw->state->route, which, &b),
        &b);
    ns_buf_close(&b);
    return rv;
}

int ns_handle_unit_topics(struct ns_req *req)
{
    return unit_list(req, NS_UNIT_TOPICS);
}

int ns_handle_unit_sub_topics(struct ns_req *req)
{
    return unit_list(req, NS_UNIT_SUB_TOPICS);
}

int ns_handle_unit_sub_ununit_topics(struct ns_req *req)
{
    return unit_list(req, NS_UNIT_SUB_UNUNIT_TOPICS);
}

int ns_handle_member_group(struct ns_req *req)
{
    const char *cluster = ns_cmd_ext_find(req->cmd, "clusterName");
    const char *name = ns_cmd_ext_find(req->cmd, "brokerName");
    struct ns_buf b;
    ns_buf_init(&b);
    int rv =
        ns_reply_buf(&req->to,
                     ns_route_encode_member_group(
                         req->gw->state->route, cluster, name ? name : "", &b),
                     &b);
    ns_buf_close(&b);
    return rv;
}
