/* Handlers of the divergence codes (docs/divergence.md): a follower's
 * DIGEST_REPORT and a diverged node's STATE_FETCH, both signed by the cluster
 * secret; STATE_FETCH is also an operator's backup (raftnsctl snapshot save,
 * docs/backup-and-replicas.md). They read the request and write the reply; the
 * tally, the verdicts and the state copy are the cluster room's
 * (cluster/integrity.h). STATUS, the observer's document, is here too. */
#include <inttypes.h>
#include <stdio.h>

#include "cluster/integrity.h"
#include "raftns/codes.h"
#include "raftns/err.h"
#include "gateway/gateway_int.h"

static int set_ext_u64(struct ns_cmd *c, const char *key, uint64_t v)
{
    char text[24];
    snprintf(text, sizeof text, "%" PRIu64, v);
    return ns_cmd_ext_set(c, key, text);
}

static bool ext_u64(const struct ns_cmd *c, const char *key, uint64_t *out)
{
    int64_t v = 0;
    if (!ns_cmd_ext_int64(c, key, &v) || v < 0) {
        return false;
    }
    *out = (uint64_t)v;
    return true;
}

int ns_handle_digest_report(struct ns_req *req)
{
    if (!ns_handle_private_is_signed(req)) {
        return 0;
    }
    int64_t from = 0;
    if (!ns_cmd_ext_int64(req->cmd, NS_EXT_FROM, &from) || from <= 0) {
        from = 0; /* refused by the tally */
    }
    const char *refusal = NULL;
    int rv = ns_verdict_take_report(ns_cluster_integrity(req->gw->cluster),
                                    (uint64_t)from, req->cmd->body,
                                    req->cmd->body_len, &refusal);
    if (rv != 0) {
        return ns_reply_simple(&req->to, NS_CODE_SYSTEM_ERROR, refusal);
    }
    return ns_reply_simple(&req->to, NS_CODE_SUCCESS, NULL);
}

int ns_handle_state_fetch(struct ns_req *req)
{
    if (!ns_handle_private_is_signed(req)) {
        return 0;
    }
    /* Without raftnsFrom it is an operator's backup: the state holds every
     * account, so with ACL on it needs an admin account, like the other
     * cluster administration. */
    bool backup = ns_cmd_ext_find(req->cmd, NS_EXT_FROM) == NULL;
    if (backup && !ns_acl_gate_allows(req, NS_ACL_ROLE_ADMIN)) {
        return 0;
    }
    struct ns_integrity *ig = ns_cluster_integrity(req->gw->cluster);
    uint64_t index = 0, offset = 0;
    if (!ext_u64(req->cmd, NS_EXT_INDEX, &index) ||
        !ext_u64(req->cmd, NS_EXT_OFFSET, &offset)) {
        return ns_reply_simple(&req->to, NS_CODE_SYSTEM_ERROR,
                               "state fetch without index or offset");
    }
    struct ns_recovery_chunk chunk;
    char remark[128];
    int rv = ns_recovery_serve(ig, backup, index, offset, &chunk, remark,
                               sizeof remark);
    if (rv == NS_ENOMEM) {
        return rv;
    }
    if (rv != 0) {
        return ns_reply_simple(&req->to, NS_CODE_SYSTEM_ERROR, remark);
    }
    struct ns_cmd reply;
    ns_reply_init(&reply, &req->to, NS_CODE_SUCCESS);
    rv = set_ext_u64(&reply, NS_EXT_INDEX, chunk.at);
    rv |= set_ext_u64(&reply, NS_EXT_TOTAL, chunk.total);
    rv |= set_ext_u64(&reply, NS_EXT_OFFSET, chunk.offset);
    rv |= set_ext_u64(&reply, NS_EXT_TERM, chunk.term);
    if (rv != 0) {
        ns_cmd_close(&reply);
        return NS_ENOMEM;
    }
    reply.body = chunk.bytes;
    reply.body_len = chunk.len;
    return ns_reply_send(&req->to, &reply);
}

/* NS_CODE_STATUS on the client port: the observer's /status document. */
int ns_handle_status(struct ns_req *req)
{
    struct ns_gateway *gw = req->gw;
    if (gw->status_fn == NULL) {
        return ns_reply_simple(&req->to, NS_CODE_SYSTEM_ERROR,
                               "status not available");
    }
    struct ns_buf b;
    ns_buf_init(&b);
    int rv = gw->status_fn(gw->status_ctx, &b);
    rv = ns_reply_buf(&req->to, rv, &b);
    ns_buf_close(&b);
    return rv;
}
