/* The whole route state as a versioned binary for snapshots, and its decoder
 * (into an empty route). Deterministic: tables are written in their sorted
 * order, so equal states give equal bytes on every replica. Not a wire format
 * for clients.
 *
 * WARNING: versioned format, part of the snapshot. Change it only by bumping
 * STATE_VERSION and keeping a decoder for the old version. Version 1, all
 * integers big-endian, strings as ns_buf_put_str (u32 length or 0xFFFFFFFF for
 * NULL, then bytes): u16 version u32 n_groups   { str name, str cluster, str
 * zone?, u8 acting_master, u32 n_addrs { u64 id, str addr } } u32 n_clusters {
 * str name, u32 n { str broker_name } } u32 n_topics   { str name, u32 n { str
 * broker_name, u32 read, u32 write, u32 perm, u32 sys_flag } } u32 n_lives    {
 * str cluster, str addr, u64 counter, u64 state_version, u64 timestamp, str
 * ha_addr?, u64 timeout_ms } u32 n_filters  { str cluster, str addr, u32 n {
 * str server } } u32 n_mapping_topics { str topic, u32 n { str topic, str
 * bname, str scope?, u64 epoch, u32 total_queues, u8 dirty, u32 n_ids { u32
 * key, u32 value } } } The broker-name reverse index is rebuilt, not stored.
 * Version 2 is version 1 with u64 regs after each live's timeout_ms (the
 * registrations an expiry compares, route_internal.h); it is written only when
 * some live has regs != 0, so a state without re-registrations keeps its
 * version 1 bytes and digest. */
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "route_internal.h"

#define STATE_VERSION 2
#define STATE_VERSION_NO_REGS 1

static void put_i64(struct ns_buf *b, int64_t v)
{
    ns_buf_put_u64(b, (uint64_t)v);
}

static void put_i32(struct ns_buf *b, int32_t v)
{
    ns_buf_put_u32(b, (uint32_t)v);
}

static void encode_groups(const struct ns_route *r, struct ns_buf *out)
{
    ns_buf_put_u32(out, (uint32_t)r->groups.n);
    for (size_t i = 0; i < r->groups.n; i++) {
        const struct group *g = r->groups.items[i];
        ns_buf_put_str(out, g->name);
        ns_buf_put_str(out, g->cluster);
        ns_buf_put_str(out, g->zone);
        ns_buf_put_u8(out, g->acting_master ? 1 : 0);
        ns_buf_put_u32(out, (uint32_t)g->n_addrs);
        for (size_t j = 0; j < g->n_addrs; j++) {
            put_i64(out, g->addrs[j].id);
            ns_buf_put_str(out, g->addrs[j].addr);
        }
    }
}

static void encode_sets(const struct svec *sets, struct ns_buf *out)
{
    ns_buf_put_u32(out, (uint32_t)sets->n);
    for (size_t i = 0; i < sets->n; i++) {
        const struct named_set *s = sets->items[i];
        ns_buf_put_str(out, s->name);
        ns_buf_put_u32(out, (uint32_t)s->items.n);
        for (size_t j = 0; j < s->items.n; j++) {
            ns_buf_put_str(out, s->items.items[j]);
        }
    }
}

void route_encode_topic(const struct topic *t, struct ns_buf *out)
{
    ns_buf_put_str(out, t->name);
    ns_buf_put_u32(out, (uint32_t)t->qds.n);
    for (size_t j = 0; j < t->qds.n; j++) {
        const struct ns_queue_data *qd = t->qds.items[j];
        ns_buf_put_str(out, qd->broker_name);
        put_i32(out, qd->read_queues);
        put_i32(out, qd->write_queues);
        put_i32(out, qd->perm);
        put_i32(out, qd->sys_flag);
    }
}

static void encode_topics(const struct ns_route *r, struct ns_buf *out)
{
    ns_buf_put_u32(out, (uint32_t)r->topics.n);
    for (size_t i = 0; i < r->topics.n; i++) {
        route_encode_topic(r->topics.items[i], out);
    }
}

static bool any_regs(const struct ns_route *r)
{
    for (size_t i = 0; i < r->lives.n; i++) {
        const struct live *l = r->lives.items[i];
        if (l->regs != 0) {
            return true;
        }
    }
    return false;
}

static void encode_lives(const struct ns_route *r, bool with_regs,
                         struct ns_buf *out)
{
    ns_buf_put_u32(out, (uint32_t)r->lives.n);
    for (size_t i = 0; i < r->lives.n; i++) {
        const struct live *l = r->lives.items[i];
        ns_buf_put_str(out, l->key.cluster);
        ns_buf_put_str(out, l->key.addr);
        put_i64(out, l->dv.counter);
        put_i64(out, l->dv.state_version);
        put_i64(out, l->dv.timestamp);
        ns_buf_put_str(out, l->ha_addr);
        put_i64(out, l->timeout_ms);
        if (with_regs) {
            ns_buf_put_u64(out, l->regs);
        }
    }
}

static void encode_filters(const struct ns_route *r, struct ns_buf *out)
{
    ns_buf_put_u32(out, (uint32_t)r->filters.n);
    for (size_t i = 0; i < r->filters.n; i++) {
        const struct filter *f = r->filters.items[i];
        ns_buf_put_str(out, f->key.cluster);
        ns_buf_put_str(out, f->key.addr);
        ns_buf_put_u32(out, (uint32_t)f->n);
        for (size_t j = 0; j < f->n; j++) {
            ns_buf_put_str(out, f->servers[j]);
        }
    }
}

static void encode_mappings(const struct ns_route *r, struct ns_buf *out)
{
    ns_buf_put_u32(out, (uint32_t)r->tmaps.n);
    for (size_t i = 0; i < r->tmaps.n; i++) {
        const struct tmap *tm = r->tmaps.items[i];
        ns_buf_put_str(out, tm->name);
        ns_buf_put_u32(out, (uint32_t)tm->infos.n);
        for (size_t j = 0; j < tm->infos.n; j++) {
            const struct ns_mapping_info *m = tm->infos.items[j];
            ns_buf_put_str(out, m->topic);
            ns_buf_put_str(out, m->bname);
            ns_buf_put_str(out, m->scope);
            put_i64(out, m->epoch);
            put_i32(out, m->total_queues);
            ns_buf_put_u8(out, m->dirty ? 1 : 0);
            ns_buf_put_u32(out, (uint32_t)m->n_curr_ids);
            for (size_t k = 0; k < m->n_curr_ids; k++) {
                put_i32(out, m->curr_ids[k].key);
                put_i32(out, m->curr_ids[k].value);
            }
        }
    }
}

static void encode_head(const struct ns_route *r, bool with_regs,
                        struct ns_buf *out)
{
    ns_buf_put_u16(out, with_regs ? STATE_VERSION : STATE_VERSION_NO_REGS);
    encode_groups(r, out);
    encode_sets(&r->clusters, out);
}

static void encode_tail(const struct ns_route *r, bool with_regs,
                        struct ns_buf *out)
{
    encode_lives(r, with_regs, out);
    encode_filters(r, out);
    encode_mappings(r, out);
}

static int encode_state(const struct ns_route *r, bool with_regs,
                        struct ns_buf *out)
{
    encode_head(r, with_regs, out);
    encode_topics(r, out);
    encode_tail(r, with_regs, out);
    return out->err;
}

int route_encode_state_around_topics(const struct ns_route *r,
                                     struct ns_buf *head, struct ns_buf *tail)
{
    bool with_regs = any_regs(r);
    encode_head(r, with_regs, head);
    encode_tail(r, with_regs, tail);
    return head->err != 0 ? head->err : tail->err;
}

int ns_route_encode_state(const struct ns_route *r, struct ns_buf *out)
{
    return encode_state(r, any_regs(r), out);
}

int ns_route_encode_state_data(const struct ns_route *r, struct ns_buf *out)
{
    return encode_state(r, false, out);
}

/* --- decoding --- */

/* A count of elements each at least min_size bytes long, bounded by what is
 * left. */
static int read_count(struct ns_rd *in, size_t min_size, size_t *n)
{
    uint32_t v = ns_rd_u32(in);

    if (in->err != 0 || (size_t)v > ns_rd_left(in) / min_size) {
        return NS_EPROTO;
    }
    *n = v;
    return 0;
}

/* A non-NULL string (owned copy). */
static int read_str(struct ns_rd *in, char **out)
{
    int rv = ns_rd_str(in, out);

    if (rv == 0 && *out == NULL) {
        rv = NS_EPROTO;
    }
    return rv;
}

/* Reads a string into a fixed scratch pointer, freeing it at the end of the
 * caller. */
#define READ_STR(in, var)                                                      \
    do {                                                                       \
        rv = read_str(in, &(var));                                             \
        if (rv != 0) {                                                         \
            goto err;                                                          \
        }                                                                      \
    } while (0)

static int decode_group(struct ns_route *r, struct ns_rd *in)
{
    char *name = NULL;
    char *cluster = NULL;
    char *zone = NULL;
    char *addr = NULL;
    struct group *g;
    size_t n;
    int rv;

    READ_STR(in, name);
    READ_STR(in, cluster);
    rv = ns_rd_str(in, &zone);
    if (rv != 0) {
        goto err;
    }
    if (route_find_group(r, name) != NULL) {
        rv = NS_EPROTO;
        goto err;
    }
    g = route_create_group(r, name, cluster);
    if (g == NULL) {
        rv = NS_ENOMEM;
        goto err;
    }
    g->zone = zone;
    zone = NULL;
    g->acting_master = ns_rd_u8(in) != 0;
    rv = read_count(in, 12, &n);
    for (size_t i = 0; rv == 0 && i < n; i++) {
        int64_t id = (int64_t)ns_rd_u64(in);
        bool changed;
        READ_STR(in, addr);
        if (group_find_addr(g, id) != NULL) {
            rv = NS_EPROTO;
            goto err;
        }
        rv = group_put_addr(g, id, addr, &changed);
        ns_free(addr);
        addr = NULL;
    }

err:
    ns_free(name);
    ns_free(cluster);
    ns_free(zone);
    ns_free(addr);
    return rv;
}

static int decode_cluster(struct ns_route *r, struct ns_rd *in)
{
    char *name = NULL;
    char *bname = NULL;
    size_t n;
    int rv;

    READ_STR(in, name);
    rv = read_count(in, 4, &n);
    if (rv == 0 &&
        (n == 0 || svec_find(&r->clusters, name, svec_cmp_named) != NULL)) {
        rv = NS_EPROTO; /* clusters are never empty, never repeated */
    }
    for (size_t i = 0; rv == 0 && i < n; i++) {
        READ_STR(in, bname);
        rv = route_add_cluster_name(r, name, bname);
        ns_free(bname);
        bname = NULL;
    }

err:
    ns_free(name);
    ns_free(bname);
    return rv;
}

static int decode_topic(struct ns_route *r, struct ns_rd *in)
{
    char *name = NULL;
    struct ns_queue_data qd = {0};
    size_t n;
    int rv;

    READ_STR(in, name);
    rv = read_count(in, 20, &n);
    if (rv == 0 && (n == 0 || route_find_topic(r, name) != NULL)) {
        rv = NS_EPROTO;
    }
    for (size_t i = 0; rv == 0 && i < n; i++) {
        struct topic *t;
        READ_STR(in, qd.broker_name);
        qd.read_queues = (int32_t)ns_rd_u32(in);
        qd.write_queues = (int32_t)ns_rd_u32(in);
        qd.perm = (int32_t)ns_rd_u32(in);
        qd.sys_flag = (int32_t)ns_rd_u32(in);
        t = route_find_topic(r, name);
        if (in->err != 0 || (t != NULL && svec_find(&t->qds, qd.broker_name,
                                                    svec_cmp_named) != NULL)) {
            rv = NS_EPROTO;
            goto err;
        }
        rv = route_put_qd(r, name, &qd, NULL);
        ns_free(qd.broker_name);
        qd.broker_name = NULL;
    }

err:
    ns_free(name);
    ns_free(qd.broker_name);
    return rv;
}

static int decode_live_regs(struct ns_route *r, struct ns_rd *in, bool regs)
{
    char *cluster = NULL;
    char *addr = NULL;
    char *ha = NULL;
    struct ns_data_version dv;
    int64_t timeout;
    int rv;

    READ_STR(in, cluster);
    READ_STR(in, addr);
    dv.counter = (int64_t)ns_rd_u64(in);
    dv.state_version = (int64_t)ns_rd_u64(in);
    dv.timestamp = (int64_t)ns_rd_u64(in);
    rv = ns_rd_str(in, &ha);
    if (rv != 0) {
        goto err;
    }
    timeout = (int64_t)ns_rd_u64(in);
    if (in->err != 0 || route_find_live(r, cluster, addr) != NULL) {
        rv = NS_EPROTO;
        goto err;
    }
    uint64_t n_regs = regs ? ns_rd_u64(in) : 0;
    if (in->err != 0) {
        rv = NS_EPROTO;
        goto err;
    }
    rv = route_put_live(r, cluster, addr, &dv, ha, timeout);
    if (rv == 0) {
        route_find_live(r, cluster, addr)->regs = n_regs;
    }

err:
    ns_free(cluster);
    ns_free(addr);
    ns_free(ha);
    return rv;
}

static int decode_live(struct ns_route *r, struct ns_rd *in)
{
    return decode_live_regs(r, in, false);
}

static int decode_live2(struct ns_route *r, struct ns_rd *in)
{
    return decode_live_regs(r, in, true);
}

static int decode_filter(struct ns_route *r, struct ns_rd *in)
{
    char *cluster = NULL;
    char *addr = NULL;
    char **servers = NULL;
    size_t n = 0;
    size_t got = 0;
    int rv;

    READ_STR(in, cluster);
    READ_STR(in, addr);
    rv = read_count(in, 4, &n);
    if (rv == 0 && (n == 0 || route_find_filter(r, cluster, addr) != NULL)) {
        rv = NS_EPROTO;
    }
    if (rv != 0) {
        goto err;
    }
    servers = ns_calloc(n, sizeof(*servers));
    if (servers == NULL) {
        rv = NS_ENOMEM;
        goto err;
    }
    for (; got < n; got++) {
        READ_STR(in, servers[got]);
    }
    rv = route_put_filter(r, cluster, addr, servers, n);

err:
    for (size_t i = 0; i < got; i++) {
        ns_free(servers[i]);
    }
    ns_free(servers);
    ns_free(cluster);
    ns_free(addr);
    return rv;
}

static int decode_mapping(struct ns_route *r, const char *topic,
                          struct ns_rd *in)
{
    struct ns_mapping_info m = {0};
    const struct tmap *tm;
    size_t n;
    int rv;

    READ_STR(in, m.topic);
    READ_STR(in, m.bname);
    rv = ns_rd_str(in, &m.scope);
    if (rv != 0) {
        goto err;
    }
    m.epoch = (int64_t)ns_rd_u64(in);
    m.total_queues = (int32_t)ns_rd_u32(in);
    m.dirty = ns_rd_u8(in) != 0;
    rv = read_count(in, 8, &n);
    tm = route_find_tmap(r, topic);
    if (rv == 0 &&
        (strcmp(m.topic, topic) != 0 ||
         (tm != NULL && svec_find(&tm->infos, m.bname, route_cmp_mapping)))) {
        rv = NS_EPROTO;
    }
    if (rv != 0) {
        goto err;
    }
    if (n > 0) {
        m.curr_ids = ns_malloc(n * sizeof(*m.curr_ids));
        if (m.curr_ids == NULL) {
            rv = NS_ENOMEM;
            goto err;
        }
    }
    for (size_t i = 0; i < n; i++) {
        m.curr_ids[i].key = (int32_t)ns_rd_u32(in);
        m.curr_ids[i].value = (int32_t)ns_rd_u32(in);
    }
    m.n_curr_ids = n;
    rv = in->err != 0 ? NS_EPROTO : route_merge_mapping(r, &m);

err:
    ns_free(m.topic);
    ns_free(m.bname);
    ns_free(m.scope);
    ns_free(m.curr_ids);
    return rv;
}

static int decode_mapping_topic(struct ns_route *r, struct ns_rd *in)
{
    char *topic = NULL;
    size_t n;
    int rv;

    READ_STR(in, topic);
    rv = read_count(in, 29, &n);
    if (rv == 0 && (n == 0 || route_find_tmap(r, topic) != NULL)) {
        rv = NS_EPROTO;
    }
    for (size_t i = 0; rv == 0 && i < n; i++) {
        rv = decode_mapping(r, topic, in);
    }

err:
    ns_free(topic);
    return rv;
}

typedef int (*decode_fn)(struct ns_route *r, struct ns_rd *in);

int ns_route_decode_state(struct ns_route *r, struct ns_rd *in)
{
    route_bump_epoch(r);
    static const struct {
        decode_fn fn;
        size_t min_size;
    } tables[] = {
        {decode_group, 17}, {decode_cluster, 12}, {decode_topic, 12},
        {decode_live, 44},  {decode_filter, 16},  {decode_mapping_topic, 8},
    };
    int rv = 0;
    uint16_t version;

    if (r->groups.n != 0 || r->topics.n != 0 || r->lives.n != 0 ||
        r->clusters.n != 0) {
        return NS_EINVAL;
    }
    version = ns_rd_u16(in);
    if (version != STATE_VERSION && version != STATE_VERSION_NO_REGS) {
        return in->err != 0 ? NS_EPROTO : NS_EVERSION;
    }
    for (size_t k = 0; rv == 0 && k < sizeof(tables) / sizeof(tables[0]); k++) {
        size_t n;
        bool regs = version == STATE_VERSION && tables[k].fn == decode_live;
        decode_fn fn = regs ? decode_live2 : tables[k].fn;
        rv = read_count(in, tables[k].min_size + (regs ? 8 : 0), &n);
        for (size_t i = 0; rv == 0 && i < n; i++) {
            rv = fn(r, in);
        }
    }
    if (rv == 0 && in->err != 0) {
        rv = NS_EPROTO;
    }
    return rv;
}
