/* The ACL gate of the client port: who is asking (a valid stock signature of a
 * replicated account, a broker network, or nobody) against the role a request
 * code needs (dispatch.c's table), the refusal (code 16, a WARN line limited
 * per second, a counter), and the one-time seed of the cluster file's
 * accounts. Signature checking itself is src/route/acl.c. */
#include <stdio.h>
#include <string.h>

#include "net/addr.h"
#include "cluster/cluster.h"
#include "raftns/alloc.h"
#include "raftns/cluster_config.h"
#include "raftns/codes.h"
#include "raftns/err.h"
#include "raftns/log.h"
#include "raftns/metrics.h"
#include "gateway/gateway_int.h"

#define NS_ACL_LOG_BURST 10 /* refusal lines per second, then a summary */

int ns_acl_gate_init(struct ns_acl_gate *g, const struct ns_server_config *cfg)
{
    memset(g, 0, sizeof *g);
    g->anonymous_read = true;
    const struct ns_acl_settings *st = cfg->acl;
    if (st != NULL) {
        g->enable = st->enable;
        g->anonymous_read = st->anonymous_read;
        if (st->n_broker_nets > 0) {
            g->broker_nets =
                ns_malloc(st->n_broker_nets * sizeof *g->broker_nets);
            if (g->broker_nets == NULL) {
                return NS_ENOMEM;
            }
            memcpy(g->broker_nets, st->broker_nets,
                   st->n_broker_nets * sizeof *g->broker_nets);
            g->n_broker_nets = st->n_broker_nets;
        }
    }
    if (cfg->cluster != NULL) {
        g->seed = cfg->cluster->acl_accounts;
        g->n_seed = cfg->cluster->n_acl_accounts;
    }
    return 0;
}

void ns_acl_gate_close(struct ns_acl_gate *g)
{
    ns_free(g->broker_nets);
    memset(g, 0, sizeof *g);
}

/* Source IPv4 address of the connection, host order; false when unknown. */
static bool source_ip(const struct ns_conn *conn, uint32_t *ip)
{
    struct sockaddr_in sa;
    if (conn == NULL || ns_addr_parse_ipv4(conn->peer, &sa) != 0) {
        return false;
    }
    *ip = ntohl(sa.sin_addr.s_addr);
    return true;
}

static void log_refusal(struct ns_req *req, const char *remark,
                        const char *access_key)
{
    struct ns_acl_gate *g = &req->gw->acl;
    uint64_t now = ns_gateway_now(req->gw);
    if (now - g->log_window_ms >= 1000) {
        if (g->log_suppressed > 0) {
            NS_LOG(NS_LOG_WARN, "acl: %llu more refusals not logged",
                   (unsigned long long)g->log_suppressed);
        }
        g->log_window_ms = now;
        g->log_in_window = 0;
        g->log_suppressed = 0;
    }
    if (g->log_in_window >= NS_ACL_LOG_BURST) {
        g->log_suppressed++;
        return;
    }
    g->log_in_window++;
    /* the access key is printed with %.64s: it names the account, it is not a
     * credential (the secret key is never logged) */
    NS_LOG(NS_LOG_WARN, "conn %llu %s: code %d refused: %s (AccessKey %.64s)",
           (unsigned long long)req->conn->id, req->conn->peer,
           (int)req->cmd->code, remark, access_key != NULL ? access_key : "-");
}

static bool refuse(struct ns_req *req, enum ns_acl_verdict v,
                   enum ns_acl_role need)
{
    char remark[64];
    if (v == NS_ACL_ROLE_TOO_LOW) {
        snprintf(remark, sizeof remark, "role %s required",
                 ns_acl_role_name(need));
    } else {
        snprintf(remark, sizeof remark, "%s", ns_acl_verdict_text(v));
    }
    ns_metrics_acl_refused(ns_acl_verdict_label(v));
    log_refusal(req, remark, ns_cmd_ext_find(req->cmd, NS_ACL_EXT_ACCESS_KEY));
    if (ns_reply_simple(&req->to, NS_CODE_NO_PERMISSION, remark) != 0) {
        ns_conn_close(req->conn, "out of memory answering an ACL refusal");
    }
    return false;
}

bool ns_acl_gate_allows(struct ns_req *req, enum ns_acl_role need)
{
    struct ns_acl_gate *g = &req->gw->acl;
#ifdef RAFTNS_MUTANT_ACL_OPEN
    need = NS_ACL_ROLE_NONE;
#endif
    if (!g->enable || need == NS_ACL_ROLE_NONE) {
        return true;
    }
    bool signed_request =
        ns_cmd_ext_find(req->cmd, NS_ACL_EXT_ACCESS_KEY) != NULL;
    if (!signed_request && need == NS_ACL_ROLE_READER && g->anonymous_read) {
        return true; /* the anonymous read: no address to parse, nothing to
                        verify */
    }
    uint32_t ip = 0;
    bool known = source_ip(req->conn, &ip);
    bool broker_net =
        known && ns_acl_nets_allow(g->broker_nets, g->n_broker_nets, ip, false);
    enum ns_acl_role role = broker_net ? NS_ACL_ROLE_BROKER : NS_ACL_ROLE_NONE;
    enum ns_acl_verdict v = NS_ACL_NO_ACCESS_KEY;
    if (signed_request) {
        const struct ns_acl_account *who = NULL;
        int rv = ns_acl_verify(&req->gw->state->acl, req->cmd, known ? ip : 0,
                               &who, &v);
        if (rv != 0) {
            ns_reply_simple(&req->to, NS_CODE_SYSTEM_ERROR,
                            "raftns: cannot check the signature");
            return false;
        }
        if (v == NS_ACL_OK && who->role > role) {
            role = who->role;
        } else if (v != NS_ACL_OK && !broker_net) {
            /* wrong credentials are refused even for anonymous reads, as a
             * Java broker refuses them; a broker network skips the check
             * like globalWhiteRemoteAddresses */
            return refuse(req, v, need);
        }
    }
    if (role >= need) {
        return true;
    }
    if (role == NS_ACL_ROLE_NONE && need == NS_ACL_ROLE_READER &&
        g->anonymous_read) {
        return true;
    }
    return refuse(req, role == NS_ACL_ROLE_NONE ? v : NS_ACL_ROLE_TOO_LOW,
                  need);
}

/* --- the one-time seed of the cluster file's accounts --- */

static void seed_done(void *arg, int status, uint64_t index,
                      const struct ns_apply_result *res)
{
    struct ns_gateway *gw = arg;
    (void)res;
    gw->acl.seed_inflight = false;
    if (status != 0) {
        NS_LOG(NS_LOG_WARN, "acl: seeding the file's accounts failed: %s",
               ns_strerror(status));
    } else {
        NS_LOG(NS_LOG_INFO,
               "acl: %zu accounts of the cluster file seeded at "
               "index %llu",
               gw->acl.n_seed, (unsigned long long)index);
    }
}

void ns_acl_gate_seed(struct ns_gateway *gw)
{
    struct ns_acl_gate *g = &gw->acl;
    if (g->n_seed == 0 || g->seed_inflight || gw->state->acl.seeded ||
        !ns_node_is_leader(gw->node)) {
        return;
    }
    struct ns_command c;
    ns_command_init(&c, NS_CMD_ACL_SEED);
    c.leader_time_ms = ns_clock_wall_ms();
    /* borrowed: encoded, never closed */
    c.u.acl_seed.items = (struct ns_acl_account *)g->seed;
    c.u.acl_seed.n = g->n_seed;
    int rv =
        ns_cluster_submit(gw->cluster, &c, NS_SUBMIT_LEADER, seed_done, gw);
    if (rv != 0) {
        NS_LOG(NS_LOG_WARN, "acl: cannot propose the file's accounts: %s",
               ns_strerror(rv));
        return;
    }
    g->seed_inflight = true;
}
