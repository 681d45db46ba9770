/* The gateway of a server: what its handlers own (the registration memo, the
 * ACL gate, the off-loop decode queue) and the rooms they reach. Dispatch is
 * dispatch.c. */
#include <string.h>

#include "gateway/gateway_int.h"
#include "raftns/err.h"

int ns_gateway_init(struct ns_gateway *gw, uv_loop_t *loop,
                    const struct ns_server_config *cfg, struct ns_state *state,
                    struct ns_node *node, const struct ns_waits *waits,
                    struct ns_cluster *cluster, struct ns_liveness *live,
                    struct ns_net *net)
{
    memset(gw, 0, sizeof *gw);
    gw->loop = loop;
    gw->state = state;
    gw->node = node;
    gw->waits = waits;
    gw->cluster = cluster;
    gw->live = live;
    gw->net = net;
    if (ns_register_memo_init(&gw->memo) != 0) {
        return NS_ENOMEM;
    }
    if (ns_acl_gate_init(&gw->acl, cfg) != 0) {
        ns_register_memo_close(&gw->memo);
        return NS_ENOMEM;
    }
    return 0;
}

void ns_gateway_close(struct ns_gateway *gw)
{
    ns_acl_gate_close(&gw->acl);
    ns_register_async_clear(gw);
    ns_register_memo_close(&gw->memo);
}

void ns_gateway_stop(struct ns_gateway *gw)
{
    gw->stopping = true;
}
