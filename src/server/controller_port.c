/* The controller's own port (docs/controller.md §2): when
 * enableControllerInNamesrv is on and controllerDLegerPeers names this node,
 * a second listener on that address, as Java's embedded controller serves its
 * codes on its DLedger peer port. Its connections go through the same
 * dispatch, closing hooks and limits as the client port's; it is not a
 * second gateway. */
#include <stdio.h>

#include "raftns/log.h"
#include "server/server_int.h"

/* Connection ids of this net start here, apart from the client port's
 * (the controller tells brokers' connections apart by id). */
#define CTL_CONN_ID_BASE (1ull << 62)

int ns_server_controller_port_init(struct ns_server *s,
                                   const struct ns_server_config *cfg,
                                   int (*on_request)(void *, struct ns_conn *,
                                                     const struct ns_cmd *),
                                   void (*on_closed)(void *, struct ns_conn *))
{
    uint64_t self = cfg->id != 0 ? cfg->id : 1;
    const char *addr = s->controller.set.enabled
                           ? ns_controller_peer_addr(&s->controller, self)
                           : NULL;
    if (addr == NULL) {
        return 0;
    }
    struct ns_server_config c2 = *cfg;
    c2.client_addr = addr;
    int rv = ns_net_init(&s->ctl_net, s->loop, &c2);
    if (rv != 0) {
        return rv;
    }
    s->ctl_net.on_request = on_request;
    s->ctl_net.on_conn_closed = on_closed;
    s->ctl_net.ctx = s;
    s->ctl_net.next_conn_id = CTL_CONN_ID_BASE;
    s->has_ctl_net = true;
    return 0;
}

int ns_server_controller_port_listen(struct ns_server *s)
{
    if (!s->has_ctl_net) {
        return 0;
    }
    int rv = ns_net_listen(&s->ctl_net);
    if (rv == 0) {
        NS_LOG(NS_LOG_INFO, "controller: listening on %s",
               s->ctl_net.client_addr);
    }
    return rv;
}
