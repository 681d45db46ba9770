/* The leader's decisions on controller requests (docs/controller.md §5):
 * each reads the replicated table and the node's heartbeats, and yields the
 * reply (code, Java's remark, ext values, body) and at most one event to
 * commit before replying. Nothing is changed here; the caller proposes the
 * event and answers once it was applied. Pure. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/controller.h"
#include "raftns/err.h"

void ns_ctl_decision_close(struct ns_ctl_decision *d)
{
    ns_free(d->reply.master_addr);
    ns_free(d->reply.set);
    if (d->has_event) {
        ns_ctl_event_close(&d->event);
    }
    memset(d, 0, sizeof *d);
}

static void start(struct ns_ctl_decision *d)
{
    memset(d, 0, sizeof *d);
}

static void refuse(struct ns_ctl_decision *d, int32_t code, const char *fmt,
                   ...) __attribute__((format(printf, 3, 4)));
static void refuse(struct ns_ctl_decision *d, int32_t code, const char *fmt,
                   ...)
{
    va_list ap;
    va_start(ap, fmt);
    d->code = code;
    vsnprintf(d->remark, sizeof d->remark, fmt, ap);
    va_end(ap);
}

/* A Java Long as String.valueOf prints it. */
static const char *long_text(char *buf, size_t len, bool has, int64_t v)
{
    if (!has) {
        return "null";
    }
    snprintf(buf, len, "%lld", (long long)v);
    return buf;
}

static bool alive(const struct ns_ctl_view *v, const struct ns_ctl_group *g,
                  int64_t id)
{
    return ns_ctl_live_alive(v->live, g->cluster, g->broker_name, id,
                             v->now_ms);
}

static int copy_set(struct ns_ctl_reply *r, const int64_t *ids, size_t n,
                    int32_t epoch)
{
    r->set = ns_malloc((n ? n : 1) * sizeof *r->set);
    if (r->set == NULL) {
        return NS_ENOMEM;
    }
    if (n > 0) {
        memcpy(r->set, ids, n * sizeof *r->set);
    }
    r->n_set = n;
    r->set_epoch = epoch;
    r->has_set = true;
    return 0;
}

static int set_master(struct ns_ctl_reply *r, const struct ns_ctl_group *g,
                      int64_t id)
{
    const struct ns_ctl_member *m = ns_ctl_find_member(g, id);
    r->has_master_id = true;
    r->master_id = id;
    if (m != NULL && m->addr != NULL) {
        r->master_addr = ns_strdup(m->addr);
        if (r->master_addr == NULL) {
            return NS_ENOMEM;
        }
    }
    return 0;
}

/* Starts d's event of type on broker_name (copied). */
static int event(struct ns_ctl_decision *d, enum ns_ctl_event_type type,
                 const char *broker_name)
{
    d->has_event = true;
    d->event_type = type;
    d->event.broker_name = ns_strdup(broker_name);
    return d->event.broker_name ? 0 : NS_ENOMEM;
}

static int dup_into(char **dst, const char *src)
{
    *dst = ns_strdup(src ? src : "");
    return *dst ? 0 : NS_ENOMEM;
}

int ns_ctl_decide_next_id(const struct ns_ctl_view *v,
                          const struct ns_ctl_request *r,
                          struct ns_ctl_decision *d)
{
    start(d);
    const struct ns_ctl_group *g = ns_ctl_find(v->table, r->broker_name);
    d->reply.has_next_id = true;
    d->reply.next_id = g != NULL ? g->next_id : NS_CTL_FIRST_ID;
    return 0;
}

int ns_ctl_decide_apply_id(const struct ns_ctl_view *v,
                           const struct ns_ctl_request *r,
                           struct ns_ctl_decision *d)
{
    start(d);
    char idb[24];
    const char *id = long_text(idb, sizeof idb, r->has_id, r->id);
    if (r->check_code == NULL || r->broker_name == NULL || !r->has_id) {
        /* Java dereferences them: its wrapper answers the exception. */
        refuse(d, 1, "java.lang.NullPointerException");
        return 0;
    }
    const struct ns_ctl_group *g = ns_ctl_find(v->table, r->broker_name);
    if (g == NULL && r->id != NS_CTL_FIRST_ID) {
        refuse(d, NS_CODE_CONTROLLER_BROKER_ID_INVALID,
               "Broker-set: %s hasn't been registered in controller, but "
               "broker try to apply brokerId: %s",
               r->broker_name, id);
        return 0;
    }
    const struct ns_ctl_member *m = g ? ns_ctl_find_member(g, r->id) : NULL;
    if (m != NULL &&
        strcmp(m->check_code ? m->check_code : "", r->check_code) != 0) {
        refuse(d, NS_CODE_CONTROLLER_BROKER_ID_INVALID,
               "Fail to apply brokerId: %s in broker-set: %s", id,
               r->broker_name);
        return 0;
    }
    /* The address is what the broker wrote before the first ';'. */
    const char *semi = strchr(r->check_code, ';');
    size_t addr_len =
        semi ? (size_t)(semi - r->check_code) : strlen(r->check_code);
    int rv = event(d, NS_CTL_EV_APPLY_BROKER_ID, r->broker_name);
    if (rv == 0) {
        rv = dup_into(&d->event.cluster, r->cluster);
    }
    if (rv == 0) {
        rv = dup_into(&d->event.check_code, r->check_code);
    }
    if (rv == 0) {
        d->event.broker_addr = ns_strndup(r->check_code, addr_len);
        rv = d->event.broker_addr ? 0 : NS_ENOMEM;
    }
    d->event.id = r->id;
    return rv;
}

int ns_ctl_decide_register(const struct ns_ctl_view *v,
                           const struct ns_ctl_request *r,
                           struct ns_ctl_decision *d)
{
    start(d);
    char idb[24];
    const struct ns_ctl_group *g = ns_ctl_find(v->table, r->broker_name);
    if (g == NULL) {
        refuse(d, NS_CODE_CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
               "Broker-set: %s hasn't been registered in controller",
               r->broker_name ? r->broker_name : "null");
        return 0;
    }
    const struct ns_ctl_member *m =
        r->has_id ? ns_ctl_find_member(g, r->id) : NULL;
    if (m == NULL) {
        refuse(d, NS_CODE_CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
               "BrokerId: %s hasn't been registered in broker-set: %s",
               long_text(idb, sizeof idb, r->has_id, r->id), r->broker_name);
        return 0;
    }
    int rv = 0;
    if (g->has_master && alive(v, g, g->master_id)) {
        rv = set_master(&d->reply, g, g->master_id);
        d->reply.has_master_epoch = d->reply.has_sync_epoch = true;
        d->reply.master_epoch = g->master_epoch;
        d->reply.sync_epoch = g->sync_epoch;
    }
    if (rv == 0) {
        rv = copy_set(&d->reply, g->sync, g->n_sync, g->sync_epoch);
    }
    if (rv == 0 && r->broker_addr != NULL &&
        strcmp(m->addr ? m->addr : "", r->broker_addr) != 0) {
        rv = event(d, NS_CTL_EV_UPDATE_BROKER_ADDRESS, r->broker_name);
        if (rv == 0) {
            rv = dup_into(&d->event.cluster, r->cluster);
        }
        if (rv == 0) {
            rv = dup_into(&d->event.broker_addr, r->broker_addr);
        }
        d->event.id = r->id;
    }
    return rv;
}

int ns_ctl_decide_replica_info(const struct ns_ctl_view *v,
                               const struct ns_ctl_request *r,
                               struct ns_ctl_decision *d)
{
    start(d);
    const struct ns_ctl_group *g = ns_ctl_find(v->table, r->broker_name);
    if (g == NULL) {
        refuse(d, NS_CODE_CONTROLLER_BROKER_METADATA_NOT_EXIST,
               "Broker metadata is not existed");
        return 0;
    }
    /* Liveness is not consulted: a dead master is reported until an
     * election replaces it. */
    int rv = g->has_master ? set_master(&d->reply, g, g->master_id) : 0;
    d->reply.has_master_epoch = true;
    d->reply.master_epoch = g->master_epoch;
    return rv ? rv : copy_set(&d->reply, g->sync, g->n_sync, g->sync_epoch);
}

/* The group's members with their heartbeats, for the policy. NULL on
 * NS_ENOMEM. */
static struct ns_ctl_candidate *candidates(const struct ns_ctl_view *v,
                                           const struct ns_ctl_group *g)
{
    struct ns_ctl_candidate *c =
        ns_calloc(g->n_members ? g->n_members : 1, sizeof *c);
    for (size_t i = 0; c != NULL && i < g->n_members; i++) {
        const struct ns_ctl_beat *b = ns_ctl_live_find(
            v->live, g->cluster, g->broker_name, g->members[i].id);
        c[i].id = g->members[i].id;
        c[i].alive = b != NULL && b->last_ms + b->timeout_ms >= v->now_ms;
        c[i].epoch = b ? b->epoch : -1;
        c[i].max_offset = b ? b->max_offset : -1;
        c[i].priority = b ? b->priority : NS_CTL_DEFAULT_PRIORITY;
    }
    return c;
}

int ns_ctl_decide_elect(const struct ns_ctl_view *v,
                        const struct ns_ctl_request *r,
                        struct ns_ctl_decision *d)
{
    start(d);
    const struct ns_ctl_group *g = ns_ctl_find(v->table, r->broker_name);
    if (g == NULL) {
        refuse(d, NS_CODE_CONTROLLER_BROKER_NEED_TO_BE_REGISTERED,
               "Broker hasn't been registered");
        return 0;
    }
    bool triggered = !r->has_id || r->id == -1;
    bool found = false;
    int64_t chosen = -1;
    /* The very first election takes the requester; unlike Java, only an id
     * the group admitted (docs/controller.md §9). */
    if (g->master_epoch == 0 && !triggered && ns_ctl_find_member(g, r->id)) {
        found = true;
        chosen = r->id;
    }
    if (!found) {
        struct ns_ctl_candidate *c = candidates(v, g);
        if (c == NULL) {
            return NS_ENOMEM;
        }
        found = ns_ctl_policy_elect(c, g->n_members, g->sync, g->n_sync,
                                    v->unclean, g->has_master, g->master_id,
                                    r->designate && !triggered, r->id, &chosen);
        ns_free(c);
    }
    int rv = 0;
    if (found && g->has_master && chosen == g->master_id) {
        refuse(d, NS_CODE_CONTROLLER_MASTER_STILL_EXIST,
               "The old master %lld is still alive, not need to elect new "
               "master for broker %s",
               (long long)chosen, g->broker_name);
        rv = set_master(&d->reply, g, chosen);
        d->reply.has_master_epoch = d->reply.has_sync_epoch = true;
        d->reply.master_epoch = g->master_epoch;
        d->reply.sync_epoch = g->sync_epoch;
        d->reply.elect_body = true;
        return rv ? rv : copy_set(&d->reply, g->sync, g->n_sync, 0);
    }
    if (found) {
        rv = set_master(&d->reply, g, chosen);
        d->reply.has_master_epoch = d->reply.has_sync_epoch = true;
        d->reply.master_epoch = g->master_epoch + 1;
        d->reply.sync_epoch = g->sync_epoch + 1;
        d->reply.elect_body = d->reply.with_members = true;
        d->notify = true;
        if (rv == 0) {
            rv = copy_set(&d->reply, &chosen, 1, g->sync_epoch + 1);
        }
        if (rv == 0) {
            rv = event(d, NS_CTL_EV_ELECT_MASTER, g->broker_name);
        }
        d->event.elected = true;
        d->event.id = chosen;
        return rv;
    }
    if (triggered) {
        refuse(d, NS_CODE_CONTROLLER_MASTER_NOT_AVAILABLE,
               "Old master has down and failed to elect a new broker master");
        return event(d, NS_CTL_EV_ELECT_MASTER, g->broker_name);
    }
    refuse(d, NS_CODE_CONTROLLER_ELECT_MASTER_FAILED,
           "Failed to elect a new master");
    return 0;
}

static bool same_set(const int64_t *a, size_t na, const int64_t *b, size_t nb)
{
    return na == nb && (na == 0 || memcmp(a, b, na * sizeof *a) == 0);
}

int ns_ctl_decide_alter(const struct ns_ctl_view *v,
                        const struct ns_ctl_request *r,
                        struct ns_ctl_decision *d)
{
    start(d);
    char a[24], b[24];
    const char *rej = "Rejecting alter syncStateSet request because";
    d->reply.has_new_sync_epoch = true; /* a primitive: "0" on refusals */
    const struct ns_ctl_group *g = ns_ctl_find(v->table, r->broker_name);
    if (g == NULL) {
        refuse(d, NS_CODE_CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
               "Broker metadata is not existed");
        return 0;
    }
    if (same_set(r->ids, r->n_ids, g->sync, g->n_sync)) {
        refuse(d, NS_CODE_CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
               "The newSyncStateSet is equal with oldSyncStateSet, no needed "
               "to update syncStateSet");
        return 0;
    }
    if (!g->has_master || !r->has_id || r->id != g->master_id) {
        refuse(d, NS_CODE_CONTROLLER_INVALID_MASTER,
               "%s the current leader is:{%s}, not {%s}", rej,
               long_text(a, sizeof a, g->has_master, g->master_id),
               long_text(b, sizeof b, r->has_id, r->id));
        return 0;
    }
#ifdef RAFTNS_BREAK_FENCE_WRONG_EPOCH
    /* TEST-ONLY MUTANT (JEPSEN.md): the master-epoch fence compares the
     * request's SyncStateSet epoch, so a stale master epoch passes. */
    if (!r->has_master_epoch || r->set_epoch != g->sync_epoch) {
#else
    if (!r->has_master_epoch || r->master_epoch != g->master_epoch) {
#endif
        refuse(d, NS_CODE_CONTROLLER_FENCED_MASTER_EPOCH,
               "%s the current master epoch is:{%d}, not {%s}", rej,
               (int)g->master_epoch,
               long_text(b, sizeof b, r->has_master_epoch, r->master_epoch));
        return 0;
    }
    if (r->set_epoch != g->sync_epoch) {
        refuse(d, NS_CODE_CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH,
               "%s the current syncStateSet epoch is:{%d}, not {%d}", rej,
               (int)g->sync_epoch, (int)r->set_epoch);
        return 0;
    }
    for (size_t i = 0; i < r->n_ids; i++) {
        if (ns_ctl_find_member(g, r->ids[i]) == NULL) {
            refuse(d, NS_CODE_CONTROLLER_INVALID_REPLICAS,
                   "%s the replicas {%lld} don't exist", rej,
                   (long long)r->ids[i]);
            return 0;
        }
        if (!alive(v, g, r->ids[i])) {
            refuse(d, NS_CODE_CONTROLLER_BROKER_NOT_ALIVE,
                   "%s the replicas {%lld} don't alive", rej,
                   (long long)r->ids[i]);
            return 0;
        }
    }
    bool has_master = false;
    for (size_t i = 0; i < r->n_ids; i++) {
        has_master |= r->ids[i] == g->master_id;
    }
    if (!has_master) {
        refuse(d, NS_CODE_CONTROLLER_ALTER_SYNC_STATE_SET_FAILED,
               "%s the newSyncStateSet don't contains origin leader {%lld}",
               rej, (long long)g->master_id);
        return 0;
    }
    d->reply.new_sync_epoch = g->sync_epoch + 1;
    int rv = copy_set(&d->reply, r->ids, r->n_ids, g->sync_epoch + 1);
    if (rv == 0) {
        rv = event(d, NS_CTL_EV_ALTER_SYNC_STATE_SET, g->broker_name);
    }
    if (rv == 0 && r->n_ids > 0) {
        d->event.ids = ns_malloc(r->n_ids * sizeof *d->event.ids);
        rv = d->event.ids ? 0 : NS_ENOMEM;
        if (rv == 0) {
            memcpy(d->event.ids, r->ids, r->n_ids * sizeof *r->ids);
            d->event.n_ids = r->n_ids;
        }
    }
    return rv;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* "1;2;3" into sorted distinct ids. Returns 0, NS_EPROTO with the bad
 * token in bad (Java's NumberFormatException names it) or NS_ENOMEM. */
static int parse_ids(const char *text, int64_t **out, size_t *n_out, char *bad,
                     size_t bad_len)
{
    size_t cap = 1;
    for (const char *p = text; *p; p++) {
        cap += *p == ';';
    }
    int64_t *ids = ns_malloc(cap * sizeof *ids);
    if (ids == NULL) {
        return NS_ENOMEM;
    }
    size_t n = 0;
    const char *p = text;
    while (*p != '\0') {
        const char *end = strchr(p, ';');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char tok[32];
        char *stop = NULL;
        bool ok = len > 0 && len < sizeof tok;
        if (ok) {
            memcpy(tok, p, len);
            tok[len] = '\0';
            long long vv = strtoll(tok, &stop, 10);
            ok = *stop == '\0';
            ids[n] = vv;
        }
        if (!ok) {
            snprintf(bad, bad_len, "%.*s", (int)(len < 64 ? len : 64), p);
            ns_free(ids);
            return NS_EPROTO;
        }
        n++;
        p = end ? end + 1 : p + len;
    }
    qsort(ids, n, sizeof *ids, cmp_i64);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k == 0 || ids[k - 1] != ids[i]) {
            ids[k++] = ids[i];
        }
    }
    *out = ids;
    *n_out = k;
    return 0;
}

int ns_ctl_decide_clean(const struct ns_ctl_view *v,
                        const struct ns_ctl_request *r,
                        struct ns_ctl_decision *d)
{
    start(d);
    const char *name = r->broker_name ? r->broker_name : "null";
    const struct ns_ctl_group *g = ns_ctl_find(v->table, r->broker_name);
    bool listed =
        r->ids_text != NULL && r->ids_text[strspn(r->ids_text, " \t")] != '\0';
    int64_t *ids = NULL;
    size_t n_ids = 0;
    if (listed) {
        char bad[80];
        int rv = parse_ids(r->ids_text, &ids, &n_ids, bad, sizeof bad);
        if (rv == NS_ENOMEM) {
            return rv;
        }
        if (rv != 0) {
            refuse(d, NS_CODE_CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                   "Please set the option <brokerControllerIdsToClean> "
                   "according to the format, exception: "
                   "java.lang.NumberFormatException: For input string: "
                   "\"%s\"",
                   bad);
            return 0;
        }
    }
    if (!r->clean_living && !listed && g != NULL && g->has_master) {
        refuse(d, NS_CODE_CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
               "Broker %s is still alive, clean up failure", name);
        goto out;
    }
    for (size_t i = 0; !r->clean_living && i < n_ids; i++) {
        const char *cluster = g ? g->cluster : r->cluster;
        if (ns_ctl_live_alive(v->live, cluster, r->broker_name, ids[i],
                              v->now_ms)) {
            refuse(d, NS_CODE_CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
                   "Broker [%s,  %lld] is still alive, clean up failure", name,
                   (long long)ids[i]);
            goto out;
        }
    }
    if (g == NULL) {
        refuse(d, NS_CODE_CONTROLLER_INVALID_CLEAN_BROKER_METADATA,
               "Broker %s is not existed,clean broker data failure.", name);
        goto out;
    }
    int rv = event(d, NS_CTL_EV_CLEAN_BROKER_DATA, g->broker_name);
    if (rv != 0) {
        ns_free(ids);
        return rv;
    }
    d->event.ids = ids;
    d->event.n_ids = n_ids;
    return 0;
out:
    ns_free(ids);
    return 0;
}
