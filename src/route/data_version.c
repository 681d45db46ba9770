/* DataVersion JSON (docs/protocol.md §4.2): the QUERY_DATA_VERSION body, read
 * and written in the legacy fastjson form. Not the register body
 * (register_body.c). Pure. */
#include <string.h>

#include "raftns/err.h"
#include "raftns/json.h"
#include "raftns/route.h"
#include "raftns/utf8.h"
#include "data_version.h"

/* A long property as fastjson fills it: numbers and numeric strings exactly;
 * null (also "", "null") leaves *out unchanged; booleans, objects and arrays
 * throw. */
static int read_long(const cJSON *item, struct ns_json_span span, int64_t *out)
{
    if (cJSON_IsNull(item)) {
        return 0;
    }
    if (cJSON_IsNumber(item)) {
        return ns_json_number_to_int64(span.p, span.len, out);
    }
    if (cJSON_IsString(item)) {
        int rv = ns_json_string_to_int64(item->valuestring, out);
        return rv == 1 ? 0 : rv;
    }
    return NS_EPROTO;
}

int ns_data_version_decode_tree(const char *text, size_t len, const cJSON *obj,
                                int64_t dflt_timestamp,
                                struct ns_data_version *out,
                                const char **bad_field)
{
    struct ns_json_members it;
    memset(out, 0, sizeof *out);
    out->timestamp = dflt_timestamp;
    *bad_field = "dataVersion";
    if (!cJSON_IsObject(obj) || !ns_json_members_init(&it, text, len)) {
        return NS_EPROTO;
    }
    for (const cJSON *m = obj->child; m != NULL; m = m->next) {
        struct ns_json_span span;
        if (ns_json_members_next(&it, &span) != 1) {
            return NS_EPROTO;
        }
        int rv = 0;
        if (strcmp(m->string, "counter") == 0) {
            *bad_field = "counter";
            rv = read_long(m, span, &out->counter);
        } else if (strcmp(m->string, "timestamp") == 0) {
            *bad_field = "timestamp";
            rv = read_long(m, span, &out->timestamp);
        } else if (strcmp(m->string, "stateVersion") == 0) {
            /* 5.x only: a 4.9.8 server ignores it, so a bad one is 0. */
            int64_t v = 0;
            out->state_version = read_long(m, span, &v) == 0 ? v : 0;
        }
        if (rv != 0) {
            return rv;
        }
    }
    return 0;
}

int ns_data_version_decode(const uint8_t *body, size_t len, int64_t now_ms,
                           struct ns_data_version *out, const char **bad_field)
{
    const char *bad = NULL;
    struct ns_buf fixed;
    memset(out, 0, sizeof *out);
    ns_buf_init(&fixed);
    int rv = ns_utf8_java(body, len, &fixed);
    if (rv < 0) {
        return rv;
    }
    if (rv == 1) {
        body = fixed.data;
        len = fixed.len;
    }
    cJSON *root = ns_json_parse_rv((const char *)body, len, &rv);
    if (root == NULL) {
        ns_buf_close(&fixed);
        return rv == NS_ENOMEM ? NS_ENOMEM : NS_EPROTO;
    }
    if (cJSON_IsNull(root) || (cJSON_IsArray(root) && root->child == NULL)) {
        rv = NS_ENOTFOUND; /* fastjson gives a null object */
    } else {
        rv = ns_data_version_decode_tree((const char *)body, len, root, now_ms,
                                         out, &bad);
        if (rv == NS_EPROTO && cJSON_IsObject(root) && bad_field != NULL) {
            *bad_field = bad;
        }
    }
    cJSON_Delete(root);
    ns_buf_close(&fixed);
    return rv;
}

void ns_data_version_encode(const struct ns_data_version *dv,
                            struct ns_buf *out)
{
    struct ns_json_writer w;
    ns_json_write_init(&w, out, NS_JSON_LEGACY);
    ns_json_write_obj_begin(&w);
    ns_json_write_key(&w, "counter");
    ns_json_write_int(&w, dv->counter);
    ns_json_write_key(&w, "stateVersion");
    ns_json_write_int(&w, dv->state_version);
    ns_json_write_key(&w, "timestamp");
    ns_json_write_int(&w, dv->timestamp);
    ns_json_write_obj_end(&w);
}

bool ns_data_version_equal(const struct ns_data_version *a,
                           const struct ns_data_version *b)
{
    return a->counter == b->counter && a->state_version == b->state_version &&
           a->timestamp == b->timestamp;
}
