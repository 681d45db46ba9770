/* Client-port limits (issue 8): connections per node and per source address,
 * checked when a connection is accepted, and one budget for the input and
 * output buffered by all client connections, counted by capacity. Over the
 * budget the connection holding the most buffered bytes is closed: stopping
 * reads would not free what unfinished frames already hold, and those frames
 * never finish while reads are stopped. Refusals are logged at most once a
 * second and counted in /metrics. It is not a rate limiter. */
#include <stdio.h>
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/log.h"
#include "raftns/metrics.h"
#include "net/net_int.h"

#define IP_BUCKETS 4096
#define LOG_EVERY_MS 1000

/* Open connections from one source address. */
struct ns_ip_count {
    struct ns_ip_count *next;
    size_t n;
    char ip[48];
};

int ns_conn_limits_init(struct ns_conn_limits *l,
                        const struct ns_client_limits *cfg)
{
    memset(l, 0, sizeof *l);
    ns_config_client_limits_init(&l->cfg);
    if (cfg != NULL && cfg->max_connections > 0) {
        l->cfg.max_connections = cfg->max_connections;
    }
    if (cfg != NULL && cfg->max_connections_per_ip > 0) {
        l->cfg.max_connections_per_ip = cfg->max_connections_per_ip;
    }
    if (cfg != NULL && cfg->buffer_budget_bytes > 0) {
        l->cfg.buffer_budget_bytes = cfg->buffer_budget_bytes;
    }
    l->buckets = ns_calloc(IP_BUCKETS, sizeof *l->buckets);
    return l->buckets != NULL ? 0 : NS_ENOMEM;
}

void ns_conn_limits_close(struct ns_conn_limits *l)
{
    for (size_t i = 0; l->buckets != NULL && i < IP_BUCKETS; i++) {
        struct ns_ip_count *e = l->buckets[i];
        while (e != NULL) {
            struct ns_ip_count *next = e->next;
            ns_free(e);
            e = next;
        }
    }
    ns_free(l->buckets);
    memset(l, 0, sizeof *l);
}

static struct ns_ip_count **slot(struct ns_conn_limits *l, const char *ip)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (const char *p = ip; *p != '\0'; p++) {
        h = (h ^ (uint8_t)*p) * 16777619u;
    }
    struct ns_ip_count **pp = &l->buckets[h % IP_BUCKETS];
    while (*pp != NULL && strcmp((*pp)->ip, ip) != 0) {
        pp = &(*pp)->next;
    }
    return pp;
}

const char *ns_conn_limits_admit(struct ns_conn_limits *l, size_t n_conns,
                                 const char *ip)
{
    if ((int64_t)n_conns > l->cfg.max_connections) {
        ns_metrics_limit(NS_LIMIT_CONNS_NODE);
        return "over clientMaxConnections";
    }
    struct ns_ip_count **pp = slot(l, ip);
    if (*pp != NULL && (int64_t)(*pp)->n >= l->cfg.max_connections_per_ip) {
        ns_metrics_limit(NS_LIMIT_CONNS_IP);
        return "over clientMaxConnectionsPerIp";
    }
    if (*pp == NULL) {
        struct ns_ip_count *e = ns_calloc(1, sizeof *e);
        if (e == NULL) {
            return "out of memory";
        }
        snprintf(e->ip, sizeof e->ip, "%s", ip);
        *pp = e;
    }
    (*pp)->n++;
    return NULL;
}

void ns_conn_limits_release(struct ns_conn_limits *l, const char *ip)
{
    struct ns_ip_count **pp = slot(l, ip);
    struct ns_ip_count *e = *pp;
    if (e != NULL && --e->n == 0) {
        *pp = e->next;
        ns_free(e);
    }
}

void ns_conn_limits_log(struct ns_conn_limits *l, uint64_t now_ms,
                        const char *peer, const char *reason)
{
    if (l->last_log_ms != 0 && now_ms < l->last_log_ms + LOG_EVERY_MS) {
        l->n_unlogged++;
        return;
    }
    NS_LOG(NS_LOG_WARN,
           "client limits: %s: closed: %s (%llu more refusals not logged "
           "since the last one)",
           peer, reason, (unsigned long long)l->n_unlogged);
    l->last_log_ms = now_ms;
    l->n_unlogged = 0;
}

void ns_conn_limits_enforce_budget(struct ns_net *net)
{
    struct ns_conn_limits *l = &net->limits;
    while ((int64_t)l->buffered > l->cfg.buffer_budget_bytes) {
        struct ns_conn *victim = NULL;
        for (struct ns_conn *c = net->conn_head; c != NULL; c = c->next) {
            if (victim == NULL || c->acct > victim->acct) {
                victim = c;
            }
        }
        if (victim == NULL || victim->acct == 0) {
            break;
        }
        ns_metrics_limit(NS_LIMIT_BUFFER_BUDGET);
        ns_conn_limits_log(l, ns_net_now(net), victim->peer,
                           "holds the most buffered bytes while all client "
                           "connections are over clientBufferBudgetBytes");
        ns_conn_close(victim, NULL);
    }
}
