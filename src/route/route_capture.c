/* Captures (include/raftns/route.h ns_route_capture_begin): the encoded route
 * as it was when the capture began, produced in steps between changes. Only
 * the topic table is big, so only it is walked in steps; the tables around it
 * are encoded at the beginning. The walk goes by name, as the table is
 * sorted: a step resumes after the last name it wrote, wherever inserts and
 * removals have moved the table since. A topic the walk has not reached
 * leaves its entry behind before it changes or goes (route_capture_save); a
 * topic created since the beginning is not walked. The saved entries are
 * merged into the walk in name order. */
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "route_internal.h"

/* A topic's entry as it was when the capture began. */
struct saved_entry {
    char *name; /* owned, first member (svec_cmp_named) */
    struct ns_buf bytes;
};

struct ns_route_capture {
    unsigned slot; /* in route->captures and topic->saved */
    uint32_t id;
    size_t n_topics;    /* in the table when the capture began */
    size_t n_written;   /* entries written by the steps */
    bool counted;       /* the count went out */
    bool started;       /* some entry went out: last holds its name */
    struct ns_buf last; /* the name of the last entry written, terminated */
    struct svec saved;  /* struct saved_entry *, by name */
    size_t saved_next;  /* saved[saved_next..] are not written yet */
    int err;            /* a save failed: the capture is lost */
};

static void free_saved(struct saved_entry *e)
{
    ns_free(e->name);
    ns_buf_close(&e->bytes);
    ns_free(e);
}

int ns_route_capture_begin(struct ns_route *r, struct ns_buf *head,
                           struct ns_buf *tail, struct ns_route_capture **out)
{
    unsigned slot = 0;
    while (slot < ROUTE_CAPTURES && r->captures[slot] != NULL) {
        slot++;
    }
    if (slot == ROUTE_CAPTURES) {
        return NS_EBUSY;
    }
    struct ns_route_capture *c = ns_calloc(1, sizeof(*c));
    if (c == NULL) {
        return NS_ENOMEM;
    }
    int rv = route_encode_state_around_topics(r, head, tail);
    if (rv != 0) {
        ns_free(c);
        return rv;
    }
    c->slot = slot;
    c->id = ++r->capture_seq;
    c->n_topics = r->topics.n;
    ns_buf_init(&c->last);
    r->captures[slot] = c;
    *out = c;
    return 0;
}

void ns_route_capture_end(struct ns_route *r, struct ns_route_capture *c)
{
    if (c == NULL) {
        return;
    }
    for (size_t i = 0; i < c->saved.n; i++) {
        free_saved(c->saved.items[i]);
    }
    svec_close(&c->saved);
    ns_buf_close(&c->last);
    r->captures[c->slot] = NULL;
    ns_free(c);
}

/* Whether the walk already wrote the entry of a topic named name. */
static bool written(const struct ns_route_capture *c, const char *name)
{
    return c->started && strcmp(name, (const char *)c->last.data) <= 0;
}

/* Whether t is in c's topic table: it existed when c began (a topic created
 * since has the id of c, or of a later capture) and did not save its entry. */
static bool walked(const struct ns_route_capture *c, const struct topic *t)
{
    return t->born < c->id && t->saved[c->slot] != c->id;
}

static void save_for(struct ns_route_capture *c, struct topic *t)
{
    if (c->err != 0 || !walked(c, t) || written(c, t->name)) {
        return;
    }
    struct saved_entry *e = ns_calloc(1, sizeof(*e));
    if (e == NULL) {
        c->err = NS_ENOMEM;
        return;
    }
    ns_buf_init(&e->bytes);
    e->name = ns_strdup(t->name);
    route_encode_topic(t, &e->bytes);
    bool found;
    size_t pos = svec_search(&c->saved, t->name, svec_cmp_named, &found);
    if (e->name == NULL || e->bytes.err != 0 ||
        svec_insert(&c->saved, pos, e) != 0) {
        free_saved(e);
        c->err = NS_ENOMEM;
        return;
    }
    t->saved[c->slot] = c->id;
}

void route_capture_save(struct ns_route *r, struct topic *t)
{
    for (unsigned i = 0; i < ROUTE_CAPTURES; i++) {
        if (r->captures[i] != NULL) {
            save_for(r->captures[i], t);
        }
    }
}

/* The next topic of the table at or after *pos that the walk writes from
 * the table itself (it existed at the beginning and saved nothing), or NULL.
 */
static struct topic *next_walked(const struct ns_route *r,
                                 const struct ns_route_capture *c, size_t *pos)
{
    for (; *pos < r->topics.n; (*pos)++) {
        struct topic *t = r->topics.items[*pos];
        if (walked(c, t)) {
            return t;
        }
    }
    return NULL;
}

static int remember_last(struct ns_route_capture *c, const char *name)
{
    ns_buf_reset(&c->last);
    ns_buf_append(&c->last, name, strlen(name) + 1);
    c->started = true;
    return c->last.err;
}

int ns_route_capture_step(struct ns_route *r, struct ns_route_capture *c,
                          size_t max_topics, struct ns_buf *out, bool *done)
{
    *done = false;
    if (c->err != 0) {
        return c->err;
    }
    if (!c->counted) {
        ns_buf_put_u32(out, (uint32_t)c->n_topics);
        c->counted = true;
    }
    size_t pos = 0;
    if (c->started) {
        bool found;
        pos = svec_search(&r->topics, c->last.data, svec_cmp_named, &found);
        pos += found ? 1 : 0;
    }
    const char *last = NULL;
    for (size_t k = 0; k < max_topics; k++) {
        struct topic *t = next_walked(r, c, &pos);
        struct saved_entry *e =
            c->saved_next < c->saved.n ? c->saved.items[c->saved_next] : NULL;
        if (t == NULL && e == NULL) {
            *done = true;
            break;
        }
        if (e != NULL && (t == NULL || strcmp(e->name, t->name) < 0)) {
            ns_buf_append(out, e->bytes.data, e->bytes.len);
            last = e->name;
            c->saved_next++;
        } else {
            route_encode_topic(t, out);
            last = t->name;
            pos++;
        }
        c->n_written++;
    }
    int rv = out->err;
    if (rv == 0 && last != NULL) {
        rv = remember_last(c, last);
    }
    if (rv == 0 && !*done) {
        size_t rest = pos;
        *done = next_walked(r, c, &rest) == NULL && c->saved_next == c->saved.n;
    }
    if (rv == 0 && *done && c->n_written != c->n_topics) {
        rv = NS_EPROTO; /* a change this file did not see: a bug */
    }
    if (rv != 0) {
        c->err = rv;
    }
    return rv;
}
