/* The JSON forms of the REGISTER_BROKER body through a cJSON tree: the
 * reference reader that register_body_scan.c's fast path falls back to, with
 * fastjson's rules for each property (docs/compat.md). Pure. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "raftns/alloc.h"
#include "raftns/decimal.h"
#include "raftns/err.h"
#include "raftns/json.h"
#include "raftns/route.h"
#include "data_version.h"
#include "register_body_int.h"

/* Parses text; on failure returns NS_ENOMEM or NS_EPROTO with a fastjson-like
 * message. */
int register_body_parse_json(struct register_body_ctx *c, const char *text,
                             size_t len, const char *what, cJSON **out)
{
    int rv;
    *out = ns_json_parse_rv(text, len, &rv);
    if (*out != NULL) {
        return 0;
    }
    if (rv == NS_ENOMEM) {
        return NS_ENOMEM;
    }
    return register_body_fail(
        c, "com.alibaba.fastjson.JSONException: syntax error, %s", what);
}

/* An int property of obj as fastjson fills it (docs/compat.md): an integer
 * must fit; a fraction truncates (low 32 bits of the integer part); a string
 * is castToInt'ed; true/false are 1/0; null or absent keeps dflt; objects and
 * arrays throw. The double cJSON holds is exact for every int32. */
static int get_int32(struct register_body_ctx *c, const cJSON *obj,
                     const char *key, int32_t dflt, int32_t *out)
{
    const cJSON *item = cJSON_GetObjectItemCaseSensitive(obj, key);
    *out = dflt;
    if (item == NULL || cJSON_IsNull(item)) {
        return 0;
    }
    if (cJSON_IsBool(item)) {
        *out = cJSON_IsTrue(item) ? 1 : 0;
        return 0;
    }
    if (cJSON_IsString(item)) {
        int rv = ns_json_string_to_int32(item->valuestring, out);
        return rv == NS_EPROTO ? register_body_fail_json(c, "parseInt error")
                               : 0;
    }
    if (!cJSON_IsNumber(item)) {
        return register_body_fail_json(c, "parseInt error");
    }
    double d = item->valuedouble;
    if (d == (double)(int64_t)d && d >= -2147483648.0 && d <= 2147483647.0) {
        *out = (int32_t)d;
        return 0;
    }
    if (d != (double)(int64_t)d && d > -9.2e18 && d < 9.2e18) {
        *out = (int32_t)(uint32_t)(uint64_t)(int64_t)d;
        return 0;
    }
    return register_body_fail_json(c, "int value overflow");
}

/* DataVersion object obj (NULL: absent) whose text is span; a missing
 * timestamp gets now_ms, as Java's constructor. Numbers are read from the
 * text, so 64-bit counters stay exact. */
int register_body_decode_dv(struct register_body_ctx *c, const cJSON *obj,
                            struct ns_json_span span,
                            struct ns_data_version *dv)
{
    const char *bad;
    if (obj == NULL) {
        memset(dv, 0, sizeof *dv);
        dv->timestamp = c->now_ms;
        return 0;
    }
    int rv =
        ns_data_version_decode_tree(span.p, span.len, obj, c->now_ms, dv, &bad);
    if (rv != 0) {
        return register_body_fail(
            c,
            "com.alibaba.fastjson.JSONException: parseLong error, "
            "field : %s",
            bad);
    }
    return 0;
}

/* TopicConfig's properties raftns does not keep must still decode, or the
 * whole body fails in Java: topicFilterType (an enum: a name, ordinal 0-1 or
 * null) and order (a boolean: true/false, 1/0, "true"/"false" in any case,
 * "1"/"0", "Y"/"T"/"F"/"N", "" or null). */
static int check_enum_and_bool(struct register_body_ctx *c, const cJSON *tc)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(tc, "topicFilterType");
    bool ok =
        f == NULL || cJSON_IsNull(f) || cJSON_IsString(f) ||
        (cJSON_IsNumber(f) && (f->valuedouble == 0.0 || f->valuedouble == 1.0));
    if (!ok) {
        return register_body_fail_json(c, "parse enum TopicFilterType error");
    }
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(tc, "order");
    ok = o == NULL || cJSON_IsNull(o) || cJSON_IsBool(o) || cJSON_IsNumber(o);
    if (!ok && cJSON_IsString(o)) {
        static const char *const words[] = {"true", "false", "1", "0",
                                            "Y",    "y",     "T", "F",
                                            "f",    "N",     "",  "null"};
        for (size_t i = 0; i < sizeof words / sizeof words[0] && !ok; i++) {
            ok = strcasecmp(o->valuestring, words[i]) == 0 &&
                 (i < 2 || strcmp(o->valuestring, words[i]) == 0);
        }
    }
    return ok ? 0
              : register_body_fail_json(c, "parseBoolean error, field : order");
}

/* Returns 0, an error, or SKIP_TOPIC for an entry Java files under a null
 * name or cannot file at all (docs/compat.md `null-topic`): the registration
 * goes on without it. */
#define SKIP_TOPIC 1
static int decode_topic_json(struct register_body_ctx *c, const cJSON *tc,
                             struct ns_topic_config *t)
{
    if (cJSON_IsNull(tc)) {
        return SKIP_TOPIC;
    }
    if (!cJSON_IsObject(tc)) {
        return register_body_fail_json(c,
                                       "syntax error, expect {, actual value");
    }
    const cJSON *n_item = cJSON_GetObjectItemCaseSensitive(tc, "topicName");
    char *printed = NULL;
    const char *name = ns_json_get_string(tc, "topicName");
    if (name == NULL && n_item != NULL && !cJSON_IsNull(n_item)) {
        /* A String property given another value holds its text. */
        printed = cJSON_PrintUnformatted(n_item);
        if (printed == NULL) {
            return NS_ENOMEM;
        }
        name = printed;
    }
    if (name == NULL) {
        return SKIP_TOPIC;
    }
    t->name = ns_strdup(name);
    cJSON_free(printed);
    if (t->name == NULL) {
        return NS_ENOMEM;
    }
    int rv = check_enum_and_bool(c, tc);
    if (rv != 0) {
        return rv;
    }
    rv = get_int32(c, tc, "readQueueNums", 16, &t->read_queues);
    if (rv == 0) {
        rv = get_int32(c, tc, "writeQueueNums", 16, &t->write_queues);
    }
    if (rv == 0) {
        rv = get_int32(c, tc, "perm", NS_PERM_READ | NS_PERM_WRITE, &t->perm);
    }
    if (rv == 0) {
        rv = get_int32(c, tc, "topicSysFlag", 0, &t->sys_flag);
    }
    return rv; /* on error the caller frees t->name with the rest */
}

static int decode_topic_table(struct register_body_ctx *c, const cJSON *table)
{
    struct ns_register *r = c->r;
    if (table == NULL || cJSON_IsNull(table)) {
        return 0;
    }
    if (!cJSON_IsObject(table)) {
        return register_body_fail_json(c,
                                       "syntax error, expect {, actual array");
    }
    size_t n = (size_t)cJSON_GetArraySize(table);
    if (n == 0) {
        return 0;
    }
    r->topics = ns_calloc(n, sizeof *r->topics);
    if (r->topics == NULL) {
        return NS_ENOMEM;
    }
    const cJSON *tc;
    cJSON_ArrayForEach(tc, table)
    {
        int rv = decode_topic_json(c, tc, &r->topics[r->n_topics]);
        if (rv == SKIP_TOPIC) {
            continue;
        }
        if (rv != 0) {
            ns_free(r->topics[r->n_topics].name); /* not counted yet */
            r->topics[r->n_topics].name = NULL;
            return rv;
        }
        r->n_topics++;
    }
    return 0;
}

static int cmp_id_pair(const void *a, const void *b)
{
    const struct ns_id_pair *x = a, *y = b;
    return (x->key > y->key) - (x->key < y->key);
}

static int decode_curr_ids(struct register_body_ctx *c, const cJSON *map,
                           struct ns_mapping_info *m)
{
    if (map == NULL || cJSON_IsNull(map)) {
        return 0;
    }
    if (!cJSON_IsObject(map)) {
        return register_body_fail_json(c, "syntax error, currIdMap");
    }
    size_t n = (size_t)cJSON_GetArraySize(map);
    if (n == 0) {
        return 0;
    }
    m->curr_ids = ns_calloc(n, sizeof *m->curr_ids);
    if (m->curr_ids == NULL) {
        return NS_ENOMEM;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, map)
    {
        /* strtoll's reading: leading blanks, a sign, digits to the end */
        const char *text = e->string != NULL ? e->string : "";
        text += strspn(text, " \t\n\v\f\r");
        int64_t k;
        bool key_ok = ns_decimal_parse(text, strlen(text), NS_DECIMAL_SIGN,
                                       INT32_MIN, INT32_MAX, &k);
        if (!key_ok || !cJSON_IsNumber(e) || e->valuedouble < INT32_MIN ||
            e->valuedouble > INT32_MAX) {
            return register_body_fail_json(c, "can not cast to int, currIdMap");
        }
        m->curr_ids[m->n_curr_ids].key = (int32_t)k;
        m->curr_ids[m->n_curr_ids].value = (int32_t)e->valuedouble;
        m->n_curr_ids++;
    }
    qsort(m->curr_ids, m->n_curr_ids, sizeof *m->curr_ids, cmp_id_pair);
    /* Sorted for deterministic state; a repeated key is treated as malformed.
     */
    for (size_t i = 1; i < m->n_curr_ids; i++) {
        if (m->curr_ids[i].key == m->curr_ids[i - 1].key) {
            return register_body_fail_json(c, "duplicate key in currIdMap");
        }
    }
    return 0;
}

/* TopicQueueMappingInfo; topic_key is the map key (JSON form) or NULL (use its
 * topic). */
int register_body_decode_mapping_json(struct register_body_ctx *c,
                                      const cJSON *o, const char *topic_key,
                                      struct ns_mapping_info *m)
{
    if (!cJSON_IsObject(o)) {
        return register_body_fail_json(c,
                                       "syntax error, TopicQueueMappingInfo");
    }
    const char *bname = ns_json_get_string(o, "bname");
    const char *topic = topic_key ? topic_key : ns_json_get_string(o, "topic");
    const char *scope = ns_json_get_string(o, "scope");
    if (bname == NULL || topic == NULL) {
        return register_body_fail(
            c, "java.lang.NullPointerException: TopicQueueMappingInfo");
    }
    int rv = get_int32(c, o, "totalQueues", 0, &m->total_queues);
    if (rv != 0) {
        return rv;
    }
    m->epoch = ns_json_get_int64(o, "epoch", 0);
    m->dirty = ns_json_get_bool(o, "dirty", false);
    m->topic = ns_strdup(topic);
    m->bname = ns_strdup(bname);
    m->scope = ns_strdup(scope);
    if (m->topic == NULL || m->bname == NULL ||
        (scope != NULL && m->scope == NULL)) {
        return NS_ENOMEM;
    }
    return decode_curr_ids(c, cJSON_GetObjectItemCaseSensitive(o, "currIdMap"),
                           m);
}

static int decode_mapping_table(struct register_body_ctx *c, const cJSON *map)
{
    struct ns_register *r = c->r;
    if (map == NULL || cJSON_IsNull(map)) {
        return 0;
    }
    if (!cJSON_IsObject(map)) {
        return register_body_fail_json(
            c, "syntax error, topicQueueMappingInfoMap");
    }
    size_t n = (size_t)cJSON_GetArraySize(map);
    if (n == 0) {
        return 0;
    }
    r->mappings = ns_calloc(n, sizeof *r->mappings);
    if (r->mappings == NULL) {
        return NS_ENOMEM;
    }
    const cJSON *e;
    cJSON_ArrayForEach(e, map)
    {
        int rv = register_body_decode_mapping_json(c, e, e->string,
                                                   &r->mappings[r->n_mappings]);
        r->n_mappings++; /* counted even on error so that close frees it */
        if (rv != 0) {
            return rv;
        }
    }
    return 0;
}

int register_body_decode_filter_servers(struct register_body_ctx *c,
                                        const cJSON *arr)
{
    struct ns_register *r = c->r;
    if (arr == NULL || cJSON_IsNull(arr)) {
        return 0;
    }
    r->has_filter_servers = true;
    /* fastjson reads a List<String> from a lone value as a one-element list
     * and stores every element's text; null elements are left out
     * (docs/compat.md struct-ext-text). */
    size_t n = cJSON_IsArray(arr) ? (size_t)cJSON_GetArraySize(arr) : 1;
    if (n == 0) {
        return 0;
    }
    r->filter_servers = ns_calloc(n, sizeof *r->filter_servers);
    if (r->filter_servers == NULL) {
        return NS_ENOMEM;
    }
    const cJSON *e = cJSON_IsArray(arr) ? arr->child : arr;
    for (; e != NULL; e = cJSON_IsArray(arr) ? e->next : NULL) {
        char *text;
        if (cJSON_IsNull(e)) {
            continue;
        }
        if (cJSON_IsString(e)) {
            text = ns_strdup(e->valuestring);
        } else {
            char *printed = cJSON_PrintUnformatted(e);
            text = printed != NULL ? ns_strdup(printed) : NULL;
            cJSON_free(printed);
        }
        if (text == NULL) {
            return NS_ENOMEM;
        }
        r->filter_servers[r->n_filter_servers++] = text;
    }
    return 0;
}

/* TopicConfigSerializeWrapper (and its 5.x subclass): dataVersion,
 * topicConfigTable, topicQueueMappingInfoMap. wrapper NULL: Java's default
 * wrapper (new DataVersion()). */
static int decode_wrapper(struct register_body_ctx *c, const cJSON *wrapper,
                          struct ns_json_span text)
{
    /* fastjson reads an empty array as a null bean. */
    if (cJSON_IsArray(wrapper) && wrapper->child == NULL) {
        wrapper = NULL;
    }
    if (wrapper != NULL && !cJSON_IsNull(wrapper) && !cJSON_IsObject(wrapper)) {
        return register_body_fail_json(
            c, "syntax error, TopicConfigSerializeWrapper");
    }
    const cJSON *dv = cJSON_GetObjectItemCaseSensitive(wrapper, "dataVersion");
    if (cJSON_IsArray(dv) && dv->child == NULL) {
        dv = NULL;
    }
    if (dv != NULL && !cJSON_IsNull(dv) && !cJSON_IsObject(dv)) {
        return register_body_fail_json(c, "syntax error, dataVersion");
    }
    struct ns_json_span dv_text = {NULL, 0};
    if (cJSON_IsObject(dv) &&
        !ns_json_span_of(text.p, text.len, wrapper, dv, &dv_text)) {
        return register_body_fail_json(c, "syntax error, dataVersion");
    }
    int rv = register_body_decode_dv(c, cJSON_IsObject(dv) ? dv : NULL, dv_text,
                                     &c->r->dv);
    if (rv == 0) {
        rv = decode_topic_table(
            c, cJSON_GetObjectItemCaseSensitive(wrapper, "topicConfigTable"));
    }
    if (rv == 0) {
        rv = decode_mapping_table(c, cJSON_GetObjectItemCaseSensitive(
                                         wrapper, "topicQueueMappingInfoMap"));
    }
    return rv;
}

int register_body_decode_json(struct register_body_ctx *c, bool bare_wrapper,
                              const uint8_t *body, size_t len)
{
    cJSON *root;
    struct ns_json_span text = {(const char *)body, len};
    int rv = register_body_parse_json(c, (const char *)body, len,
                                      "RegisterBrokerBody", &root);
    if (rv != 0) {
        return rv;
    }
    if (!cJSON_IsObject(root)) {
        rv = register_body_fail(
            c, "java.lang.NullPointerException: body is not an object");
    } else if (bare_wrapper) {
        rv = decode_wrapper(c, root, text);
    } else {
        rv = register_body_decode_filter_servers(
            c, cJSON_GetObjectItemCaseSensitive(root, "filterServerList"));
        const cJSON *w = cJSON_GetObjectItemCaseSensitive(
            root, "topicConfigSerializeWrapper");
        struct ns_json_span w_text = {NULL, 0};
        if (rv == 0 && cJSON_IsObject(w) &&
            !ns_json_span_of(text.p, text.len, root, w, &w_text)) {
            rv = register_body_fail_json(
                c, "syntax error, TopicConfigSerializeWrapper");
        }
        if (rv == 0) {
            rv = decode_wrapper(c, w, w_text);
        }
    }
    cJSON_Delete(root);
    return rv;
}