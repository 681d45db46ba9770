/* Broker liveness policy of a node in the cluster (docs/design.md §5): local
 * registrations and heartbeats go into the table (liveness_table.c); followers
 * report what they heard and which connections closed to the leader; the
 * leader merges reports, expires brokers past their timeout with one
 * EXPIRE_BROKERS_SEEN per scan, and at once when every holder closed (the
 * entry names each broker's registration count it decided on, so one
 * registered again meanwhile is kept). Heartbeats
 * never touch the log. The wire handler is handle_liveness.c. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "liveness/liveness.h"
#include "raftns/alloc.h"
#include "raftns/codes.h"
#include "raftns/config.h"
#include "raftns/err.h"
#include "raftns/log.h"
#include "raftns/metrics.h"
#include "raftns/route.h"

#define REPORT_VERSION 1
#define REPORT_MAX_ENTRIES 4096
#define REPORT_TIMEOUT_MS 3000
#define NAME_MAX_LEN 255

static uint64_t route_timeout(const struct ns_liveness *lv, const char *cluster,
                              const char *addr)
{
    int64_t t = ns_route_broker_timeout(lv->state->route, cluster, addr);
    if (t < 0) {
        return 0;
    }
    return t > 0 ? (uint64_t)t : NS_DEFAULT_HEARTBEAT_TIMEOUT_MS;
}

static void set_self(struct ns_liveness *lv)
{
    if (lv->t.self_id == 0 && lv->node != NULL) {
        ns_liveness_table_set_self(&lv->t, ns_node_id(lv->node));
    }
}

int ns_liveness_init(struct ns_liveness *lv, uv_loop_t *loop,
                     struct ns_state *state, struct ns_node *node,
                     struct ns_cluster *cluster, struct ns_net *net)
{
    memset(lv, 0, sizeof *lv);
    lv->loop = loop;
    lv->state = state;
    lv->node = node;
    lv->cluster = cluster;
    lv->net = net;
    return ns_liveness_table_init(&lv->t, 0);
}

void ns_liveness_start(struct ns_liveness *lv)
{
    uv_timer_init(lv->loop, &lv->fast_timer);
    lv->fast_timer.data = lv;
    lv->timer_started = true;
}

static void timer_closed(uv_handle_t *h)
{
    struct ns_liveness *lv = h->data;
    if (lv->stopped != NULL) {
        lv->stopped(lv->stopped_arg);
    }
}

void ns_liveness_stop(struct ns_liveness *lv, void (*stopped)(void *arg),
                      void *arg)
{
    lv->stopping = true;
    if (!lv->timer_started) {
        if (stopped != NULL) {
            stopped(arg);
        }
        return;
    }
    lv->stopped = stopped;
    lv->stopped_arg = arg;
    uv_close((uv_handle_t *)&lv->fast_timer, timer_closed);
}

void ns_liveness_close(struct ns_liveness *lv)
{
    ns_liveness_table_close(&lv->t);
}

static void send_reports(struct ns_liveness *lv);

int ns_liveness_register(struct ns_liveness *lv, const char *cluster,
                         const char *addr, uint64_t now, uint64_t timeout_ms,
                         struct ns_conn *conn)
{
    set_self(lv);
    bool linked = conn != NULL && !ns_conn_is_closing(conn);
    int rv = ns_liveness_table_register(&lv->t, cluster, addr, now, timeout_ms,
                                        linked ? &conn->brokers : NULL,
                                        linked ? conn : NULL);
    if (rv == 0 && lv->t.urgent && !lv->leading) {
        send_reports(lv); /* a new holder: tell the leader at once */
    }
    return rv;
}

bool ns_liveness_touch(struct ns_liveness *lv, const char *cluster,
                       const char *addr, uint64_t now)
{
    return ns_liveness_table_touch(&lv->t, cluster, addr, now);
}

void ns_liveness_remove(struct ns_liveness *lv, const char *cluster,
                        const char *addr)
{
    ns_liveness_table_remove(&lv->t, cluster, addr);
}

void ns_liveness_reset_all(struct ns_liveness *lv, uint64_t now)
{
    set_self(lv);
#ifdef RAFTNS_BREAK_NO_GRACE
    now = 0; /* TEST-ONLY MUTANT: no grace, unheard brokers expire at once */
#endif
    /* Every broker of the route, not only those this node heard: an expiry
     * this node proposed while it wrongly believed itself leader (paused, then
     * resumed) took brokers out of its table without removing them. */
    if (ns_liveness_seed(lv, lv->state->route, now) != 0) {
        NS_LOG(NS_LOG_ERROR, "liveness: out of memory seeding brokers");
        lv->reseed = true;
    }
    ns_liveness_table_take_leadership(&lv->t, now);
    lv->leading = true;
    NS_LOG(NS_LOG_INFO,
           "liveness: leader now; %zu brokers get a full timeout before any "
           "expiry",
           lv->t.n);
}

struct seed_ctx {
    struct ns_liveness *lv;
    uint64_t now;
    int rv;
};

static void seed_one(void *arg, const char *cluster, const char *addr,
                     int64_t timeout_ms)
{
    struct seed_ctx *ctx = arg;
    if (ctx->rv != 0) {
        return;
    }
    uint64_t t =
        timeout_ms > 0 ? (uint64_t)timeout_ms : NS_DEFAULT_HEARTBEAT_TIMEOUT_MS;
    ctx->rv = ns_liveness_table_seed(&ctx->lv->t, cluster, addr, t, ctx->now);
}

int ns_liveness_seed(struct ns_liveness *lv, const struct ns_route *route,
                     uint64_t now)
{
    struct seed_ctx ctx = {lv, now, 0};
    ns_route_foreach_broker(route, seed_one, &ctx);
    return ctx.rv;
}

/* --- expiry (leader) --- */

struct expiry {
    struct ns_liveness *lv;
    struct ns_broker_ref *refs;
    uint64_t *regs_seen; /* refs' registration counts, as the entry has them */
    size_t n, cap;
    size_t n_fast;
    int rv;
};

/* regs: the registration this decision is about, which the entry names so
 * that a registration applied before it but after this decision survives. */
static int add_ref(struct expiry *x, const struct ns_live *e, uint64_t regs)
{
    if (x->n == x->cap) {
        size_t nc = x->cap ? x->cap * 2 : 8;
        struct ns_broker_ref *r = ns_realloc(x->refs, nc * sizeof *r);
        if (r == NULL) {
            return NS_ENOMEM;
        }
        x->refs = r;
        uint64_t *g = ns_realloc(x->regs_seen, nc * sizeof *g);
        if (g == NULL) {
            return NS_ENOMEM;
        }
        x->regs_seen = g;
        x->cap = nc;
    }
    struct ns_broker_ref *r = &x->refs[x->n];
    memset(r, 0, sizeof *r);
    x->regs_seen[x->n] = regs;
    r->cluster = ns_strdup(e->cluster);
    r->broker_addr = ns_strdup(e->addr);
    if (r->cluster == NULL || r->broker_addr == NULL) {
        ns_free(r->cluster);
        ns_free(r->broker_addr);
        return NS_ENOMEM;
    }
    x->n++;
    return 0;
}

static void on_expired(void *arg, const struct ns_live *e, bool fast)
{
    struct expiry *x = arg;
    struct ns_conn *conn = e->conn;
    uint64_t regs;
    if (ns_route_broker_regs(x->lv->state->route, e->cluster, e->addr, &regs)) {
        if (x->rv == 0) {
            x->rv = add_ref(x, e, regs);
        }
        NS_LOG(NS_LOG_INFO, "liveness: expiring broker %s (cluster %s): %s",
               e->addr, e->cluster,
               fast ? "every connection that registered it closed"
                    : "no heartbeat within its timeout");
        x->n_fast += fast;
    }
    if (conn != NULL && conn->brokers == NULL) {
        ns_conn_close(conn, "broker expired");
    }
}

/* A failed expiry proposal: its brokers left the table, so the next scan
 * re-seeds them from the route. */
static void expiry_done(void *arg, int status, uint64_t index,
                        const struct ns_apply_result *res)
{
    (void)index;
    (void)res;
    struct ns_liveness *lv = arg;
    if (lv->expiries_in_flight > 0) {
        lv->expiries_in_flight--;
    }
    if (status != 0) {
        lv->reseed = true;
        NS_LOG(NS_LOG_WARN, "internal proposal failed: %s",
               ns_strerror(status));
    }
}

/* Expires every due broker with ONE EXPIRE_BROKERS_SEEN proposal. */
static void expire_due(struct ns_liveness *lv, uint64_t now)
{
    struct expiry x = {.lv = lv};
    lv->fast_pending = false;
    ns_liveness_table_expire(&lv->t, now, on_expired, &x);
    if (x.rv != 0) {
        NS_LOG(NS_LOG_ERROR, "liveness: out of memory during expiry");
    }
    if (x.n == 0) {
        ns_free(x.refs);
        ns_free(x.regs_seen);
        return;
    }
    struct ns_command c;
    ns_command_init(&c, NS_CMD_EXPIRE_BROKERS_SEEN);
    c.leader_time_ms = ns_clock_wall_ms();
    c.u.brokers.refs = x.refs;
    c.u.brokers.n = x.n;
    c.u.brokers.regs_seen = x.regs_seen;
    int rv =
        ns_cluster_submit(lv->cluster, &c, NS_SUBMIT_LEADER, expiry_done, lv);
    if (rv != 0) {
        lv->reseed = true;
        NS_LOG(NS_LOG_WARN, "liveness: expiry of %zu brokers not proposed: %s",
               x.n, ns_strerror(rv));
    } else {
        lv->expiries_in_flight++;
        ns_metrics_expired(x.n);
        NS_LOG(NS_LOG_INFO,
               "liveness: proposed EXPIRE_BROKERS_SEEN for %zu brokers "
               "(%zu closed everywhere)",
               x.n, x.n_fast);
    }
    ns_command_close(&c);
}

static void expire_or_arm(struct ns_liveness *lv, uint64_t now);

/* Milliseconds of the liveness room's clock. */
static uint64_t lv_now(const struct ns_liveness *lv)
{
    return lv->clock != NULL ? ns_clock_now(lv->clock) : uv_now(lv->loop);
}

void ns_liveness_fast_check(struct ns_liveness *lv)
{
    if (!lv->stopping && lv->leading) {
        expire_or_arm(lv, lv_now(lv));
    }
}

static void fast_timer_cb(uv_timer_t *t)
{
    ns_liveness_fast_check(t->data);
}

/* Leader: expires what is due now, else wakes up exactly when the next
 * deadline passes, so a fast-path expiry deferred by the post-takeover settle
 * does not wait for the next one-second tick as well. Deadlines that are
 * further away than the settle time are left to the scan timer. */
static void expire_or_arm(struct ns_liveness *lv, uint64_t now)
{
    uint64_t next = ns_liveness_table_next_deadline(&lv->t);
    if (next <= now) {
        expire_due(lv, now);
        next = ns_liveness_table_next_deadline(&lv->t);
    }
    if (next != UINT64_MAX && next > now &&
        next - now <= NS_LIVENESS_TABLE_FAST_SETTLE_MS) {
        uv_timer_start(&lv->fast_timer, fast_timer_cb, next - now, 0);
    }
}

/* Follows the node's role; true when this node expires brokers. */
static bool check_role(struct ns_liveness *lv)
{
    bool leader = !lv->stopping && ns_node_is_leader(lv->node);
    if (leader && !lv->leading) {
        ns_liveness_reset_all(lv, lv_now(lv));
    } else if (!leader && lv->leading) {
        lv->leading = false;
        lv->reported_to = 0; /* report everything to the next leader */
    }
    return leader;
}

void ns_liveness_scan(struct ns_liveness *lv)
{
    uint64_t now = lv_now(lv);
    if (!check_role(lv)) {
        return; /* followers never expire */
    }
    /* Brokers applied through another node's forward and never reported, or
     * taken out of the table by an expiry whose proposal failed. */
    if (lv->reseed || ns_route_n_brokers(lv->state->route) > lv->t.n) {
        lv->reseed = ns_liveness_seed(lv, lv->state->route, now) != 0;
        if (lv->reseed) {
            NS_LOG(NS_LOG_ERROR, "liveness: out of memory seeding brokers");
        }
    }
    expire_due(lv, now);
}

void ns_liveness_conn_closed(struct ns_liveness *lv, struct ns_conn *conn)
{
    if (conn->brokers == NULL) {
        return;
    }
    uint64_t now = lv_now(lv);
    ns_liveness_table_conn_closed(&lv->t, &conn->brokers, now);
    if (lv->stopping) {
        return;
    }
    if (check_role(lv)) {
        lv->fast_pending = true;
        expire_or_arm(lv, now);
    } else {
        send_reports(lv);
    }
}

/* --- reports (follower -> leader) --- */

static int put_name(struct ns_buf *b, const char *s)
{
    size_t n = strlen(s);
    if (n > NAME_MAX_LEN) {
        return NS_EINVAL;
    }
    ns_buf_put_u16(b, (uint16_t)n);
    return ns_buf_append(b, s, n);
}

struct report {
    struct ns_buf body;
    uint32_t n;
};

static int add_entry(void *arg, const char *cluster, const char *addr,
                     uint32_t ms_since, bool held)
{
    struct report *r = arg;
    size_t mark = r->body.len;
    if (put_name(&r->body, cluster) != 0 || put_name(&r->body, addr) != 0) {
        r->body.len = mark; /* not reportable: dropped */
        return r->body.err;
    }
    ns_buf_put_u32(&r->body, ms_since);
    ns_buf_put_u8(&r->body, held ? 1 : 0);
    r->n++;
    return r->body.err;
}

static void report_done(void *arg, int status, const struct ns_cmd *reply)
{
    struct ns_liveness *lv = arg;
    lv->in_flight = false;
    if (status != 0 || reply->code != NS_CODE_SUCCESS) {
        NS_LOG(NS_LOG_DEBUG, "liveness: report to the leader failed (%s)",
               status != 0 ? ns_strerror(status) : "refused");
        lv->resend_all = true;
        return;
    }
    lv->acked_at = lv->sent_at;
    lv->acked_by = lv->sent_to;
    if (lv->t.urgent && !lv->stopping) {
        send_reports(lv);
    }
}

static void send_reports(struct ns_liveness *lv)
{
    if (lv->in_flight || lv->stopping || lv->leading ||
        ns_node_leader_id(lv->node) == 0) {
        return;
    }
    uint64_t leader = ns_node_leader_id(lv->node);
    if (leader != lv->reported_to || lv->resend_all) {
        ns_liveness_table_mark_all_dirty(&lv->t);
        lv->reported_to = leader;
        lv->resend_all = false;
    }
    if (lv->t.n_dirty == 0) {
        lv->t.urgent = false;
        return;
    }
    struct report r = {.n = 0};
    ns_buf_init(&r.body);
    ns_buf_put_u16(&r.body, REPORT_VERSION);
    ns_buf_put_u32(&r.body, 0);
    uint64_t now = lv_now(lv);
    ns_liveness_table_take_reports(&lv->t, now, REPORT_MAX_ENTRIES, add_entry,
                                   &r);
    struct ns_cmd cmd;
    ns_cmd_init(&cmd);
    int rv = r.body.err;
    if (rv == 0 && r.n > 0) {
        ns_buf_patch_u32(&r.body, 2, r.n);
        cmd.code = NS_CODE_LIVENESS_REPORT;
        cmd.has_ext = true;
        cmd.body = r.body.data;
        cmd.body_len = r.body.len;
        rv = ns_cluster_leader_request(lv->cluster, &cmd, REPORT_TIMEOUT_MS,
                                       report_done, lv);
        if (rv == 0) {
            lv->in_flight = true;
            lv->sent_at = now;
            lv->sent_to = leader;
        }
    }
    if (rv != 0) {
        lv->resend_all = true; /* taken entries are lost: resend all later */
    }
    cmd.body = NULL;
    cmd.body_len = 0;
    ns_cmd_close(&cmd);
    ns_buf_close(&r.body);
}

static void get_name(struct ns_rd *rd, char *out)
{
    uint16_t n = ns_rd_u16(rd);
    const uint8_t *p = n <= NAME_MAX_LEN ? ns_rd_bytes(rd, n) : NULL;
    if (p == NULL) {
        rd->err = NS_EPROTO;
        out[0] = '\0';
        return;
    }
    memcpy(out, p, n);
    out[n] = '\0';
}

int ns_liveness_merge_report(struct ns_liveness *lv, uint64_t from,
                             const uint8_t *body, size_t len)
{
    struct ns_rd rd;
    char cluster[NAME_MAX_LEN + 1], addr[NAME_MAX_LEN + 1];
    uint64_t now = lv_now(lv);
#ifdef RAFTNS_BREAK_IGNORE_REPORTS
    return 0; /* TEST-ONLY MUTANT: followers' reports are dropped */
#endif
    ns_rd_init(&rd, body, len);
    if (ns_rd_u16(&rd) != REPORT_VERSION) {
        return NS_EPROTO;
    }
    uint32_t n = ns_rd_u32(&rd);
    if (rd.err != 0 || n > ns_rd_left(&rd) / 9) {
        return NS_EPROTO;
    }
    bool leader = check_role(lv);
    for (uint32_t i = 0; i < n; i++) {
        get_name(&rd, cluster);
        get_name(&rd, addr);
        uint32_t since = ns_rd_u32(&rd);
        uint8_t flags = ns_rd_u8(&rd);
        if (rd.err != 0) {
            return NS_EPROTO;
        }
        uint64_t timeout = route_timeout(lv, cluster, addr);
        if (timeout == 0) {
            continue; /* not (or no longer) in the route */
        }
        int rv = ns_liveness_table_merge(&lv->t, from, cluster, addr, since,
                                         (flags & 1) != 0, timeout, now);
        if (rv != 0) {
            return rv;
        }
    }
    if (leader) {
        lv->fast_pending = true;
        expire_or_arm(lv, now);
    }
    return 0;
}

/* --- the tick --- */

/* Closes connections whose brokers all left the route (expired or removed
 * elsewhere): what the Java name server does when it drops a broker. */
static void close_gone(struct ns_liveness *lv)
{
    struct ns_conn *c = lv->net->conn_head;
    while (c != NULL) {
        struct ns_conn *next = c->next;
        struct ns_live *e = c->brokers;
        bool had = e != NULL;
        while (e != NULL) {
            struct ns_live *enext = e->conn_next;
            if (ns_route_broker_timeout(lv->state->route, e->cluster, e->addr) <
                0) {
                ns_liveness_table_remove(&lv->t, e->cluster, e->addr);
            }
            e = enext;
        }
        if (had && c->brokers == NULL) {
            ns_conn_close(c, "its brokers were expired");
        }
        c = next;
    }
}

void ns_liveness_tick(struct ns_liveness *lv)
{
    if (lv->stopping || !ns_node_is_ready(lv->node)) {
        return;
    }
    uint64_t now = lv_now(lv);
    set_self(lv);
    close_gone(lv);
    if (check_role(lv)) {
        if (lv->fast_pending &&
            ns_liveness_table_next_deadline(&lv->t) <= now) {
            expire_due(lv, now);
        }
    } else {
        send_reports(lv);
    }
}

bool ns_liveness_may_short_cut(const struct ns_liveness *lv)
{
    if (lv->node == NULL || ns_node_is_leader(lv->node)) {
        /* An expiry in flight names the registration count the leader saw,
         * which an unchanged registration does not bump: answered from the
         * table now, it would be removed when that expiry applies. */
        return lv->expiries_in_flight == 0;
    }
    uint64_t leader = ns_node_leader_id(lv->node);
    uint64_t now = lv_now(lv);
#ifdef RAFTNS_BREAK_STALE_LINK
    return true; /* TEST-ONLY MUTANT: a follower short-cuts without a link */
#endif
    /* The leader knows what this node heard up to acked_at; a registration
     * answered now reaches it only with the next report. Raft contact alone
     * comes back at a heal before any report went through, when the leader
     * may be about to expire the broker (docs/readiness.md). */
    return leader != 0 && leader == lv->acked_by && lv->acked_at <= now &&
           now - lv->acked_at <= NS_LIVENESS_LINK_FRESH_MS;
}

uint64_t ns_liveness_n_expired(const struct ns_liveness *lv)
{
    return lv->t.n_expired;
}

uint64_t ns_liveness_n_fast_expired(const struct ns_liveness *lv)
{
    return lv->t.n_fast_expired;
}

uint64_t ns_liveness_n_merged(const struct ns_liveness *lv)
{
    return lv->t.n_merged;
}

size_t ns_liveness_n_brokers(const struct ns_liveness *lv)
{
    return lv->t.n;
}

struct each_ctx {
    void (*cb)(void *arg, const struct ns_live *e, uint64_t now);
    void *arg;
    uint64_t now;
};

static void each_one(void *arg, const struct ns_live *e)
{
    struct each_ctx *x = arg;
    x->cb(x->arg, e, x->now);
}

void ns_liveness_each(const struct ns_liveness *lv,
                      void (*cb)(void *arg, const struct ns_live *e,
                                 uint64_t now),
                      void *arg)
{
    struct each_ctx x = {cb, arg, lv_now(lv)};
    ns_liveness_table_each(&lv->t, each_one, &x);
}
