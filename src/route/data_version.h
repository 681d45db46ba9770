/* Private to src/route: the DataVersion reader shared by the QUERY_DATA_VERSION
 * body (data_version.c) and the register bodies (register_body.c). */
#ifndef RAFTNS_ROUTE_DATA_VERSION_H
#define RAFTNS_ROUTE_DATA_VERSION_H

#include "raftns/json.h"
#include "raftns/route.h"

/* Reads the DataVersion object obj, the cJSON tree of the text [text,
 * text+len), with fastjson's rules for its long properties (exact 64-bit,
 * docs/compat.md): a missing or null counter is 0, a missing or null
 * timestamp is dflt_timestamp. Returns 0, or NS_EPROTO where Java throws, with
 * *bad_field naming the property (borrowed literal). */
int ns_data_version_decode_tree(const char *text, size_t len, const cJSON *obj,
                                int64_t dflt_timestamp,
                                struct ns_data_version *out,
                                const char **bad_field);

#endif
