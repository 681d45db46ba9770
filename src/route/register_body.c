/* REGISTER_BROKER body decoding (docs/protocol.md §4.2-4.4): RegisterBrokerBody
 * JSON, the bare TopicConfigSerializeWrapper of old requests, and the zlib
 * record form, into struct ns_register. It fills only the body part (not header
 * fields) and changes no route state. This file holds the entry point, the
 * errors and the normalisation; the forms are read by register_body_scan.c,
 * register_body_json.c and register_body_compressed.c. Pure. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/route.h"
#include "raftns/utf8.h"
#include "register_body_int.h"
#include "register_body_scan.h"

int register_body_fail(struct register_body_ctx *c, const char *fmt, ...)
{
    if (c->errmsg != NULL && c->errmsg_size > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->errmsg, c->errmsg_size, fmt, ap);
        va_end(ap);
    }
    return NS_EPROTO;
}

int register_body_too_many_topics(struct register_body_ctx *c, size_t n)
{
    register_body_fail(
        c,
        "register broker body: %zu topics, over the %u one registration "
        "may carry",
        n, NS_REGISTER_MAX_TOPICS);
    return NS_ETOOBIG;
}

int register_body_fail_json(struct register_body_ctx *c, const char *what)
{
    return register_body_fail(c, "com.alibaba.fastjson.JSONException: %s",
                              what);
}

/* --- normalisation: Java keys both tables by topic, so a later duplicate wins
 * --- */

struct sort_key {
    const char *name;
    size_t idx;
};

static int cmp_sort_key(const void *a, const void *b)
{
    const struct sort_key *x = a, *y = b;
    int d = strcmp(x->name, y->name);
    if (d != 0) {
        return d;
    }
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Sorted order of n names with only the last occurrence of each kept: fills
 * keep[] with the surviving indexes (ascending by name) and returns how many;
 * SIZE_MAX on OOM. */
static size_t dedupe_order(const char *const *names, size_t n, size_t *keep)
{
    struct sort_key *keys = ns_malloc(n * sizeof *keys);
    if (keys == NULL) {
        return SIZE_MAX;
    }
    for (size_t i = 0; i < n; i++) {
        keys[i].name = names[i];
        keys[i].idx = i;
    }
    qsort(keys, n, sizeof *keys, cmp_sort_key);
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + 1 < n && strcmp(keys[i].name, keys[i + 1].name) == 0) {
            continue;
        }
        keep[kept++] = keys[i].idx;
    }
    ns_free(keys);
    return kept;
}

static void free_mapping(struct ns_mapping_info *m)
{
    ns_free(m->topic);
    ns_free(m->bname);
    ns_free(m->scope);
    ns_free(m->curr_ids);
}

static void free_topic(void *elem)
{
    ns_free(((struct ns_topic_config *)elem)->name);
}

static void free_mapping_elem(void *elem)
{
    free_mapping(elem);
}

/* Whether the names at name_offset of the n elements at arr are strictly
 * ascending: then they are sorted and no name repeats. A broker's table often
 * arrives so. */
static bool is_ascending(const char *arr, size_t n, size_t elem_size,
                         size_t name_offset)
{
    const char *prev;
    memcpy(&prev, arr + name_offset, sizeof prev);
    for (size_t i = 1; i < n; i++) {
        const char *cur;
        memcpy(&cur, arr + i * elem_size + name_offset, sizeof cur);
        if (strcmp(prev, cur) >= 0) {
            return false;
        }
        prev = cur;
    }
    return true;
}

/* Sorts the n elements of *arr (elem_size bytes each) by the string at
 * name_offset, keeping the last of equal names (Java's map semantics) and
 * freeing the others with drop. 0 or NS_ENOMEM (*arr unchanged). */
static int normalise(void **arr, size_t *n, size_t elem_size,
                     size_t name_offset, void (*drop)(void *))
{
    if (*n < 2) {
        return 0;
    }
    char *in = *arr;
    if (is_ascending(in, *n, elem_size, name_offset)) {
        return 0; /* what the sort would give, without its allocations */
    }
    int rv = NS_ENOMEM;
    const char **names = ns_malloc(*n * sizeof *names);
    size_t *keep = ns_malloc(*n * sizeof *keep);
    char *out = ns_calloc(*n, elem_size);
    if (names == NULL || keep == NULL || out == NULL) {
        goto out;
    }
    for (size_t i = 0; i < *n; i++) {
        memcpy(&names[i], in + i * elem_size + name_offset, sizeof names[i]);
    }
    size_t kept = dedupe_order(names, *n, keep);
    if (kept == SIZE_MAX) {
        goto out;
    }
    for (size_t i = 0; i < kept; i++) {
        memcpy(out + i * elem_size, in + keep[i] * elem_size, elem_size);
        memset(in + keep[i] * elem_size, 0, elem_size);
    }
    for (size_t i = 0; i < *n; i++) {
        drop(in + i * elem_size);
    }
    ns_free(in);
    *arr = out;
    *n = kept;
    out = NULL;
    rv = 0;
out:
    ns_free(out);
    ns_free(keep);
    ns_free(names);
    return rv;
}

static void keep_topic_name(void *elem)
{
    (void)elem; /* the name is in the request's topic_names block */
}

static int normalise_topics(struct ns_register *r)
{
    void *arr = r->topics;
    int rv = normalise(&arr, &r->n_topics, sizeof *r->topics,
                       offsetof(struct ns_topic_config, name),
                       r->topic_names != NULL ? keep_topic_name : free_topic);
    r->topics = arr;
    return rv;
}

static int normalise_mappings(struct ns_register *r)
{
    void *arr = r->mappings;
    int rv =
        normalise(&arr, &r->n_mappings, sizeof *r->mappings,
                  offsetof(struct ns_mapping_info, topic), free_mapping_elem);
    r->mappings = arr;
    return rv;
}

/* Frees whatever a failed decode left in the body fields and zeroes them. */
static void clear_body(struct ns_register *r)
{
    for (size_t i = 0; r->topic_names == NULL && i < r->n_topics; i++) {
        ns_free(r->topics[i].name);
    }
    ns_free(r->topic_names);
    r->topic_names = NULL;
    ns_free(r->topics);
    for (size_t i = 0; i < r->n_mappings; i++) {
        free_mapping(&r->mappings[i]);
    }
    ns_free(r->mappings);
    for (size_t i = 0; i < r->n_filter_servers; i++) {
        ns_free(r->filter_servers[i]);
    }
    ns_free(r->filter_servers);
    r->topics = NULL;
    r->n_topics = 0;
    r->mappings = NULL;
    r->n_mappings = 0;
    r->filter_servers = NULL;
    r->n_filter_servers = 0;
    r->has_filter_servers = false;
    memset(&r->dv, 0, sizeof r->dv);
}

/* The JSON forms: the fast path of register_body_scan.c when it handles the
 * text, else (or with use_scan false) the cJSON tree. */
static int decode_json(struct register_body_ctx *c, bool bare_wrapper,
                       bool use_scan, const uint8_t *body, size_t len)
{
    if (use_scan) {
        int rv = register_body_scan(c->r, bare_wrapper, body, len, c->now_ms);
        if (rv != NS_EAGAIN) {
            return rv;
        }
        clear_body(c->r);
    }
    return register_body_decode_json(c, bare_wrapper, body, len);
}

static int decode_body(struct ns_register *r, int32_t req_version,
                       bool compressed, bool use_scan, const uint8_t *body,
                       size_t len, int64_t now_ms, char *errmsg,
                       size_t errmsg_size)
{
    struct register_body_ctx c = {r, now_ms, errmsg, errmsg_size};
    if (errmsg != NULL && errmsg_size > 0) {
        errmsg[0] = '\0';
    }
    clear_body(r);
    if (len == 0) {
        return 0;
    }
    int rv;
    struct ns_buf fixed;
    ns_buf_init(&fixed);
    if (req_version < 37 || !compressed) {
        /* Java decodes the body with new String(bytes, UTF_8) first. */
        rv = ns_utf8_java(body, len, &fixed);
        if (rv < 0) {
            ns_buf_close(&fixed);
            return rv;
        }
        if (rv == 1) {
            body = fixed.data;
            len = fixed.len;
        }
    }
    if (req_version < 37) {
        rv = decode_json(&c, true, use_scan, body, len);
    } else if (compressed) {
        rv = register_body_decode_compressed(&c, req_version, body, len);
    } else {
        rv = decode_json(&c, false, use_scan, body, len);
    }
    ns_buf_close(&fixed);
    if (rv == 0 && r->n_topics > NS_REGISTER_MAX_TOPICS) {
        rv = register_body_too_many_topics(&c, r->n_topics);
    }
    if (rv == 0) {
        rv = normalise_topics(r);
    }
    if (rv == 0) {
        rv = normalise_mappings(r);
    }
    if (rv != 0) {
        clear_body(r);
    }
    if (rv == NS_ENOMEM && errmsg != NULL && errmsg_size > 0) {
        snprintf(errmsg, errmsg_size, "java.lang.OutOfMemoryError");
    }
    return rv;
}

int ns_register_decode_body(struct ns_register *r, int32_t req_version,
                            bool compressed, const uint8_t *body, size_t len,
                            int64_t now_ms, char *errmsg, size_t errmsg_size)
{
    return decode_body(r, req_version, compressed, true, body, len, now_ms,
                       errmsg, errmsg_size);
}

int register_decode_body_tree(struct ns_register *r, int32_t req_version,
                              bool compressed, const uint8_t *body, size_t len,
                              int64_t now_ms, char *errmsg, size_t errmsg_size)
{
    return decode_body(r, req_version, compressed, false, body, len, now_ms,
                       errmsg, errmsg_size);
}
