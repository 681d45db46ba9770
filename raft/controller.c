/* The controller table (include/raftns/controller.h): groups keyed by broker
 * name, the one total function that applies the five events, and the table's
 * part of the snapshot. It decides nothing (controller_decide.c does, on the
 * leader) and knows no heartbeat (controller_live.c). Pure.
 *
 * WARNING: ns_ctl_encode_state is part of the versioned snapshot format and
 * ns_ctl_event_encode of the versioned command format: never change either;
 * add a snapshot version or a command type. */
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/controller.h"
#include "raftns/err.h"
#include "raftns/sorted.h"

void ns_ctl_table_init(struct ns_ctl_table *t)
{
    memset(t, 0, sizeof *t);
}

static void member_close(struct ns_ctl_member *m)
{
    ns_free(m->addr);
    ns_free(m->check_code);
}

static void group_close(struct ns_ctl_group *g)
{
    ns_free(g->broker_name);
    ns_free(g->cluster);
    for (size_t i = 0; i < g->n_members; i++) {
        member_close(&g->members[i]);
    }
    ns_free(g->members);
    ns_free(g->sync);
    memset(g, 0, sizeof *g);
}

void ns_ctl_table_close(struct ns_ctl_table *t)
{
    for (size_t i = 0; i < t->n; i++) {
        group_close(&t->groups[i]);
    }
    ns_free(t->groups);
    ns_ctl_table_init(t);
}

static size_t search_group(const struct ns_ctl_table *t, const char *name,
                           bool *found)
{
    return ns_sorted_search(t->groups, t->n, sizeof *t->groups,
                            offsetof(struct ns_ctl_group, broker_name), name,
                            found);
}

const struct ns_ctl_group *ns_ctl_find(const struct ns_ctl_table *t,
                                       const char *broker_name)
{
    bool found = false;
    size_t i = broker_name ? search_group(t, broker_name, &found) : 0;
    return found ? &t->groups[i] : NULL;
}

static size_t search_member(const struct ns_ctl_group *g, int64_t id,
                            bool *found)
{
    return ns_sorted_search_i64(g->members, g->n_members, sizeof *g->members,
                                offsetof(struct ns_ctl_member, id), id, found);
}

const struct ns_ctl_member *ns_ctl_find_member(const struct ns_ctl_group *g,
                                               int64_t id)
{
    bool found;
    size_t i = search_member(g, id, &found);
    return found ? &g->members[i] : NULL;
}

static size_t search_id(const int64_t *ids, size_t n, int64_t id, bool *found)
{
    return ns_sorted_search_i64(ids, n, sizeof *ids, 0, id, found);
}

bool ns_ctl_in_sync(const struct ns_ctl_group *g, int64_t id)
{
    bool found;
    search_id(g->sync, g->n_sync, id, &found);
    return found;
}

/* --- apply --- */

static struct ns_ctl_group *find_mut(struct ns_ctl_table *t, const char *name)
{
    return (struct ns_ctl_group *)ns_ctl_find(t, name);
}

static int set_ids(struct ns_ctl_group *g, const int64_t *ids, size_t n)
{
    int64_t *copy = ns_malloc((n ? n : 1) * sizeof *copy);
    if (copy == NULL) {
        return NS_ENOMEM;
    }
    if (n > 0) {
        memcpy(copy, ids, n * sizeof *copy);
    }
    ns_free(g->sync);
    g->sync = copy;
    g->n_sync = n;
    return 0;
}

static int apply_alter(struct ns_ctl_table *t, const struct ns_ctl_event *e)
{
    struct ns_ctl_group *g = find_mut(t, e->broker_name);
    if (g == NULL) {
        return 0;
    }
    int rv = set_ids(g, e->ids, e->n_ids);
    if (rv == 0) {
        g->sync_epoch++;
    }
    return rv;
}

static int add_member(struct ns_ctl_group *g, const struct ns_ctl_event *e)
{
    bool found;
    size_t i = search_member(g, e->id, &found);
    if (found) {
        return 0; /* a retried apply with the same check code */
    }
    struct ns_ctl_member m = {e->id, ns_strdup(e->broker_addr),
                              ns_strdup(e->check_code)};
    struct ns_ctl_member *arr =
        (m.addr || !e->broker_addr) && (m.check_code || !e->check_code)
            ? ns_realloc(g->members, (g->n_members + 1) * sizeof *arr)
            : NULL;
    if (arr == NULL) {
        member_close(&m);
        return NS_ENOMEM;
    }
    g->members = arr;
    memmove(&arr[i + 1], &arr[i], (g->n_members - i) * sizeof *arr);
    arr[i] = m;
    g->n_members++;
    /* Java adds one per admitted id; never handing out an id at or below one
     * applied ahead of it (docs/controller.md §9) keeps 1012 and 1013 from
     * looping, and stock brokers (who apply 1012's id) see Java's numbers. */
    g->next_id = g->next_id + 1 > e->id + 1 ? g->next_id + 1 : e->id + 1;
    return 0;
}

static int apply_broker_id(struct ns_ctl_table *t, const struct ns_ctl_event *e)
{
    struct ns_ctl_group *g = find_mut(t, e->broker_name);
    if (g != NULL) {
        return add_member(g, e);
    }
    bool found;
    size_t i = search_group(t, e->broker_name, &found);
    struct ns_ctl_group fresh = {0};
    fresh.broker_name = ns_strdup(e->broker_name);
    fresh.cluster = ns_strdup(e->cluster ? e->cluster : "");
    fresh.next_id = NS_CTL_FIRST_ID;
    fresh.sync = ns_malloc(sizeof *fresh.sync);
    int rv = NS_ENOMEM;
    if (fresh.broker_name == NULL || fresh.cluster == NULL ||
        fresh.sync == NULL) {
        goto err_after_fresh;
    }
    if ((rv = add_member(&fresh, e)) != 0) {
        goto err_after_fresh;
    }
    struct ns_ctl_group *arr = ns_realloc(t->groups, (t->n + 1) * sizeof *arr);
    if (arr == NULL) {
        rv = NS_ENOMEM;
        goto err_after_fresh;
    }
    t->groups = arr;
    memmove(&arr[i + 1], &arr[i], (t->n - i) * sizeof *arr);
    arr[i] = fresh;
    t->n++;
    return 0;

err_after_fresh:
    group_close(&fresh);
    return rv;
}

static int apply_elect(struct ns_ctl_table *t, const struct ns_ctl_event *e)
{
    struct ns_ctl_group *g = find_mut(t, e->broker_name);
    if (g == NULL) {
        return 0;
    }
    if (e->elected) {
        int rv = set_ids(g, &e->id, 1);
        if (rv != 0) {
            return rv;
        }
        g->has_master = true;
        g->master_id = e->id;
        g->sync_epoch++;
    } else {
        g->has_master = false;
        g->master_id = 0;
    }
    g->master_epoch++;
    return 0;
}

static void remove_group(struct ns_ctl_table *t, struct ns_ctl_group *g)
{
    size_t i = (size_t)(g - t->groups);
    group_close(g);
    memmove(&t->groups[i], &t->groups[i + 1],
            (t->n - i - 1) * sizeof *t->groups);
    t->n--;
}

/* Java keeps the member table and the SyncStateSet in two maps and drops each
 * that becomes empty; a group missing either is unknown to every request, so
 * the whole group goes. The master id stays even when it was cleaned
 * (upstream behaviour, docs/controller.md §4). */
static int apply_clean(struct ns_ctl_table *t, const struct ns_ctl_event *e)
{
    struct ns_ctl_group *g = find_mut(t, e->broker_name);
    if (g == NULL) {
        return 0;
    }
    for (size_t k = 0; k < e->n_ids; k++) {
        bool found;
        size_t i = search_member(g, e->ids[k], &found);
        if (found) {
            member_close(&g->members[i]);
            memmove(&g->members[i], &g->members[i + 1],
                    (g->n_members - i - 1) * sizeof *g->members);
            g->n_members--;
        }
        i = search_id(g->sync, g->n_sync, e->ids[k], &found);
        if (found) {
            memmove(&g->sync[i], &g->sync[i + 1],
                    (g->n_sync - i - 1) * sizeof *g->sync);
            g->n_sync--;
        }
    }
    if (e->n_ids == 0 || g->n_members == 0 || g->n_sync == 0) {
        remove_group(t, g);
    }
    return 0;
}

static int apply_address(struct ns_ctl_table *t, const struct ns_ctl_event *e)
{
    struct ns_ctl_group *g = find_mut(t, e->broker_name);
    bool found = false;
    size_t i = g ? search_member(g, e->id, &found) : 0;
    if (!found) {
        return 0;
    }
    char *addr = ns_strdup(e->broker_addr ? e->broker_addr : "");
    if (addr == NULL) {
        return NS_ENOMEM;
    }
    ns_free(g->members[i].addr);
    g->members[i].addr = addr;
    return 0;
}

int ns_ctl_apply(struct ns_ctl_table *t, enum ns_ctl_event_type type,
                 const struct ns_ctl_event *e)
{
    if (e->broker_name == NULL) {
        return 0; /* decode never yields one; nothing to key it by */
    }
    switch (type) {
    case NS_CTL_EV_ALTER_SYNC_STATE_SET:
        return apply_alter(t, e);
    case NS_CTL_EV_APPLY_BROKER_ID:
        return apply_broker_id(t, e);
    case NS_CTL_EV_ELECT_MASTER:
        return apply_elect(t, e);
    case NS_CTL_EV_CLEAN_BROKER_DATA:
        return apply_clean(t, e);
    case NS_CTL_EV_UPDATE_BROKER_ADDRESS:
        return apply_address(t, e);
    }
    return 0;
}

/* --- snapshot state --- */

void ns_ctl_encode_state(const struct ns_ctl_table *t, struct ns_buf *out)
{
    ns_buf_put_u32(out, (uint32_t)t->n);
    for (size_t i = 0; i < t->n; i++) {
        const struct ns_ctl_group *g = &t->groups[i];
        ns_buf_put_str(out, g->broker_name);
        ns_buf_put_str(out, g->cluster);
        ns_buf_put_u64(out, (uint64_t)g->next_id);
        ns_buf_put_u8(out, g->has_master ? 1 : 0);
        ns_buf_put_u64(out, (uint64_t)g->master_id);
        ns_buf_put_u32(out, (uint32_t)g->master_epoch);
        ns_buf_put_u32(out, (uint32_t)g->sync_epoch);
        ns_buf_put_u32(out, (uint32_t)g->n_members);
        for (size_t k = 0; k < g->n_members; k++) {
            ns_buf_put_u64(out, (uint64_t)g->members[k].id);
            ns_buf_put_str(out, g->members[k].addr);
            ns_buf_put_str(out, g->members[k].check_code);
        }
        ns_buf_put_u32(out, (uint32_t)g->n_sync);
        for (size_t k = 0; k < g->n_sync; k++) {
            ns_buf_put_u64(out, (uint64_t)g->sync[k]);
        }
    }
}

/* A count of at most max elements of at least min_size bytes each. */
static int rd_count(struct ns_rd *in, size_t min_size, size_t max, size_t *n)
{
    uint32_t v = ns_rd_u32(in);
    if (in->err || v > max || v > ns_rd_left(in) / min_size) {
        return NS_EPROTO;
    }
    *n = v;
    return 0;
}

/* A string that must be there and be of bounded length. */
static int rd_name(struct ns_rd *in, char **out)
{
    int rv = ns_rd_str(in, out);
    if (rv == 0 && (*out == NULL || strlen(*out) > NS_CTL_MAX_STR)) {
        rv = NS_EPROTO;
    }
    return rv;
}

/* Strictly increasing ids: the encoding is canonical. */
static int rd_ids(struct ns_rd *in, int64_t **ids, size_t *n_out)
{
    size_t n;
    int rv = rd_count(in, 8, NS_CTL_MAX_MEMBERS, &n);
    if (rv != 0) {
        return rv;
    }
    if ((*ids = ns_malloc((n ? n : 1) * sizeof **ids)) == NULL) {
        return NS_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        (*ids)[i] = (int64_t)ns_rd_u64(in);
        if (i > 0 && (*ids)[i - 1] >= (*ids)[i]) {
            rv = NS_EPROTO;
        }
    }
    *n_out = n;
    return rv != 0 ? rv : in->err;
}

static int decode_members(struct ns_rd *in, struct ns_ctl_group *g)
{
    size_t n;
    int rv = rd_count(in, 16, NS_CTL_MAX_MEMBERS, &n);
    if (rv != 0) {
        return rv;
    }
    if ((g->members = ns_calloc(n ? n : 1, sizeof *g->members)) == NULL) {
        return NS_ENOMEM;
    }
    for (; g->n_members < n; g->n_members++) {
        struct ns_ctl_member *m = &g->members[g->n_members];
        m->id = (int64_t)ns_rd_u64(in);
        rv = rd_name(in, &m->addr);
        if (rv == 0) {
            rv = ns_rd_str(in, &m->check_code);
        }
        if (rv == 0 && g->n_members > 0 && m[-1].id >= m->id) {
            rv = NS_EPROTO;
        }
        if (rv != 0) {
            g->n_members++; /* partially filled: group_close frees it */
            return rv;
        }
    }
    return 0;
}

static int decode_group(struct ns_rd *in, struct ns_ctl_group *g)
{
    int rv = rd_name(in, &g->broker_name);
    if (rv == 0) {
        rv = rd_name(in, &g->cluster);
    }
    if (rv != 0) {
        return rv;
    }
    g->next_id = (int64_t)ns_rd_u64(in);
    uint8_t has_master = ns_rd_u8(in);
    g->master_id = (int64_t)ns_rd_u64(in);
    g->master_epoch = (int32_t)ns_rd_u32(in);
    g->sync_epoch = (int32_t)ns_rd_u32(in);
    if (in->err || has_master > 1) {
        return NS_EPROTO;
    }
    g->has_master = has_master == 1;
    rv = decode_members(in, g);
    if (rv == 0) {
        rv = rd_ids(in, &g->sync, &g->n_sync);
    }
    return rv;
}

int ns_ctl_decode_state(struct ns_ctl_table *t, struct ns_rd *in)
{
    size_t n;
    int rv = rd_count(in, 41, NS_CTL_MAX_GROUPS, &n);
    if (rv != 0) {
        return rv;
    }
    if ((t->groups = ns_calloc(n ? n : 1, sizeof *t->groups)) == NULL) {
        return NS_ENOMEM;
    }
    for (; t->n < n; t->n++) {
        struct ns_ctl_group *g = &t->groups[t->n];
        rv = decode_group(in, g);
        if (rv == 0 && t->n > 0 &&
            strcmp(g[-1].broker_name, g->broker_name) >= 0) {
            rv = NS_EPROTO;
        }
        if (rv != 0) {
            t->n++;
            ns_ctl_table_close(t);
            return rv;
        }
    }
    return 0;
}

/* --- events --- */

void ns_ctl_event_close(struct ns_ctl_event *e)
{
    ns_free(e->cluster);
    ns_free(e->broker_name);
    ns_free(e->broker_addr);
    ns_free(e->check_code);
    ns_free(e->ids);
    memset(e, 0, sizeof *e);
}

static void put_ids(struct ns_buf *out, const int64_t *ids, size_t n)
{
    ns_buf_put_u32(out, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        ns_buf_put_u64(out, (uint64_t)ids[i]);
    }
}

static const char *or_empty(const char *s)
{
    return s != NULL ? s : "";
}

void ns_ctl_event_encode(enum ns_ctl_event_type type,
                         const struct ns_ctl_event *e, struct ns_buf *out)
{
    switch (type) {
    case NS_CTL_EV_ALTER_SYNC_STATE_SET:
    case NS_CTL_EV_CLEAN_BROKER_DATA:
        ns_buf_put_str(out, or_empty(e->broker_name));
        put_ids(out, e->ids, e->n_ids);
        break;
    case NS_CTL_EV_APPLY_BROKER_ID:
        ns_buf_put_str(out, or_empty(e->cluster));
        ns_buf_put_str(out, or_empty(e->broker_name));
        ns_buf_put_str(out, or_empty(e->broker_addr));
        ns_buf_put_str(out, or_empty(e->check_code));
        ns_buf_put_u64(out, (uint64_t)e->id);
        break;
    case NS_CTL_EV_ELECT_MASTER:
        ns_buf_put_str(out, or_empty(e->broker_name));
        ns_buf_put_u8(out, e->elected ? 1 : 0);
        ns_buf_put_u64(out, (uint64_t)e->id);
        break;
    case NS_CTL_EV_UPDATE_BROKER_ADDRESS:
        ns_buf_put_str(out, or_empty(e->cluster));
        ns_buf_put_str(out, or_empty(e->broker_name));
        ns_buf_put_str(out, or_empty(e->broker_addr));
        ns_buf_put_u64(out, (uint64_t)e->id);
        break;
    }
}

static int decode_event(enum ns_ctl_event_type type, struct ns_rd *in,
                        struct ns_ctl_event *e)
{
    int rv = 0;
    uint8_t elected;
    switch (type) {
    case NS_CTL_EV_ALTER_SYNC_STATE_SET:
    case NS_CTL_EV_CLEAN_BROKER_DATA:
        rv = rd_name(in, &e->broker_name);
        return rv ? rv : rd_ids(in, &e->ids, &e->n_ids);
    case NS_CTL_EV_APPLY_BROKER_ID:
    case NS_CTL_EV_UPDATE_BROKER_ADDRESS:
        rv = rd_name(in, &e->cluster);
        if (rv == 0) {
            rv = rd_name(in, &e->broker_name);
        }
        if (rv == 0) {
            rv = rd_name(in, &e->broker_addr);
        }
        if (rv == 0 && type == NS_CTL_EV_APPLY_BROKER_ID) {
            rv = rd_name(in, &e->check_code);
        }
        e->id = (int64_t)ns_rd_u64(in);
        return rv ? rv : in->err;
    case NS_CTL_EV_ELECT_MASTER:
        rv = rd_name(in, &e->broker_name);
        elected = ns_rd_u8(in);
        e->id = (int64_t)ns_rd_u64(in);
        if (rv == 0 && (in->err || elected > 1)) {
            rv = NS_EPROTO;
        }
        e->elected = elected == 1;
        return rv;
    }
    return NS_EPROTO;
}

int ns_ctl_event_decode(enum ns_ctl_event_type type, struct ns_rd *in,
                        struct ns_ctl_event *e)
{
    memset(e, 0, sizeof *e);
    int rv = decode_event(type, in, e);
    if (rv != 0) {
        ns_ctl_event_close(e);
    }
    return rv;
}
