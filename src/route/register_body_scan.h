/* Private interface between the REGISTER_BROKER body decoder (register_body.c)
 * and its single-pass JSON fast path (register_body_scan.c). Not installed,
 * not used outside src/route and its tests. */
#ifndef RAFTNS_ROUTE_REGISTER_BODY_SCAN_H
#define RAFTNS_ROUTE_REGISTER_BODY_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raftns/route.h"

/* Decodes a JSON RegisterBrokerBody (bare_wrapper: a bare
 * TopicConfigSerializeWrapper) into r's body fields, which must be empty, in
 * document order and without the normalisation. Returns 0 (r filled exactly
 * as the cJSON path fills it), NS_ENOMEM, or NS_EAGAIN when it does not handle
 * this text; on non-zero r may hold partial fields the caller frees. */
int register_body_scan(struct ns_register *r, bool bare_wrapper,
                       const uint8_t *body, size_t len, int64_t now_ms);

/* ns_register_decode_body with the fast path switched off: the reference the
 * differential tests compare against. */
int register_decode_body_tree(struct ns_register *r, int32_t req_version,
                              bool compressed, const uint8_t *body, size_t len,
                              int64_t now_ms, char *errmsg, size_t errmsg_size);

#endif
