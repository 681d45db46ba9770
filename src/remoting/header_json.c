/* The JSON header (serialize type 0, PROTOCOL.md §2.2) in both directions: a
 * lenient reader over ns_json_parse and a writer that reproduces Java's bytes.
 * It does not see the frame. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "header_codec.h"
#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/json.h"

/* A number, or a string holding one (fastjson accepts both); anything else
 * gives 0. Java's intValue() keeps the low 32 bits of a wider number. */
static int32_t to_int32(const cJSON *item)
{
    int64_t v = 0;
    if (cJSON_IsNumber(item)) {
        double d = item->valuedouble;
        v = d > -9.2e18 && d < 9.2e18 ? (int64_t)d : 0;
    } else if (cJSON_IsString(item)) {
        char *end = NULL;
        errno = 0;
        long long ll = strtoll(item->valuestring, &end, 10);
        bool ok = errno == 0 && end != item->valuestring && *end == '\0';
        v = ok ? ll : 0;
    }
    return (int32_t)(uint32_t)(uint64_t)v;
}

static int32_t to_language(const cJSON *item)
{
    int32_t lang = -1;
    if (cJSON_IsString(item)) {
        lang = ns_language_parse(item->valuestring);
    } else if (cJSON_IsNumber(item)) {
        double d = item->valuedouble;
        lang = d >= 0 && d < NS_LANG_COUNT ? (int32_t)d : -1;
    }
    return lang < 0 ? NS_LANG_JAVA : lang;
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

void header_json_encode(const struct ns_cmd *c, struct ns_buf *out)
{
    struct ns_jw w;
    ns_jw_init(&w, out, NS_JSON_LEGACY);
    ns_jw_obj_begin(&w);
    ns_jw_key(&w, "code");
    ns_jw_int(&w, c->code);
    if (c->has_ext) {
        ns_jw_key(&w, "extFields");
        ns_jw_obj_begin(&w);
        for (size_t i = 0; i < c->n_ext; i++) {
            if (c->ext[i].key != NULL && c->ext[i].value != NULL) {
                ns_jw_key(&w, c->ext[i].key);
                ns_jw_str(&w, c->ext[i].value);
            }
        }
        ns_jw_obj_end(&w);
    }
    ns_jw_key(&w, "flag");
    ns_jw_int(&w, c->flag);
    ns_jw_key(&w, "language");
    ns_jw_str(&w, ns_language_name(c->language));
    ns_jw_key(&w, "opaque");
    ns_jw_int(&w, c->opaque);
    if (c->remark != NULL) {
        ns_jw_key(&w, "remark");
        ns_jw_str(&w, c->remark);
    }
    ns_jw_key(&w, "serializeTypeCurrentRPC");
    ns_jw_str(&w, c->ser == NS_SER_ROCKETMQ ? "ROCKETMQ" : "JSON");
    ns_jw_key(&w, "version");
    ns_jw_int(&w, c->version);
    ns_jw_obj_end(&w);
}
