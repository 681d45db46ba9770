/* The JSON header (serialize type 0, PROTOCOL.md §2.2) in both directions: a
 * lenient reader over ns_json_parse (behind the fast path of header_scan.c)
 * and a writer that reproduces Java's bytes. It does not see the frame. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "header_codec.h"
#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/json.h"

int32_t header_text_int32(const char *text)
{
    char *end = NULL;
    errno = 0;
    long long ll = strtoll(text, &end, 10);
    bool ok = errno == 0 && end != text && *end == '\0';
    int64_t v = ok ? ll : 0;
    return (int32_t)(uint32_t)(uint64_t)v;
}

int32_t header_language_of_text(const char *text)
{
    int32_t lang = ns_language_parse(text);
    return lang < 0 ? NS_LANG_JAVA : lang;
}

int32_t header_language_of_number(double d)
{
    return d >= 0 && d < NS_LANG_COUNT ? (int32_t)d : NS_LANG_JAVA;
}

/* A number, or a string holding one (fastjson accepts both); anything else
 * gives 0. Java's intValue() keeps the low 32 bits of a wider number. */
static int32_t to_int32(const cJSON *item)
{
    int64_t v = 0;
    if (cJSON_IsNumber(item)) {
        double d = item->valuedouble;
        v = d > -9.2e18 && d < 9.2e18 ? (int64_t)d : 0;
    } else if (cJSON_IsString(item)) {
        return header_text_int32(item->valuestring);
    }
    return (int32_t)(uint32_t)(uint64_t)v;
}

static int32_t to_language(const cJSON *item)
{
    if (cJSON_IsString(item)) {
        return header_language_of_text(item->valuestring);
    }
    if (cJSON_IsNumber(item)) {
        return header_language_of_number(item->valuedouble);
    }
    return NS_LANG_JAVA;
}

/* An ext value as Java would see it in a Map<String, String>. Returns an owned
 * string, NULL when out of memory; *skip when the value is null or structured
 * (no handler reads those). */
static char *ext_value(const cJSON *item, bool *skip)
{
    char num[32];
    *skip = false;
    if (cJSON_IsString(item)) {
        return ns_strdup(item->valuestring);
    }
    if (cJSON_IsBool(item)) {
        return ns_strdup(cJSON_IsTrue(item) ? "true" : "false");
    }
    if (cJSON_IsNumber(item)) {
        double d = item->valuedouble;
        /* cJSON keeps only a double: integers beyond 2^53 lose digits here. */
        if (d > -9.2e18 && d < 9.2e18 && d == (double)(long long)d) {
            snprintf(num, sizeof num, "%lld", (long long)d);
        } else {
            snprintf(num, sizeof num, "%.17g", d);
        }
        return ns_strdup(num);
    }
    *skip = true;
    return NULL;
}

static int decode_ext(const cJSON *obj, struct ns_cmd *c)
{
    if (cJSON_IsNull(obj)) {
        return 0;
    }
    if (!cJSON_IsObject(obj)) {
        return NS_EPROTO;
    }
    char *k = NULL;
    char *v = NULL;
    c->has_ext = true;
    for (const cJSON *e = obj->child; e != NULL; e = e->next) {
        bool skip;
        v = ext_value(e, &skip);
        if (skip) {
            continue;
        }
        if (v == NULL) {
            return NS_ENOMEM;
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

static int decode_field(const cJSON *f, struct ns_cmd *c)
{
    const char *name = f->string;
    if (strcmp(name, "code") == 0) {
        c->code = to_int32(f);
    } else if (strcmp(name, "flag") == 0) {
        c->flag = to_int32(f);
    } else if (strcmp(name, "opaque") == 0) {
        c->opaque = to_int32(f);
    } else if (strcmp(name, "version") == 0) {
        c->version = to_int32(f);
    } else if (strcmp(name, "language") == 0) {
        c->language = to_language(f);
    } else if (strcmp(name, "remark") == 0) {
        /* A repeated field: the last one wins. */
        return ns_cmd_set_remark(c, cJSON_IsString(f) ? f->valuestring : NULL);
    } else if (strcmp(name, "extFields") == 0) {
        return decode_ext(f, c);
    }
    return 0;
}

int header_json_decode(const uint8_t *h, size_t h_len, struct ns_cmd *c)
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

int header_json_decode_tree(const uint8_t *h, size_t h_len, struct ns_cmd *c)
{
    int rv = 0;
    cJSON *root = ns_json_parse_rv((const char *)h, h_len, &rv);
    if (root == NULL) {
        return rv == NS_ENOMEM ? NS_ENOMEM : NS_EPROTO;
    }
    if (!cJSON_IsObject(root)) {
        rv = NS_EPROTO;
        goto out;
    }
    for (const cJSON *f = root->child; f != NULL && rv == 0; f = f->next) {
        rv = decode_field(f, c);
    }
out:
    cJSON_Delete(root);
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
