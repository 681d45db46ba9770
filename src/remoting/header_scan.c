/* Fast path of the JSON header decoder: one pass over the header text for the
 * shapes clients send (scalar fields, extFields of strings, integers and
 * booleans, unknown fields of any plain JSON), writing strings into one arena.
 * It is deliberately partial: anything it is not sure to read exactly as the
 * cJSON path does (bare keys, fractions, surrogate oddities, control bytes,
 * deep nesting, malformed text) answers NS_EAGAIN and the tree path decides.
 * The lexemes and escapes come from the pull tokenizer (json_pull.h, with
 * surrogate pairs allowed); this file is the header's grammar. */
#include <string.h>

#include "header_codec.h"
#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/json_pull.h"

#define FALLBACK NS_EAGAIN
#define MAX_SCAN_HEADER (64u * 1024u) /* bigger headers take the tree path */
#define MAX_SKIP_DEPTH 16             /* containers nested in a skipped value */
#define MAX_NUMBER_CHARS 15 /* exact as a double, and cJSON reads it whole */

struct scan {
    struct ns_json_pull t;
    struct ns_cmd *c;
    size_t n_colons; /* upper bound on members: sizes the arena's ext array */
    struct ns_ext *ext_area; /* the arena's ext array, NULL until needed */
    char *strings;           /* the arena's string area */
    size_t used;
    size_t cap;
};

/* Decodes the string literal at the cursor. With out, writes the string and
 * a NUL when it fits in cap bytes; *len is the full decoded length (>= cap:
 * too long, out holds nothing). 0 or FALLBACK. */
static int scan_string(struct scan *s, char *out, size_t cap, size_t *len)
{
    struct ns_json_pull_str str;
    int rv = ns_json_pull_string(&s->t, &str);
    if (rv != 0) {
        return rv;
    }
    if (out != NULL && str.len < cap) {
        ns_json_pull_unescape(&s->t, &str, out);
        out[str.len] = '\0';
    }
    *len = str.len;
    return 0;
}

/* Room for the ext array (one entry per ':' in the text at most) and the
 * strings (their decoded forms never exceed the header length). */
static int ensure_arena(struct scan *s, size_t h_len)
{
    if (s->c->arena != NULL) {
        return 0;
    }
    size_t ext_bytes = s->n_colons * sizeof(struct ns_ext);
    size_t total = ext_bytes + h_len + 8;
    char *a = ns_malloc(total);
    if (a == NULL) {
        return NS_ENOMEM;
    }
    s->c->arena = a;
    s->c->arena_len = total;
    s->ext_area = (struct ns_ext *)(void *)a;
    s->strings = a + ext_bytes;
    s->used = 0;
    s->cap = h_len + 8;
    return 0;
}

/* Decodes the string at s->t.p into the arena; *out points at it. */
static int store_string(struct scan *s, char **out)
{
    size_t len;
    char *dst = s->strings + s->used;
    int rv = scan_string(s, dst, s->cap - s->used, &len);
    if (rv != 0 || len >= s->cap - s->used) {
        return FALLBACK;
    }
    *out = dst;
    s->used += len + 1;
    return 0;
}

static int store_text(struct scan *s, const char *text, size_t len, char **out)
{
    if (len >= s->cap - s->used) {
        return FALLBACK;
    }
    char *dst = s->strings + s->used;
    memcpy(dst, text, len);
    dst[len] = '\0';
    *out = dst;
    s->used += len + 1;
    return 0;
}

/* One extFields member value: strings, integers and booleans are kept, null
 * is skipped (as the tree path does); anything else falls back. */
static int scan_ext_value(struct scan *s, char **value, bool *skip)
{
    uint8_t ch = *s->t.p;
    *skip = false;
    if (ch == '"') {
        return store_string(s, value);
    }
    if (ch == '-' || (ch >= '0' && ch <= '9')) {
        /* fastjson keeps an integer literal's text ("-0", "007"). */
        int64_t v;
        const uint8_t *start = s->t.p;
        if (ns_json_pull_int(&s->t, &v) != 0) {
            return FALLBACK;
        }
        return store_text(s, (const char *)start, (size_t)(s->t.p - start),
                          value);
    }
    int which;
    if (ns_json_pull_literal(&s->t, &which) != 0) {
        return FALLBACK;
    }
    if (which < 0) {
        *skip = true;
        return 0;
    }
    return which ? store_text(s, "true", 4, value)
                 : store_text(s, "false", 5, value);
}

static int scan_ext(struct scan *s, size_t h_len)
{
    int which;
    if (*s->t.p != '{') {
        /* null leaves the fields absent; other types are errors for cJSON */
        return ns_json_pull_literal(&s->t, &which) == 0 && which < 0 ? 0
                                                                     : FALLBACK;
    }
    int rv = ensure_arena(s, h_len);
    if (rv != 0) {
        return rv;
    }
    struct ns_cmd *c = s->c;
    c->has_ext = true;
    c->ext = s->ext_area;
    s->t.p++;
    if (ns_json_pull_accept(&s->t, '}')) {
        return 0;
    }
    do {
        char *key;
        char *value = NULL;
        bool skip;
        ns_json_pull_skip_ws(&s->t);
        if (s->t.p >= s->t.end || *s->t.p != '"' ||
            store_string(s, &key) != 0 || !ns_json_pull_accept(&s->t, ':')) {
            return FALLBACK;
        }
        ns_json_pull_skip_ws(&s->t);
        if (s->t.p >= s->t.end || scan_ext_value(s, &value, &skip) != 0) {
            return FALLBACK;
        }
        if (skip) {
            cmd_ext_drop(c, key, strlen(key));
        } else {
            if (c->n_ext >= s->n_colons) {
                return FALLBACK; /* cannot happen: one ':' per member */
            }
            c->ext[c->n_ext].key = key;
            c->ext[c->n_ext].value = value;
            c->n_ext++;
        }
    } while (ns_json_pull_accept(&s->t, ','));
    return ns_json_pull_accept(&s->t, '}') ? 0 : FALLBACK;
}

/* code, flag, opaque, version: an integer that fits (the tree path decides
 * the rest: out of range throws in Java), a string holding one, true/false
 * (1/0) or null (default). */
static int scan_int_field(struct scan *s, int32_t *out)
{
    uint8_t ch = *s->t.p;
    if (ch == '"') {
        char text[64];
        size_t len;
        if (scan_string(s, text, sizeof text, &len) != 0 ||
            len >= sizeof text || strlen(text) != len ||
            header_text_int32(text, out) != 0) {
            return FALLBACK;
        }
        return 0;
    }
    if (ch == '-' || (ch >= '0' && ch <= '9')) {
        int64_t v;
        if (ns_json_pull_int(&s->t, &v) != 0 || v < INT32_MIN ||
            v > INT32_MAX) {
            return FALLBACK;
        }
        *out = (int32_t)v;
        return 0;
    }
    int which;
    if (ns_json_pull_literal(&s->t, &which) != 0) {
        return FALLBACK;
    }
    if (which >= 0) {
        *out = which;
    }
    return 0;
}

static int scan_language(struct scan *s)
{
    uint8_t ch = *s->t.p;
    if (ch == '"') {
        char text[32];
        size_t len;
        if (scan_string(s, text, sizeof text, &len) != 0 ||
            len >= sizeof text) {
            return FALLBACK;
        }
        s->c->language = header_language_of_text(text);
        return 0;
    }
    if (ch == '-' || (ch >= '0' && ch <= '9')) {
        int64_t v;
        if (ns_json_pull_int(&s->t, &v) != 0 ||
            header_language_of_ordinal(v, &s->c->language) != 0) {
            return FALLBACK;
        }
        return 0;
    }
    int which;
    if (ns_json_pull_literal(&s->t, &which) != 0 || which >= 0) {
        return FALLBACK; /* true/false: Java throws */
    }
    s->c->language = NS_LANG_JAVA;
    return 0;
}

/* serializeTypeCurrentRPC: a name (ignored, as Java overwrites it) or null;
 * ordinals and other types are left to the tree path. */
static int scan_serialize_type(struct scan *s)
{
    size_t len;
    int which;
    if (*s->t.p == '"') {
        return scan_string(s, NULL, 0, &len);
    }
    return ns_json_pull_literal(&s->t, &which) == 0 && which < 0 ? 0 : FALLBACK;
}

static int scan_remark(struct scan *s, size_t h_len)
{
    if (*s->t.p == '"') {
        int rv = ensure_arena(s, h_len);
        return rv != 0 ? rv : store_string(s, &s->c->remark);
    }
    if (*s->t.p == '{' || *s->t.p == '[') {
        return FALLBACK;
    }
    s->c->remark = NULL; /* a repeated field: the last one wins */
    return ns_json_pull_skip(&s->t, 0);
}

static int scan_member(struct scan *s, size_t h_len)
{
    char key[32];
    size_t len = 0;
    if (s->t.p >= s->t.end || *s->t.p != '"' ||
        scan_string(s, key, sizeof key, &len) != 0 ||
        !ns_json_pull_accept(&s->t, ':')) {
        return FALLBACK;
    }
    ns_json_pull_skip_ws(&s->t);
    if (s->t.p >= s->t.end) {
        return FALLBACK;
    }
    /* Only lengths 4..9 and 23 are compared, so a longer key's truncated buffer
     * is never read. */
    struct ns_cmd *c = s->c;
    switch (len) {
    case 4:
        if (memcmp(key, "code", 4) == 0) {
            return scan_int_field(s, &c->code);
        }
        if (memcmp(key, "flag", 4) == 0) {
            return scan_int_field(s, &c->flag);
        }
        if (memcmp(key, "body", 4) == 0) {
            return FALLBACK; /* a byte[] property: the tree path checks it */
        }
        break;
    case 6:
        if (memcmp(key, "opaque", 6) == 0) {
            return scan_int_field(s, &c->opaque);
        }
        if (memcmp(key, "remark", 6) == 0) {
            return scan_remark(s, h_len);
        }
        break;
    case 7:
        if (memcmp(key, "version", 7) == 0) {
            return scan_int_field(s, &c->version);
        }
        break;
    case 8:
        if (memcmp(key, "language", 8) == 0) {
            return scan_language(s);
        }
        break;
    case 9:
        if (memcmp(key, "extFields", 9) == 0) {
            return scan_ext(s, h_len);
        }
        break;
    case 23:
        if (memcmp(key, "serializeTypeCurrentRPC", 23) == 0) {
            return scan_serialize_type(s);
        }
        break;
    default:
        break;
    }
    return ns_json_pull_skip(&s->t, 0);
}

int header_json_scan(const uint8_t *h, size_t h_len, struct ns_cmd *c)
{
    if (h_len == 0 || h_len > MAX_SCAN_HEADER) {
        return FALLBACK;
    }
    struct scan s = {.c = c};
    ns_json_pull_init(&s.t, h, h_len, NS_JSON_PULL_SURROGATE_PAIRS);
    s.t.max_number_chars = MAX_NUMBER_CHARS;
    s.t.max_depth = MAX_SKIP_DEPTH;
    s.t.max_open_depth = MAX_SKIP_DEPTH;
    for (const uint8_t *q = h; (q = memchr(q, ':', (size_t)(s.t.end - q)));
         q++) {
        s.n_colons++;
    }
    if (!ns_json_pull_accept(&s.t, '{')) {
        return FALLBACK;
    }
    if (!ns_json_pull_accept(&s.t, '}')) {
        do {
            ns_json_pull_skip_ws(&s.t);
            int rv = scan_member(&s, h_len);
            if (rv != 0) {
                return rv;
            }
        } while (ns_json_pull_accept(&s.t, ','));
        if (!ns_json_pull_accept(&s.t, '}')) {
            return FALLBACK;
        }
    }
    ns_json_pull_skip_ws(&s.t);
    return s.t.p == s.t.end ? 0 : FALLBACK;
}
