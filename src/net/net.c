/* The net of a server: its client listener, and the settings its connections
 * share (limits, TLS). Cutting frames and flushing replies is conn.c; what a
 * request means is not the transport's concern (the on_request hook). */
#include <stdio.h>
#include <string.h>

#include "net/addr.h"
#include "net/net_int.h"
#include "raftns/err.h"
#include "raftns/log.h"

#define BACKLOG 1024

int ns_net_init(struct ns_net *net, uv_loop_t *loop,
                const struct ns_server_config *cfg)
{
    memset(net, 0, sizeof *net);
    net->loop = loop;
    snprintf(net->client_addr, sizeof net->client_addr, "%s", cfg->client_addr);
    if (ns_conn_limits_init(&net->limits, &cfg->limits) != 0) {
        ns_conn_limits_close(&net->limits); /* it may hold part of its tables */
        return NS_ENOMEM;
    }
    int rv = ns_conn_tls_init(net, cfg->tls);
    if (rv != 0) {
        ns_conn_limits_close(&net->limits);
    }
    return rv;
}

void ns_net_close(struct ns_net *net)
{
    ns_conn_tls_close(net);
    ns_conn_limits_close(&net->limits);
}

static void on_connection(uv_stream_t *listener, int status)
{
    struct ns_net *net = listener->data;
    if (status != 0) {
        NS_LOG(NS_LOG_WARN, "accept failed: %s", uv_strerror(status));
        return;
    }
    ns_conn_accept(net);
}

int ns_net_listen(struct ns_net *net)
{
    struct sockaddr_in sa;
    if (ns_addr_parse_ipv4(net->client_addr, &sa) != 0) {
        NS_LOG(NS_LOG_ERROR,
               "server: bad client address %s (want IPv4 a.b.c.d:port)",
               net->client_addr);
        return NS_EINVAL;
    }
    uv_tcp_init(net->loop, &net->listener);
    net->listener.data = net;
    net->listening = true;
    int rv = uv_tcp_bind(&net->listener, (const struct sockaddr *)&sa, 0);
    if (rv == 0) {
        rv = uv_listen((uv_stream_t *)&net->listener, BACKLOG, on_connection);
    }
    if (rv != 0) {
        NS_LOG(NS_LOG_ERROR, "server: cannot listen on %s: %s",
               net->client_addr, uv_strerror(rv));
        return NS_EIO;
    }
    struct sockaddr_in bound;
    int len = sizeof bound;
    uv_tcp_getsockname(&net->listener, (struct sockaddr *)&bound, &len);
    net->port = ntohs(bound.sin_port);
    char ip[32] = "?";
    uv_ip4_name(&bound, ip, sizeof ip);
    NS_LOG(NS_LOG_INFO, "server: listening for clients on %s:%d", ip,
           net->port);
    return 0;
}

static void listener_closed(uv_handle_t *h)
{
    struct ns_net *net = h->data;
    if (net->stopped != NULL) {
        net->stopped(net->stopped_arg);
    }
}

void ns_net_stop(struct ns_net *net, void (*stopped)(void *arg), void *arg)
{
    while (net->conn_head != NULL) {
        ns_conn_close(net->conn_head, NULL);
    }
    if (!net->listening) {
        if (stopped != NULL) {
            stopped(arg);
        }
        return;
    }
    net->stopped = stopped;
    net->stopped_arg = arg;
    uv_close((uv_handle_t *)&net->listener, listener_closed);
}
