/* The sorted vector of item pointers used for every route table (binary search,
 * ordered iteration). It owns only its array; item ownership belongs to the
 * table using it. */
#include <stdint.h>
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/sorted.h"
#include "route_internal.h"

/* The table's comparator and key, for ns_sorted_search_by over the item
 * pointers. */
struct svec_probe {
    svec_cmp_fn cmp;
    const void *key;
};

static int cmp_item(const void *elem, const void *ctx)
{
    const struct svec_probe *p = ctx;
    return p->cmp(*(void *const *)elem, p->key);
}

size_t svec_search(const struct svec *v, const void *key, svec_cmp_fn cmp,
                   bool *found)
{
    struct svec_probe p = {cmp, key};
    return ns_sorted_search_by(v->items, v->n, sizeof *v->items, cmp_item, &p,
                               found);
}

size_t svec_search_near(const struct svec *v, const void *key, svec_cmp_fn cmp,
                        size_t *hint, bool *found)
{
    struct svec_probe p = {cmp, key};
    *hint = ns_sorted_search_near_by(v->items, v->n, sizeof *v->items, cmp_item,
                                     &p, *hint, found);
    return *hint;
}

void *svec_find(const struct svec *v, const void *key, svec_cmp_fn cmp)
{
    bool found;
    size_t pos = svec_search(v, key, cmp, &found);

    return found ? v->items[pos] : NULL;
}

int svec_insert(struct svec *v, size_t pos, void *item)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 4;
        void **items = ns_realloc(v->items, cap * sizeof(*items));
        if (items == NULL) {
            return NS_ENOMEM;
        }
        v->items = items;
        v->cap = cap;
    }
    memmove(&v->items[pos + 1], &v->items[pos],
            (v->n - pos) * sizeof(*v->items));
    v->items[pos] = item;
    v->n++;
    return 0;
}

int svec_merge_named(struct svec *v, void *const *add, size_t k)
{
    if (k > SIZE_MAX / sizeof(*v->items) - v->n) {
        return NS_ENOMEM;
    }
    if (v->n + k > v->cap) {
        size_t cap = v->cap * 2 > v->n + k ? v->cap * 2 : v->n + k;
        void **items = ns_realloc(v->items, cap * sizeof(*items));
        if (items == NULL) {
            return NS_ENOMEM;
        }
        v->items = items;
        v->cap = cap;
    }
    /* From the back: each new item's place is searched among the items not
     * moved yet, and the block after it moves once, so a merge costs
     * O(k log n) comparisons and moves each item at most once. */
    size_t i = v->n, w = v->n + k;
    for (size_t j = k; j > 0; j--) {
        struct svec_probe p = {svec_cmp_named, *(char *const *)add[j - 1]};
        bool found;
        size_t pos = ns_sorted_search_by(v->items, i, sizeof *v->items,
                                         cmp_item, &p, &found);
        w -= i - pos;
        memmove(&v->items[w], &v->items[pos], (i - pos) * sizeof(*v->items));
        v->items[--w] = add[j - 1];
        i = pos;
    }
    v->n += k;
    return 0;
}

void *svec_remove_at(struct svec *v, size_t pos)
{
    void *item = v->items[pos];

    memmove(&v->items[pos], &v->items[pos + 1],
            (v->n - pos - 1) * sizeof(*v->items));
    v->n--;
    return item;
}

void svec_close(struct svec *v)
{
    ns_free(v->items);
    v->items = NULL;
    v->n = 0;
    v->cap = 0;
}

int svec_cmp_named(const void *item, const void *key)
{
    return strcmp(*(char *const *)item, key);
}

int svec_cmp_str(const void *item, const void *key)
{
    return strcmp(item, key);
}

int svec_add_str(struct svec *v, const char *s, bool *added)
{
    bool found;
    size_t pos = svec_search(v, s, svec_cmp_str, &found);
    char *copy;

    if (added != NULL) {
        *added = false;
    }
    if (found) {
        return 0;
    }
    copy = ns_strdup(s);
    if (copy == NULL) {
        return NS_ENOMEM;
    }
    if (svec_insert(v, pos, copy) != 0) {
        ns_free(copy);
        return NS_ENOMEM;
    }
    if (added != NULL) {
        *added = true;
    }
    return 0;
}

bool svec_remove_str(struct svec *v, const char *s)
{
    bool found;
    size_t pos = svec_search(v, s, svec_cmp_str, &found);

    if (!found) {
        return false;
    }
    ns_free(svec_remove_at(v, pos));
    return true;
}

void svec_close_strs(struct svec *v)
{
    for (size_t i = 0; i < v->n; i++) {
        ns_free(v->items[i]);
    }
    svec_close(v);
}
