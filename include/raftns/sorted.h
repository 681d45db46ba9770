/* Binary search over arrays of structs kept sorted by a string field: the one
 * lookup shared by the KV store, the settings and the properties parser. Pure.
 */
#ifndef RAFTNS_SORTED_H
#define RAFTNS_SORTED_H

#include <stdbool.h>
#include <stddef.h>

/* base holds n elements of elem_size bytes, sorted by strcmp of the char *
 * field at key_offset (borrowed; never NULL). Returns the index of key with
 * *found = true, or its insertion point with *found = false. */
size_t ns_sorted_search(const void *base, size_t n, size_t elem_size,
                        size_t key_offset, const char *key, bool *found);

#endif
