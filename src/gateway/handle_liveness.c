/* Handler of the private code NS_CODE_LIVENESS_REPORT (raftns/codes.h): a
 * follower's batch of brokers it heard from and connections that closed. The
 * body format and the merge are in liveness.c; this file checks the secret and
 * the sender and answers. */
#include <stdlib.h>

#include "cluster/cluster.h"
#include "raftns/codes.h"
#include "raftns/err.h"
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
