/* The composition root's own struct (server.c): the rooms of one server and
 * the timers that drive them. Only src/server/ includes it. */
#ifndef RAFTNS_SERVER_INT_H
#define RAFTNS_SERVER_INT_H

#include <stdbool.h>

#include <uv.h>

#include "cluster/cluster.h"
#include "controller/controller.h"
#include "gateway/gateway.h"
#include "liveness/liveness.h"
#include "net/net.h"
#include "raftns/clock.h"
#include "raftns/node.h"
#include "raftns/server.h"
#include "raftns/waits.h"

struct ns_server {
    uv_loop_t *loop;
    /* The time every room reads: the loop's uv_now, or a driver's virtual
     * time (ns_server_config.clock). The rooms borrow it. */
    struct ns_clock clock;
    /* Started by ns_server_start_driven: no listener and no running timer;
     * ns_server_tick does their work when it is due by the clock. */
    bool driven;
    uint64_t next_cluster_ms, next_second_ms, next_scan_ms; /* driven */
    struct ns_waits waits;  /* every wait on the cluster (raftns/waits.h) */
    struct ns_state *state; /* borrowed */
    struct ns_node *node;   /* borrowed */
    /* the rooms, created and wired by ns_server_create */
    struct ns_net net;               /* the client listener and connections */
    struct ns_cluster *cluster;      /* owned: writes, leader, peers */
    struct ns_liveness live;         /* broker liveness */
    struct ns_gateway gw;            /* dispatch and handlers */
    struct ns_controller controller; /* the RocketMQ 5 controller */
    /* the controller's own port, when configured (controller_port.c) */
    struct ns_net ctl_net;
    bool has_ctl_net;
    /* the timers: flush once per loop turn, expiry scan, idle sweep */
    uv_check_t flush_check;
    uv_timer_t scan_timer;
    uv_timer_t idle_timer;
    int n_open_handles;
    bool started;
    bool stopping;
    bool was_leader;
    bool seeded;
    ns_server_stop_cb stop_cb;
    void *stop_arg;
};

/* --- controller_port.c --- */
/* Sets up s->ctl_net with the given hooks when the controller runs and
 * controllerDLegerPeers names this node (cfg borrowed). 0 or ns_net_init's
 * error. */
int ns_server_controller_port_init(struct ns_server *s,
                                   const struct ns_server_config *cfg,
                                   int (*on_request)(void *, struct ns_conn *,
                                                     const struct ns_cmd *),
                                   void (*on_closed)(void *, struct ns_conn *));
/* Listens on it. 0 or ns_net_listen's error. */
int ns_server_controller_port_listen(struct ns_server *s);

/* Milliseconds of the server's clock (monotonic). */
static inline uint64_t ns_server_now(const struct ns_server *srv)
{
    return ns_clock_now(&srv->clock);
}

#endif
