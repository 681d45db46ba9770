/* Handlers of the private ACL codes (include/raftns/codes.h): ACL_UPDATE turns
 * an add or remove into an ACL_PUT / ACL_REMOVE command (forwarded by a
 * follower like any write), ACL_LIST answers the accounts of the local state
 * without their secret keys. The ACL gate and the secret check ran before. */
#include <string.h>

#include "raftns/acl.h"
#include "raftns/alloc.h"
#include "raftns/codes.h"
#include "raftns/err.h"
#include "raftns/json.h"
#include "raftns/log.h"
#include "gateway/gateway_int.h"

static int bad_request(struct ns_req *req, const char *why)
{
    return ns_reply_remarkf(&req->to, NS_CODE_SYSTEM_ERROR, "raftns: %s", why);
}

static int propose_add(struct ns_req *req, const char *ak)
{
    const struct ns_cmd *cmd = req->cmd;
    struct ns_command c;
    ns_command_init(&c, NS_CMD_ACL_PUT);
    c.leader_time_ms = ns_clock_wall_ms();
    struct ns_acl_account *a = &c.u.acl_put;
    const char *sk = ns_cmd_ext_find(cmd, NS_EXT_ACL_SECRET_KEY);
    const char *role = ns_cmd_ext_find(cmd, NS_EXT_ACL_ROLE);
    const char *nets = ns_cmd_ext_find(cmd, NS_EXT_ACL_NETWORKS);
    const char *why = NULL;
    int rv = 0;
    if (ns_acl_role_parse(role, &a->role) != 0) {
        why = "raftnsAclRole must be admin, broker or reader";
    } else if (sk == NULL) {
        why = "raftnsAclSecretKey required";
    } else {
        rv = ns_acl_nets_parse(nets != NULL ? nets : "", &a->nets, &a->n_nets,
                               NULL);
        if (rv == NS_EINVAL) {
            why = "raftnsAclNetworks must be IPv4 CIDRs (a.b.c.d/p), ','-"
                  "separated";
        }
    }
    if (why == NULL && rv == 0) {
        a->access_key = ns_strdup(ak);
        a->secret_key = ns_strdup(sk);
        rv = a->access_key == NULL || a->secret_key == NULL ? NS_ENOMEM : 0;
    }
    if (why == NULL && rv == 0) {
        (void)ns_acl_account_validate(a, &why); /* sets why when invalid */
    }
    if (why != NULL) {
        rv = bad_request(req, why);
    } else if (rv == 0) {
        NS_LOG(NS_LOG_INFO, "conn %llu %s: acl add %.64s role %s",
               (unsigned long long)req->conn->id, req->conn->peer, ak,
               ns_acl_role_name(a->role));
        rv = ns_propose_simple(req, &c);
    }
    ns_command_close(&c);
    return rv;
}

int ns_handle_acl_update(struct ns_req *req)
{
    const char *op = ns_cmd_ext_find(req->cmd, NS_EXT_ACL_OP);
    const char *ak = ns_cmd_ext_find(req->cmd, NS_EXT_ACL_ACCESS_KEY);
    if (ak == NULL || ak[0] == '\0' || strlen(ak) > NS_ACL_MAX_KEY) {
        return bad_request(req, "raftnsAclAccessKey required");
    }
    if (op != NULL && strcmp(op, "add") == 0) {
        if (ns_acl_find(&req->gw->state->acl, ak) == NULL &&
            req->gw->state->acl.n >= NS_ACL_MAX_ACCOUNTS) {
            return bad_request(req, "too many accounts");
        }
        return propose_add(req, ak);
    }
    if (op == NULL || strcmp(op, "remove") != 0) {
        return bad_request(req, "raftnsAclOp must be add or remove");
    }
    struct ns_command c;
    ns_command_init(&c, NS_CMD_ACL_REMOVE);
    c.leader_time_ms = ns_clock_wall_ms();
    c.u.acl_remove.access_key = (char *)ak; /* borrowed: never closed */
    NS_LOG(NS_LOG_INFO, "conn %llu %s: acl remove %.64s",
           (unsigned long long)req->conn->id, req->conn->peer, ak);
    return ns_propose_simple(req, &c);
}

int ns_handle_acl_list(struct ns_req *req)
{
    const struct ns_acl *acl = &req->gw->state->acl;
    struct ns_buf b;
    struct ns_json_writer w;
    char net[32];
    ns_buf_init(&b);
    ns_json_write_init(&w, &b, NS_JSON_STANDARD);
    ns_json_write_obj_begin(&w);
    ns_json_write_key(&w, "accounts");
    ns_json_write_arr_begin(&w);
    for (size_t i = 0; i < acl->n; i++) {
        const struct ns_acl_account *a = &acl->items[i];
        ns_json_write_obj_begin(&w);
        ns_json_write_key(&w, "accessKey");
        ns_json_write_str(&w, a->access_key);
        ns_json_write_key(&w, "networks");
        ns_json_write_arr_begin(&w);
        for (size_t j = 0; j < a->n_nets; j++) {
            ns_acl_net_format(&a->nets[j], net, sizeof net);
            ns_json_write_str(&w, net);
        }
        ns_json_write_arr_end(&w);
        ns_json_write_key(&w, "role");
        ns_json_write_str(&w, ns_acl_role_name(a->role));
        ns_json_write_obj_end(&w);
    }
    ns_json_write_arr_end(&w);
    ns_json_write_key(&w, "seeded");
    ns_json_write_bool(&w, acl->seeded);
    ns_json_write_obj_end(&w);
    int rv = ns_reply_buf(&req->to, b.err, &b);
    ns_buf_close(&b);
    return rv;
}
