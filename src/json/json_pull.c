/* The pull tokenizer of the fast JSON scanners (include/raftns/json_pull.h):
 * the one place where their hostile input is split into lexemes and string
 * escapes are decoded. What it refuses (NS_EAGAIN) is whatever the cJSON
 * path might read differently: control bytes in strings, unknown escapes,
 * \u0000, surrogates other than well-formed pairs, numbers long enough to
 * lose digits as doubles (docs/compat.md). Pure. */
#include "raftns/json_pull.h"

#include <string.h>

#include "raftns/err.h"

#define FALLBACK NS_EAGAIN

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

/* The one-character escapes, by the byte after the backslash (0: none). */
static const uint8_t simple_escape[128] = {
    ['"'] = '"',  ['\\'] = '\\', ['/'] = '/',  ['b'] = '\b',
    ['f'] = '\f', ['n'] = '\n',  ['r'] = '\r', ['t'] = '\t',
};

void ns_json_pull_init(struct ns_json_pull *t, const uint8_t *p, size_t n,
                       unsigned flags)
{
    t->p = p;
    t->end = p + n;
    t->flags = flags;
    t->max_number_chars = 15;
    t->max_depth = 16;
    t->max_open_depth = 16;
}

static bool is_digit(uint8_t ch)
{
    return ch >= '0' && ch <= '9';
}

/* Bytes that may continue a number: after one, a number is not complete. */
static const bool number_chars[256] = {
    ['0'] = true, ['1'] = true, ['2'] = true, ['3'] = true, ['4'] = true,
    ['5'] = true, ['6'] = true, ['7'] = true, ['8'] = true, ['9'] = true,
    ['.'] = true, ['e'] = true, ['E'] = true, ['+'] = true, ['-'] = true,
};

static bool is_number_char(uint8_t ch)
{
    return number_chars[ch];
}

/* The bodies of ns_json_pull_skip_ws, _peek and _accept, which the readers
 * below call often enough that they should be inlined. */
static void skip_blanks(struct ns_json_pull *t)
{
    /* One test for the usual byte: every blank is at most ' '. */
    while (t->p < t->end && *t->p <= ' ' &&
           (*t->p == ' ' || *t->p == '\t' || *t->p == '\n' || *t->p == '\r')) {
        t->p++;
    }
}

static int peek_byte(struct ns_json_pull *t)
{
    skip_blanks(t);
    return t->p < t->end ? *t->p : -1;
}

static bool accept_byte(struct ns_json_pull *t, uint8_t ch)
{
    if (peek_byte(t) == ch) {
        t->p++;
        return true;
    }
    return false;
}

void ns_json_pull_skip_ws(struct ns_json_pull *t)
{
    skip_blanks(t);
}

int ns_json_pull_peek(struct ns_json_pull *t)
{
    return peek_byte(t);
}

bool ns_json_pull_accept(struct ns_json_pull *t, uint8_t ch)
{
    return accept_byte(t, ch);
}

/* Bit 7 of each byte of the eight bytes w (in memory order when loaded with
 * memcpy) that ends a plain run: '"', '\\' or below 0x20. Only the lowest
 * set bit is exact (a borrow may set higher ones), which is the one used. */
static uint64_t run_stops(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101u;
    uint64_t quote = w ^ (ones * '"');
    uint64_t slash = w ^ (ones * '\\');
    /* x - ones sets bit 7 of a zero byte, w - 0x20s that of a byte below
     * 0x20; & ~w drops bytes of 0x80 and above, which '"' and '\\' keep. */
    return ((w - ones * 0x20) | (quote - ones) | (slash - ones)) & ~w &
           (ones * 0x80);
}

/* The first byte in [p, end) that ends a plain run, or end. */
static const uint8_t *run_end(const uint8_t *p, const uint8_t *end)
{
    /* Eight bytes a round where eight are left: a registration's keys and
     * names are mostly one or two rounds (BENCHMARKS.md, "Registration work
     * per changed registration"). */
    while (end - p >= 8) {
        uint64_t w;
        memcpy(&w, p, sizeof w);
        uint64_t stops = run_stops(w);
        if (stops != 0) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            p += __builtin_ctzll(stops) / 8;
#endif
            break;
        }
        p += 8;
    }
    while (p < end && !ends_run[*p]) {
        p++;
    }
    return p;
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

static size_t utf8_len(uint32_t cp)
{
    return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
}

static void put_utf8(uint8_t *o, uint32_t cp)
{
    switch (utf8_len(cp)) {
    case 1:
        o[0] = (uint8_t)cp;
        break;
    case 2:
        o[0] = (uint8_t)(0xC0 | cp >> 6);
        o[1] = (uint8_t)(0x80 | (cp & 0x3F));
        break;
    case 3:
        o[0] = (uint8_t)(0xE0 | cp >> 12);
        o[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
        o[2] = (uint8_t)(0x80 | (cp & 0x3F));
        break;
    default:
        o[0] = (uint8_t)(0xF0 | cp >> 18);
        o[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3F));
        o[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3F));
        o[3] = (uint8_t)(0x80 | (cp & 0x3F));
        break;
    }
}

/* The escape at p (a backslash, inside [p, end)): returns the bytes it
 * takes and sets *cp, or 0 for what is left to cJSON: an unknown escape, bad
 * hex, \u0000, and surrogates (all of them, or with pairs allowed the lone
 * and reversed ones). */
static size_t read_escape(const uint8_t *p, const uint8_t *end, bool pairs,
                          uint32_t *cp)
{
    if (end - p < 2) {
        return 0;
    }
    if (p[1] != 'u') {
        if (p[1] >= 128 || simple_escape[p[1]] == 0) {
            return 0;
        }
        *cp = simple_escape[p[1]];
        return 2;
    }
    if (end - p < 6) {
        return 0;
    }
    int hi = hex4(p + 2);
    if (hi <= 0) {
        return 0;
    }
    if (hi < 0xD800 || hi > 0xDFFF) {
        *cp = (uint32_t)hi;
        return 6;
    }
    if (!pairs || hi >= 0xDC00 || end - p < 12 || p[6] != '\\' || p[7] != 'u') {
        return 0;
    }
    int lo = hex4(p + 8);
    if (lo < 0xDC00 || lo > 0xDFFF) {
        return 0;
    }
    *cp = 0x10000 + (((uint32_t)hi - 0xD800) << 10 | ((uint32_t)lo - 0xDC00));
    return 12;
}

/* string_at past the plain run [start, p) that stops at something other
 * than the closing '"'. Kept out of line so that the usual string (no
 * escape) costs only the run scan. */
static __attribute__((noinline)) int string_rest(struct ns_json_pull *t,
                                                 struct ns_json_pull_str *s,
                                                 const uint8_t *start,
                                                 const uint8_t *p)
{
    const uint8_t *end = t->end;
    bool pairs = (t->flags & NS_JSON_PULL_SURROGATE_PAIRS) != 0;
    size_t len = (size_t)(p - start);
    for (;;) {
        if (p >= end || *p < 0x20) {
            return FALLBACK;
        }
        if (*p == '"') {
            break;
        }
        uint32_t cp;
        size_t used = read_escape(p, end, pairs, &cp);
        if (used == 0) {
            return FALLBACK;
        }
        len += utf8_len(cp);
        p += used;
        const uint8_t *run = p;
        p = run_end(p, end);
        len += (size_t)(p - run);
    }
    s->raw = (const char *)start;
    s->raw_len = (size_t)(p - start);
    s->len = len;
    t->p = p + 1;
    return 0;
}

/* ns_json_pull_string with the cursor at its '"'. */
static int string_at(struct ns_json_pull *t, struct ns_json_pull_str *s)
{
    const uint8_t *start = t->p + 1;
    const uint8_t *p = run_end(start, t->end);
    if (p == t->end || *p != '"') {
        return string_rest(t, s, start, p);
    }
    s->raw = (const char *)start;
    s->raw_len = s->len = (size_t)(p - start);
    t->p = p + 1;
    return 0;
}

int ns_json_pull_string(struct ns_json_pull *t, struct ns_json_pull_str *s)
{
    return peek_byte(t) == '"' ? string_at(t, s) : FALLBACK;
}

void ns_json_pull_unescape(const struct ns_json_pull *t,
                           const struct ns_json_pull_str *s, char *out)
{
    const uint8_t *p = (const uint8_t *)s->raw;
    const uint8_t *end = p + s->raw_len;
    bool pairs = (t->flags & NS_JSON_PULL_SURROGATE_PAIRS) != 0;
    uint8_t *o = (uint8_t *)out;
    if (s->len == s->raw_len) {
        memcpy(o, p, s->len);
        return;
    }
    while (p < end) {
        const uint8_t *run = p;
        while (p < end && *p != '\\') {
            p++;
        }
        memcpy(o, run, (size_t)(p - run));
        o += p - run;
        if (p < end) {
            uint32_t cp = 0;
            size_t used = read_escape(p, end, pairs, &cp);
            put_utf8(o, cp);
            o += utf8_len(cp);
            p += used;
        }
    }
}

int ns_json_pull_int(struct ns_json_pull *t, int64_t *v)
{
    skip_blanks(t);
    const uint8_t *p = t->p;
    /* One digit, the usual queue count, perm or flag. */
    if (t->end - p >= 2 && is_digit(p[0]) && !is_number_char(p[1])) {
        *v = p[0] - '0';
        t->p = p + 1;
        return 0;
    }
    bool neg = p < t->end && *p == '-';
    p += neg;
    const uint8_t *digits = p;
    int64_t x = 0;
    while (p < t->end && is_digit(*p)) {
        if (p - digits >= NS_JSON_PULL_MAX_INT_DIGITS) {
            return FALLBACK;
        }
        x = x * 10 + (*p - '0');
        p++;
    }
    if (p == digits || (p < t->end && is_number_char(*p))) {
        return FALLBACK;
    }
    *v = neg ? -x : x;
    t->p = p;
    return 0;
}

/* Digits at p, at least one; returns the end of the run or NULL. */
static const uint8_t *digit_run(const uint8_t *p, const uint8_t *end)
{
    const uint8_t *start = p;
    while (p < end && is_digit(*p)) {
        p++;
    }
    return p > start ? p : NULL;
}

int ns_json_pull_number(struct ns_json_pull *t)
{
    skip_blanks(t);
    const uint8_t *e = t->end;
    const uint8_t *start = t->p;
    const uint8_t *p = start;
    p += p < e && *p == '-';
    if (p < e && *p == '0' && !(t->flags & NS_JSON_PULL_LEADING_ZEROS)) {
        p++; /* a following digit is refused below */
    } else if ((p = digit_run(p, e)) == NULL) {
        return FALLBACK;
    }
    if (p < e && *p == '.' && (p = digit_run(p + 1, e)) == NULL) {
        return FALLBACK;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        p += p < e && (*p == '+' || *p == '-');
        if ((p = digit_run(p, e)) == NULL) {
            return FALLBACK;
        }
    }
    if ((size_t)(p - start) > t->max_number_chars ||
        (p < e && is_number_char(*p))) {
        return FALLBACK;
    }
    t->p = p;
    return 0;
}

int ns_json_pull_literal(struct ns_json_pull *t, int *which)
{
    skip_blanks(t);
    size_t left = (size_t)(t->end - t->p);
    if (left >= 4 && memcmp(t->p, "true", 4) == 0) {
        *which = NS_JSON_PULL_TRUE;
        t->p += 4;
    } else if (left >= 5 && memcmp(t->p, "false", 5) == 0) {
        *which = NS_JSON_PULL_FALSE;
        t->p += 5;
    } else if (left >= 4 && memcmp(t->p, "null", 4) == 0) {
        *which = NS_JSON_PULL_NULL;
        t->p += 4;
    } else {
        return FALLBACK;
    }
    return 0;
}

bool ns_json_pull_accept_literal(struct ns_json_pull *t, int want)
{
    skip_blanks(t);
    const uint8_t *at = t->p;
    int which;
    if (ns_json_pull_literal(t, &which) == 0 && which == want) {
        return true;
    }
    t->p = at;
    return false;
}

/* The first decoded byte of a string that is not empty. */
static uint8_t first_byte(const struct ns_json_pull_str *s)
{
    const uint8_t *r = (const uint8_t *)s->raw;
    if (r[0] != '\\') {
        return r[0];
    }
    if (r[1] != 'u') {
        return simple_escape[r[1]];
    }
    int cp = hex4(r + 2); /* checked by ns_json_pull_string */
    return cp < 0x80 ? (uint8_t)cp : 0x80;
}

int ns_json_pull_key(struct ns_json_pull *t, struct ns_json_pull_str *s)
{
    int ch = peek_byte(t);
    if ((t->flags & NS_JSON_PULL_INT_KEYS) &&
        (ch == '-' || (ch >= '0' && ch <= '9'))) {
        const uint8_t *p = t->p + (ch == '-');
        const uint8_t *q = digit_run(p, t->end);
        if (q == NULL) {
            return FALLBACK;
        }
        s->raw = (const char *)t->p;
        s->raw_len = s->len = (size_t)(q - t->p);
        t->p = q;
    } else {
        int rv = ch == '"' ? string_at(t, s) : FALLBACK;
        if (rv != 0) {
            return rv;
        }
        if ((t->flags & NS_JSON_PULL_NO_REF_KEYS) && s->len > 0 &&
            first_byte(s) == '$') {
            return FALLBACK;
        }
    }
    return accept_byte(t, ':') ? 0 : FALLBACK;
}

int ns_json_pull_skip(struct ns_json_pull *t, int depth)
{
    if (depth > t->max_depth) {
        return FALLBACK;
    }
    int ch = peek_byte(t);
    struct ns_json_pull_str s;
    int which;
    if (ch == '"') {
        return string_at(t, &s);
    }
    if (ch == '-' || (ch >= '0' && ch <= '9')) {
        return ns_json_pull_number(t);
    }
    if (ch != '{' && ch != '[') {
        return ns_json_pull_literal(t, &which);
    }
    if (depth >= t->max_open_depth) {
        return FALLBACK;
    }
    uint8_t close = ch == '{' ? '}' : ']';
    t->p++;
    if (accept_byte(t, close)) {
        return 0;
    }
    do {
        int rv = close == '}' ? ns_json_pull_key(t, &s) : 0;
        if (rv == 0) {
            rv = ns_json_pull_skip(t, depth + 1);
        }
        if (rv != 0) {
            return rv;
        }
    } while (accept_byte(t, ','));
    return accept_byte(t, close) ? 0 : FALLBACK;
}
