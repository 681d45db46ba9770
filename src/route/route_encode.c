/* Reply bodies built from the route tables (docs/protocol.md §4.6-4.9, 4.12,
 * §5.7, §5.8): TopicRouteData with the acting-master rewrite and zone filter,
 * ClusterInfo, topic lists, unit lists and BrokerMemberGroup, in sorted order.
 * Caching encoded routes is in route_cache.c. */
#include <strings.h>
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "route_internal.h"

#define SYNC_MEMBER_PREFIX "rmq_sys_SYNC_BROKER_MEMBER_"

static void write_addrs(struct ns_json_writer *w, const struct group *g,
                        bool acting_rewrite)
{
    ns_json_write_obj_begin(w);
    if (!acting_rewrite) {
        for (size_t i = 0; i < g->n_addrs; i++) {
            ns_json_write_key_int(w, g->addrs[i].id);
            ns_json_write_str(w, g->addrs[i].addr);
        }
    } else {
        /* The lowest id (addrs[0]) is shown as id 0; the group has no id 0. */
        for (size_t i = 1; i < g->n_addrs && g->addrs[i].id < 0; i++) {
            ns_json_write_key_int(w, g->addrs[i].id);
            ns_json_write_str(w, g->addrs[i].addr);
        }
        ns_json_write_key_int(w, 0);
        ns_json_write_str(w, g->addrs[0].addr);
        for (size_t i = 1; i < g->n_addrs; i++) {
            if (g->addrs[i].id > 0) {
                ns_json_write_key_int(w, g->addrs[i].id);
                ns_json_write_str(w, g->addrs[i].addr);
            }
        }
    }
    ns_json_write_obj_end(w);
}

/* omit_5x: the BrokerData of Java 4.9.8, which has neither field. */
static void write_broker_data(struct ns_json_writer *w, const struct group *g,
                              bool acting_rewrite, bool omit_5x)
{
    ns_json_write_obj_begin(w);
    ns_json_write_key(w, "brokerAddrs");
    write_addrs(w, g, acting_rewrite);
    ns_json_write_key(w, "brokerName");
    ns_json_write_str(w, g->name);
    ns_json_write_key(w, "cluster");
    ns_json_write_str(w, g->cluster);
    if (omit_5x) {
        ns_json_write_obj_end(w);
        return;
    }
    ns_json_write_key(w, "enableActingMaster");
    ns_json_write_bool(w, g->acting_master);
    if (g->zone != NULL) {
        ns_json_write_key(w, "zoneName");
        ns_json_write_str(w, g->zone);
    }
    ns_json_write_obj_end(w);
}

static void write_queue_data(struct ns_json_writer *w,
                             const struct ns_queue_data *qd)
{
    ns_json_write_obj_begin(w);
    ns_json_write_key(w, "brokerName");
    ns_json_write_str(w, qd->broker_name);
    ns_json_write_key(w, "perm");
    ns_json_write_int(w, qd->perm);
    ns_json_write_key(w, "readQueueNums");
    ns_json_write_int(w, qd->read_queues);
    ns_json_write_key(w, "topicSysFlag");
    ns_json_write_int(w, qd->sys_flag);
    ns_json_write_key(w, "writeQueueNums");
    ns_json_write_int(w, qd->write_queues);
    ns_json_write_obj_end(w);
}

static int cmp_id_pair(const struct ns_id_pair *a, const struct ns_id_pair *b)
{
    return (a->key > b->key) - (a->key < b->key);
}

static void write_mapping(struct ns_json_writer *w,
                          const struct ns_mapping_info *m)
{
    int32_t last = 0;

    ns_json_write_obj_begin(w);
    ns_json_write_key(w, "bname");
    ns_json_write_str(w, m->bname);
    ns_json_write_key(w, "currIdMap");
    ns_json_write_obj_begin(w);
    /* Ascending keys without sorting the stored array: repeated minimum search.
     */
    for (size_t done = 0; done < m->n_curr_ids; done++) {
        const struct ns_id_pair *next = NULL;
        for (size_t i = 0; i < m->n_curr_ids; i++) {
            const struct ns_id_pair *p = &m->curr_ids[i];
            if ((done == 0 || p->key > last) &&
                (next == NULL || cmp_id_pair(p, next) < 0)) {
                next = p;
            }
        }
        if (next == NULL) {
            break;
        }
        ns_json_write_key_int(w, next->key);
        ns_json_write_int(w, next->value);
        last = next->key;
    }
    ns_json_write_obj_end(w);
    ns_json_write_key(w, "dirty");
    ns_json_write_bool(w, m->dirty);
    ns_json_write_key(w, "epoch");
    ns_json_write_int(w, m->epoch);
    if (m->scope != NULL) {
        ns_json_write_key(w, "scope");
        ns_json_write_str(w, m->scope);
    }
    ns_json_write_key(w, "topic");
    ns_json_write_str(w, m->topic);
    ns_json_write_key(w, "totalQueues");
    ns_json_write_int(w, m->total_queues);
    ns_json_write_obj_end(w);
}

static int finish(struct ns_buf *out)
{
    return out->err != 0 ? out->err : 0;
}

/* --- TopicRouteData --- */

/* What one queue data of the topic contributes to the reply. */
struct route_view {
    const struct group *g; /* NULL when the broker name has no group */
    bool acting_rewrite;
    bool dropped; /* zone filter */
};

static bool has_master(const struct route_view *v)
{
    return v->acting_rewrite || group_find_addr(v->g, 0) != NULL;
}

static void apply_acting_master(const struct topic *t, struct route_view *views)
{
    bool need = false;

    if (strncmp(t->name, SYNC_MEMBER_PREFIX, strlen(SYNC_MEMBER_PREFIX)) == 0) {
        return;
    }
    for (size_t i = 0; i < t->qds.n; i++) {
        const struct group *g = views[i].g;
        if (g != NULL && g->n_addrs > 0 && group_find_addr(g, 0) == NULL) {
            need = true;
        }
    }
    for (size_t i = 0; need && i < t->qds.n; i++) {
        const struct group *g = views[i].g;
        const struct ns_queue_data *qd = t->qds.items[i];
        if (g != NULL && g->n_addrs > 0 && group_find_addr(g, 0) == NULL &&
            g->acting_master && (qd->perm & NS_PERM_WRITE) == 0) {
            views[i].acting_rewrite = true;
        }
    }
}

static void apply_zone(const struct topic *t, struct route_view *views,
                       const char *zone)
{
    for (size_t i = 0; i < t->qds.n; i++) {
        const struct group *g = views[i].g;
        if (g != NULL && has_master(&views[i]) &&
            (g->zone == NULL || strcasecmp(g->zone, zone) != 0)) {
            views[i].dropped = true;
        }
    }
}

static int cmp_filter_addr(const void *item, const void *key)
{
    const struct filter *f = item;

    return strcmp(f->key.addr, key);
}

static int write_filter_table(const struct ns_route *r, const struct topic *t,
                              const struct route_view *views,
                              struct ns_json_writer *w)
{
    struct svec found = {0}; /* borrowed struct filter *, by address */
    int rv = 0;

    for (size_t i = 0; r->filters.n > 0 && i < t->qds.n; i++) {
        const struct group *g = views[i].g;
        for (size_t j = 0; g != NULL && !views[i].dropped && j < g->n_addrs;
             j++) {
            struct filter *f =
                route_find_filter(r, g->cluster, g->addrs[j].addr);
            bool dup;
            size_t pos;
            if (f == NULL) {
                continue;
            }
            pos = svec_search(&found, f->key.addr, cmp_filter_addr, &dup);
            if (dup) {
                found.items[pos] = f;
            } else if (svec_insert(&found, pos, f) != 0) {
                rv = NS_ENOMEM;
                goto out;
            }
        }
    }
    ns_json_write_obj_begin(w);
    for (size_t i = 0; i < found.n; i++) {
        const struct filter *f = found.items[i];
        ns_json_write_key(w, f->key.addr);
        ns_json_write_arr_begin(w);
        for (size_t k = 0; k < f->n; k++) {
            ns_json_write_str(w, f->servers[k]);
        }
        ns_json_write_arr_end(w);
    }
    ns_json_write_obj_end(w);

out:
    svec_close(&found);
    return rv;
}

static void write_route(const struct ns_route *r, const struct topic *t,
                        const struct route_view *views,
                        const struct ns_route_query *q,
                        struct ns_json_writer *w, int *rv)
{
    const struct tmap *tm = route_find_tmap(r, t->name);

    ns_json_write_obj_begin(w);
    ns_json_write_key(w, "brokerDatas");
    ns_json_write_arr_begin(w);
    for (size_t i = 0; i < t->qds.n; i++) {
        if (views[i].g != NULL && !views[i].dropped) {
            write_broker_data(w, views[i].g, views[i].acting_rewrite,
                              q->omit_5x);
        }
    }
    ns_json_write_arr_end(w);
    ns_json_write_key(w, "filterServerTable");
    *rv = write_filter_table(r, t, views, w);
    if (q->order_topic_conf != NULL) {
        ns_json_write_key(w, "orderTopicConf");
        ns_json_write_str(w, q->order_topic_conf);
    }
    ns_json_write_key(w, "queueDatas");
    ns_json_write_arr_begin(w);
    for (size_t i = 0; i < t->qds.n; i++) {
        if (!views[i].dropped) {
            write_queue_data(w, t->qds.items[i]);
        }
    }
    ns_json_write_arr_end(w);
    if (tm != NULL && tm->infos.n > 0 && !q->omit_5x) {
        ns_json_write_key(w, "topicQueueMappingByBroker");
        ns_json_write_obj_begin(w);
        for (size_t i = 0; i < tm->infos.n; i++) {
            const struct ns_mapping_info *m = tm->infos.items[i];
            ns_json_write_key(w, m->bname);
            write_mapping(w, m);
        }
        ns_json_write_obj_end(w);
    }
    ns_json_write_obj_end(w);
}

int ns_route_encode_topic_route(const struct ns_route *r,
                                const struct ns_route_query *q,
                                struct ns_buf *out)
{
    const struct topic *t =
        q->topic != NULL ? route_find_topic(r, q->topic) : NULL;
    struct route_view *views;
    bool any_group = false;
    struct ns_json_writer w;
    int rv = 0;

    if (t == NULL) {
        return NS_ENOTFOUND;
    }
    views = ns_calloc(t->qds.n, sizeof(*views));
    if (views == NULL) {
        return NS_ENOMEM;
    }
    for (size_t i = 0; i < t->qds.n; i++) {
        const struct ns_queue_data *qd = t->qds.items[i];
        views[i].g = route_find_group(r, qd->broker_name);
        any_group = any_group || views[i].g != NULL;
    }
    if (!any_group) {
        rv = NS_ENOTFOUND;
        goto out;
    }
    if (q->support_acting_master) {
        apply_acting_master(t, views);
    }
    if (q->zone_name != NULL) {
        apply_zone(t, views, q->zone_name);
    }
    ns_json_write_init(&w, out,
                       q->zone_name != NULL ? NS_JSON_LEGACY : q->flavour);
    write_route(r, t, views, q, &w, &rv);
    r->stats->n_encodes++;
    if (rv == 0) {
        rv = finish(out);
    }

out:
    ns_free(views);
    return rv;
}

/* --- ClusterInfo, lists, member group --- */

int ns_route_encode_cluster_info(const struct ns_route *r, struct ns_buf *out)
{
    return ns_route_encode_cluster_info_shaped(r, false, out);
}

int ns_route_encode_cluster_info_shaped(const struct ns_route *r, bool omit_5x,
                                        struct ns_buf *out)
{
    struct ns_json_writer w;

    ns_json_write_init(&w, out, NS_JSON_LEGACY);
    ns_json_write_obj_begin(&w);
    ns_json_write_key(&w, "brokerAddrTable");
    ns_json_write_obj_begin(&w);
    for (size_t i = 0; i < r->groups.n; i++) {
        const struct group *g = r->groups.items[i];
        ns_json_write_key(&w, g->name);
        write_broker_data(&w, g, false, omit_5x);
    }
    ns_json_write_obj_end(&w);
    ns_json_write_key(&w, "clusterAddrTable");
    ns_json_write_obj_begin(&w);
    for (size_t i = 0; i < r->clusters.n; i++) {
        const struct named_set *c = r->clusters.items[i];
        ns_json_write_key(&w, c->name);
        ns_json_write_arr_begin(&w);
        for (size_t j = 0; j < c->items.n; j++) {
            ns_json_write_str(&w, c->items.items[j]);
        }
        ns_json_write_arr_end(&w);
    }
    ns_json_write_obj_end(&w);
    ns_json_write_obj_end(&w);
    return finish(out);
}

/* {"brokerAddr":..,"topicList":[...]} over a sorted set of borrowed strings. */
static int write_topic_list(const struct svec *names, const char *broker_addr,
                            struct ns_buf *out)
{
    struct ns_json_writer w;

    ns_json_write_init(&w, out, NS_JSON_LEGACY);
    ns_json_write_obj_begin(&w);
    if (broker_addr != NULL) {
        ns_json_write_key(&w, "brokerAddr");
        ns_json_write_str(&w, broker_addr);
    }
    ns_json_write_key(&w, "topicList");
    ns_json_write_arr_begin(&w);
    for (size_t i = 0; i < names->n; i++) {
        ns_json_write_str(&w, *(char *const *)names->items[i]);
    }
    ns_json_write_arr_end(&w);
    ns_json_write_obj_end(&w);
    return finish(out);
}

int ns_route_encode_all_topics(const struct ns_route *r, struct ns_buf *out)
{
    /* struct topic starts with its name, which write_topic_list reads. */
    return write_topic_list(&r->topics, NULL, out);
}

/* Adds a borrowed string to a sorted set of "named" items: the set stores
 * pointers to the char * fields themselves so write_topic_list can read every
 * set alike. */
static int add_borrowed(struct svec *set, char *const *name)
{
    bool found;
    size_t pos = svec_search(set, *name, svec_cmp_named, &found);

    return found ? 0 : svec_insert(set, pos, (void *)name);
}

int ns_route_encode_topics_by_cluster(const struct ns_route *r,
                                      const char *cluster, struct ns_buf *out)
{
    const struct named_set *c =
        cluster != NULL ? svec_find(&r->clusters, cluster, svec_cmp_named)
                        : NULL;
    struct svec set = {0};
    int rv = 0;

    for (size_t i = 0; c != NULL && i < c->items.n; i++) {
        const struct named_set *b = route_find_bidx(r, c->items.items[i]);
        for (size_t j = 0; b != NULL && j < b->items.n; j++) {
            rv = add_borrowed(&set, (char *const *)&b->items.items[j]);
            if (rv != 0) {
                goto out;
            }
        }
    }
    rv = write_topic_list(&set, NULL, out);

out:
    svec_close(&set);
    return rv;
}

int ns_route_encode_system_topics(const struct ns_route *r, struct ns_buf *out)
{
    struct svec set = {0};
    const char *addr = NULL;
    int rv = 0;

    for (size_t i = 0; i < r->clusters.n; i++) {
        const struct named_set *c = r->clusters.items[i];
        rv = add_borrowed(&set, &c->name);
        for (size_t j = 0; rv == 0 && j < c->items.n; j++) {
            rv = add_borrowed(&set, (char *const *)&c->items.items[j]);
        }
        if (rv != 0) {
            goto out;
        }
    }
    for (size_t i = 0; addr == NULL && i < r->groups.n; i++) {
        const struct group *g = r->groups.items[i];
        if (g->n_addrs > 0) {
            addr = g->addrs[0].addr;
        }
    }
    rv = write_topic_list(&set, addr, out);

out:
    svec_close(&set);
    return rv;
}

int ns_route_encode_unit_topics(const struct ns_route *r,
                                enum ns_unit_list which, struct ns_buf *out)
{
    struct svec set = {0};
    int rv = 0;

    for (size_t i = 0; i < r->topics.n; i++) {
        struct topic *t = r->topics.items[i];
        const struct ns_queue_data *first = t->qds.items[0];
        int32_t f = first->sys_flag;
        bool unit = (f & NS_SYSFLAG_UNIT) != 0;
        bool sub = (f & NS_SYSFLAG_UNIT_SUB) != 0;
        bool take = which == NS_UNIT_TOPICS       ? unit
                    : which == NS_UNIT_SUB_TOPICS ? sub
                                                  : sub && !unit;
        if (take) {
            /* Topics come in order: appending keeps the set sorted. */
            rv = svec_insert(&set, set.n, &t->name);
            if (rv != 0) {
                goto out;
            }
        }
    }
    rv = write_topic_list(&set, NULL, out);

out:
    svec_close(&set);
    return rv;
}

int ns_route_encode_member_group(const struct ns_route *r, const char *cluster,
                                 const char *broker_name, struct ns_buf *out)
{
    const struct group *g =
        broker_name != NULL ? route_find_group(r, broker_name) : NULL;
    struct ns_json_writer w;

    ns_json_write_init(&w, out, NS_JSON_LEGACY);
    ns_json_write_obj_begin(&w);
    ns_json_write_key(&w, "brokerMemberGroup");
    ns_json_write_obj_begin(&w);
    ns_json_write_key(&w, "brokerAddrs");
    if (g != NULL) {
        write_addrs(&w, g, false);
    } else {
        ns_json_write_obj_begin(&w);
        ns_json_write_obj_end(&w);
    }
    if (broker_name != NULL) {
        ns_json_write_key(&w, "brokerName");
        ns_json_write_str(&w, broker_name);
    }
    if (cluster != NULL) {
        ns_json_write_key(&w, "cluster");
        ns_json_write_str(&w, cluster);
    }
    ns_json_write_obj_end(&w);
    ns_json_write_obj_end(&w);
    return finish(out);
}
