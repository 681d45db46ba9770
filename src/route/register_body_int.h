/* Private interface between the parts of the REGISTER_BROKER body decoder:
 * register_body.c (entry point, normalisation, errors), register_body_json.c
 * (the JSON forms through a cJSON tree) and register_body_compressed.c (the
 * zlib record form). Not installed, not used outside src/route. */
#ifndef RAFTNS_ROUTE_REGISTER_BODY_INT_H
#define RAFTNS_ROUTE_REGISTER_BODY_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raftns/json.h"
#include "raftns/route.h"

struct register_body_ctx {
    struct ns_register *r;
    int64_t now_ms;
    char *errmsg;
    size_t errmsg_size;
};

/* Records a Java-like exception text and returns NS_EPROTO. */
int register_body_fail(struct register_body_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Records the too-many-topics text and returns NS_ETOOBIG. */
int register_body_too_many_topics(struct register_body_ctx *c, size_t n);

/* register_body_fail with fastjson's JSONException prefix. */
int register_body_fail_json(struct register_body_ctx *c, const char *what);

/* Parses text; on failure returns NS_ENOMEM or NS_EPROTO with a fastjson-like
 * message. *out is returned owned (cJSON_Delete). */
int register_body_parse_json(struct register_body_ctx *c, const char *text,
                             size_t len, const char *what, cJSON **out);

/* DataVersion object obj (NULL: absent, borrowed) whose text is span. */
int register_body_decode_dv(struct register_body_ctx *c, const cJSON *obj,
                            struct ns_json_span span,
                            struct ns_data_version *dv);

/* filterServerList array arr (NULL or null: absent, borrowed) into c->r. */
int register_body_decode_filter_servers(struct register_body_ctx *c,
                                        const cJSON *arr);

/* One TopicQueueMappingInfo o (borrowed); topic_key is the map key (JSON
 * form) or NULL (use its topic). */
int register_body_decode_mapping_json(struct register_body_ctx *c,
                                      const cJSON *o, const char *topic_key,
                                      struct ns_mapping_info *m);

/* A JSON RegisterBrokerBody (bare_wrapper: a bare TopicConfigSerializeWrapper)
 * through the cJSON tree into c->r. */
int register_body_decode_json(struct register_body_ctx *c, bool bare_wrapper,
                              const uint8_t *body, size_t len);

/* The zlib record form of requests from version 37 into c->r. */
int register_body_decode_compressed(struct register_body_ctx *c,
                                    int32_t req_version, const uint8_t *body,
                                    size_t len);

#endif
