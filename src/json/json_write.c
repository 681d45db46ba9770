/* Writing JSON the way fastjson does (docs/protocol.md §4.1), in the legacy and
 * standard flavours: string escaping and a comma-tracking streaming writer. It
 * knows no body schema. Invalid UTF-8 in input strings is replaced, byte by
 * byte, with U+FFFD (raw in legacy, \uFFFD in standard), which is what Java
 * would hold after decoding those bytes. */
#include "raftns/json.h"

#include <string.h>

#include "raftns/err.h"

#define MAX_SAFE_LONG 9007199254740991LL

static const char hex[] = "0123456789ABCDEF";

static void put_u_escape(struct ns_buf *out, uint32_t unit)
{
    char e[6] = {'\\',
                 'u',
                 hex[unit >> 12 & 0xF],
                 hex[unit >> 8 & 0xF],
                 hex[unit >> 4 & 0xF],
                 hex[unit & 0xF]};
    ns_buf_append(out, e, sizeof e);
}

/* Decodes one UTF-8 sequence at s (n bytes available). Returns its length and
 * sets *cp, or 0 for an invalid, overlong, surrogate or truncated sequence. */
static size_t decode_utf8(const uint8_t *s, size_t n, uint32_t *cp)
{
    uint8_t b = s[0];
    size_t len;
    uint32_t min;
    if (b >= 0xC2 && b <= 0xDF) {
        len = 2, min = 0x80, *cp = b & 0x1F;
    } else if (b >= 0xE0 && b <= 0xEF) {
        len = 3, min = 0x800, *cp = b & 0x0F;
    } else if (b >= 0xF0 && b <= 0xF4) {
        len = 4, min = 0x10000, *cp = b & 0x07;
    } else {
        return 0;
    }
    if (len > n) {
        return 0;
    }
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            return 0;
        }
        *cp = *cp << 6 | (s[i] & 0x3F);
    }
    if (*cp < min || *cp > 0x10FFFF || (*cp >= 0xD800 && *cp <= 0xDFFF)) {
        return 0;
    }
    return len;
}

static void put_code_point(struct ns_buf *out, uint32_t cp, const uint8_t *raw,
                           size_t raw_len, enum ns_json_flavour flavour)
{
    if (cp == 0x2028 || cp == 0x2029 ||
        (flavour == NS_JSON_STANDARD && cp < 0x10000)) {
        put_u_escape(out, cp);
    } else if (flavour == NS_JSON_STANDARD) {
        cp -= 0x10000;
        put_u_escape(out, 0xD800 + (cp >> 10));
        put_u_escape(out, 0xDC00 + (cp & 0x3FF));
    } else {
        ns_buf_append(out, raw, raw_len);
    }
}

static void put_ascii(struct ns_buf *out, uint8_t ch,
                      enum ns_json_flavour flavour)
{
    const char *esc = NULL;
    switch (ch) {
    case '"':
        esc = "\\\"";
        break;
    case '\\':
        esc = "\\\\";
        break;
    case '\b':
        esc = "\\b";
        break;
    case '\t':
        esc = "\\t";
        break;
    case '\n':
        esc = "\\n";
        break;
    case '\f':
        esc = "\\f";
        break;
    case '\r':
        esc = "\\r";
        break;
    case '/':
        esc = flavour == NS_JSON_STANDARD ? "\\/" : NULL;
        break;
    default:
        break;
    }
    if (esc != NULL) {
        ns_buf_append(out, esc, 2);
    } else if (ch < 0x20 || ch == 0x7F) {
        put_u_escape(out, ch);
    } else {
        ns_buf_put_u8(out, ch);
    }
}

void ns_json_write_string(struct ns_buf *out, const char *s,
                          enum ns_json_flavour flavour)
{
    static const uint8_t replacement[] = {0xEF, 0xBF, 0xBD};
    if (s == NULL) {
        ns_buf_append_str(out,
                          "null"); /* callers skip nulls; never crash on one */
        return;
    }
    const uint8_t *p = (const uint8_t *)s;
    size_t n = strlen(s);
    ns_buf_reserve(out, n + 2);
    ns_buf_put_u8(out, '"');
    for (size_t i = 0; i < n && out->err == 0;) {
        /* Bytes that stand for themselves go out as one run. */
        size_t run = i;
        while (run < n && p[run] >= 0x20 && p[run] < 0x7F && p[run] != '"' &&
               p[run] != '\\' &&
               (p[run] != '/' || flavour != NS_JSON_STANDARD)) {
            run++;
        }
        if (run > i) {
            ns_buf_append(out, p + i, run - i);
            i = run;
            continue;
        }
        if (p[i] < 0x80) {
            put_ascii(out, p[i], flavour);
            i++;
            continue;
        }
        uint32_t cp;
        size_t len = decode_utf8(p + i, n - i, &cp);
        if (len == 0) {
            put_code_point(out, 0xFFFD, replacement, sizeof replacement,
                           flavour);
            i++;
        } else {
            put_code_point(out, cp, p + i, len, flavour);
            i += len;
        }
    }
    ns_buf_put_u8(out, '"');
}

void ns_json_write_init(struct ns_json_writer *w, struct ns_buf *out,
                        enum ns_json_flavour flavour)
{
    memset(w, 0, sizeof *w);
    w->out = out;
    w->flavour = flavour;
    w->first[0] = true;
}

/* A comma before every element but the first; a value right after its key gets
 * none (the key leaves first[] set for it). */
static void before_value(struct ns_json_writer *w)
{
    if (w->depth < 0 || w->depth >= NS_JSON_MAX_DEPTH) {
        return;
    }
    if (!w->first[w->depth]) {
        ns_buf_put_u8(w->out, ',');
    }
    w->first[w->depth] = false;
}

static void open_level(struct ns_json_writer *w, char ch)
{
    before_value(w);
    ns_buf_put_u8(w->out, (uint8_t)ch);
    w->depth++;
    if (w->depth >= NS_JSON_MAX_DEPTH) {
        if (w->out->err == 0) {
            w->out->err = NS_ETOOBIG;
        }
        return;
    }
    w->first[w->depth] = true;
}

static void close_level(struct ns_json_writer *w, char ch)
{
    ns_buf_put_u8(w->out, (uint8_t)ch);
    if (w->depth > 0) {
        w->depth--;
    }
}

void ns_json_write_obj_begin(struct ns_json_writer *w)
{
    open_level(w, '{');
}

void ns_json_write_obj_end(struct ns_json_writer *w)
{
    close_level(w, '}');
}

void ns_json_write_arr_begin(struct ns_json_writer *w)
{
    open_level(w, '[');
}

void ns_json_write_arr_end(struct ns_json_writer *w)
{
    close_level(w, ']');
}

static void after_key(struct ns_json_writer *w)
{
    ns_buf_put_u8(w->out, ':');
    if (w->depth >= 0 && w->depth < NS_JSON_MAX_DEPTH) {
        w->first[w->depth] = true;
    }
}

void ns_json_write_key(struct ns_json_writer *w, const char *key)
{
    before_value(w);
    ns_json_write_string(w->out, key, w->flavour);
    after_key(w);
}

/* Appends v in decimal, optionally quoted, without printf. */
static void put_int(struct ns_buf *out, int64_t v, bool quote)
{
    char tmp[24];
    size_t n = sizeof tmp;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    if (quote) {
        tmp[--n] = '"';
    }
    do {
        tmp[--n] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0) {
        tmp[--n] = '-';
    }
    if (quote) {
        tmp[--n] = '"';
    }
    ns_buf_append(out, tmp + n, sizeof tmp - n);
}

void ns_json_write_key_int(struct ns_json_writer *w, int64_t key)
{
    before_value(w);
    put_int(w->out, key, w->flavour == NS_JSON_STANDARD);
    after_key(w);
}

void ns_json_write_str(struct ns_json_writer *w, const char *s)
{
    before_value(w);
    ns_json_write_string(w->out, s, w->flavour);
}

void ns_json_write_int(struct ns_json_writer *w, int64_t v)
{
    before_value(w);
    bool quote = w->flavour == NS_JSON_STANDARD &&
                 (v > MAX_SAFE_LONG || v < -MAX_SAFE_LONG);
    put_int(w->out, v, quote);
}

void ns_json_write_bool(struct ns_json_writer *w, bool v)
{
    before_value(w);
    ns_buf_append_str(w->out, v ? "true" : "false");
}

void ns_json_write_raw(struct ns_json_writer *w, const char *json, size_t len)
{
    before_value(w);
    ns_buf_append(w->out, json, len);
}
