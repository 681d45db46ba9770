/* Closing up the topic table after a removal that emptied many topics
 * (route_internal.h, route_drop_topics). */
#include <stdlib.h>
#include <string.h>

#include "raftns/alloc.h"
#include "route_internal.h"

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a;
    size_t y = *(const size_t *)b;
    return x < y ? -1 : x > y;
}

/* Removing n topics one by one would move the rest of the table n times:
 * their slots are found, then the table is closed up in one sweep. */
void route_drop_topics(struct ns_route *r, struct svec *emptied)
{
    size_t *slots = ns_malloc((emptied->n + 1) * sizeof(*slots));
    if (slots == NULL) {
        for (size_t i = 0; i < emptied->n; i++) {
            route_drop_topic_if_empty(r, emptied->items[i]);
        }
        svec_close(emptied);
        return;
    }
    size_t n = 0;
    for (size_t i = 0; i < emptied->n; i++) {
        const struct topic *t = emptied->items[i];
        bool found;
        size_t pos = svec_search(&r->topics, t->name, svec_cmp_named, &found);
        if (found && r->topics.items[pos] == t && t->qds.n == 0) {
            slots[n++] = pos;
        }
    }
    qsort(slots, n, sizeof(*slots), cmp_size);
    size_t distinct = 0;
    for (size_t k = 0; k < n; k++) {
        if (distinct == 0 || slots[k] != slots[distinct - 1]) {
            slots[distinct++] = slots[k];
        }
    }
    void **items = r->topics.items;
    size_t kept = distinct > 0 ? slots[0] : r->topics.n;
    for (size_t k = 0; k < distinct; k++) {
        route_free_topic(r, items[slots[k]]);
        size_t from = slots[k] + 1;
        size_t to = k + 1 < distinct ? slots[k + 1] : r->topics.n;
        memmove(&items[kept], &items[from], (to - from) * sizeof(*items));
        kept += to - from;
    }
    r->topics.n = kept;
    ns_free(slots);
    svec_close(emptied);
}
