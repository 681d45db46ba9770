/* Proposals from request handlers: encode a command, hand it to the node, and
 * keep the reply target until the local FSM applied it. Handlers decide what
 * the reply says. */
#include "raftns/alloc.h"
#include "raftns/codes.h"
#include "raftns/err.h"
#include "raftns/log.h"
#include "cluster/cluster.h"
#include "gateway/gateway_int.h"

static void applied_cb(void *arg, int status, uint64_t index,
                       const struct ns_apply_result *res)
{
    ns_pending_finish(arg, status, index, res);
}

static int propose_from(struct ns_req *req, const struct ns_command *c,
                        enum ns_submit_from from, ns_pending_done done,
                        struct ns_pending **out)
{
    struct ns_pending *p = ns_pending_new(req, done);
    if (p == NULL) {
        return NS_ENOMEM;
    }
    /* answered once applied HERE */
    int rv = ns_cluster_submit(req->gw->cluster, c, from, applied_cb, p);
    if (rv != 0) {
        ns_pending_drop(p);
        return rv;
    }
    if (out != NULL) {
        *out = p;
    }
    return 0;
}

int ns_propose(struct ns_req *req, const struct ns_command *c,
               ns_pending_done done, struct ns_pending **out)
{
    return propose_from(req, c, NS_SUBMIT_CLIENT, done, out);
}

void ns_propose_simple_done(struct ns_pending *p, int status,
                            const struct ns_apply_result *res)
{
    (void)res;
    if (status != 0) {
        ns_reply_write_error(&p->to, status);
        return;
    }
    ns_reply_simple(&p->to, NS_CODE_SUCCESS, NULL);
}

int ns_propose_simple(struct ns_req *req, const struct ns_command *c)
{
    int rv = ns_propose(req, c, ns_propose_simple_done, NULL);
    if (rv == 0 || rv == NS_ENOMEM) {
        return rv;
    }
    return ns_reply_write_error(&req->to, rv);
}
