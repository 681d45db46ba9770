/* The field searches of sorted.h over ns_sorted_search_by. Pure. */
#include "raftns/sorted.h"

#include <string.h>

/* The key and where each element holds its field. */
struct field_key {
    size_t offset;
    const char *str;
    uint64_t u64;
    int64_t i64;
};

static int cmp_str_field(const void *elem, const void *ctx)
{
    const struct field_key *k = ctx;
    const char *s;
    memcpy(&s, (const char *)elem + k->offset, sizeof s);
    return strcmp(s, k->str);
}

static int cmp_u64_field(const void *elem, const void *ctx)
{
    const struct field_key *k = ctx;
    uint64_t v;
    memcpy(&v, (const char *)elem + k->offset, sizeof v);
    return (v > k->u64) - (v < k->u64);
}

static int cmp_i64_field(const void *elem, const void *ctx)
{
    const struct field_key *k = ctx;
    int64_t v;
    memcpy(&v, (const char *)elem + k->offset, sizeof v);
    return (v > k->i64) - (v < k->i64);
}

size_t ns_sorted_search(const void *base, size_t n, size_t elem_size,
                        size_t key_offset, const char *key, bool *found)
{
    struct field_key k = {.offset = key_offset, .str = key};
    return ns_sorted_search_by(base, n, elem_size, cmp_str_field, &k, found);
}

size_t ns_sorted_search_u64(const void *base, size_t n, size_t elem_size,
                            size_t key_offset, uint64_t key, bool *found)
{
    struct field_key k = {.offset = key_offset, .u64 = key};
    return ns_sorted_search_by(base, n, elem_size, cmp_u64_field, &k, found);
}

size_t ns_sorted_search_i64(const void *base, size_t n, size_t elem_size,
                            size_t key_offset, int64_t key, bool *found)
{
    struct field_key k = {.offset = key_offset, .i64 = key};
    return ns_sorted_search_by(base, n, elem_size, cmp_i64_field, &k, found);
}
