/* Private interface between the frame-level codec (cmd.c) and the two header
 * encodings. Not installed, not used outside src/remoting. */
#ifndef RAFTNS_REMOTING_HEADER_CODEC_H
#define RAFTNS_REMOTING_HEADER_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raftns/buf.h"
#include "raftns/remoting.h"

/* Decode h_len header bytes into c (initialised by the caller). On error c may
 * hold partial fields that ns_cmd_close frees. Return 0, NS_EPROTO or
 * NS_ENOMEM. */
int header_json_decode(const uint8_t *h, size_t h_len, struct ns_cmd *c);
int header_binary_decode(const uint8_t *h, size_t h_len, struct ns_cmd *c);

/* Append the header of c to out (errors are sticky in out). */
void header_json_encode(const struct ns_cmd *c, struct ns_buf *out);
void header_binary_encode(const struct ns_cmd *c, struct ns_buf *out);
/* Bytes header_json_encode is likely to need (reserved once up front). */
size_t header_json_size_hint(const struct ns_cmd *c);

/* Append an ext field without looking for an existing key (decode order, last
 * one wins in ns_cmd_ext_find); takes ownership of key and value on success. 0
 * or NS_ENOMEM. */
int cmd_ext_append(struct ns_cmd *c, char *key, char *value);

/* Removes every ext field named key (key_len bytes): a later null value in
 * Java's map replaces what came before, and null reads as absent. */
void cmd_ext_drop(struct ns_cmd *c, const char *key, size_t key_len);

/* True when p points into c's arena (see struct ns_cmd). */
bool cmd_in_arena(const struct ns_cmd *c, const void *p);

/* The JSON header fast path (header_scan.c): a single pass over the common
 * shapes. Returns 0 (c filled exactly as header_json_decode_tree would fill
 * it), NS_ENOMEM, or NS_EAGAIN when it does not handle this text (then c holds
 * partial fields: close and re-init it before the tree path). */
int header_json_scan(const uint8_t *h, size_t h_len, struct ns_cmd *c);
/* The general path over a cJSON tree (header_json.c). */
int header_json_decode_tree(const uint8_t *h, size_t h_len, struct ns_cmd *c);

/* fastjson's view of a header int given as a string (0 and *out, *out
 * unchanged for "" or "null", NS_EPROTO where Java throws), of a language
 * name, and of a language ordinal (NS_EPROTO beyond 4.9.8's RUST = 12): shared
 * by both paths. */
int header_text_int32(const char *text, int32_t *out);
int32_t header_language_of_text(const char *text);
int header_language_of_ordinal(int64_t v, int32_t *out);

#endif
