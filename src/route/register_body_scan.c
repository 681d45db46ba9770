/* Fast path of the REGISTER_BROKER JSON body decoder: one pass over the
 * RegisterBrokerBody (or bare TopicConfigSerializeWrapper) text straight into
 * struct ns_register, without a cJSON tree. It is deliberately partial:
 * anything it is not sure to read exactly as the cJSON path of register_body.c
 * does (numbers as strings or over 15 digits, repeated known keys, $ref keys,
 * NUL or surrogate escapes, control bytes, deep nesting, any error) answers
 * NS_EAGAIN and that path decides, so errors are always its errors. The
 * lexemes and escapes come from the pull tokenizer (json_pull.h, with bare
 * integer keys, leading zeros and no $ref keys); this file is the grammar,
 * which also takes a stock broker's TopicConfig keys and values as whole
 * texts where they are spelled exactly so (what the tokenizer would read the
 * same), and leaves anything else to the tokenizer. */
#include <stdlib.h>
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/buf.h"
#include "raftns/decimal.h"
#include "raftns/err.h"
#include "raftns/json_pull.h"
#include "register_body_scan.h"

#define FALLBACK NS_EAGAIN
#define MAX_DEPTH 16        /* far below the reader's NS_JSON_MAX_DEPTH */
#define MAX_NUMBER_CHARS 31 /* skipped numbers; cJSON reads up to 63 */

struct scan {
    struct ns_json_pull t;
    struct ns_register *r;
    struct ns_buf tmp; /* decoded text of the last escaped string */
    bool key_plain;    /* the last map key scan_map read had no escape */
    size_t cap_topics;
    /* Topic names, NUL-terminated, one after another: they become
     * r->topic_names when the scan succeeds, and r->topics[i].name points at
     * name_at[i] in it. Until then every name is NULL. */
    struct ns_buf names;
    size_t *name_at;
    size_t cap_name_at;
    size_t cap_mappings;
    size_t cap_filters;
    size_t cap_curr_ids; /* of the mapping being filled */
};

/* A decoded string: *out points into the text, or into s->tmp when it had
 * escapes (valid until the next string); not NUL-terminated. */
static int take_string(struct scan *s, const struct ns_json_pull_str *str,
                       const char **out, size_t *n)
{
    *n = str->len;
    if (str->len == str->raw_len) {
        *out = str->raw;
        return 0;
    }
    ns_buf_reset(&s->tmp);
    if (ns_buf_reserve(&s->tmp, str->len) != 0) {
        return NS_ENOMEM;
    }
    ns_json_pull_unescape(&s->t, str, (char *)s->tmp.data);
    s->tmp.len = str->len;
    *out = (const char *)s->tmp.data;
    return 0;
}

/* A string literal after blanks, as take_string gives it. */
static int read_string(struct scan *s, const char **out, size_t *n)
{
    struct ns_json_pull_str str;
    int rv = ns_json_pull_string(&s->t, &str);
    return rv != 0 ? rv : take_string(s, &str, out, n);
}

/* An object key and its colon: a string, or a bare integer as the reader
 * quotes it. Keys starting with '$' ($ref) are left to the cJSON path. */
static int read_key(struct scan *s, const char **out, size_t *n)
{
    struct ns_json_pull_str str;
    int rv = ns_json_pull_key(&s->t, &str);
    return rv != 0 ? rv : take_string(s, &str, out, n);
}

static bool key_is(const char *k, size_t n, const char *name)
{
    return strlen(name) == n && memcmp(k, name, n) == 0;
}

/* The cursor after blanks, with one test for the usual byte (no blank is
 * above ' '). */
static const uint8_t *at(struct scan *s)
{
    const uint8_t *p = s->t.p;
    if (p < s->t.end && ' ' < *p) {
        return p;
    }
    ns_json_pull_skip_ws(&s->t);
    return s->t.p;
}

/* Consumes text when the bytes at p (the cursor after blanks, with at least
 * strlen(text) bytes left) are text: a lexeme or lexemes spelled out in full,
 * which the pull tokenizer would read the same. Inlined so that the compare
 * is of constant length. */
static inline bool take_text(struct scan *s, const uint8_t *p, const char *text)
{
    size_t n = strlen(text);
    if (memcmp(p, text, n) != 0) {
        return false;
    }
    s->t.p = p + n;
    return true;
}

/* An integer of at most 15 digits, not followed by a fraction or exponent:
 * exactly what cJSON's double holds. */
static int read_int(struct scan *s, int64_t *out)
{
    return ns_json_pull_int(&s->t, out);
}

static int read_int32_slow(struct scan *s, int32_t *out)
{
    int64_t v = 0;
    int rv = read_int(s, &v);
    if (rv == 0 && (v < INT32_MIN || v > INT32_MAX)) {
        rv = FALLBACK;
    }
    *out = (int32_t)v;
    return rv;
}

static inline int read_int32(struct scan *s, int32_t *out)
{
    /* One digit before ',' or '}' (queue counts, perm, flags): what
     * ns_json_pull_int reads, without the call. */
    const uint8_t *p = at(s);
    if (s->t.end - p >= 2 && (unsigned)(p[0] - '0') < 10 &&
        (p[1] == ',' || p[1] == '}')) {
        *out = p[0] - '0';
        s->t.p = p + 1;
        return 0;
    }
    return read_int32_slow(s, out);
}

static bool expect(struct scan *s, uint8_t ch)
{
    const uint8_t *p = at(s);
    if (p < s->t.end && *p == ch) {
        s->t.p = p + 1;
        return true;
    }
    return false;
}

static bool expect_word(struct scan *s, int literal)
{
    return ns_json_pull_accept_literal(&s->t, literal);
}

static int skip_value(struct scan *s, int depth)
{
    /* An empty object (a topic's attributes), as ns_json_pull_skip takes it
     * within the limits. */
    const uint8_t *p = at(s);
    if (s->t.end - p >= 2 && p[0] == '{' && p[1] == '}' &&
        depth <= s->t.max_depth && depth < s->t.max_open_depth) {
        s->t.p = p + 2;
        return 0;
    }
    return ns_json_pull_skip(&s->t, depth);
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

/* The keys of a TopicConfig, as bits of its seen set. */
enum {
    TOPIC_NAME = 1u << 0,
    TOPIC_READ_QUEUES = 1u << 1,
    TOPIC_WRITE_QUEUES = 1u << 2,
    TOPIC_PERM = 1u << 3,
    TOPIC_SYS_FLAG = 1u << 4,
    TOPIC_ORDER = 1u << 5,
    TOPIC_FILTER_TYPE = 1u << 6,
    TOPIC_OTHER = 1u << 7, /* skipped */
};

/* A decoded TopicConfig key. */
static unsigned topic_key(const char *k, size_t n)
{
    static const struct {
        const char *name;
        unsigned key;
    } keys[] = {
        {"topicName", TOPIC_NAME},
        {"readQueueNums", TOPIC_READ_QUEUES},
        {"writeQueueNums", TOPIC_WRITE_QUEUES},
        {"perm", TOPIC_PERM},
        {"topicSysFlag", TOPIC_SYS_FLAG},
        {"order", TOPIC_ORDER},
        {"topicFilterType", TOPIC_FILTER_TYPE},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (key_is(k, n, keys[i].name)) {
            return keys[i].key;
        }
    }
    return TOPIC_OTHER;
}

/* A TopicConfig key and its colon as brokers write them (no escape, no blank
 * before the colon), consumed; 0 leaves anything else, the cursor after
 * blanks, to read_key. Dispatch on the first letter, one compare of constant
 * length each, instead of a string scan and a chain of key_is. */
static unsigned plain_topic_key(struct scan *s)
{
    const uint8_t *p = at(s);
    if (s->t.end - p < 20 || p[0] != '"') {
        return 0; /* 20: the longest key below fits */
    }
    switch (p[1]) {
    case 'a':
        return take_text(s, p, "\"attributes\":") ? TOPIC_OTHER : 0;
    case 'o':
        return take_text(s, p, "\"order\":") ? TOPIC_ORDER : 0;
    case 'p':
        return take_text(s, p, "\"perm\":") ? TOPIC_PERM : 0;
    case 'r':
        return take_text(s, p, "\"readQueueNums\":") ? TOPIC_READ_QUEUES : 0;
    case 'w':
        return take_text(s, p, "\"writeQueueNums\":") ? TOPIC_WRITE_QUEUES : 0;
    case 't':
        return take_text(s, p, "\"topicName\":")         ? TOPIC_NAME
               : take_text(s, p, "\"topicFilterType\":") ? TOPIC_FILTER_TYPE
               : take_text(s, p, "\"topicSysFlag\":")    ? TOPIC_SYS_FLAG
                                                         : 0;
    default:
        return 0;
    }
}

/* topicName's value appended to s->names; *name_at is where it starts.
 * Brokers repeat the map key k: when that key had no escape (so holds no '"',
 * '\\' or control byte), the quoted k at the cursor is exactly the string
 * ns_json_pull_string would read, and is taken without scanning it again. */
static int read_topic_name(struct scan *s, const char *k, size_t n,
                           size_t *name_at)
{
    const char *v = k;
    size_t vn = n;
    const uint8_t *p = at(s);
    if (s->key_plain && (size_t)(s->t.end - p) >= n + 2 && p[0] == '"' &&
        memcmp(p + 1, k, n) == 0 && p[n + 1] == '"') {
        s->t.p = p + n + 2;
    } else {
        int rv = read_string(s, &v, &vn);
        if (rv != 0) {
            return rv;
        }
    }
    *name_at = s->names.len;
    ns_buf_append(&s->names, v, vn);
    ns_buf_put_u8(&s->names, 0);
    return s->names.err;
}

/* order and topicFilterType are not kept, but Java fails the body on a bad
 * one: only the shapes brokers write (a boolean, an enum name) stay here. */
static int skip_topic_flag(struct scan *s, unsigned key)
{
    const uint8_t *p = at(s);
    size_t left = (size_t)(s->t.end - p);
    if (key == TOPIC_ORDER) {
        if (left >= 5 &&
            (take_text(s, p, "false") || take_text(s, p, "true"))) {
            return 0;
        }
        return left > 0 && (*p == 't' || *p == 'f') ? skip_value(s, 4)
                                                    : FALLBACK;
    }
    if (left >= 12 && take_text(s, p, "\"SINGLE_TAG\"")) {
        return 0;
    }
    return left > 0 && *p == '"' ? skip_value(s, 4) : FALLBACK;
}

/* One TopicConfig object (at '{') appended to r->topics; k is its map key. */
static int scan_topic(struct scan *s, const char *k, size_t n)
{
    struct ns_register *r = s->r;
    struct ns_topic_config t = {NULL, 16, 16, NS_PERM_READ | NS_PERM_WRITE, 0};
    size_t name_at = 0;
    unsigned seen = 0;
    int rv = expect(s, '{') ? 0 : FALLBACK;
    bool more = rv == 0 && !expect(s, '}');
    while (rv == 0 && more) {
        unsigned key = plain_topic_key(s);
        if (key == 0) {
            const char *tk;
            size_t tn;
            if ((rv = read_key(s, &tk, &tn)) != 0) {
                break;
            }
            key = topic_key(tk, tn);
        }
        /* A kept key seen twice is left to cJSON (first one wins). */
        bool repeated =
            (seen & key &
             ~(unsigned)(TOPIC_ORDER | TOPIC_FILTER_TYPE | TOPIC_OTHER)) != 0;
        seen |= key;
        switch (repeated ? 0 : key) {
        case TOPIC_NAME:
            rv = read_topic_name(s, k, n, &name_at);
            break;
        case TOPIC_READ_QUEUES:
            rv = read_int32(s, &t.read_queues);
            break;
        case TOPIC_WRITE_QUEUES:
            rv = read_int32(s, &t.write_queues);
            break;
        case TOPIC_PERM:
            rv = read_int32(s, &t.perm);
            break;
        case TOPIC_SYS_FLAG:
            rv = read_int32(s, &t.sys_flag);
            break;
        case TOPIC_ORDER:
        case TOPIC_FILTER_TYPE:
            rv = skip_topic_flag(s, key);
            break;
        case TOPIC_OTHER:
            rv = skip_value(s, 4);
            break;
        default:
            rv = FALLBACK;
            break;
        }
        if (rv == 0) {
            rv = next_member(s, &more);
        }
    }
    if (rv == 0 && (seen & TOPIC_NAME) == 0) {
        rv = FALLBACK; /* the cJSON path reports the missing topicName */
    }
    if (rv == 0) {
        void *arr = r->topics;
        rv = grow(&arr, &s->cap_topics, r->n_topics, sizeof *r->topics);
        r->topics = arr;
    }
    if (rv == 0) {
        void *arr = s->name_at;
        rv = grow(&arr, &s->cap_name_at, r->n_topics, sizeof *s->name_at);
        s->name_at = arr;
    }
    if (rv != 0) {
        return rv;
    }
    s->name_at[r->n_topics] = name_at;
    r->topics[r->n_topics++] = t;
    return 0;
}

/* An object (at '{', or null) whose values are each handed to member with
 * the key, or FALLBACK for anything else. */
static int scan_map(struct scan *s,
                    int (*member)(struct scan *s, const char *k, size_t n))
{
    if (expect_word(s, NS_JSON_PULL_NULL)) {
        return 0;
    }
    int rv = expect(s, '{') ? 0 : FALLBACK;
    bool more = rv == 0 && !expect(s, '}');
    while (rv == 0 && more) {
        const char *k;
        size_t n;
        struct ns_json_pull_str str;
        rv = ns_json_pull_key(&s->t, &str);
        if (rv == 0) {
            s->key_plain = str.len == str.raw_len;
            rv = take_string(s, &str, &k, &n);
        }
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
    return scan_topic(s, k, n);
}

/* currIdMap entries go to the mapping being filled (the last one). */
static int curr_id_member(struct scan *s, const char *k, size_t n)
{
    struct ns_mapping_info *m = &s->r->mappings[s->r->n_mappings - 1];
    /* No '+' and at most 10 digits: what the cJSON path surely reads alike. */
    size_t i = n > 0 && k[0] == '-';
    int64_t key;
    if (n == i || n - i > 10 || k[0] == '+' ||
        !ns_decimal_parse(k, n, NS_DECIMAL_SIGN, INT32_MIN, INT32_MAX, &key)) {
        return FALLBACK;
    }
    int32_t value;
    int rv = read_int32(s, &value);
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
            rv = !first_time(&seen, 2)               ? FALLBACK
                 : expect_word(s, NS_JSON_PULL_NULL) ? 0
                                                     : dup_string(s, &m->scope);
        } else if (key_is(mk, mn, "totalQueues")) {
            rv = first_time(&seen, 4) ? read_int32(s, &m->total_queues)
                                      : FALLBACK;
        } else if (key_is(mk, mn, "epoch")) {
            rv = first_time(&seen, 8) ? read_int(s, &m->epoch) : FALLBACK;
        } else if (key_is(mk, mn, "dirty")) {
            m->dirty = expect_word(s, NS_JSON_PULL_TRUE);
            rv = first_time(&seen, 16) &&
                         (m->dirty || expect_word(s, NS_JSON_PULL_FALSE))
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
    if (expect_word(s, NS_JSON_PULL_NULL)) {
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
    if (expect_word(s, NS_JSON_PULL_NULL)) {
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
            rv = !first_time(&seen, 2)               ? FALLBACK
                 : expect_word(s, NS_JSON_PULL_NULL) ? 0
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
    struct scan s = {.r = r};
    ns_json_pull_init(&s.t, body, len,
                      NS_JSON_PULL_LEADING_ZEROS | NS_JSON_PULL_INT_KEYS |
                          NS_JSON_PULL_NO_REF_KEYS);
    s.t.max_number_chars = MAX_NUMBER_CHARS;
    s.t.max_depth = MAX_DEPTH;
    s.t.max_open_depth = MAX_DEPTH + 1; /* values deeper are refused first */
    ns_buf_init(&s.tmp);
    r->dv.counter = 0;
    r->dv.state_version = 0;
    r->dv.timestamp = now_ms;
    ns_buf_init(&s.names);
    int rv = bare_wrapper ? scan_wrapper(&s) : scan_body(&s);
    ns_json_pull_skip_ws(&s.t);
    if (rv == 0 && s.t.p != s.t.end) {
        rv = FALLBACK;
    }
    if (rv == 0 && r->n_topics > 0) {
        size_t bytes;
        r->topic_names = (char *)ns_buf_take(&s.names, &bytes);
        for (size_t i = 0; i < r->n_topics; i++) {
            r->topics[i].name = r->topic_names + s.name_at[i];
        }
    }
    ns_buf_close(&s.names);
    ns_free(s.name_at);
    ns_buf_close(&s.tmp);
    return rv;
}
