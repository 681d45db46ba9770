/* Fast path of the REGISTER_BROKER JSON body decoder: one pass over the
 * RegisterBrokerBody (or bare TopicConfigSerializeWrapper) text straight into
 * struct ns_register, without a cJSON tree. It is deliberately partial:
 * anything it is not sure to read exactly as the cJSON path of register_body.c
 * does (numbers as strings or over 15 digits, repeated known keys, $ref keys,
 * NUL or surrogate escapes, control bytes, deep nesting, any error) answers
 * NS_EAGAIN and that path decides, so errors are always its errors. */
#include <stdlib.h>
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/buf.h"
#include "raftns/err.h"
#include "register_body_scan.h"

#define FALLBACK NS_EAGAIN
#define MAX_DEPTH 16        /* far below the reader's NS_JSON_MAX_DEPTH */
#define MAX_INT_DIGITS 15   /* exact as a double */
#define MAX_NUMBER_CHARS 32 /* skipped numbers; cJSON reads up to 63 */

struct scan {
    const uint8_t *p;
    const uint8_t *end;
    struct ns_register *r;
    struct ns_buf tmp; /* decoded text of the last escaped string */
    size_t cap_topics;
    size_t cap_mappings;
    size_t cap_filters;
    size_t cap_curr_ids; /* of the mapping being filled */
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

/* Consumes the literal word (true, false, null) after blanks when it is next.
 */
static bool expect_word(struct scan *s, const char *word)
{
    size_t n = strlen(word);
    skip_ws(s);
    if ((size_t)(s->end - s->p) >= n && memcmp(s->p, word, n) == 0) {
        s->p += n;
        return true;
    }
    return false;
}

static bool is_digit(uint8_t ch)
{
    return ch >= '0' && ch <= '9';
}

static int hex4(const uint8_t *p)
{
    int v = 0;
    for (int i = 0; i < 4; i++) {
        uint8_t ch = p[i];
        int d;
        if (is_digit(ch)) {
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

/* Appends the UTF-8 form of a \uXXXX escape at q (a backslash) to tmp;
 * returns the bytes consumed, 0 for NUL, surrogates or bad hex. */
static size_t decode_u_escape(struct scan *s, const uint8_t *q, int *rv)
{
    if (s->end - q < 6) {
        return 0;
    }
    int cp = hex4(q + 2);
    if (cp <= 0 || (cp >= 0xD800 && cp <= 0xDFFF)) {
        return 0;
    }
    uint8_t o[3];
    size_t n;
    if (cp < 0x80) {
        o[0] = (uint8_t)cp;
        n = 1;
    } else if (cp < 0x800) {
        o[0] = (uint8_t)(0xC0 | cp >> 6);
        o[1] = (uint8_t)(0x80 | (cp & 0x3F));
        n = 2;
    } else {
        o[0] = (uint8_t)(0xE0 | cp >> 12);
        o[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (uint8_t)(0x80 | (cp & 0x3F));
        n = 3;
    }
    *rv = ns_buf_append(&s->tmp, o, n);
    return 6;
}

/* The rest of a string literal whose plain prefix ends at q (a backslash or
 * an unhandled byte), decoded into s->tmp. */
static int decode_escaped(struct scan *s, const uint8_t *start,
                          const uint8_t *q, const char **out, size_t *n)
{
    static const uint8_t simple[128] = {
        ['"'] = '"',  ['\\'] = '\\', ['/'] = '/',  ['b'] = '\b',
        ['f'] = '\f', ['n'] = '\n',  ['r'] = '\r', ['t'] = '\t',
    };
    ns_buf_reset(&s->tmp);
    int rv = ns_buf_append(&s->tmp, start, (size_t)(q - start));
    while (rv == 0) {
        if (q >= s->end || *q < 0x20) {
            return FALLBACK;
        }
        if (*q == '"') {
            break;
        }
        if (*q != '\\') {
            const uint8_t *run = q;
            while (q < s->end && *q != '"' && *q != '\\' && *q >= 0x20) {
                q++;
            }
            rv = ns_buf_append(&s->tmp, run, (size_t)(q - run));
            continue;
        }
        if (s->end - q < 2) {
            return FALLBACK;
        }
        if (q[1] == 'u') {
            size_t used = decode_u_escape(s, q, &rv);
            if (used == 0) {
                return FALLBACK;
            }
            q += used;
            continue;
        }
        if (q[1] >= 128 || simple[q[1]] == 0) {
            return FALLBACK;
        }
        rv = ns_buf_append(&s->tmp, &simple[q[1]], 1);
        q += 2;
    }
    if (rv != 0) {
        return NS_ENOMEM;
    }
    s->p = q + 1;
    *out = (const char *)s->tmp.data;
    *n = s->tmp.len;
    return 0;
}

/* Bytes that end the plain run of a string literal: '"', '\\' and control
 * bytes. */
static const bool ends_run[256] = {
#define T4(x) [x] = true, [x + 1] = true, [x + 2] = true, [x + 3] = true
#define T16(x) T4(x), T4(x + 4), T4(x + 8), T4(x + 12)
    T16(0x00),
    T16(0x10),
    ['"'] = true,
    ['\\'] = true,
#undef T16
#undef T4
};

/* A string literal after blanks. *out points into the text, or into s->tmp
 * when it had escapes (valid until the next string); not NUL-terminated. */
static int read_string(struct scan *s, const char **out, size_t *n)
{
    skip_ws(s);
    if (s->p >= s->end || *s->p != '"') {
        return FALLBACK;
    }
    const uint8_t *start = s->p + 1;
    const uint8_t *q = start;
    while (q < s->end && !ends_run[*q]) {
        q++;
    }
    if (q < s->end && *q == '"') {
        *out = (const char *)start;
        *n = (size_t)(q - start);
        s->p = q + 1;
        return 0;
    }
    return decode_escaped(s, start, q, out, n);
}

/* An object key and its colon: a string, or a bare integer as the reader
 * quotes it. Keys starting with '$' ($ref) are left to the cJSON path. */
static int read_key(struct scan *s, const char **out, size_t *n)
{
    skip_ws(s);
    if (s->p < s->end && (*s->p == '-' || is_digit(*s->p))) {
        const uint8_t *start = s->p;
        const uint8_t *q = start + (*start == '-');
        const uint8_t *digits = q;
        while (q < s->end && is_digit(*q)) {
            q++;
        }
        if (q == digits) {
            return FALLBACK;
        }
        *out = (const char *)start;
        *n = (size_t)(q - start);
        s->p = q;
    } else {
        int rv = read_string(s, out, n);
        if (rv != 0) {
            return rv;
        }
        if (*n > 0 && (*out)[0] == '$') {
            return FALLBACK;
        }
    }
    return expect(s, ':') ? 0 : FALLBACK;
}

static bool key_is(const char *k, size_t n, const char *name)
{
    return strlen(name) == n && memcmp(k, name, n) == 0;
}

/* An integer of at most 15 digits, not followed by a fraction or exponent:
 * exactly what cJSON's double holds. */
static int read_int(struct scan *s, int64_t *out)
{
    skip_ws(s);
    const uint8_t *q = s->p;
    bool neg = q < s->end && *q == '-';
    q += neg;
    const uint8_t *digits = q;
    int64_t v = 0;
    while (q < s->end && is_digit(*q)) {
        if (q - digits == MAX_INT_DIGITS) {
            return FALLBACK;
        }
        v = v * 10 + (*q - '0');
        q++;
    }
    if (q == digits || (q < s->end && (*q == '.' || *q == 'e' || *q == 'E' ||
                                       *q == '+' || *q == '-'))) {
        return FALLBACK;
    }
    s->p = q;
    *out = neg ? -v : v;
    return 0;
}

static int read_int32(struct scan *s, int32_t *out)
{
    int64_t v;
    int rv = read_int(s, &v);
    if (rv == 0 && (v < INT32_MIN || v > INT32_MAX)) {
        rv = FALLBACK;
    }
    *out = (int32_t)v;
    return rv;
}

/* -?digits(.digits)?([eE][+-]?digits)?, a shape strtod reads whole. */
static int skip_number(struct scan *s)
{
    const uint8_t *q = s->p;
    const uint8_t *lim =
        s->end - s->p > MAX_NUMBER_CHARS ? s->p + MAX_NUMBER_CHARS : s->end;
    q += q < lim && *q == '-';
    const uint8_t *d = q;
    while (q < lim && is_digit(*q)) {
        q++;
    }
    bool ok = q > d;
    if (ok && q < lim && *q == '.') {
        d = ++q;
        while (q < lim && is_digit(*q)) {
            q++;
        }
        ok = q > d;
    }
    if (ok && q < lim && (*q == 'e' || *q == 'E')) {
        q++;
        q += q < lim && (*q == '+' || *q == '-');
        d = q;
        while (q < lim && is_digit(*q)) {
            q++;
        }
        ok = q > d;
    }
    if (!ok || (q == lim && lim != s->end)) {
        return FALLBACK;
    }
    if (q < s->end && (is_digit(*q) || *q == '.' || *q == 'e' || *q == 'E' ||
                       *q == '+' || *q == '-')) {
        return FALLBACK;
    }
    s->p = q;
    return 0;
}

static int skip_value(struct scan *s, int depth);

/* After '{' or '[' was consumed: the members or elements up to the close. */
static int skip_container(struct scan *s, bool object, int depth)
{
    if (expect(s, object ? '}' : ']')) {
        return 0;
    }
    for (;;) {
        const char *k;
        size_t n;
        int rv = object ? read_key(s, &k, &n) : 0;
        if (rv == 0) {
            rv = skip_value(s, depth + 1);
        }
        if (rv != 0) {
            return rv;
        }
        if (expect(s, ',')) {
            continue;
        }
        return expect(s, object ? '}' : ']') ? 0 : FALLBACK;
    }
}

static int skip_value(struct scan *s, int depth)
{
    if (depth > MAX_DEPTH) {
        return FALLBACK;
    }
    skip_ws(s);
    if (s->p >= s->end) {
        return FALLBACK;
    }
    const char *str;
    size_t n;
    switch (*s->p) {
    case '"':
        return read_string(s, &str, &n);
    case '{':
    case '[':
        s->p++;
        return skip_container(s, s->p[-1] == '{', depth);
    case 't':
        return expect_word(s, "true") ? 0 : FALLBACK;
    case 'f':
        return expect_word(s, "false") ? 0 : FALLBACK;
    case 'n':
        return expect_word(s, "null") ? 0 : FALLBACK;
    default:
        return skip_number(s);
    }
}

/* Grows *arr (elements of size) so that index n fits. */
static int grow(void **arr, size_t *cap, size_t n, size_t size)
{
    if (n < *cap) {
        return 0;
    }
    size_t ncap = *cap ? *cap * 2 : 16;
    void *p = ns_realloc(*arr, ncap * size);
    if (p == NULL) {
        return NS_ENOMEM;
    }
    memset((char *)p + *cap * size, 0, (ncap - *cap) * size);
    *arr = p;
    *cap = ncap;
    return 0;
}

/* Member loop helpers: 0 with *more set, or FALLBACK. */
static int next_member(struct scan *s, bool *more)
{
    if (expect(s, ',')) {
        *more = true;
        return 0;
    }
    *more = false;
    return expect(s, '}') ? 0 : FALLBACK;
}

/* Marks bit in *seen; a key seen twice is left to cJSON (first one wins). */
static bool first_time(unsigned *seen, unsigned bit)
{
    bool first = (*seen & bit) == 0;
    *seen |= bit;
    return first;
}

/* One TopicConfig object (at '{') appended to r->topics. */
static int scan_topic(struct scan *s)
{
    struct ns_register *r = s->r;
    struct ns_topic_config t = {NULL, 16, 16, NS_PERM_READ | NS_PERM_WRITE, 0};
    unsigned seen = 0;
    int rv = expect(s, '{') ? 0 : FALLBACK;
    bool more = rv == 0 && !expect(s, '}');
    while (rv == 0 && more) {
        const char *k;
        size_t n;
        if ((rv = read_key(s, &k, &n)) != 0) {
            break;
        }
        if (key_is(k, n, "topicName")) {
            const char *v;
            size_t vn;
            rv = first_time(&seen, 1) ? read_string(s, &v, &vn) : FALLBACK;
            if (rv == 0 && (t.name = ns_strndup(v, vn)) == NULL) {
                rv = NS_ENOMEM;
            }
        } else if (key_is(k, n, "readQueueNums")) {
            rv =
                first_time(&seen, 2) ? read_int32(s, &t.read_queues) : FALLBACK;
        } else if (key_is(k, n, "writeQueueNums")) {
            rv = first_time(&seen, 4) ? read_int32(s, &t.write_queues)
                                      : FALLBACK;
        } else if (key_is(k, n, "perm")) {
            rv = first_time(&seen, 8) ? read_int32(s, &t.perm) : FALLBACK;
        } else if (key_is(k, n, "topicSysFlag")) {
            rv = first_time(&seen, 16) ? read_int32(s, &t.sys_flag) : FALLBACK;
        } else if (key_is(k, n, "order") || key_is(k, n, "topicFilterType")) {
            /* Not kept, but Java fails the body on a bad one: only the
             * shapes brokers write (a boolean, an enum name) stay here. */
            skip_ws(s);
            uint8_t want = key_is(k, n, "order") ? 'b' : '"';
            bool plain =
                s->p < s->end &&
                (want == '"' ? *s->p == '"' : (*s->p == 't' || *s->p == 'f'));
            rv = plain ? skip_value(s, 4) : FALLBACK;
        } else {
            rv = skip_value(s, 4);
        }
        if (rv == 0) {
            rv = next_member(s, &more);
        }
    }
    if (rv == 0 && t.name == NULL) {
        rv = FALLBACK; /* the cJSON path reports the missing topicName */
    }
    if (rv == 0) {
        void *arr = r->topics;
        rv = grow(&arr, &s->cap_topics, r->n_topics, sizeof *r->topics);
        r->topics = arr;
    }
    if (rv != 0) {
        ns_free(t.name);
        return rv;
    }
    r->topics[r->n_topics++] = t;
    return 0;
}

/* An object (at '{', or null) whose values are each handed to member with
 * the key, or FALLBACK for anything else. */
static int scan_map(struct scan *s,
                    int (*member)(struct scan *s, const char *k, size_t n))
{
    if (expect_word(s, "null")) {
        return 0;
    }
    int rv = expect(s, '{') ? 0 : FALLBACK;
    bool more = rv == 0 && !expect(s, '}');
    while (rv == 0 && more) {
        const char *k;
        size_t n;
        rv = read_key(s, &k, &n);
        if (rv == 0) {
            rv = member(s, k, n);
        }
        if (rv == 0) {
            rv = next_member(s, &more);
        }
    }
    return rv;
}

static int topic_member(struct scan *s, const char *k, size_t n)
{
    (void)k;
    (void)n;
    return scan_topic(s);
}

/* currIdMap entries go to the mapping being filled (the last one). */
static int curr_id_member(struct scan *s, const char *k, size_t n)
{
    struct ns_mapping_info *m = &s->r->mappings[s->r->n_mappings - 1];
    size_t i = n > 0 && k[0] == '-';
    if (n == i || n - i > 10) {
        return FALLBACK;
    }
    int64_t key = 0;
    for (; i < n; i++) {
        if (!is_digit((uint8_t)k[i])) {
            return FALLBACK;
        }
        key = key * 10 + (k[i] - '0');
    }
    key = k[0] == '-' ? -key : key;
    int32_t value;
    int rv = read_int32(s, &value);
    if (rv == 0 && (key < INT32_MIN || key > INT32_MAX)) {
        rv = FALLBACK;
    }
    if (rv != 0) {
        return rv;
    }
    void *arr = m->curr_ids;
    rv = grow(&arr, &s->cap_curr_ids, m->n_curr_ids, sizeof *m->curr_ids);
    m->curr_ids = arr;
    if (rv != 0) {
        return rv;
    }
    m->curr_ids[m->n_curr_ids].key = (int32_t)key;
    m->curr_ids[m->n_curr_ids].value = value;
    m->n_curr_ids++;
    return 0;
}

static int cmp_id_pair(const void *a, const void *b)
{
    const struct ns_id_pair *x = a, *y = b;
    return (x->key > y->key) - (x->key < y->key);
}

/* Sorted as the cJSON path sorts; a repeated key is its error to report. */
static int finish_curr_ids(struct ns_mapping_info *m)
{
    if (m->n_curr_ids < 2) {
        return 0;
    }
    qsort(m->curr_ids, m->n_curr_ids, sizeof *m->curr_ids, cmp_id_pair);
    for (size_t i = 1; i < m->n_curr_ids; i++) {
        if (m->curr_ids[i].key == m->curr_ids[i - 1].key) {
            return FALLBACK;
        }
    }
    return 0;
}

static int dup_string(struct scan *s, char **out)
{
    const char *v;
    size_t n;
    int rv = read_string(s, &v, &n);
    if (rv == 0 && (*out = ns_strndup(v, n)) == NULL) {
        rv = NS_ENOMEM;
    }
    return rv;
}

/* One TopicQueueMappingInfo (map key k is its topic) appended to r->mappings.
 */
static int mapping_member(struct scan *s, const char *k, size_t n)
{
    struct ns_register *r = s->r;
    void *arr = r->mappings;
    int rv = grow(&arr, &s->cap_mappings, r->n_mappings, sizeof *r->mappings);
    r->mappings = arr;
    if (rv != 0) {
        return rv;
    }
    struct ns_mapping_info *m = &r->mappings[r->n_mappings++];
    s->cap_curr_ids = 0;
    if ((m->topic = ns_strndup(k, n)) == NULL) {
        return NS_ENOMEM;
    }
    unsigned seen = 0;
    rv = expect(s, '{') ? 0 : FALLBACK;
    bool more = rv == 0 && !expect(s, '}');
    while (rv == 0 && more) {
        const char *mk;
        size_t mn;
        if ((rv = read_key(s, &mk, &mn)) != 0) {
            break;
        }
        if (key_is(mk, mn, "bname")) {
            rv = first_time(&seen, 1) ? dup_string(s, &m->bname) : FALLBACK;
        } else if (key_is(mk, mn, "scope")) {
            rv = !first_time(&seen, 2)    ? FALLBACK
                 : expect_word(s, "null") ? 0
                                          : dup_string(s, &m->scope);
        } else if (key_is(mk, mn, "totalQueues")) {
            rv = first_time(&seen, 4) ? read_int32(s, &m->total_queues)
                                      : FALLBACK;
        } else if (key_is(mk, mn, "epoch")) {
            rv = first_time(&seen, 8) ? read_int(s, &m->epoch) : FALLBACK;
        } else if (key_is(mk, mn, "dirty")) {
            m->dirty = expect_word(s, "true");
            rv = first_time(&seen, 16) && (m->dirty || expect_word(s, "false"))
                     ? 0
                     : FALLBACK;
        } else if (key_is(mk, mn, "currIdMap")) {
            rv = first_time(&seen, 32) ? scan_map(s, curr_id_member) : FALLBACK;
        } else {
            rv = skip_value(s, 4);
        }
        if (rv == 0) {
            rv = next_member(s, &more);
        }
    }
    if (rv == 0 && m->bname == NULL) {
        rv = FALLBACK; /* the cJSON path reports the missing bname */
    }
    return rv == 0 ? finish_curr_ids(m) : rv;
}

/* DataVersion object (at '{' or null). */
static int scan_dv(struct scan *s)
{
    struct ns_data_version *dv = &s->r->dv;
    if (expect_word(s, "null")) {
        return 0;
    }
    unsigned seen = 0;
    int rv = expect(s, '{') ? 0 : FALLBACK;
    bool more = rv == 0 && !expect(s, '}');
    while (rv == 0 && more) {
        const char *k;
        size_t n;
        if ((rv = read_key(s, &k, &n)) != 0) {
            break;
        }
        if (key_is(k, n, "counter")) {
            rv = first_time(&seen, 1) ? read_int(s, &dv->counter) : FALLBACK;
        } else if (key_is(k, n, "stateVersion")) {
            rv = first_time(&seen, 2) ? read_int(s, &dv->state_version)
                                      : FALLBACK;
        } else if (key_is(k, n, "timestamp")) {
            rv = first_time(&seen, 4) ? read_int(s, &dv->timestamp) : FALLBACK;
        } else {
            rv = skip_value(s, 3);
        }
        if (rv == 0) {
            rv = next_member(s, &more);
        }
    }
    return rv;
}

/* TopicConfigSerializeWrapper object (at '{'); dv must hold the defaults. */
static int scan_wrapper(struct scan *s)
{
    unsigned seen = 0;
    int rv = expect(s, '{') ? 0 : FALLBACK;
    bool more = rv == 0 && !expect(s, '}');
    while (rv == 0 && more) {
        const char *k;
        size_t n;
        if ((rv = read_key(s, &k, &n)) != 0) {
            break;
        }
        if (key_is(k, n, "dataVersion")) {
            rv = first_time(&seen, 1) ? scan_dv(s) : FALLBACK;
        } else if (key_is(k, n, "topicConfigTable")) {
            rv = first_time(&seen, 2) ? scan_map(s, topic_member) : FALLBACK;
        } else if (key_is(k, n, "topicQueueMappingInfoMap")) {
            rv = first_time(&seen, 4) ? scan_map(s, mapping_member) : FALLBACK;
        } else {
            rv = skip_value(s, 2);
        }
        if (rv == 0) {
            rv = next_member(s, &more);
        }
    }
    return rv;
}

static int scan_filter_servers(struct scan *s)
{
    struct ns_register *r = s->r;
    if (expect_word(s, "null")) {
        return 0;
    }
    if (!expect(s, '[')) {
        return FALLBACK;
    }
    r->has_filter_servers = true;
    if (expect(s, ']')) {
        return 0;
    }
    for (;;) {
        void *arr = r->filter_servers;
        int rv = grow(&arr, &s->cap_filters, r->n_filter_servers,
                      sizeof *r->filter_servers);
        r->filter_servers = arr;
        if (rv == 0) {
            rv = dup_string(s, &r->filter_servers[r->n_filter_servers]);
        }
        if (rv != 0) {
            return rv;
        }
        r->n_filter_servers++;
        if (expect(s, ',')) {
            continue;
        }
        return expect(s, ']') ? 0 : FALLBACK;
    }
}

/* RegisterBrokerBody object (at '{'). */
static int scan_body(struct scan *s)
{
    unsigned seen = 0;
    int rv = expect(s, '{') ? 0 : FALLBACK;
    bool more = rv == 0 && !expect(s, '}');
    while (rv == 0 && more) {
        const char *k;
        size_t n;
        if ((rv = read_key(s, &k, &n)) != 0) {
            break;
        }
        if (key_is(k, n, "filterServerList")) {
            rv = first_time(&seen, 1) ? scan_filter_servers(s) : FALLBACK;
        } else if (key_is(k, n, "topicConfigSerializeWrapper")) {
            rv = !first_time(&seen, 2)    ? FALLBACK
                 : expect_word(s, "null") ? 0
                                          : scan_wrapper(s);
        } else {
            rv = skip_value(s, 1);
        }
        if (rv == 0) {
            rv = next_member(s, &more);
        }
    }
    return rv;
}

int register_body_scan(struct ns_register *r, bool bare_wrapper,
                       const uint8_t *body, size_t len, int64_t now_ms)
{
    struct scan s = {.p = body, .end = body + len, .r = r};
    ns_buf_init(&s.tmp);
    r->dv.counter = 0;
    r->dv.state_version = 0;
    r->dv.timestamp = now_ms;
    int rv = bare_wrapper ? scan_wrapper(&s) : scan_body(&s);
    skip_ws(&s);
    if (rv == 0 && s.p != s.end) {
        rv = FALLBACK;
    }
    ns_buf_close(&s.tmp);
    return rv;
}
