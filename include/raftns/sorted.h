/* Binary search over sorted arrays: the one lookup shared by the KV store, the
 * settings, the properties parser, the route tables, the member list and the
 * request-id table. Pure. */
#ifndef RAFTNS_SORTED_H
#define RAFTNS_SORTED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The search itself: base holds n elements of elem_size bytes in the order
 * cmp defines, and cmp(elem, ctx) is < 0, 0 or > 0 as the element at elem
 * sorts before, at or after the key that ctx (borrowed) stands for. Returns
 * the key's index with *found = true, or its insertion point with *found =
 * false. Inline, so that a cmp known to the caller costs no call. */
static inline size_t
ns_sorted_search_by(const void *base, size_t n, size_t elem_size,
                    int (*cmp)(const void *elem, const void *ctx),
                    const void *ctx, bool *found)
{
    const char *bytes = (const char *)base;
    size_t lo = 0;
    size_t hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cmp(bytes + mid * elem_size, ctx);
        if (c == 0) {
            *found = true;
            return mid;
        }
        if (c < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    *found = false;
    return lo;
}

/* As ns_sorted_search_by, searching outward from index hint (any value; past
 * the end means the end) in steps that double: about 2 log2(d) comparisons
 * for a key d elements from hint instead of log2(n), so a caller looking up
 * keys in ascending order and passing the previous answer as the next hint
 * (the topics of one registration, sorted by name) pays O(1) for neighbours.
 * Same result as ns_sorted_search_by for every hint. */
static inline size_t
ns_sorted_search_near_by(const void *base, size_t n, size_t elem_size,
                         int (*cmp)(const void *elem, const void *ctx),
                         const void *ctx, size_t hint, bool *found)
{
    const char *bytes = (const char *)base;
    size_t lo, hi; /* the key's slot lies in [lo, hi] */
    if (n == 0) {  /* base may be NULL: no offset from it */
        *found = false;
        return 0;
    }
    if (hint >= n) {
        hint = n;
    } else {
        int c = cmp(bytes + hint * elem_size, ctx);
        if (c == 0) {
            *found = true;
            return hint;
        }
        if (c < 0) { /* element before the key: gallop right */
            size_t step = 1;
            lo = hint + 1;
            while (lo + step - 1 < n &&
                   cmp(bytes + (lo + step - 1) * elem_size, ctx) < 0) {
                lo += step;
                step *= 2;
            }
            /* the element at lo + step - 1 (if any) is not before the key */
            hi = lo + step < n ? lo + step : n;
            size_t at = ns_sorted_search_by(bytes + lo * elem_size, hi - lo,
                                            elem_size, cmp, ctx, found);
            return lo + at;
        }
    }
    /* element at hint (or the end) after the key: gallop left */
    size_t step = 1;
    hi = hint;
    while (hi >= step && cmp(bytes + (hi - step) * elem_size, ctx) > 0) {
        hi -= step;
        step *= 2;
    }
    lo = hi >= step ? hi - step : 0;
    size_t at = ns_sorted_search_by(bytes + lo * elem_size, hi - lo, elem_size,
                                    cmp, ctx, found);
    return lo + at;
}

/* base holds n elements of elem_size bytes, sorted by strcmp of the char *
 * field at key_offset (borrowed; never NULL). Returns the index of key with
 * *found = true, or its insertion point with *found = false. */
size_t ns_sorted_search(const void *base, size_t n, size_t elem_size,
                        size_t key_offset, const char *key, bool *found);

/* As ns_sorted_search, for arrays sorted by the uint64_t (or int64_t) field at
 * key_offset in ascending order. */
size_t ns_sorted_search_u64(const void *base, size_t n, size_t elem_size,
                            size_t key_offset, uint64_t key, bool *found);
size_t ns_sorted_search_i64(const void *base, size_t n, size_t elem_size,
                            size_t key_offset, int64_t key, bool *found);

#endif
