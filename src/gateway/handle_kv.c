/* Handlers of the KV configuration codes 100 PUT, 101 GET, 102 DELETE and 219
 * LIST (docs/protocol.md §3.2, §5.8). Reads answer from the local state; writes
 * are proposed. */
#include "raftns/alloc.h"
#include "raftns/buf.h"
#include "raftns/codes.h"
#include "raftns/err.h"
#include "raftns/kv.h"
#include "gateway/gateway_int.h"

static const char *or_null(const char *s)
{
    return s != NULL ? s : "null";
}

static int propose_kv(struct ns_req *req, enum ns_command_type type,
                      bool with_value)
{
    const char *ns = ns_cmd_ext_find(req->cmd, "namespace");
    const char *key = ns_cmd_ext_find(req->cmd, "key");
    const char *value = ns_cmd_ext_find(req->cmd, "value");
    if (ns == NULL || key == NULL) {
        return ns_reply_simple(&req->to, NS_CODE_SYSTEM_ERROR,
                               "namespace or key is null");
    }
    struct ns_command c;
    int rv = NS_ENOMEM;
    ns_command_init(&c, type);
    c.leader_time_ms = ns_clock_wall_ms();
    c.u.kv.ns = ns_strdup(ns);
    c.u.kv.key = ns_strdup(key);
    if (with_value && value != NULL) {
        c.u.kv.value = ns_strdup(value);
        if (c.u.kv.value == NULL) {
            goto err_after_cmd;
        }
    }
    if (c.u.kv.ns == NULL || c.u.kv.key == NULL) {
        goto err_after_cmd;
    }
    rv = ns_propose_simple(req, &c);
err_after_cmd:
    ns_command_close(&c);
    return rv;
}

int ns_handle_put_kv(struct ns_req *req)
{
    return propose_kv(req, NS_CMD_KV_PUT, true);
}

int ns_handle_delete_kv(struct ns_req *req)
{
    /* Java removes a null key from its table, which changes nothing, and
     * answers 0: so does raftns, without writing to the log. */
    if (ns_cmd_ext_find(req->cmd, "namespace") == NULL ||
        ns_cmd_ext_find(req->cmd, "key") == NULL) {
        return ns_reply_simple(&req->to, NS_CODE_SUCCESS, NULL);
    }
    return propose_kv(req, NS_CMD_KV_DELETE, false);
}

int ns_handle_get_kv(struct ns_req *req)
{
    const char *ns = ns_cmd_ext_find(req->cmd, "namespace");
    const char *key = ns_cmd_ext_find(req->cmd, "key");
    const char *value = NULL;
    if (ns != NULL && key != NULL) {
        value = ns_kv_find(req->gw->state->kv, ns, key);
    }
    struct ns_cmd reply;
    if (value == NULL) {
        struct ns_buf remark;
        ns_buf_init(&remark);
        ns_buf_printf(&remark, "No config item, Namespace: %s Key: %s",
                      or_null(ns), or_null(key));
        ns_buf_put_u8(&remark, 0);
        ns_reply_init(&reply, &req->to, NS_CODE_QUERY_NOT_FOUND);
        /* Java's miss reply carries its (empty) response header: extFields {}
         */
        reply.has_ext = true;
        int rv = remark.err != 0
                     ? remark.err
                     : ns_cmd_set_remark(&reply, (char *)remark.data);
        ns_buf_close(&remark);
        if (rv != 0) {
            ns_cmd_close(&reply);
            return rv;
        }
        return ns_reply_send(&req->to, &reply);
    }
    ns_reply_init(&reply, &req->to, NS_CODE_SUCCESS);
    if (ns_cmd_ext_set(&reply, "value", value) != 0) {
        ns_cmd_close(&reply);
        return NS_ENOMEM;
    }
    return ns_reply_send(&req->to, &reply);
}

int ns_handle_kvlist(struct ns_req *req)
{
    const char *ns = ns_cmd_ext_find(req->cmd, "namespace");
    const struct ns_kv *kv = req->gw->state->kv;
    if (ns == NULL || !ns_kv_has_namespace(kv, ns)) {
        return ns_reply_remarkf(&req->to, NS_CODE_QUERY_NOT_FOUND,
                                "No config item, Namespace: %s", or_null(ns));
    }
    struct ns_buf body;
    ns_buf_init(&body);
    int rv =
        ns_reply_buf(&req->to, ns_kv_encode_namespace(kv, ns, &body), &body);
    ns_buf_close(&body);
    return rv;
}
