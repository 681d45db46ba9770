/* ns_sorted_search (sorted.h). Pure. */
#include "raftns/sorted.h"

#include <string.h>

size_t ns_sorted_search(const void *base, size_t n, size_t elem_size,
                        size_t key_offset, const char *key, bool *found)
{
    const char *bytes = base;
    size_t lo = 0;
    size_t hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *mid_key;
        memcpy(&mid_key, bytes + mid * elem_size + key_offset, sizeof mid_key);
        int c = strcmp(mid_key, key);
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
