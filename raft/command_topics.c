/* The topics of a REGISTER_BROKER command in command version 3
 * (raft/command.c): u32 n, then per topic a varint `shared` (how many leading
 * bytes of the previous topic's name this name repeats), a varint suffix
 * length, the suffix, and u8 `same` (1: read, write, perm and sys_flag equal
 * the previous topic's; 0: four zigzag varints follow). Varints are unsigned
 * LEB128 of at most 32 bits. A decoded registration's names are sorted
 * (ns_register_decode_body), so a name mostly repeats its neighbour and the
 * queue settings mostly repeat too: a 100-topic registration of the
 * benchmark's shape is 562 bytes instead of version 2's 3,635 (BENCHMARKS.md),
 * bytes that every node copies, checksums, sends and writes to disk for each
 * entry. Pure.
 *
 * WARNING: a persisted and replicated format (the raft log). */
#include <string.h>

#include "command_int.h"
#include "raftns/alloc.h"
#include "raftns/err.h"

#define TOPICS_MIN_ENCODED 3 /* shared, suffix length, same: one byte each */

static void put_varint(struct ns_buf *b, uint32_t v)
{
    uint8_t out[5];
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    ns_buf_append(b, out, n);
}

static uint32_t zigzag(int32_t v)
{
    return ((uint32_t)v << 1) ^ (v < 0 ? UINT32_MAX : 0);
}

static int32_t unzigzag(uint32_t u)
{
    return (int32_t)((u >> 1) ^ (0u - (u & 1)));
}

static size_t common_prefix(const char *a, const char *b)
{
    size_t n = 0;
    while (a[n] != '\0' && a[n] == b[n]) {
        n++;
    }
    return n;
}

static bool same_queues(const struct ns_topic_config *a,
                        const struct ns_topic_config *b)
{
    return a->read_queues == b->read_queues &&
           a->write_queues == b->write_queues && a->perm == b->perm &&
           a->sys_flag == b->sys_flag;
}

void ns_command_topics_encode(const struct ns_register *r, struct ns_buf *b)
{
    ns_buf_put_u32(b, (uint32_t)r->n_topics);
    const struct ns_topic_config *prev = NULL;
    for (size_t i = 0; i < r->n_topics; i++) {
        const struct ns_topic_config *t = &r->topics[i];
        size_t shared = prev != NULL ? common_prefix(prev->name, t->name) : 0;
        size_t suffix = strlen(t->name + shared);
        put_varint(b, (uint32_t)shared);
        put_varint(b, (uint32_t)suffix);
        ns_buf_append(b, t->name + shared, suffix);
        if (prev != NULL && same_queues(prev, t)) {
            ns_buf_put_u8(b, 1);
        } else {
            ns_buf_put_u8(b, 0);
            put_varint(b, zigzag(t->read_queues));
            put_varint(b, zigzag(t->write_queues));
            put_varint(b, zigzag(t->perm));
            put_varint(b, zigzag(t->sys_flag));
        }
        prev = t;
    }
}

static uint32_t rd_varint(struct ns_rd *r)
{
    uint32_t v = 0;
    for (unsigned shift = 0; shift < 32; shift += 7) {
        uint8_t byte = ns_rd_u8(r);
        if (r->err != 0 || (shift == 28 && byte > 0x0f)) {
            r->err = NS_EPROTO;
            return 0;
        }
        v |= (uint32_t)(byte & 0x7f) << shift;
        if ((byte & 0x80) == 0) {
            break;
        }
    }
    return v;
}

/* One topic's name lengths and settings; its suffix is borrowed from r. */
struct topic_rec {
    uint32_t shared;
    uint32_t suffix_len;
    const uint8_t *suffix;
    bool same;
    int32_t q[4];
};

static int rd_topic(struct ns_rd *r, size_t index, size_t prev_len,
                    struct topic_rec *t)
{
    t->shared = rd_varint(r);
    t->suffix_len = rd_varint(r);
    t->suffix = ns_rd_bytes(r, t->suffix_len);
    uint8_t same = ns_rd_u8(r);
    if (r->err != 0 || t->shared > prev_len || same > 1 ||
        (same == 1 && index == 0) ||
        memchr(t->suffix, '\0', t->suffix_len) != NULL) {
        return NS_EPROTO;
    }
    t->same = same == 1;
    for (int k = 0; k < 4 && !t->same; k++) {
        t->q[k] = unzigzag(rd_varint(r));
    }
    return r->err != 0 ? NS_EPROTO : 0;
}

/* The bytes of n topic names with their NULs, or 0 when the records are
 * malformed or the names would exceed what a command may carry (a name can be
 * much longer than its record, so the bound is checked here, not by the
 * reader). */
static size_t names_size(struct ns_rd r, size_t n)
{
    size_t bytes = 1, prev_len = 0;
    for (size_t i = 0; i < n; i++) {
        struct topic_rec t;
        if (rd_topic(&r, i, prev_len, &t) != 0) {
            return 0;
        }
        prev_len = (size_t)t.shared + t.suffix_len;
        bytes += prev_len + 1;
        if (bytes > NS_COMMAND_MAX_SIZE) {
            return 0;
        }
    }
    return bytes;
}

int ns_command_topics_decode(struct ns_rd *r, struct ns_register *g)
{
    uint32_t count = ns_rd_u32(r);
    if (r->err != 0 || count > ns_rd_left(r) / TOPICS_MIN_ENCODED) {
        return NS_EPROTO;
    }
    size_t n = count, bytes = names_size(*r, n);
    if (bytes == 0) {
        return NS_EPROTO;
    }
    if ((g->topics = ns_calloc(n ? n : 1, sizeof *g->topics)) == NULL ||
        (g->topic_names = ns_malloc(bytes)) == NULL) {
        return NS_ENOMEM;
    }
    char *name = g->topic_names;
    const struct ns_topic_config *prev = NULL;
    size_t prev_len = 0;
    for (; g->n_topics < n; g->n_topics++) {
        struct ns_topic_config *t = &g->topics[g->n_topics];
        struct topic_rec rec;
        if (rd_topic(r, g->n_topics, prev_len, &rec) != 0) {
            return NS_EPROTO; /* names_size read the same bytes */
        }
        if (rec.shared > 0) {
            memcpy(name, prev->name, rec.shared);
        }
        memcpy(name + rec.shared, rec.suffix, rec.suffix_len);
        name[rec.shared + rec.suffix_len] = '\0';
        t->name = name;
        prev_len = (size_t)rec.shared + rec.suffix_len;
        name += prev_len + 1;
        if (rec.same) {
            t->read_queues = prev->read_queues;
            t->write_queues = prev->write_queues;
            t->perm = prev->perm;
            t->sys_flag = prev->sys_flag;
        } else {
            t->read_queues = rec.q[0];
            t->write_queues = rec.q[1];
            t->perm = rec.q[2];
            t->sys_flag = rec.q[3];
        }
        prev = t;
    }
    return 0;
}
