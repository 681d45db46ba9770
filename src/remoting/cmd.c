/* struct ns_cmd: its lifetime, ext fields, and whole-frame decode/encode around
 * the two header encodings (docs/protocol.md §2). It does not find frame
 * boundaries in a stream (frame.c does). */
#include "raftns/remoting.h"

#include <string.h>
#include <strings.h>

#include "header_codec.h"
#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/json.h"

void ns_cmd_init(struct ns_cmd *c)
{
    memset(c, 0, sizeof *c);
    c->language = NS_LANG_JAVA;
    c->ser = NS_SER_JSON;
}

bool cmd_in_arena(const struct ns_cmd *c, const void *p)
{
    const char *q = p;
    /* Compared as integers: pointers into different objects are not
     * ordered. */
    uintptr_t a = (uintptr_t)c->arena;
    return c->arena != NULL && (uintptr_t)q >= a &&
           (uintptr_t)q < a + c->arena_len;
}

/* Frees p unless it lives in the arena. */
static void free_owned(const struct ns_cmd *c, void *p)
{
    if (!cmd_in_arena(c, p)) {
        ns_free(p);
    }
}

void ns_cmd_close(struct ns_cmd *c)
{
    for (size_t i = 0; i < c->n_ext; i++) {
        free_owned(c, c->ext[i].key);
        free_owned(c, c->ext[i].value);
    }
    free_owned(c, c->ext);
    free_owned(c, c->remark);
    ns_free(c->arena);
    c->ext = NULL;
    c->n_ext = 0;
    c->remark = NULL;
    c->arena = NULL;
    c->arena_len = 0;
}

static size_t copy_str(char *to, const char *s, char **out)
{
    if (s == NULL) {
        *out = NULL;
        return 0;
    }
    size_t n = strlen(s) + 1;
    memcpy(to, s, n);
    *out = to;
    return n;
}

int ns_cmd_copy(const struct ns_cmd *src, struct ns_cmd *dst)
{
    size_t need = src->n_ext * sizeof(struct ns_ext) + src->body_len;
    need += src->remark != NULL ? strlen(src->remark) + 1 : 0;
    for (size_t i = 0; i < src->n_ext; i++) {
        need += strlen(src->ext[i].key) + 1;
        need += src->ext[i].value != NULL ? strlen(src->ext[i].value) + 1 : 0;
    }
    char *a = ns_malloc(need > 0 ? need : 1);
    if (a == NULL) {
        return NS_ENOMEM;
    }
    *dst = *src;
    dst->arena = a;
    dst->arena_len = need > 0 ? need : 1;
    dst->ext = src->n_ext > 0 ? (struct ns_ext *)a : NULL;
    char *pos = a + src->n_ext * sizeof(struct ns_ext);
    for (size_t i = 0; i < src->n_ext; i++) {
        pos += copy_str(pos, src->ext[i].key, &dst->ext[i].key);
        pos += copy_str(pos, src->ext[i].value, &dst->ext[i].value);
    }
    pos += copy_str(pos, src->remark, &dst->remark);
    if (src->body_len > 0) {
        memcpy(pos, src->body, src->body_len);
        dst->body = (const uint8_t *)pos;
    } else {
        dst->body = NULL;
    }
    return 0;
}

/* The heap array grows to 4, 8, 16...: it is full when n_ext is 0 or a power
 * of two >= 4. An array in the arena is full by definition and moves to the
 * heap with room for one more. */
static int grow_ext(struct ns_cmd *c)
{
    size_t n = c->n_ext;
    bool in_arena = c->ext != NULL && cmd_in_arena(c, c->ext);
    if (!in_arena && n != 0 && (n < 4 || (n & (n - 1)) != 0)) {
        return 0;
    }
    size_t cap = 4;
    while (cap <= n) {
        if (cap > SIZE_MAX / 2 / sizeof *c->ext) {
            return NS_ENOMEM;
        }
        cap *= 2;
    }
    struct ns_ext *ext;
    if (in_arena) {
        ext = ns_malloc(cap * sizeof *ext);
        if (ext != NULL && n > 0) {
            memcpy(ext, c->ext, n * sizeof *ext);
        }
    } else {
        ext = ns_realloc(c->ext, cap * sizeof *ext);
    }
    if (ext == NULL) {
        return NS_ENOMEM;
    }
    c->ext = ext;
    return 0;
}

int cmd_ext_append(struct ns_cmd *c, char *key, char *value)
{
    int rv = grow_ext(c);
    if (rv != 0) {
        return rv;
    }
    c->ext[c->n_ext].key = key;
    c->ext[c->n_ext].value = value;
    c->n_ext++;
    c->has_ext = true;
    return 0;
}

void cmd_ext_drop(struct ns_cmd *c, const char *key, size_t key_len)
{
    size_t kept = 0;
    for (size_t i = 0; i < c->n_ext; i++) {
        const char *k = c->ext[i].key;
        if (k != NULL && strlen(k) == key_len && memcmp(k, key, key_len) == 0) {
            free_owned(c, c->ext[i].key);
            free_owned(c, c->ext[i].value);
            continue;
        }
        c->ext[kept++] = c->ext[i];
    }
    c->n_ext = kept;
}

/* Last match wins, as in Java's map when a header repeats a key. */
static struct ns_ext *find_ext(const struct ns_cmd *c, const char *key)
{
    for (size_t i = c->n_ext; i-- > 0;) {
        if (c->ext[i].key != NULL && strcmp(c->ext[i].key, key) == 0) {
            return &c->ext[i];
        }
    }
    return NULL;
}

const char *ns_cmd_ext_find(const struct ns_cmd *c, const char *key)
{
    struct ns_ext *e = find_ext(c, key);
    return e ? e->value : NULL;
}

int ns_cmd_ext_set(struct ns_cmd *c, const char *key, const char *value)
{
    char *v = ns_strdup(value);
    if (v == NULL) {
        return NS_ENOMEM;
    }
    struct ns_ext *e = find_ext(c, key);
    if (e != NULL) {
        free_owned(c, e->value);
        e->value = v;
        c->has_ext = true;
        return 0;
    }
    char *k = ns_strdup(key);
    if (k == NULL) {
        goto err_after_value;
    }
    if (cmd_ext_append(c, k, v) != 0) {
        goto err_after_key;
    }
    return 0;

err_after_key:
    ns_free(k);
err_after_value:
    ns_free(v);
    return NS_ENOMEM;
}

int ns_cmd_set_remark(struct ns_cmd *c, const char *remark)
{
    char *copy = NULL;
    if (remark != NULL && (copy = ns_strdup(remark)) == NULL) {
        return NS_ENOMEM;
    }
    free_owned(c, c->remark);
    c->remark = copy;
    return 0;
}

int ns_cmd_decode(const uint8_t *frame, size_t frame_len, struct ns_cmd *out)
{
    size_t checked = 0;
    ns_cmd_init(out);
    int rv = ns_frame_check(frame, frame_len, SIZE_MAX, &checked);
    if (rv != 0 || checked != frame_len) {
        return NS_EPROTO;
    }
    uint32_t length = ns_load_u32(frame);
    uint32_t info = ns_load_u32(frame + 4);
    size_t h_len = info & 0xFFFFFFu;
    const uint8_t *h = frame + 8;
    out->ser = (enum ns_serialize)(info >> 24);
    if (out->ser == NS_SER_JSON) {
        rv = header_json_decode(h, h_len, out);
    } else {
        rv = header_binary_decode(h, h_len, out);
    }
    if (rv != 0) {
        goto err_after_header;
    }
    out->body_len = (size_t)length - 4 - h_len;
    out->body = out->body_len > 0 ? h + h_len : NULL;
    return 0;

err_after_header:
    ns_cmd_close(out);
    ns_cmd_init(out);
    return rv;
}

/* The frame up to its body; with_body reserves room for it too. */
static int encode_head(const struct ns_cmd *c, bool with_body,
                       struct ns_buf *out)
{
    size_t start = out->len;
    /* One reservation for the common case instead of growing per append. */
    size_t hint = header_json_size_hint(c);
    size_t body = with_body ? c->body_len : 0;
    if (body <= SIZE_MAX - 8 - hint) {
        ns_buf_reserve(out, 8 + hint + body);
    }
    ns_buf_put_u32(out, 0);
    ns_buf_put_u32(out, 0);
    if (c->ser == NS_SER_ROCKETMQ) {
        header_binary_encode(c, out);
    } else {
        header_json_encode(c, out);
    }
    if (out->err) {
        return out->err;
    }
    size_t h_len = out->len - start - 8;
    if (h_len > 0xFFFFFFu || c->body_len > UINT32_MAX - 4 - h_len) {
        return out->err = NS_ETOOBIG;
    }
    uint32_t ser = c->ser == NS_SER_ROCKETMQ ? 1u : 0u;
    ns_buf_patch_u32(out, start, (uint32_t)(4 + h_len + c->body_len));
    ns_buf_patch_u32(out, start + 4, ser << 24 | (uint32_t)h_len);
    return out->err;
}

int ns_cmd_encode_head(const struct ns_cmd *c, struct ns_buf *out)
{
    return encode_head(c, false, out);
}

int ns_cmd_encode(const struct ns_cmd *c, struct ns_buf *out)
{
    int rv = encode_head(c, true, out);
    if (rv == 0 && c->body_len > 0) {
        ns_buf_append(out, c->body, c->body_len);
    }
    return out->err;
}

bool ns_cmd_ext_int64(const struct ns_cmd *c, const char *key, int64_t *out)
{
    return ns_json_number_parse_int64(ns_cmd_ext_find(c, key), out);
}

bool ns_cmd_ext_int32(const struct ns_cmd *c, const char *key, int32_t *out)
{
    return ns_json_number_parse_int32(ns_cmd_ext_find(c, key), out);
}

bool ns_cmd_ext_bool(const struct ns_cmd *c, const char *key, bool *out)
{
    const char *v = ns_cmd_ext_find(c, key);
    if (v == NULL) {
        return false;
    }
    *out = strcasecmp(v, "true") == 0;
    return true;
}
