/* DataVersion JSON (PROTOCOL.md §4.2): the QUERY_DATA_VERSION body, read and
 * written in the legacy fastjson form. Not the register body (register_body.c).
 * Pure. */
#include <string.h>

#include "raftns/err.h"
#include "raftns/json.h"
#include "raftns/route.h"

int ns_data_version_decode(const uint8_t *body, size_t len,
                           struct ns_data_version *out)
{
    memset(out, 0, sizeof *out);
    cJSON *root = ns_json_parse((const char *)body, len);
    if (root == NULL) {
        return NS_EPROTO;
    }
    int rv = NS_EPROTO;
    if (cJSON_IsObject(root)) {
        out->counter = ns_json_get_int64(root, "counter", 0);
        out->state_version = ns_json_get_int64(root, "stateVersion", 0);
        out->timestamp = ns_json_get_int64(root, "timestamp", 0);
        rv = 0;
    }
    cJSON_Delete(root);
    return rv;
}

void ns_data_version_encode(const struct ns_data_version *dv,
                            struct ns_buf *out)
{
    struct ns_jw w;
    ns_jw_init(&w, out, NS_JSON_LEGACY);
    ns_jw_obj_begin(&w);
    ns_jw_key(&w, "counter");
    ns_jw_int(&w, dv->counter);
    ns_jw_key(&w, "stateVersion");
    ns_jw_int(&w, dv->state_version);
    ns_jw_key(&w, "timestamp");
    ns_jw_int(&w, dv->timestamp);
    ns_jw_obj_end(&w);
}
