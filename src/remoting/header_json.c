/* The JSON header (serialize type 0, docs/protocol.md §2.2) in both directions:
 * a lenient reader over ns_json_parse (behind the fast path of header_scan.c)
 * and a writer that reproduces Java's bytes. It does not see the frame. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "header_codec.h"
#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/json.h"
#include "raftns/utf8.h"

/* Java's LanguageCode of 4.9.8 ends at RUST (12). */
#define JAVA_LANGUAGES 13

int header_text_int32(const char *text, int32_t *out)
{
    int rv = ns_json_string_to_int32(text, out);
    return rv == 1 ? 0 : rv; /* null: the field keeps its default */
}

int32_t header_language_of_text(const char *text)
{
    int32_t lang = ns_language_parse(text);
    return lang < 0 ? NS_LANG_JAVA : lang;
}

int header_language_of_ordinal(int64_t v, int32_t *out)
{
    if (v < 0 || v >= JAVA_LANGUAGES) {
        return NS_EPROTO; /* fastjson: "parse enum ... error" */
    }
    *out = (int32_t)v;
    return 0;
}

/* code, flag, opaque, version as fastjson fills an int property: numbers
 * exactly (out of range throws), numeric strings, booleans as 1/0, null as
 * the default; arrays and objects throw. */
static int to_int32(const cJSON *item, struct ns_json_span span, int32_t *out)
{
    if (cJSON_IsNumber(item)) {
        return ns_json_number_to_int32(span.p, span.len, out);
    }
    if (cJSON_IsString(item)) {
        return header_text_int32(item->valuestring, out);
    }
    if (cJSON_IsBool(item)) {
        *out = cJSON_IsTrue(item) ? 1 : 0;
        return 0;
    }
    return cJSON_IsNull(item) ? 0 : NS_EPROTO;
}

/* An enum property (language, serializeTypeCurrentRPC): a name (unknown names
 * are null), an ordinal below n, or null; anything else throws. */
static int to_enum(const cJSON *item, struct ns_json_span span, int32_t n,
                   int32_t *ordinal)
{
    int64_t v;
    *ordinal = -1;
    if (cJSON_IsString(item) || cJSON_IsNull(item)) {
        return 0;
    }
    if (!cJSON_IsNumber(item) || memchr(span.p, '.', span.len) != NULL ||
        memchr(span.p, 'e', span.len) != NULL ||
        memchr(span.p, 'E', span.len) != NULL ||
        ns_json_number_to_int64(span.p, span.len, &v) != 0 || v < 0 || v >= n) {
        return NS_EPROTO;
    }
    *ordinal = (int32_t)v;
    return 0;
}

static int to_language(const cJSON *item, struct ns_json_span span,
                       int32_t *out)
{
    int32_t ordinal;
    int rv = to_enum(item, span, JAVA_LANGUAGES, &ordinal);
    if (rv == 0) {
        *out = cJSON_IsString(item) ? header_language_of_text(item->valuestring)
               : ordinal >= 0       ? ordinal
                                    : NS_LANG_JAVA;
    }
    return rv;
}

/* The (transient) body property has a byte[] setter: fastjson reads a base64
 * string or an array of numbers, and throws on anything else. */
static int check_body(const cJSON *item)
{
    if (cJSON_IsNull(item) || cJSON_IsArray(item)) {
        return 0;
    }
    if (!cJSON_IsString(item)) {
        return NS_EPROTO;
    }
    const char *b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                      "0123456789+/=";
    const char *v = item->valuestring;
    return strspn(v, b64) == strlen(v) ? 0 : NS_EPROTO;
}

/* An ext value as fastjson stores it into a Map<String, String>: strings as
 * they are, an integer literal's text, other numbers as BigDecimal text,
 * booleans as true/false, objects and arrays as their text. Returns an owned
 * string, or NULL with *rv (NS_ENOMEM; 0 for a null value, which Java keeps
 * as a null value, the same as absent for every handler). */
static char *ext_value(const cJSON *item, struct ns_json_span span, int *rv)
{
    *rv = 0;
    if (cJSON_IsString(item)) {
        char *v = ns_strdup(item->valuestring);
        *rv = v == NULL ? NS_ENOMEM : 0;
        return v;
    }
    if (cJSON_IsNull(item)) {
        return NULL;
    }
    if (cJSON_IsBool(item)) {
        char *v = ns_strdup(cJSON_IsTrue(item) ? "true" : "false");
        *rv = v == NULL ? NS_ENOMEM : 0;
        return v;
    }
    struct ns_buf b;
    ns_buf_init(&b);
    if (cJSON_IsNumber(item)) {
        ns_json_number_text(span.p, span.len, &b);
    } else {
        ns_buf_append(&b, span.p, span.len);
    }
    ns_buf_append(&b, "", 1);
    if (b.err != 0) {
        ns_buf_close(&b);
        *rv = NS_ENOMEM;
        return NULL;
    }
    char *v = ns_strdup((const char *)b.data);
    ns_buf_close(&b);
    *rv = v == NULL ? NS_ENOMEM : 0;
    return v;
}

static int decode_ext(const cJSON *obj, struct ns_json_span text,
                      struct ns_cmd *c)
{
    struct ns_json_members it;
    if (cJSON_IsNull(obj)) {
        return 0;
    }
    if (!cJSON_IsObject(obj) || !ns_json_members_init(&it, text.p, text.len)) {
        return NS_EPROTO;
    }
    char *k = NULL;
    char *v = NULL;
    int rv;
    c->has_ext = true;
    for (const cJSON *e = obj->child; e != NULL; e = e->next) {
        struct ns_json_span span;
        /* fastjson reads a Map<String,String> key only when quoted. */
        if (ns_json_members_next(&it, &span) != 1 || it.bare_key) {
            return NS_EPROTO;
        }
        v = ext_value(e, span, &rv);
        if (v == NULL) {
            if (rv != 0) {
                return rv;
            }
            cmd_ext_drop(c, e->string, strlen(e->string));
            continue;
        }
        k = ns_strdup(e->string);
        if (k == NULL) {
            goto err_after_value;
        }
        if (cmd_ext_append(c, k, v) != 0) {
            goto err_after_key;
        }
    }
    return 0;

err_after_key:
    ns_free(k);
err_after_value:
    ns_free(v);
    return NS_ENOMEM;
}

static int decode_field(const cJSON *f, struct ns_json_span span,
                        struct ns_cmd *c)
{
    const char *name = f->string;
    int32_t ordinal;
    if (strcmp(name, "code") == 0) {
        return to_int32(f, span, &c->code);
    }
    if (strcmp(name, "flag") == 0) {
        return to_int32(f, span, &c->flag);
    }
    if (strcmp(name, "opaque") == 0) {
        return to_int32(f, span, &c->opaque);
    }
    if (strcmp(name, "version") == 0) {
        return to_int32(f, span, &c->version);
    }
    if (strcmp(name, "language") == 0) {
        return to_language(f, span, &c->language);
    }
    if (strcmp(name, "serializeTypeCurrentRPC") == 0) {
        return to_enum(f, span, 2, &ordinal);
    }
    if (strcmp(name, "body") == 0) {
        return check_body(f);
    }
    if (strcmp(name, "remark") == 0) {
        /* A repeated field: the last one wins. */
        return ns_cmd_set_remark(c, cJSON_IsString(f) ? f->valuestring : NULL);
    }
    if (strcmp(name, "extFields") == 0) {
        return decode_ext(f, span, c);
    }
    return 0;
}

/* Bytes fastjson refuses that cJSON would take. Outside strings: a control
 * byte other than the blanks fastjson skips (cJSON skips them all), and a NUL
 * where a key is due (after '{' or ',' in an object, or between a key and its
 * ':'); elsewhere fastjson steps over a NUL, so *n_nul counts those for the
 * caller to blank out. Inside strings: a NUL, raw or escaped (Java keeps it,
 * a C string cannot: docs/compat.md). Returns 0 or NS_EPROTO. */
static int screen_bytes(const uint8_t *h, size_t h_len, size_t *n_nul)
{
    bool in_string = false;
    bool want_key = false;  /* after '{' or ',' inside an object */
    bool after_key = false; /* a key read, its ':' not yet */
    bool in_object[NS_JSON_MAX_DEPTH + 1];
    int depth = 0;
    *n_nul = 0;
    for (size_t i = 0; i < h_len; i++) {
        uint8_t ch = h[i];
        if (in_string) {
            if (ch == 0) {
                return NS_EPROTO;
            }
            if (ch == '\\') {
                if (i + 5 < h_len && h[i + 1] == 'u' && h[i + 2] == '0' &&
                    h[i + 3] == '0' && h[i + 4] == '0' && h[i + 5] == '0') {
                    return NS_EPROTO;
                }
                i++;
            } else if (ch == '"') {
                in_string = false;
                after_key = want_key;
                want_key = false;
            }
            continue;
        }
        switch (ch) {
        case 0:
            if (want_key || after_key) {
                return NS_EPROTO; /* fastjson: "illegal identifier" */
            }
            (*n_nul)++;
            break;
        case '"':
            in_string = true;
            break;
        case '{':
        case '[':
            if (depth >= NS_JSON_MAX_DEPTH) {
                return NS_EPROTO;
            }
            in_object[++depth] = ch == '{';
            want_key = ch == '{';
            break;
        case '}':
        case ']':
            depth -= depth > 0;
            want_key = false;
            break;
        case ',':
            want_key = depth > 0 && in_object[depth];
            break;
        case ':':
            after_key = false;
            break;
        case ' ':
        case '\t':
        case '\n':
        case '\r':
        case '\f':
        case '\b':
            break;
        default:
            if (ch < 0x20) {
                return NS_EPROTO;
            }
            want_key = false; /* a bare key or a scalar */
            break;
        }
    }
    return 0;
}

static int decode_text(const uint8_t *h, size_t h_len, struct ns_cmd *c)
{
    int rv = header_json_scan(h, h_len, c);
    if (rv != NS_EAGAIN) {
        return rv;
    }
    enum ns_serialize ser = c->ser;
    ns_cmd_close(c);
    ns_cmd_init(c);
    c->ser = ser;
    return header_json_decode_tree(h, h_len, c);
}

int header_json_decode(const uint8_t *h, size_t h_len, struct ns_cmd *c)
{
    struct ns_buf fixed;
    ns_buf_init(&fixed);
    /* Java parses new String(bytes, UTF_8): malformed bytes are U+FFFD. */
    int rv = ns_utf8_java(h, h_len, &fixed);
    if (rv == 0) {
        rv = decode_text(h, h_len, c);
    } else if (rv == 1) {
        rv = decode_text(fixed.data, fixed.len, c);
    }
    ns_buf_close(&fixed);
    return rv;
}

int header_json_decode_tree(const uint8_t *h, size_t h_len, struct ns_cmd *c)
{
    int rv = 0;
    size_t n_nul;
    char *blanked = NULL;
    struct ns_json_members it;
    if (screen_bytes(h, h_len, &n_nul) != 0) {
        return NS_EPROTO;
    }
    if (n_nul > 0) {
        /* Outside strings (screen_bytes refused the others): blanks. */
        blanked = ns_malloc(h_len);
        if (blanked == NULL) {
            return NS_ENOMEM;
        }
        for (size_t i = 0; i < h_len; i++) {
            blanked[i] = h[i] == 0 ? ' ' : (char)h[i];
        }
        h = (const uint8_t *)blanked;
    }
    cJSON *root = ns_json_parse_rv((const char *)h, h_len, &rv);
    if (root == NULL) {
        ns_free(blanked);
        return rv == NS_ENOMEM ? NS_ENOMEM : NS_EPROTO;
    }
    if (!cJSON_IsObject(root) ||
        !ns_json_members_init(&it, (const char *)h, h_len)) {
        rv = NS_EPROTO;
        goto out;
    }
    for (const cJSON *f = root->child; f != NULL && rv == 0; f = f->next) {
        struct ns_json_span span;
        rv = ns_json_members_next(&it, &span) == 1 && !it.bare_key
                 ? decode_field(f, span, c)
                 : NS_EPROTO; /* a bean's property names must be quoted */
    }
out:
    cJSON_Delete(root);
    ns_free(blanked);
    return rv;
}

/* Appends a decimal integer without printf. */
static void put_int(struct ns_buf *out, int64_t v)
{
    char tmp[24];
    size_t n = sizeof tmp;
    uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[--n] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0) {
        tmp[--n] = '-';
    }
    ns_buf_append(out, tmp + n, sizeof tmp - n);
}

#define PUT_LIT(out, lit) ns_buf_append((out), (lit), sizeof(lit) - 1)

size_t header_json_size_hint(const struct ns_cmd *c)
{
    /* The fixed keys and the widest numbers, plus each string with quotes
     * and separators; escapes may still grow the buffer later. */
    size_t n = 160;
    if (c->remark != NULL) {
        n += strlen(c->remark) + 12;
    }
    for (size_t i = 0; i < c->n_ext; i++) {
        if (c->ext[i].key != NULL && c->ext[i].value != NULL) {
            n += strlen(c->ext[i].key) + strlen(c->ext[i].value) + 6;
        }
    }
    return n;
}

/* Writes Java's bytes directly: properties in alphabetical order, legacy
 * fastjson escaping for the strings (ns_json_write_string). */
void header_json_encode(const struct ns_cmd *c, struct ns_buf *out)
{
    PUT_LIT(out, "{\"code\":");
    put_int(out, c->code);
    if (c->has_ext) {
        PUT_LIT(out, ",\"extFields\":{");
        bool first = true;
        for (size_t i = 0; i < c->n_ext; i++) {
            if (c->ext[i].key != NULL && c->ext[i].value != NULL) {
                if (!first) {
                    PUT_LIT(out, ",");
                }
                first = false;
                ns_json_write_string(out, c->ext[i].key, NS_JSON_LEGACY);
                PUT_LIT(out, ":");
                ns_json_write_string(out, c->ext[i].value, NS_JSON_LEGACY);
            }
        }
        PUT_LIT(out, "}");
    }
    PUT_LIT(out, ",\"flag\":");
    put_int(out, c->flag);
    PUT_LIT(out, ",\"language\":");
    ns_json_write_string(out, ns_language_name(c->language), NS_JSON_LEGACY);
    PUT_LIT(out, ",\"opaque\":");
    put_int(out, c->opaque);
    if (c->remark != NULL) {
        PUT_LIT(out, ",\"remark\":");
        ns_json_write_string(out, c->remark, NS_JSON_LEGACY);
    }
    if (c->ser == NS_SER_ROCKETMQ) {
        PUT_LIT(out, ",\"serializeTypeCurrentRPC\":\"ROCKETMQ\"");
    } else {
        PUT_LIT(out, ",\"serializeTypeCurrentRPC\":\"JSON\"");
    }
    PUT_LIT(out, ",\"version\":");
    put_int(out, c->version);
    PUT_LIT(out, "}");
}
