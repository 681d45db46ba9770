/* Private interface between the frame-level codec (cmd.c) and the two header
 * encodings. Not installed, not used outside src/remoting. */
#ifndef RAFTNS_REMOTING_HEADER_CODEC_H
#define RAFTNS_REMOTING_HEADER_CODEC_H

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

/* Append an ext field without looking for an existing key (decode order, last
 * one wins in ns_cmd_ext_find); takes ownership of key and value on success. 0
 * or NS_ENOMEM. */
int cmd_ext_append(struct ns_cmd *c, char *key, char *value);

#endif
