/* Fast path of the JSON header decoder: one pass over the header text for the
 * shapes clients send (scalar fields, extFields of strings, integers and
 * booleans, unknown fields of any plain JSON), writing strings into one arena.
 * It is deliberately partial: anything it is not sure to read exactly as the
 * cJSON path does (bare keys, fractions, surrogate oddities, control bytes,
 * deep nesting, malformed text) answers NS_EAGAIN and the tree path decides. */
#include <string.h>

#include "header_codec.h"
#include "raftns/alloc.h"
#include "raftns/err.h"

#define FALLBACK NS_EAGAIN
#define MAX_SCAN_HEADER (64u * 1024u) /* bigger headers take the tree path */
#define MAX_SKIP_DEPTH 16
#define MAX_NUMBER_CHARS 15 /* exact as a double, and cJSON reads it whole */

struct scan {
    const uint8_t *p;
    const uint8_t *end;
    struct ns_cmd *c;
    size_t n_colons; /* upper bound on members: sizes the arena's ext array */
    struct ns_ext *ext_area; /* the arena's ext array, NULL until needed */
    char *strings;           /* the arena's string area */
    size_t used;
    size_t cap;
};

static void skip_ws(struct scan *s)
{
    while (s->p < s->end &&
           (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r')) {
        s->p++;
    }
}

/* Consumes ch after blanks; false when something else comes. */
static bool expect(struct scan *s, uint8_t ch)
{
    skip_ws(s);
    if (s->p < s->end && *s->p == ch) {
        s->p++;
        return true;
    }
    return false;
}

static int hex4(const uint8_t *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        uint8_t ch = p[i];
        int d;
        if (ch >= '0' && ch <= '9') {
            d = ch - '0';
        } else if (ch >= 'a' && ch <= 'f') {
            d = ch - 'a' + 10;
        } else if (ch >= 'A' && ch <= 'F') {
            d = ch - 'A' + 10;
        } else {
            return -1;
        }
        v = v << 4 | d;
    }
    return v;
}

static size_t put_utf8(uint8_t *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (uint8_t)(0xC0 | cp >> 6);
        o[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (uint8_t)(0xE0 | cp >> 12);
        o[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (uint8_t)(0xF0 | cp >> 18);
    o[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
    o[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
    o[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

/* Reads a \uXXXX escape (with its low surrogate when it is a high one) at p,
 * inside [p, end). Returns the bytes consumed and sets *cp, or 0 for what the
 * fast path leaves to cJSON: NUL, lone or reversed surrogates, bad hex. */
static size_t read_u_escape(const uint8_t *p, const uint8_t *end, uint32_t *cp)
{
    if (end - p < 6) {
        return 0;
    }
    int hi = hex4(p + 2);
    if (hi <= 0 || (hi >= 0xDC00 && hi <= 0xDFFF)) {
        return 0;
    }
    if (hi < 0xD800 || hi > 0xDBFF) {
        *cp = (uint32_t)hi;
        return 6;
    }
    if (end - p < 12 || p[6] != '\\' || p[7] != 'u') {
        return 0;
    }
    int lo = hex4(p + 8);
    if (lo < 0xDC00 || lo > 0xDFFF) {
        return 0;
    }
    *cp = 0x10000 + (((uint32_t)hi - 0xD800) << 10 | ((uint32_t)lo - 0xDC00));
    return 12;
}

/* Decodes the escape at p (a backslash, inside [p, end)) into tmp; returns
 * the bytes consumed (0: leave it to cJSON) and sets *n_tmp. */
static size_t read_escape(const uint8_t *p, const uint8_t *end, uint8_t *tmp,
                          size_t *n_tmp)
{
    static const uint8_t simple[128] = {
        ['"'] = '"',  ['\\'] = '\\', ['/'] = '/',  ['b'] = '\b',
        ['f'] = '\f', ['n'] = '\n',  ['r'] = '\r', ['t'] = '\t',
    };
    if (end - p < 2) {
        return 0;
    }
    if (p[1] == 'u') {
        uint32_t cp = 0;
        size_t used = read_u_escape(p, end, &cp);
        *n_tmp = used > 0 ? put_utf8(tmp, cp) : 0;
        return used;
    }
    if (p[1] >= 128 || simple[p[1]] == 0) {
        return 0;
    }
    tmp[0] = simple[p[1]];
    *n_tmp = 1;
    return 2;
}

/* Bytes of a string literal that stand for themselves. */
static bool is_plain(uint8_t ch)
{
    return ch >= 0x20 && ch != '"' && ch != '\\';
}

/* Decodes the string literal at s->p (its opening quote). With out, writes
 * the string and a NUL when it fits in cap bytes; *len is the full decoded
 * length (>= cap: too long, out holds nothing useful). 0 or FALLBACK. */
static int scan_string(struct scan *s, char *out, size_t cap, size_t *len)
{
    const uint8_t *p = s->p + 1;
    const uint8_t *end = s->end;
    size_t n = 0;
    for (;;) {
        const uint8_t *run = p;
        while (p < end && is_plain(*p)) {
            p++;
        }
        size_t run_len = (size_t)(p - run);
        if (out != NULL && n + run_len < cap) {
            memcpy(out + n, run, run_len);
        }
        n += run_len;
        if (p >= end || *p < 0x20) {
            return FALLBACK;
        }
        if (*p == '"') {
            break;
        }
        uint8_t tmp[4];
        size_t n_tmp = 0;
        size_t used = read_escape(p, end, tmp, &n_tmp);
        if (used == 0) {
            return FALLBACK;
        }
        if (out != NULL && n + n_tmp < cap) {
            memcpy(out + n, tmp, n_tmp);
        }
        n += n_tmp;
        p += used;
    }
    if (out != NULL && n < cap) {
        out[n] = '\0';
    }
    *len = n;
    s->p = p + 1;
    return 0;
}

/* An integer -?[0-9]{1,15} not followed by number characters. */
static int scan_int(struct scan *s, int64_t *v)
{
    const uint8_t *p = s->p;
    bool neg = p < s->end && *p == '-';
    p += neg;
    const uint8_t *digits = p;
    int64_t x = 0;
    while (p < s->end && *p >= '0' && *p <= '9') {
        if (p - digits >= MAX_NUMBER_CHARS) {
            return FALLBACK;
        }
        x = x * 10 + (*p - '0');
        p++;
    }
    if (p == digits || (p < s->end && (*p == '.' || *p == 'e' || *p == 'E' ||
                                       *p == '+' || *p == '-'))) {
        return FALLBACK;
    }
    *v = neg ? -x : x;
    s->p = p;
    return 0;
}

/* A strict JSON number of at most MAX_NUMBER_CHARS characters. */
static int skip_number(struct scan *s)
{
    const uint8_t *p = s->p;
    const uint8_t *e = s->end;
    const uint8_t *start = p;
    p += p < e && *p == '-';
    if (p >= e || *p < '0' || *p > '9') {
        return FALLBACK;
    }
    if (*p == '0') {
        p++;
    } else {
        while (p < e && *p >= '0' && *p <= '9') {
            p++;
        }
    }
    if (p < e && *p == '.') {
        const uint8_t *frac = ++p;
        while (p < e && *p >= '0' && *p <= '9') {
            p++;
        }
        if (p == frac) {
            return FALLBACK;
        }
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        p += p < e && (*p == '+' || *p == '-');
        const uint8_t *exp = p;
        while (p < e && *p >= '0' && *p <= '9') {
            p++;
        }
        if (p == exp) {
            return FALLBACK;
        }
    }
    if (p - start > MAX_NUMBER_CHARS ||
        (p < e && ((*p >= '0' && *p <= '9') || *p == '.' || *p == 'e' ||
                   *p == 'E' || *p == '+' || *p == '-'))) {
        return FALLBACK;
    }
    s->p = p;
    return 0;
}

/* true, false or null at s->p: 1, 0 or -1 in *which. */
static int scan_literal(struct scan *s, int *which)
{
    size_t left = (size_t)(s->end - s->p);
    if (left >= 4 && memcmp(s->p, "true", 4) == 0) {
        *which = 1;
        s->p += 4;
    } else if (left >= 5 && memcmp(s->p, "false", 5) == 0) {
        *which = 0;
        s->p += 5;
    } else if (left >= 4 && memcmp(s->p, "null", 4) == 0) {
        *which = -1;
        s->p += 4;
    } else {
        return FALLBACK;
    }
    return 0;
}

/* Skips any value (objects and arrays up to MAX_SKIP_DEPTH). */
static int skip_value(struct scan *s, int depth)
{
    size_t len;
    int which;
    if (s->p >= s->end) {
        return FALLBACK;
    }
    uint8_t ch = *s->p;
    if (ch == '"') {
        return scan_string(s, NULL, 0, &len);
    }
    if (ch == '-' || (ch >= '0' && ch <= '9')) {
        return skip_number(s);
    }
    if (ch != '{' && ch != '[') {
        return scan_literal(s, &which);
    }
    if (depth >= MAX_SKIP_DEPTH) {
        return FALLBACK;
    }
    uint8_t close = ch == '{' ? '}' : ']';
    s->p++;
    if (expect(s, close)) {
        return 0;
    }
    do {
        skip_ws(s);
        if (close == '}') {
            if (s->p >= s->end || *s->p != '"' ||
                scan_string(s, NULL, 0, &len) != 0 || !expect(s, ':')) {
                return FALLBACK;
            }
            skip_ws(s);
        }
        if (skip_value(s, depth + 1) != 0) {
            return FALLBACK;
        }
    } while (expect(s, ','));
    return expect(s, close) ? 0 : FALLBACK;
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

/* Decodes the string at s->p into the arena; *out points at it. */
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
    uint8_t ch = *s->p;
    *skip = false;
    if (ch == '"') {
        return store_string(s, value);
    }
    if (ch == '-' || (ch >= '0' && ch <= '9')) {
        /* fastjson keeps an integer literal's text ("-0", "007"). */
        int64_t v;
        const uint8_t *start = s->p;
        if (scan_int(s, &v) != 0) {
            return FALLBACK;
        }
        return store_text(s, (const char *)start, (size_t)(s->p - start),
                          value);
    }
    int which;
    if (scan_literal(s, &which) != 0) {
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
    if (*s->p != '{') {
        /* null leaves the fields absent; other types are errors for cJSON */
        return scan_literal(s, &which) == 0 && which < 0 ? 0 : FALLBACK;
    }
    int rv = ensure_arena(s, h_len);
    if (rv != 0) {
        return rv;
    }
    struct ns_cmd *c = s->c;
    c->has_ext = true;
    c->ext = s->ext_area;
    s->p++;
    if (expect(s, '}')) {
        return 0;
    }
    do {
        char *key;
        char *value = NULL;
        bool skip;
        skip_ws(s);
        if (s->p >= s->end || *s->p != '"' || store_string(s, &key) != 0 ||
            !expect(s, ':')) {
            return FALLBACK;
        }
        skip_ws(s);
        if (s->p >= s->end || scan_ext_value(s, &value, &skip) != 0) {
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
    } while (expect(s, ','));
    return expect(s, '}') ? 0 : FALLBACK;
}

/* code, flag, opaque, version: an integer that fits (the tree path decides
 * the rest: out of range throws in Java), a string holding one, true/false
 * (1/0) or null (default). */
static int scan_int_field(struct scan *s, int32_t *out)
{
    uint8_t ch = *s->p;
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
        if (scan_int(s, &v) != 0 || v < INT32_MIN || v > INT32_MAX) {
            return FALLBACK;
        }
        *out = (int32_t)v;
        return 0;
    }
    int which;
    if (scan_literal(s, &which) != 0) {
        return FALLBACK;
    }
    if (which >= 0) {
        *out = which;
    }
    return 0;
}

static int scan_language(struct scan *s)
{
    uint8_t ch = *s->p;
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
        if (scan_int(s, &v) != 0 ||
            header_language_of_ordinal(v, &s->c->language) != 0) {
            return FALLBACK;
        }
        return 0;
    }
    int which;
    if (scan_literal(s, &which) != 0 || which >= 0) {
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
    if (*s->p == '"') {
        return scan_string(s, NULL, 0, &len);
    }
    return scan_literal(s, &which) == 0 && which < 0 ? 0 : FALLBACK;
}

static int scan_remark(struct scan *s, size_t h_len)
{
    if (*s->p == '"') {
        int rv = ensure_arena(s, h_len);
        return rv != 0 ? rv : store_string(s, &s->c->remark);
    }
    if (*s->p == '{' || *s->p == '[') {
        return FALLBACK;
    }
    s->c->remark = NULL; /* a repeated field: the last one wins */
    return skip_value(s, 0);
}

static int scan_member(struct scan *s, size_t h_len)
{
    char key[32];
    size_t len = 0;
    if (s->p >= s->end || *s->p != '"' ||
        scan_string(s, key, sizeof key, &len) != 0 || !expect(s, ':')) {
        return FALLBACK;
    }
    skip_ws(s);
    if (s->p >= s->end) {
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
    return skip_value(s, 0);
}

int header_json_scan(const uint8_t *h, size_t h_len, struct ns_cmd *c)
{
    if (h_len == 0 || h_len > MAX_SCAN_HEADER) {
        return FALLBACK;
    }
    struct scan s = {.p = h, .end = h + h_len, .c = c};
    for (const uint8_t *q = h; (q = memchr(q, ':', (size_t)(s.end - q))); q++) {
        s.n_colons++;
    }
    if (!expect(&s, '{')) {
        return FALLBACK;
    }
    if (!expect(&s, '}')) {
        do {
            skip_ws(&s);
            int rv = scan_member(&s, h_len);
            if (rv != 0) {
                return rv;
            }
        } while (expect(&s, ','));
        if (!expect(&s, '}')) {
            return FALLBACK;
        }
    }
    skip_ws(&s);
    return s.p == s.end ? 0 : FALLBACK;
}
