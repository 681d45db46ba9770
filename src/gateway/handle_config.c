/* Handlers of 318 UPDATE_NAMESRV_CONFIG and 319 GET_NAMESRV_CONFIG
 * (docs/protocol.md §5.8, §7). Protected keys are refused with NO_PERMISSION;
 * unknown keys, start-up settings and values out of type or range refuse the
 * whole update with SYSTEM_ERROR (ns_config_validate); accepted updates are
 * replicated and never written to any file. */
#include <stdio.h>
#include <string.h>

#include "raftns/codes.h"
#include "raftns/config.h"
#include "raftns/err.h"
#include "raftns/log.h"
#include "gateway/gateway_int.h"

/* The ACL settings are node-local start-up settings: nobody may turn ACL on
 * or off over the wire. */
static bool names_acl_setting(const struct ns_props *p)
{
    static const char *const keys[] = {"aclEnable", "aclAnonymousRead",
                                       "aclBrokerNetworks"};
    for (size_t i = 0; i < p->n; i++) {
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            if (strcmp(p->items[i].key, keys[k]) == 0) {
                return true;
            }
        }
    }
    return false;
}

int ns_handle_update_config(struct ns_req *req)
{
    const struct ns_cmd *cmd = req->cmd;
    if (cmd->body_len == 0) {
        return ns_reply_simple(&req->to, NS_CODE_SUCCESS, NULL);
    }
    struct ns_command c;
    ns_command_init(&c, NS_CMD_UPDATE_CONFIG);
    ns_props_init(&c.u.config);
    c.leader_time_ms = ns_clock_wall_ms();
    int rv =
        ns_props_parse((const char *)cmd->body, cmd->body_len, &c.u.config);
    if (rv == NS_EPROTO) {
        rv = ns_reply_simple(&req->to, NS_CODE_SYSTEM_ERROR,
                             "string2Properties error");
        goto out;
    }
    if (rv != 0) {
        goto out;
    }
    if (names_acl_setting(&c.u.config)) {
        rv = ns_reply_simple(&req->to, NS_CODE_NO_PERMISSION,
                             "aclEnable, aclAnonymousRead and "
                             "aclBrokerNetworks are start-up settings");
        goto out;
    }
    if (ns_config_is_protected_update(req->gw->state->config, &c.u.config)) {
        rv = ns_reply_simple(&req->to, NS_CODE_NO_PERMISSION,
                             "Can not update config in black list.");
        goto out;
    }
    char errmsg[256];
    if (ns_config_validate(&c.u.config, NS_CONFIG_AT_RUNTIME, errmsg,
                           sizeof errmsg) != 0) {
        /* The whole update is refused: nothing is proposed. */
        NS_LOG(NS_LOG_INFO, "conn %llu %s: 318 refused: %s",
               (unsigned long long)req->conn->id, req->conn->peer, errmsg);
        rv = ns_reply_simple(&req->to, NS_CODE_SYSTEM_ERROR, errmsg);
        goto out;
    }
    if (c.u.config.n == 0) {
        rv = ns_reply_simple(&req->to, NS_CODE_SUCCESS, NULL);
        goto out;
    }
    rv = ns_propose_simple(req, &c);
out:
    ns_command_close(&c);
    return rv;
}

/* listenPort and bindAddress are replicated like every start-up key, but each
 * node listens where its own --client-addr says: show that, not the table's
 * 9876 on every node. */
int ns_handle_get_config(struct ns_req *req)
{
    const struct ns_gateway *gw = req->gw;
    struct ns_props mine;
    struct ns_buf b;
    char ip[64], port[16];
    ns_props_init(&mine);
    ns_buf_init(&b);
    snprintf(ip, sizeof ip, "%s", gw->net->client_addr);
    char *colon = strrchr(ip, ':');
    if (colon != NULL) {
        *colon = '\0';
    }
    snprintf(port, sizeof port, "%d", gw->net->port);
    int rv = ns_props_set(&mine, "listenPort", port);
    if (rv == 0 && colon != NULL) {
        rv = ns_props_set(&mine, "bindAddress", ip);
    }
    if (rv == 0) {
        rv = ns_config_encode_properties_local(gw->state->config, &mine, &b);
    }
    /* the controller's node-local settings, while it runs (config get) */
    if (rv == 0 && gw->controller->set.enabled) {
        ns_controller_encode_settings(gw->controller, &b, false);
    }
    rv = ns_reply_buf(&req->to, rv != 0 ? rv : b.err, &b);
    ns_buf_close(&b);
    ns_props_close(&mine);
    return rv;
}
