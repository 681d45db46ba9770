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
