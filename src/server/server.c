/* The server object: the listener, the per-turn flush, the expiry and idle
 * timers, and the reaction to node role changes (liveness seeding and reset).
 * Connection handling is in conn.c, request handling in dispatch.c and
 * handle_*.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/addr.h"
#include "raftns/alloc.h"
#include "raftns/config.h"
#include "raftns/err.h"
#include "raftns/log.h"
#include "raftns/route.h"
#include "cluster/cluster.h"
#include "gateway/register_memo.h"
#include "server/server_int.h"

#define IDLE_SWEEP_MS 1000
#define BACKLOG 1024

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
static void conn_closed(struct ns_server *srv, struct ns_conn *c)
{
    ns_pending_detach_all(c);
    ns_liveness_conn_closed(srv, c);
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
    s->state = state;
    s->node = node;
    s->on_request = ns_dispatch;
    s->on_conn_closed = conn_closed;
    s->waits = cfg->waits;
    ns_route_set_cache_budget(state->route,
                              (size_t)cfg->limits.route_cache_bytes);
    ns_waits_fill_defaults(&s->waits);
    snprintf(s->client_addr, sizeof s->client_addr, "%s", cfg->client_addr);
    int rv = NS_ENOMEM;
    if (ns_liveness_init(&s->live) != 0) {
        goto err_after_server;
    }
    if (ns_register_memo_init(&s->memo) != 0) {
        goto err_after_live;
    }
    if (ns_conn_limits_init(&s->limits, &cfg->limits) != 0) {
        goto err_after_limits; /* it may hold part of its tables */
    }
    if (ns_acl_gate_init(&s->acl, cfg) != 0) {
        goto err_after_limits;
    }
    rv = ns_conn_tls_init(s, cfg->tls);
    if (rv != 0) {
        goto err_after_acl;
    }
    rv = ns_cluster_create(s, cfg);
    if (rv != 0) {
        goto err_after_tls;
    }
    *out = s;
    return 0;

err_after_tls:
    ns_conn_tls_close(s);
err_after_acl:
    ns_acl_gate_close(&s->acl);
err_after_limits:
    ns_conn_limits_close(&s->limits);
    ns_register_memo_close(&s->memo);
err_after_live:
    ns_liveness_close(&s->live);
err_after_server:
    ns_free(s);
    return rv;
}

static void on_connection(uv_stream_t *listener, int status)
{
    struct ns_server *s = listener->data;
    if (status != 0) {
        NS_LOG(NS_LOG_WARN, "accept failed: %s", uv_strerror(status));
        return;
    }
    ns_conn_accept(s);
}

static void flush_cb(uv_check_t *h)
{
    ns_conn_flush_all(h->data);
}

static void scan_cb(uv_timer_t *t)
{
    struct ns_server *s = t->data;
    ns_liveness_scan(s);
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
        ns_conn_sweep_idle(s, (uint64_t)secs * 1000u);
    }
    ns_conn_tls_sweep_handshakes(s);
    ns_liveness_tick(s); /* reports and fast-path expiry, once a second */
}

/* Role changes: seed liveness once the replayed state is there; a new leader
 * grants every broker a full timeout so a failover never expires a live broker
 * (docs/design.md §5). */
static void watch_cb(void *arg)
{
    struct ns_server *s = arg;
    uint64_t now = uv_now(s->loop);
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
        ns_liveness_reset_all(s, now);
    }
    s->was_leader = leader;
    ns_cluster_on_change(s);
}

int ns_server_start(struct ns_server *s)
{
    struct sockaddr_in sa;
    if (ns_addr_parse_ipv4(s->client_addr, &sa) != 0) {
        NS_LOG(NS_LOG_ERROR,
               "server: bad client address %s (want IPv4 a.b.c.d:port)",
               s->client_addr);
        return NS_EINVAL;
    }
    uv_tcp_init(s->loop, &s->listener);
    s->listener.data = s;
    uv_check_init(s->loop, &s->flush_check);
    s->flush_check.data = s;
    uv_timer_init(s->loop, &s->scan_timer);
    s->scan_timer.data = s;
    uv_timer_init(s->loop, &s->idle_timer);
    s->idle_timer.data = s;
    uv_timer_init(s->loop, &s->fast_timer);
    s->fast_timer.data = s;
    s->n_open_handles = 5;
    s->started = true;
    s->start_ms = uv_now(s->loop);

    int rv = uv_tcp_bind(&s->listener, (const struct sockaddr *)&sa, 0);
    if (rv == 0) {
        rv = uv_listen((uv_stream_t *)&s->listener, BACKLOG, on_connection);
    }
    if (rv != 0) {
        NS_LOG(NS_LOG_ERROR, "server: cannot listen on %s: %s", s->client_addr,
               uv_strerror(rv));
        return NS_EIO;
    }
    struct sockaddr_in bound;
    int len = sizeof bound;
    uv_tcp_getsockname(&s->listener, (struct sockaddr *)&bound, &len);
    s->port = ntohs(bound.sin_port);
    uv_check_start(&s->flush_check, flush_cb);
    uint64_t interval = scan_interval(s);
    uv_timer_start(&s->scan_timer, scan_cb, interval, interval);
    uv_timer_start(&s->idle_timer, idle_cb, IDLE_SWEEP_MS, IDLE_SWEEP_MS);
    ns_node_set_watch(s->node, watch_cb, s);
    ns_cluster_start(s);
    watch_cb(s);
    char ip[32] = "?";
    uv_ip4_name(&bound, ip, sizeof ip);
    NS_LOG(NS_LOG_INFO, "server: listening for clients on %s:%d", ip, s->port);
    return 0;
}

int ns_server_port(const struct ns_server *s)
{
    return s->port;
}

static void handle_closed(uv_handle_t *h)
{
    struct ns_server *s = h->data;
    if (--s->n_open_handles == 0 && s->stop_cb != NULL) {
        s->stop_cb(s->stop_arg);
    }
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
        if (cb != NULL) {
            cb(arg);
        }
        return;
    }
    while (s->conn_head != NULL) {
        ns_conn_close(s->conn_head, NULL);
    }
    ns_cluster_stop(s);
    NS_LOG(NS_LOG_INFO, "server: stopping");
    uv_close((uv_handle_t *)&s->listener, handle_closed);
    uv_close((uv_handle_t *)&s->flush_check, handle_closed);
    uv_close((uv_handle_t *)&s->scan_timer, handle_closed);
    uv_close((uv_handle_t *)&s->idle_timer, handle_closed);
    uv_close((uv_handle_t *)&s->fast_timer, handle_closed);
}

void ns_server_destroy(struct ns_server *s)
{
    if (s == NULL) {
        return;
    }
    ns_cluster_destroy(s);
    ns_acl_gate_close(&s->acl);
    ns_conn_tls_close(s);
    ns_register_async_clear(s);
    ns_liveness_close(&s->live);
    ns_conn_limits_close(&s->limits);
    ns_register_memo_close(&s->memo);
    ns_free(s);
}

int ns_server_reload_tls(struct ns_server *s)
{
    return ns_conn_tls_reload(s);
}
