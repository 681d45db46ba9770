/* Request dispatch: a table from request code (by name, raftns/codes.h) to
 * handler, flags and the ACL role the code needs, and the generic checks that
 * run before any handler (responses dropped, unknown codes, ACL, readiness,
 * divergence). Handlers live in handle_*.c, the consistent-read and
 * forwarded-read gate in held_read.c; nothing here knows a request's
 * fields. */
#include <stdio.h>

#include "raftns/codes.h"
#include "raftns/err.h"
#include "raftns/log.h"
#include "cluster/cluster.h"
#include "gateway/gateway_int.h"

enum {
    F_READ = 1 << 0,     /* served from local state: needs a ready node, or
                            goes to the leader (held_read.c) */
    F_MUTATE = 1 << 1,   /* proposes a command */
    F_LIVENESS = 1 << 2, /* only refreshes liveness, answers from local state */
    F_ALWAYS = 1 << 3    /* answered even when diverged or not ready */
};

/* Role a code needs with ACL on (aclEnable): R = reader (anonymous too while
 * aclAnonymousRead), B = broker, A = admin; N = no check (node-to-node codes,
 * authenticated by the cluster secret). */
#define R NS_ACL_ROLE_READER
#define B NS_ACL_ROLE_BROKER
#define A NS_ACL_ROLE_ADMIN
#define N NS_ACL_ROLE_NONE

struct handler {
    int32_t code;
    ns_handler_fn fn;
    unsigned flags;
    enum ns_acl_role need;
};

static const struct handler handlers[] = {
    {NS_CODE_PUT_KV_CONFIG, ns_handle_put_kv, F_MUTATE, A},
    {NS_CODE_GET_KV_CONFIG, ns_handle_get_kv, F_READ, R},
    {NS_CODE_DELETE_KV_CONFIG, ns_handle_delete_kv, F_MUTATE, A},
    {NS_CODE_REGISTER_BROKER, ns_handle_register_broker, F_MUTATE, B},
    {NS_CODE_UNREGISTER_BROKER, ns_handle_unregister_broker, F_MUTATE, B},
    {NS_CODE_GET_ROUTEINFO_BY_TOPIC, ns_handle_route, F_READ, R},
    {NS_CODE_GET_BROKER_CLUSTER_INFO, ns_handle_cluster_info, F_READ, R},
    {NS_CODE_WIPE_WRITE_PERM_OF_BROKER, ns_handle_wipe_write_perm, F_MUTATE, A},
    {NS_CODE_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, ns_handle_all_topics, F_READ,
     R},
    {NS_CODE_DELETE_TOPIC_IN_NAMESRV, ns_handle_delete_topic, F_MUTATE, A},
    {NS_CODE_REGISTER_TOPIC_IN_NAMESRV, ns_handle_register_topic, F_MUTATE, B},
    {NS_CODE_GET_KVLIST_BY_NAMESPACE, ns_handle_kvlist, F_READ, R},
    {NS_CODE_GET_TOPICS_BY_CLUSTER, ns_handle_topics_by_cluster, F_READ, R},
    {NS_CODE_GET_SYSTEM_TOPIC_LIST_FROM_NS, ns_handle_system_topics, F_READ, R},
    {NS_CODE_GET_UNIT_TOPIC_LIST, ns_handle_unit_topics, F_READ, R},
    {NS_CODE_GET_HAS_UNIT_SUB_TOPIC_LIST, ns_handle_unit_sub_topics, F_READ, R},
    {NS_CODE_GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST,
     ns_handle_unit_sub_ununit_topics, F_READ, R},
    {NS_CODE_UPDATE_NAMESRV_CONFIG, ns_handle_update_config, F_MUTATE, A},
    {NS_CODE_GET_NAMESRV_CONFIG, ns_handle_get_config, F_READ, R},
    {NS_CODE_QUERY_DATA_VERSION, ns_handle_query_data_version,
     F_READ | F_LIVENESS, B},
    {NS_CODE_ADD_WRITE_PERM_OF_BROKER, ns_handle_add_write_perm, F_MUTATE, A},
    {NS_CODE_GET_BROKER_MEMBER_GROUP, ns_handle_member_group, F_READ, R},
    {NS_CODE_BROKER_HEARTBEAT, ns_handle_controller_heartbeat,
     F_READ | F_LIVENESS, B},
    /* the controller's (handle_controller.c): leader-only codes are decided
     * on the leader and answered 2007 elsewhere; 1005 on every node */
    {NS_CODE_CONTROLLER_ALTER_SYNC_STATE_SET, ns_handle_controller_queued, 0,
     B},
    {NS_CODE_CONTROLLER_ELECT_MASTER, ns_handle_controller_queued, 0, B},
    {NS_CODE_CONTROLLER_REGISTER_BROKER, ns_handle_controller_queued, 0, B},
    {NS_CODE_CONTROLLER_GET_REPLICA_INFO, ns_handle_controller_queued, 0, B},
    {NS_CODE_CONTROLLER_GET_METADATA_INFO, ns_handle_controller_metadata,
     F_ALWAYS, R},
    {NS_CODE_CONTROLLER_GET_SYNC_STATE_DATA, ns_handle_controller_queued, 0, R},
    {NS_CODE_UPDATE_CONTROLLER_CONFIG, ns_handle_controller_update_config, 0,
     A},
    {NS_CODE_GET_CONTROLLER_CONFIG, ns_handle_controller_get_config, 0, R},
    {NS_CODE_CLEAN_BROKER_DATA, ns_handle_controller_queued, 0, A},
    {NS_CODE_CONTROLLER_GET_NEXT_BROKER_ID, ns_handle_controller_queued, 0, B},
    {NS_CODE_CONTROLLER_APPLY_BROKER_ID, ns_handle_controller_queued, 0, B},
    {NS_CODE_LIVENESS_REPORT, ns_handle_liveness_report, 0, N},
    {NS_CODE_STATUS, ns_handle_status, F_ALWAYS, R},
    {NS_CODE_BROKER_LIVENESS, ns_handle_broker_liveness, F_ALWAYS, R},
    /* signed by the cluster secret; they check it and divergence themselves */
    {NS_CODE_DIGEST_REPORT, ns_handle_digest_report, F_ALWAYS, N},
    {NS_CODE_STATE_FETCH, ns_handle_state_fetch, F_ALWAYS, N},
};

#undef R
#undef B
#undef A
#undef N

static bool is_private_admin_code(int32_t code)
{
    return (code >= NS_CODE_FORWARD && code <= NS_CODE_LEADER_TRANSFER) ||
           code == NS_CODE_ACL_UPDATE || code == NS_CODE_ACL_LIST ||
           code == NS_CODE_READ_FORWARD || code == NS_CODE_MEMBER_ASSIGN;
}

static const struct handler *find_handler(int32_t code)
{
    for (size_t i = 0; i < sizeof handlers / sizeof handlers[0]; i++) {
        if (handlers[i].code == code) {
            return &handlers[i];
        }
    }
    return NULL;
}

/* Where a request comes from: a client (all gates; a read this node cannot
 * answer goes to the leader), a held read run again here (ACL passed), or a
 * read another node forwarded (ACL passed there; reads only). */
enum origin { FROM_CLIENT, HELD_HERE, FORWARDED };

static int dispatch(struct ns_gateway *gw, struct ns_conn *conn,
                    const struct ns_cmd *cmd, enum origin from,
                    uint64_t served_by)
{
    struct ns_req req = {.gw = gw, .conn = conn, .cmd = cmd};
    req.to.conn = conn;
    req.to.opaque = cmd->opaque;
    req.to.req_code = cmd->code;
    req.to.req_version = cmd->version;
    req.to.ser = cmd->ser;
    req.to.oneway = (cmd->flag & NS_FLAG_ONEWAY) != 0;
    req.to.start_ns = uv_hrtime();
    req.to.served_by = served_by;
    req.to.waits = gw->waits;
    req.may_forward = from == FROM_CLIENT;

    if (cmd->flag & NS_FLAG_RESPONSE) {
        NS_LOG(NS_LOG_INFO,
               "conn %llu %s: unexpected response code %d opaque %d dropped",
               (unsigned long long)conn->id, conn->peer, (int)cmd->code,
               (int)cmd->opaque);
        return 0;
    }
    if (from != FORWARDED && is_private_admin_code(cmd->code)) {
        return ns_handle_private(&req); /* cluster codes: handle_cluster.c */
    }
    const struct handler *h = find_handler(cmd->code);
    if (h == NULL) {
        char remark[64];
        snprintf(remark, sizeof remark, " request type %d not supported",
                 (int)cmd->code);
        return ns_reply_simple(&req.to, NS_CODE_REQUEST_CODE_NOT_SUPPORTED,
                               remark);
    }
    if (from == FORWARDED && !(h->flags & F_READ)) {
        return ns_reply_remarkf(&req.to, NS_CODE_NO_PERMISSION,
                                "raftns: code %d cannot be forwarded",
                                (int)cmd->code);
    }
    if (from == FROM_CLIENT && !ns_acl_gate_allows(&req, h->need)) {
        return 0; /* refused with NO_PERMISSION */
    }
    bool diverged = !(h->flags & F_ALWAYS) && ns_node_is_diverged(gw->node);
    bool unready = (h->flags & F_READ) && !ns_node_is_ready(gw->node);
#ifdef RAFTNS_BREAK_STALE_READS /* TEST-ONLY MUTANT: serve its own state when  \
                                   not ready */
    unready = false;
#endif
    if (diverged || unready) {
        const char *why =
            diverged ? "not ready: this node's state diverged" : "not ready";
        /* Its own state is no answer: the leader's is (docs/readiness.md). */
        if ((h->flags & F_READ) && req.may_forward) {
            return ns_held_read_forward(&req, why, true);
        }
        return ns_reply_simple(&req.to, NS_CODE_SYSTEM_ERROR, why);
    }
    if ((h->flags & F_READ) && !(h->flags & F_LIVENESS) &&
        ns_held_read_consistent(&req, h->fn)) {
        return 0; /* raftnsConsistent=true: answered once confirmed */
    }
    NS_LOG(NS_LOG_DEBUG, "conn %llu %s: request code %d opaque %d",
           (unsigned long long)conn->id, conn->peer, (int)cmd->code,
           (int)cmd->opaque);
    return h->fn(&req);
}

int ns_dispatch(struct ns_gateway *gw, struct ns_conn *conn,
                const struct ns_cmd *cmd)
{
    return dispatch(gw, conn, cmd, FROM_CLIENT, 0);
}

int ns_dispatch_authorised(struct ns_gateway *gw, struct ns_conn *conn,
                           const struct ns_cmd *cmd, uint64_t served_by)
{
    return dispatch(gw, conn, cmd, HELD_HERE, served_by);
}

int ns_dispatch_forwarded(struct ns_gateway *gw, struct ns_conn *conn,
                          const struct ns_cmd *cmd, uint64_t served_by)
{
    return dispatch(gw, conn, cmd, FORWARDED, served_by);
}
