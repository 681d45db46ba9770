/* The controller room (controller.h): settings, heartbeats, the leader's
 * decide-then-commit queue (docs/controller.md §5: one decision at a time, the
 * next one only once the previous event was applied here), and the leader's
 * election triggers (§5.6: a master's heartbeat expired or its connection
 * closed, the inactive-master scan, retries). Notifications are in
 * controller_notify.c, the wire in src/gateway/handle_controller.c. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/json.h"
#include "raftns/log.h"
#include "cluster/cluster.h"
#include "controller/controller.h"
#include "controller/controller_int.h"

#define TICK_MS 250
#define FIRST_SCAN_MS 2000 /* Java's first expiry scan after start */
#define WARM_MS 10000      /* the brokers' default heartbeat timeout */
#define HEARTBEAT_PERIOD_MS                                                    \
    1000 /* brokers beat every controller this often                           \
          */

struct ns_controller_retry {
    char *name; /* owned broker name */
    unsigned tries;
    int64_t due_ms;
};

int64_t ns_controller_now(const struct ns_controller *c)
{
    return (int64_t)ns_clock_now(c->clock);
}

/* --- settings --- */

static bool parse_bool(const char *v, bool dflt)
{
    if (v == NULL) {
        return dflt;
    }
    return strcasecmp(v, "true") == 0    ? true
           : strcasecmp(v, "false") == 0 ? false
                                         : dflt;
}

static int64_t parse_long(const char *v, int64_t dflt, int64_t lo, int64_t hi)
{
    if (v == NULL) {
        return dflt;
    }
    char *end = NULL;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end != '\0') {
        return dflt;
    }
    return x < lo ? lo : x > hi ? hi : x;
}

static const char *find_prop(const struct ns_props *p, const char *key)
{
    for (size_t i = 0; p != NULL && i < p->n; i++) {
        if (strcmp(p->items[i].key, key) == 0) {
            return p->items[i].value;
        }
    }
    return NULL;
}

/* "n1-127.0.0.1:9878;n2-127.0.0.1:9879;" (Java's format; the ids are raftns
 * node ids). Malformed entries are skipped: the setting was validated as
 * text only. */
static void parse_peers(struct ns_controller_settings *s, const char *text)
{
    s->n_peers = 0;
    while (text != NULL && *text != '\0' &&
           s->n_peers < NS_CONTROLLER_MAX_PEERS) {
        const char *end = strchr(text, ';');
        size_t len = end ? (size_t)(end - text) : strlen(text);
        char entry[96];
        if (len > 0 && len < sizeof entry) {
            memcpy(entry, text, len);
            entry[len] = '\0';
            char *dash = strchr(entry, '-');
            char *stop = NULL;
            unsigned long long id =
                entry[0] == 'n' ? strtoull(entry + 1, &stop, 10) : 0;
            if (dash != NULL && stop == dash && id > 0 &&
                strlen(dash + 1) < sizeof s->peers[0].addr) {
                s->peers[s->n_peers].id = id;
                snprintf(s->peers[s->n_peers].addr, sizeof s->peers[0].addr,
                         "%s", dash + 1);
                s->n_peers++;
            }
        }
        text = end ? end + 1 : NULL;
    }
}

const char *ns_controller_peer_addr(const struct ns_controller *c, uint64_t id)
{
    for (size_t i = 0; i < c->set.n_peers; i++) {
        if (c->set.peers[i].id == id) {
            return c->set.peers[i].addr;
        }
    }
    return NULL;
}

static void read_settings(struct ns_controller_settings *s,
                          const struct ns_props *p)
{
    s->enabled =
        parse_bool(find_prop(p, "enableControllerInNamesrv"), s->enabled);
    s->unclean =
        parse_bool(find_prop(p, "enableElectUncleanMaster"), s->unclean);
    s->notify = parse_bool(find_prop(p, "notifyBrokerRoleChanged"), s->notify);
    s->scan_not_active_ms =
        parse_long(find_prop(p, "scanNotActiveBrokerInterval"),
                   s->scan_not_active_ms, 100, 600000);
    s->scan_inactive_master_ms =
        parse_long(find_prop(p, "scanInactiveMasterInterval"),
                   s->scan_inactive_master_ms, 100, 600000);
    s->retry_max = parse_long(find_prop(p, "electMasterMaxRetryCount"),
                              s->retry_max, 0, 100);
    const char *peers = find_prop(p, "controllerDLegerPeers");
    if (peers != NULL) {
        parse_peers(s, peers);
    }
    const char *g = find_prop(p, "controllerDLegerGroup");
    if (g != NULL) {
        snprintf(s->group, sizeof s->group, "%s", g);
    }
}

int ns_controller_init(struct ns_controller *c, uv_loop_t *loop,
                       const struct ns_clock *clock,
                       const struct ns_props *props, struct ns_state *state,
                       struct ns_node *node, struct ns_cluster *cluster)
{
    memset(c, 0, sizeof *c);
    c->loop = loop;
    c->clock = clock;
    c->state = state;
    c->node = node;
    c->cluster = cluster;
    c->set.notify = true;
    c->set.scan_not_active_ms = 5000;
    c->set.scan_inactive_master_ms = 5000;
    c->set.retry_max = 3;
    c->set.retry_wait_ms = 3000;
    snprintf(c->set.group, sizeof c->set.group, "%s", "DefaultControllerGroup");
    read_settings(&c->set, props);
    return 0;
}

int ns_controller_update_settings(struct ns_controller *c,
                                  const struct ns_props *props)
{
    /* start-up choices: the switch and the ports listened on */
    struct ns_controller_settings before = c->set;
    read_settings(&c->set, props);
    c->set.enabled = before.enabled;
    memcpy(c->set.peers, before.peers, sizeof before.peers);
    c->set.n_peers = before.n_peers;
    return 0;
}

void ns_controller_encode_settings(const struct ns_controller *c,
                                   struct ns_buf *out, bool with_enable)
{
    const struct ns_controller_settings *s = &c->set;
    ns_buf_printf(out,
                  "controllerDLegerGroup=%s\n"
                  "electMasterMaxRetryCount=%lld\n",
                  s->group, (long long)s->retry_max);
    if (with_enable) {
        ns_buf_printf(out, "enableControllerInNamesrv=%s\n",
                      s->enabled ? "true" : "false");
    }
    ns_buf_printf(out,
                  "enableElectUncleanMaster=%s\n"
                  "notifyBrokerRoleChanged=%s\n"
                  "scanInactiveMasterInterval=%lld\n",
                  s->unclean ? "true" : "false", s->notify ? "true" : "false",
                  (long long)s->scan_inactive_master_ms);
    if (with_enable) { /* 319 has it already, from NamesrvConfig */
        ns_buf_printf(out, "scanNotActiveBrokerInterval=%lld\n",
                      (long long)s->scan_not_active_ms);
    }
}

/* --- the queue --- */

static void op_free(struct ns_controller_op *op)
{
    ns_cmd_close(&op->cmd);
    ns_free(op->ids);
    ns_free(op->name);
    ns_ctl_decision_close(&op->d);
    ns_free(op);
}

static void count(struct ns_controller *c, const struct ns_controller_op *op)
{
    switch (op->d.code) {
    case NS_CODE_CONTROLLER_NOT_LEADER:
        c->stats.not_leader++;
        break;
    case NS_CODE_CONTROLLER_FENCED_MASTER_EPOCH:
    case NS_CODE_CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH:
    case NS_CODE_CONTROLLER_INVALID_MASTER:
        c->stats.fenced++;
        break;
    case NS_CODE_CONTROLLER_MASTER_NOT_AVAILABLE:
    case NS_CODE_CONTROLLER_ELECT_MASTER_FAILED:
        c->stats.elections_failed++;
        break;
    default:
        break;
    }
}

static void finish(struct ns_controller *c, struct ns_controller_op *op,
                   int status)
{
    c->n_queued--;
    count(c, op);
    op->done(op, status);
    op_free(op);
}

static void pump(struct ns_controller *c);

static void applied_cb(void *arg, int status, uint64_t index,
                       const struct ns_apply_result *res)
{
    (void)index;
    (void)res;
    struct ns_controller_op *op = arg;
    struct ns_controller *c = op->ctl;
    c->busy = false;
    if (status == 0 && op->d.notify) {
        c->stats.elections++;
        NS_LOG(NS_LOG_INFO,
               "controller: %s elected master %lld of %s (epoch %d)",
               op->req.has_id && op->req.id != -1 ? "asked" : "leader",
               (long long)op->d.event.id, op->d.event.broker_name,
               (int)op->d.reply.master_epoch);
        if (c->set.notify && !c->stopping) {
            ns_controller_notify(c, op->d.event.broker_name);
        }
    } else if (status != 0) {
        NS_LOG(NS_LOG_WARN, "controller: event on %s not committed: %s",
               op->d.event.broker_name ? op->d.event.broker_name : "?",
               ns_strerror(status));
    }
    finish(c, op, status);
    pump(c);
}

static enum ns_command_type command_type(enum ns_ctl_event_type t)
{
    switch (t) {
    case NS_CTL_EV_ALTER_SYNC_STATE_SET:
        return NS_CMD_CTL_ALTER_SYNC_STATE_SET;
    case NS_CTL_EV_APPLY_BROKER_ID:
        return NS_CMD_CTL_APPLY_BROKER_ID;
    case NS_CTL_EV_ELECT_MASTER:
        return NS_CMD_CTL_ELECT_MASTER;
    case NS_CTL_EV_CLEAN_BROKER_DATA:
        return NS_CMD_CTL_CLEAN_BROKER_DATA;
    case NS_CTL_EV_UPDATE_BROKER_ADDRESS:
        return NS_CMD_CTL_UPDATE_BROKER_ADDRESS;
    }
    return NS_CMD_CHECKPOINT; /* unreachable: decisions set a known type */
}

/* Decides op against this leader's state and commits its event through the
 * one write door; 0 when op is now in flight, else the op is finished. */
static void run(struct ns_controller *c, struct ns_controller_op *op)
{
    if (c->stopping) {
        finish(c, op, NS_ESHUTDOWN);
        return;
    }
    /* A new leader answers "not leader" until its barrier (an entry of its
     * own term) was applied: ns_node_is_leader says exactly that. */
    if (!ns_node_is_leader(c->node)) {
        op->d.code = NS_CODE_CONTROLLER_NOT_LEADER;
        finish(c, op, 0);
        return;
    }
    if (op->decide != NULL) {
        struct ns_ctl_view v = {&c->state->ctl, &c->live, ns_controller_now(c),
                                c->set.unclean};
        int rv = op->decide(&v, &op->req, &op->d);
        if (rv != 0 || !op->d.has_event) {
            finish(c, op, rv);
            return;
        }
    }
    if (!op->d.has_event) {
        finish(c, op, 0);
        return;
    }
    struct ns_command cmd;
    ns_command_init(&cmd, command_type(op->d.event_type));
    cmd.leader_time_ms = ns_clock_wall_ms();
    cmd.u.ctl = op->d.event; /* borrowed: cmd is not closed */
    int rv =
        ns_cluster_submit(c->cluster, &cmd, NS_SUBMIT_LEADER, applied_cb, op);
    if (rv != 0) {
        finish(c, op, rv);
        return;
    }
    c->busy = true;
}

static void pump(struct ns_controller *c)
{
    while (!c->busy && c->head != NULL) {
        struct ns_controller_op *op = c->head;
        c->head = op->next;
        if (c->head == NULL) {
            c->tail = NULL;
        }
        op->next = NULL;
        run(c, op);
    }
}

void ns_controller_submit(struct ns_controller *c, struct ns_controller_op *op)
{
    c->n_queued++;
    op->ctl = c;
    op->next = NULL;
    if (c->tail != NULL) {
        c->tail->next = op;
    } else {
        c->head = op;
    }
    c->tail = op;
    pump(c);
}

/* --- elections the leader triggers (§5.6) --- */

static bool election_pending(const struct ns_controller *c, const char *name)
{
    for (const struct ns_controller_op *op = c->head; op; op = op->next) {
        if (op->pending == NULL && op->name && strcmp(op->name, name) == 0) {
            return true;
        }
    }
    for (size_t i = 0; i < c->n_retries; i++) {
        if (strcmp(c->retries[i].name, name) == 0) {
            return true;
        }
    }
    return false;
}

static void schedule_retry(struct ns_controller *c, const char *name,
                           unsigned tries)
{
    struct ns_controller_retry *arr =
        ns_realloc(c->retries, (c->n_retries + 1) * sizeof *arr);
    char *copy = ns_strdup(name);
    if (arr != NULL) {
        c->retries = arr;
    }
    if (arr == NULL || copy == NULL) {
        ns_free(copy);
        NS_LOG(NS_LOG_ERROR, "controller: out of memory: no retry for %s",
               name);
        return;
    }
    arr[c->n_retries++] = (struct ns_controller_retry){
        copy, tries, ns_controller_now(c) + c->set.retry_wait_ms};
}

static void internal_done(struct ns_controller_op *op, int status)
{
    struct ns_controller *c = op->ctl;
    if (status == 0 && op->d.code == 0) {
        return;
    }
    NS_LOG(NS_LOG_INFO, "controller: election for %s: code %d %s (try %u)",
           op->name, (int)op->d.code, status ? ns_strerror(status) : "",
           op->tries);
    if (!c->stopping && op->d.code != NS_CODE_CONTROLLER_MASTER_STILL_EXIST &&
        op->d.code != NS_CODE_CONTROLLER_NOT_LEADER &&
        op->d.code != NS_CODE_CONTROLLER_BROKER_NEED_TO_BE_REGISTERED &&
        op->tries < (unsigned)c->set.retry_max) {
        schedule_retry(c, op->name, op->tries);
    }
}

static void trigger(struct ns_controller *c, const char *name, unsigned tries)
{
    struct ns_controller_op *op = ns_calloc(1, sizeof *op);
    if (op != NULL) {
        op->name = ns_strdup(name);
    }
    if (op == NULL || op->name == NULL) {
        ns_free(op);
        NS_LOG(NS_LOG_ERROR, "controller: out of memory electing for %s", name);
        return;
    }
    ns_cmd_init(&op->cmd);
    op->decide = ns_ctl_decide_elect;
    op->done = internal_done;
    op->tries = tries + 1;
    op->req.broker_name = op->name; /* no id: controller-triggered */
    op->req.cluster = "";
    ns_controller_submit(c, op);
}

/* A heartbeat entry went away: on the leader, the master's triggers an
 * election (a slave going away changes nothing, §5.6). */
static void raise_inactive(struct ns_controller *c,
                           const struct ns_ctl_live *gone)
{
    c->stats.inactive += gone->n;
    if (!ns_node_is_leader(c->node)) {
        return;
    }
    for (size_t i = 0; i < gone->n; i++) {
        const struct ns_ctl_beat *b = &gone->items[i];
        const struct ns_ctl_group *g =
            ns_ctl_find(&c->state->ctl, b->broker_name);
        if (g != NULL && g->has_master && g->master_id == b->id &&
            !election_pending(c, g->broker_name)) {
            NS_LOG(NS_LOG_INFO, "controller: master %lld of %s inactive",
                   (long long)b->id, g->broker_name);
            trigger(c, g->broker_name, 0);
        }
    }
}

static void expire(struct ns_controller *c, uint64_t conn_id)
{
    struct ns_ctl_live gone;
    if (ns_ctl_live_expire(&c->live, ns_controller_now(c), conn_id, &gone) !=
        0) {
        NS_LOG(NS_LOG_ERROR, "controller: out of memory expiring brokers");
        return;
    }
    raise_inactive(c, &gone);
    ns_ctl_live_close(&gone);
}

/* Every group whose master exists but is not alive while a member is. */
static void scan_inactive_masters(struct ns_controller *c, int64_t now)
{
    const struct ns_ctl_table *t = &c->state->ctl;
    for (size_t i = 0; i < t->n; i++) {
        const struct ns_ctl_group *g = &t->groups[i];
        if (!g->has_master ||
            ns_ctl_live_alive(&c->live, g->cluster, g->broker_name,
                              g->master_id, now) ||
            election_pending(c, g->broker_name)) {
            continue;
        }
        bool any = false;
        for (size_t k = 0; !any && k < g->n_members; k++) {
            any = ns_ctl_live_alive(&c->live, g->cluster, g->broker_name,
                                    g->members[k].id, now);
        }
        if (any) {
            trigger(c, g->broker_name, 0);
        }
    }
}

/* Takes the due retries; a retry scheduled meanwhile is due later. */
static void run_retries(struct ns_controller *c, int64_t now)
{
    size_t i = 0;
    while (i < c->n_retries) {
        if (c->retries[i].due_ms > now) {
            i++;
            continue;
        }
        struct ns_controller_retry r = c->retries[i];
        c->retries[i] = c->retries[--c->n_retries];
        if (ns_node_is_leader(c->node)) {
            trigger(c, r.name, r.tries);
        }
        ns_free(r.name);
    }
}

void ns_controller_tick(struct ns_controller *c)
{
    if (!c->started || c->stopping) {
        return;
    }
    int64_t now = ns_controller_now(c);
    if (now >= c->next_expiry_ms) {
        c->next_expiry_ms = now + c->set.scan_not_active_ms;
        expire(c, 0);
    }
    if (!ns_node_is_leader(c->node)) {
        return;
    }
    if (now >= c->next_master_scan_ms) {
        c->next_master_scan_ms = now + c->set.scan_inactive_master_ms;
        scan_inactive_masters(c, now);
    }
    run_retries(c, now);
}

static void tick_cb(uv_timer_t *t)
{
    ns_controller_tick(t->data);
}

static void begin(struct ns_controller *c)
{
    int64_t now = ns_controller_now(c);
    c->start_ms = now;
    c->next_expiry_ms = now + FIRST_SCAN_MS;
    c->next_master_scan_ms = now + c->set.scan_inactive_master_ms;
    c->started = true;
}

void ns_controller_start_driven(struct ns_controller *c)
{
    if (c->set.enabled) {
        begin(c);
        c->driven = true;
    }
}

void ns_controller_start(struct ns_controller *c)
{
    if (!c->set.enabled) {
        return;
    }
    uv_timer_init(c->loop, &c->tick);
    c->tick.data = c;
    begin(c);
    uv_timer_start(&c->tick, tick_cb, TICK_MS, TICK_MS);
    NS_LOG(NS_LOG_INFO, "controller: enabled (group %s, unclean %s)",
           c->set.group, c->set.unclean ? "on" : "off");
}

/* A new leader judges masters from its own heartbeat table. The table is
 * warm once this node has run for a broker heartbeat timeout (brokers beat
 * every node every second, and a dead broker's connections closed here too):
 * then one heartbeat period is enough. A node that started later waits
 * until then, so a broker that reconnects first is not taken for the only
 * live one. */
static int64_t first_scan_at(const struct ns_controller *c, int64_t now)
{
    int64_t warm_at = c->start_ms + WARM_MS;
    int64_t at = now + HEARTBEAT_PERIOD_MS;
    return at > warm_at ? at : warm_at;
}

void ns_controller_on_change(struct ns_controller *c)
{
    bool leader = c->started && ns_node_is_leader(c->node);
    if (leader && !c->was_leader) {
        c->next_master_scan_ms = first_scan_at(c, ns_controller_now(c));
        /* An election the previous leader committed but never announced (it
         * died in between) reaches the brokers now; an announcement they
         * know already is ignored (its epoch is not newer). */
        const struct ns_ctl_table *t = &c->state->ctl;
        for (size_t i = 0; c->set.notify && i < t->n; i++) {
            if (t->groups[i].has_master) {
                ns_controller_notify(c, t->groups[i].broker_name);
            }
        }
    }
    c->was_leader = leader;
}

int ns_controller_beat(struct ns_controller *c, const struct ns_ctl_beat_in *in)
{
    return ns_ctl_live_beat(&c->live, in, ns_controller_now(c));
}

void ns_controller_conn_closed(struct ns_controller *c, uint64_t conn_id)
{
    if (c->started && conn_id != 0) {
        expire(c, conn_id);
    }
}

void ns_controller_stop(struct ns_controller *c)
{
    c->stopping = true;
    while (c->head != NULL) {
        struct ns_controller_op *op = c->head;
        c->head = op->next;
        finish(c, op, NS_ESHUTDOWN);
    }
    c->tail = NULL;
    if (c->started && !c->driven) {
        uv_close((uv_handle_t *)&c->tick, NULL);
    }
    ns_controller_notify_close(c);
}

void ns_controller_close(struct ns_controller *c)
{
    for (size_t i = 0; i < c->n_retries; i++) {
        ns_free(c->retries[i].name);
    }
    ns_free(c->retries);
    ns_ctl_live_close(&c->live);
    ns_free(c->peers);
    memset(c, 0, sizeof *c);
}

/* --- observation --- */

void ns_controller_status_json(const struct ns_controller *c,
                               struct ns_buf *out)
{
    const struct ns_ctl_table *t = &c->state->ctl;
    ns_buf_printf(out,
                  "{\"enabled\":%s,\"elections\":%llu,\"elections_failed\":"
                  "%llu,\"fenced\":%llu,\"not_leader\":%llu,\"notified\":"
                  "%llu,\"heartbeats\":%zu,\"groups\":[",
                  c->set.enabled ? "true" : "false",
                  (unsigned long long)c->stats.elections,
                  (unsigned long long)c->stats.elections_failed,
                  (unsigned long long)c->stats.fenced,
                  (unsigned long long)c->stats.not_leader,
                  (unsigned long long)c->stats.notified, c->live.n);
    for (size_t i = 0; i < t->n; i++) {
        const struct ns_ctl_group *g = &t->groups[i];
        ns_buf_append_str(out, i ? ",{\"name\":" : "{\"name\":");
        ns_json_write_string(out, g->broker_name, NS_JSON_STANDARD);
        if (g->has_master) {
            ns_buf_printf(out, ",\"master\":%lld", (long long)g->master_id);
        }
        ns_buf_printf(out,
                      ",\"masterEpoch\":%d,\"syncStateSetEpoch\":%d,"
                      "\"members\":%zu,\"syncStateSet\":[",
                      (int)g->master_epoch, (int)g->sync_epoch, g->n_members);
        for (size_t k = 0; k < g->n_sync; k++) {
            ns_buf_printf(out, k ? ",%lld" : "%lld", (long long)g->sync[k]);
        }
        ns_buf_append_str(out, "]}");
    }
    ns_buf_append_str(out, "]}");
}

void ns_controller_metrics(const struct ns_controller *c, struct ns_buf *out)
{
    const struct ns_ctl_table *t = &c->state->ctl;
    size_t masters = 0;
    for (size_t i = 0; i < t->n; i++) {
        masters += t->groups[i].has_master;
    }
    ns_buf_printf(
        out,
        "# TYPE raftns_controller_groups gauge\n"
        "raftns_controller_groups %zu\n"
        "# TYPE raftns_controller_masters gauge\n"
        "raftns_controller_masters %zu\n"
        "# TYPE raftns_controller_heartbeats gauge\n"
        "raftns_controller_heartbeats %zu\n"
        "# TYPE raftns_controller_elections_total counter\n"
        "raftns_controller_elections_total %llu\n"
        "# TYPE raftns_controller_elections_failed_total counter\n"
        "raftns_controller_elections_failed_total %llu\n"
        "# HELP raftns_controller_fenced_total ALTER_SYNC_STATE_SET refused "
        "for a stale master or epoch.\n"
        "# TYPE raftns_controller_fenced_total counter\n"
        "raftns_controller_fenced_total %llu\n"
        "# TYPE raftns_controller_not_leader_total counter\n"
        "raftns_controller_not_leader_total %llu\n"
        "# TYPE raftns_controller_notified_total counter\n"
        "raftns_controller_notified_total %llu\n",
        t->n, masters, c->live.n, (unsigned long long)c->stats.elections,
        (unsigned long long)c->stats.elections_failed,
        (unsigned long long)c->stats.fenced,
        (unsigned long long)c->stats.not_leader,
        (unsigned long long)c->stats.notified);
    for (size_t i = 0; i < t->n; i++) {
        ns_buf_append_str(out, "raftns_controller_master_epoch{group=");
        ns_json_write_string(out, t->groups[i].broker_name, NS_JSON_STANDARD);
        ns_buf_printf(out, "} %d\n", (int)t->groups[i].master_epoch);
    }
}
