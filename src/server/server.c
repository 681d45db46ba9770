/* The composition root (docs/ARCHITECTURE.md): it creates the rooms of a
 * server (net, cluster, liveness, gateway), wires the transport's hooks to the
 * gateway and liveness, and owns the timers: the per-turn flush, the expiry
 * scan, the idle sweep, and the reaction to node role changes (liveness
 * seeding and reset). What a request means is the gateway's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/config.h"
#include "raftns/err.h"
#include "raftns/log.h"
#include "cluster/cluster.h"
#include "server/server_int.h"

#define IDLE_SWEEP_MS 1000

static const struct ns_settings *settings(const struct ns_server *s)
{
    return ns_config_settings(s->state->config);
}

static uint64_t scan_interval(const struct ns_server *s)
{
    int64_t ms = settings(s)->scan_not_active_broker_interval_ms;
    return ms > 0 ? (uint64_t)ms : 5000;
}

/* A connection closing: its pending replies lose their target, and the
 * brokers it registered may now have no holder (liveness). */
static void conn_closed(void *ctx, struct ns_conn *c)
{
    struct ns_server *srv = ctx;
    ns_pending_detach_all(c);
    ns_liveness_conn_closed(&srv->live, c);
    ns_controller_conn_closed(&srv->controller, c->id);
}

static int on_request(void *ctx, struct ns_conn *c, const struct ns_cmd *cmd)
{
    struct ns_server *srv = ctx;
    return ns_dispatch(&srv->gw, c, cmd);
}

/* Every cluster tick: a leader seeds the ACL table from the cluster file. */
static void seed_acl(void *ctx)
{
    struct ns_server *srv = ctx;
    ns_acl_gate_seed(&srv->gw);
}

static uint64_t loop_now(void *arg)
{
    return uv_now(arg);
}

int ns_server_create(uv_loop_t *loop, const struct ns_server_config *cfg,
                     struct ns_state *state, struct ns_node *node,
                     struct ns_server **out)
{
    struct ns_server *s = ns_calloc(1, sizeof *s);
    if (s == NULL) {
        return NS_ENOMEM;
    }
    s->loop = loop;
    if (cfg->clock != NULL) {
        s->clock = *cfg->clock;
    } else {
        s->clock.now_ms = loop_now;
        s->clock.arg = loop;
    }
    s->state = state;
    s->node = node;
    s->waits = cfg->waits;
    ns_waits_fill_defaults(&s->waits);
    int rv = ns_net_init(&s->net, loop, cfg);
    if (rv != 0) {
        goto err_after_server;
    }
    s->net.on_request = on_request;
    s->net.on_conn_closed = conn_closed;
    s->net.ctx = s;
    s->net.clock = &s->clock;
    rv = ns_cluster_create(loop, cfg, state, node, &s->waits, &s->cluster);
    if (rv != 0) {
        goto err_after_net;
    }
    ns_cluster_set_tick_hook(s->cluster, seed_acl, s);
    ns_cluster_set_clock(s->cluster, &s->clock);
    rv = NS_ENOMEM;
    if (ns_liveness_init(&s->live, loop, state, node, s->cluster, &s->net) !=
        0) {
        goto err_after_cluster;
    }
    s->live.clock = &s->clock;
    if (ns_gateway_init(&s->gw, loop, cfg, state, node, &s->waits, s->cluster,
                        &s->live, &s->net) != 0) {
        goto err_after_live;
    }
    s->gw.clock = &s->clock;
    ns_controller_init(&s->controller, loop, &s->clock, cfg->settings, state,
                       node, s->cluster);
    s->gw.controller = &s->controller;
    rv = ns_server_controller_port_init(s, cfg, on_request, conn_closed);
    if (rv != 0) {
        ns_controller_close(&s->controller);
        ns_gateway_close(&s->gw);
        goto err_after_live;
    }
    *out = s;
    return 0;

err_after_live:
    ns_liveness_close(&s->live);
err_after_cluster:
    ns_cluster_destroy(s->cluster);
err_after_net:
    ns_net_close(&s->net);
err_after_server:
    ns_free(s);
    return rv;
}

static void flush_cb(uv_check_t *h)
{
    struct ns_server *s = h->data;
    ns_conn_flush_all(&s->net);
    if (s->has_ctl_net) {
        ns_conn_flush_all(&s->ctl_net);
    }
}

static void scan_cb(uv_timer_t *t)
{
    struct ns_server *s = t->data;
    ns_liveness_scan(&s->live);
    uint64_t interval = scan_interval(s);
    if (uv_timer_get_repeat(t) != interval) {
        uv_timer_set_repeat(t, interval);
    }
}

static void idle_cb(uv_timer_t *t)
{
    struct ns_server *s = t->data;
    int64_t secs = settings(s)->server_channel_max_idle_time_seconds;
    if (secs > 0) {
        ns_conn_sweep_idle(&s->net, (uint64_t)secs * 1000u);
    }
    ns_conn_tls_sweep_handshakes(&s->net);
    if (s->has_ctl_net) {
        if (secs > 0) {
            ns_conn_sweep_idle(&s->ctl_net, (uint64_t)secs * 1000u);
        }
        ns_conn_tls_sweep_handshakes(&s->ctl_net);
    }
    ns_liveness_tick(
        &s->live); /* reports and fast-path expiry, once a second */
}

/* Role changes: seed liveness once the replayed state is there; a new leader
 * grants every broker a full timeout so a failover never expires a live broker
 * (docs/design.md §5). */
static void watch_cb(void *arg)
{
    struct ns_server *s = arg;
    uint64_t now = ns_server_now(s);
    if (!s->seeded && ns_node_is_ready(s->node)) {
        s->seeded = true;
        if (ns_liveness_seed(&s->live, s->state->route, now) != 0) {
            NS_LOG(NS_LOG_ERROR, "liveness: out of memory seeding brokers");
        }
        NS_LOG(NS_LOG_INFO, "server: ready; %zu brokers, %zu topics",
               ns_route_n_brokers(s->state->route),
               ns_route_n_topics(s->state->route));
    }
    bool leader = ns_node_is_leader(s->node);
    if (leader && !s->was_leader) {
        ns_liveness_reset_all(&s->live, now);
    }
    s->was_leader = leader;
    ns_cluster_on_change(s->cluster);
    ns_controller_on_change(&s->controller);
}

/* The handles of a started server, listening or driven, so that stopping
 * closes the same ones either way. */
static void init_handles(struct ns_server *s)
{
    uv_check_init(s->loop, &s->flush_check);
    s->flush_check.data = s;
    uv_timer_init(s->loop, &s->scan_timer);
    s->scan_timer.data = s;
    uv_timer_init(s->loop, &s->idle_timer);
    s->idle_timer.data = s;
    ns_liveness_start(&s->live);
    /* the three, the net's listener and the liveness timer */
    s->n_open_handles = 5;
    s->n_open_handles += s->has_ctl_net; /* its listener */
    s->started = true;
    s->gw.start_ms = ns_server_now(s);
}

int ns_server_start_driven(struct ns_server *s,
                           const struct ns_peer_factory *peers)
{
    init_handles(s);
    s->driven = true;
    uint64_t now = ns_server_now(s);
    s->next_cluster_ms = now + NS_CLUSTER_TICK_MS;
    s->next_second_ms = now + IDLE_SWEEP_MS;
    s->next_scan_ms = now + scan_interval(s);
    ns_node_set_watch(s->node, watch_cb, s);
    ns_cluster_start_driven(s->cluster, peers);
    ns_controller_start_driven(&s->controller);
    watch_cb(s);
    return 0;
}

void ns_server_tick(struct ns_server *s)
{
    if (!s->driven || s->stopping) {
        return;
    }
    uint64_t now = ns_server_now(s);
    if (now >= s->next_cluster_ms) {
        s->next_cluster_ms = now + NS_CLUSTER_TICK_MS;
        ns_cluster_on_change(s->cluster);
    }
    if (now >= s->next_second_ms) {
        s->next_second_ms = now + IDLE_SWEEP_MS;
        idle_cb(&s->idle_timer);
    }
    if (now >= s->next_scan_ms) {
        s->next_scan_ms = now + scan_interval(s);
        ns_liveness_scan(&s->live);
    }
    ns_controller_tick(&s->controller);
    /* The fast-path timer is armed but never runs on a driven loop: checking
     * early is harmless (it re-arms for the next deadline). */
    if (uv_is_active((uv_handle_t *)&s->live.fast_timer)) {
        uv_timer_stop(&s->live.fast_timer);
        ns_liveness_fast_check(&s->live);
    }
    ns_conn_flush_all(&s->net);
}

int ns_server_start(struct ns_server *s)
{
    int rv = ns_net_listen(&s->net);
    if (rv == NS_EINVAL) {
        return rv;
    }
    init_handles(s);
    if (rv == 0) {
        rv = ns_server_controller_port_listen(s);
    }
    if (rv != 0) {
        return NS_EIO;
    }
    uv_check_start(&s->flush_check, flush_cb);
    uint64_t interval = scan_interval(s);
    uv_timer_start(&s->scan_timer, scan_cb, interval, interval);
    uv_timer_start(&s->idle_timer, idle_cb, IDLE_SWEEP_MS, IDLE_SWEEP_MS);
    ns_node_set_watch(s->node, watch_cb, s);
    ns_cluster_start(s->cluster, &s->net.tls.peer_ctx);
    ns_controller_start(&s->controller);
    watch_cb(s);
    return 0;
}

int ns_server_port(const struct ns_server *s)
{
    return s->net.port;
}

static void one_closed(struct ns_server *s)
{
    if (--s->n_open_handles == 0 && s->stop_cb != NULL) {
        s->stop_cb(s->stop_arg);
    }
}

static void handle_closed(uv_handle_t *h)
{
    one_closed(h->data);
}

static void room_stopped(void *arg)
{
    one_closed(arg);
}

void ns_server_stop(struct ns_server *s, ns_server_stop_cb cb, void *arg)
{
    if (s->stopping) {
        return;
    }
    s->stopping = true;
    s->stop_cb = cb;
    s->stop_arg = arg;
    ns_node_set_watch(s->node, NULL, NULL);
    if (!s->started) {
        ns_gateway_stop(&s->gw);
        ns_liveness_stop(&s->live, NULL, NULL);
        if (cb != NULL) {
            cb(arg);
        }
        return;
    }
    ns_controller_stop(&s->controller);
    ns_gateway_stop(&s->gw);
    ns_liveness_stop(&s->live, room_stopped, s);
    ns_net_stop(&s->net, room_stopped, s);
    if (s->has_ctl_net) {
        ns_net_stop(&s->ctl_net, room_stopped, s);
    }
    ns_cluster_stop(s->cluster);
    NS_LOG(NS_LOG_INFO, "server: stopping");
    uv_close((uv_handle_t *)&s->flush_check, handle_closed);
    uv_close((uv_handle_t *)&s->scan_timer, handle_closed);
    uv_close((uv_handle_t *)&s->idle_timer, handle_closed);
}

void ns_server_destroy(struct ns_server *s)
{
    if (s == NULL) {
        return;
    }
    ns_cluster_destroy(s->cluster);
    s->cluster = NULL;
    ns_controller_close(&s->controller);
    ns_gateway_close(&s->gw);
    ns_net_close(&s->net);
    if (s->has_ctl_net) {
        ns_net_close(&s->ctl_net);
    }
    ns_liveness_close(&s->live);
    ns_free(s);
}

int ns_server_reload_tls(struct ns_server *s)
{
    return ns_conn_tls_reload(&s->net);
}

void ns_server_set_status(struct ns_server *s, ns_server_status_fn fn,
                          void *ctx)
{
    s->gw.status_fn = fn;
    s->gw.status_ctx = ctx;
}

const char *ns_server_client_addr(const struct ns_server *s)
{
    return s->net.client_addr;
}

size_t ns_server_n_conns(const struct ns_server *s)
{
    return s->net.n_conns;
}

struct ns_tls_ctx *ns_server_https_ctx(const struct ns_server *s)
{
    return s->net.tls.http ? s->net.tls.ctx : NULL;
}

struct ns_cluster *ns_server_cluster(struct ns_server *s)
{
    return s->cluster;
}

bool ns_server_controller_status(const struct ns_server *s, struct ns_buf *out)
{
    if (!s->controller.set.enabled) {
        return false;
    }
    ns_controller_status_json(&s->controller, out);
    return true;
}

void ns_server_controller_metrics(const struct ns_server *s, struct ns_buf *out)
{
    if (s->controller.set.enabled) {
        ns_controller_metrics(&s->controller, out);
    }
}
