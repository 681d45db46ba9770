/* RocketMQ remoting codec (docs/protocol.md §1-2): frame boundaries, JSON and
 * ROCKETMQ binary headers in both directions. Pure: bytes in, structs out; no
 * sockets, no logging. */
#ifndef RAFTNS_REMOTING_H
#define RAFTNS_REMOTING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raftns/buf.h"

#define NS_FRAME_MAX                                                           \
    (16u * 1024u * 1024u) /* whole frame incl. the length field */
#define NS_FLAG_RESPONSE 0x1
#define NS_FLAG_ONEWAY 0x2
#define NS_SERVER_VERSION                                                      \
    479 /* MQVersion ordinal the server writes in replies (V5_3_3) */

enum ns_serialize { NS_SER_JSON = 0, NS_SER_ROCKETMQ = 1 };

/* LanguageCode ordinals. */
enum ns_language {
    NS_LANG_JAVA = 0,
    NS_LANG_CPP,
    NS_LANG_DOTNET,
    NS_LANG_PYTHON,
    NS_LANG_DELPHI,
    NS_LANG_ERLANG,
    NS_LANG_RUBY,
    NS_LANG_OTHER,
    NS_LANG_HTTP,
    NS_LANG_GO,
    NS_LANG_PHP,
    NS_LANG_OMS,
    NS_LANG_RUST,
    NS_LANG_NODE_JS,
    NS_LANG_COUNT
};

struct ns_ext {
    char *key;   /* owned */
    char *value; /* owned; never NULL after decode (a null value, JSON null or
                    a zero-length binary value, is not stored: absent) */
};

/* One remoting command, request or reply. */
struct ns_cmd {
    int32_t code;
    int32_t language; /* enum ns_language */
    int32_t version;
    int32_t opaque;
    int32_t flag;
    char *remark;       /* owned, NULL when absent */
    struct ns_ext *ext; /* owned array of n_ext */
    size_t n_ext;
    bool has_ext; /* extFields present on the wire (possibly empty): JSON writes
                     {} */
    const uint8_t *body; /* borrowed: into the decoded frame, or the caller's
                            reply bytes */
    size_t body_len;
    enum ns_serialize ser;
    /* Owned block where the JSON header fast path puts the ext array and the
     * decoded strings (one allocation per request); ext keys/values, ext and
     * remark pointing into it are not freed on their own. NULL otherwise. */
    char *arena;
    size_t arena_len;
};

/* Looks at the start of a receive buffer. Returns 0 and sets *frame_len (4 +
 * length) when a whole frame is present; NS_EAGAIN when more bytes are needed;
 * NS_ETOOBIG when the announced frame exceeds max_frame; NS_EPROTO when the
 * length is below 4, the header length does not fit in the frame, or the
 * serialize type is not 0/1 (checked as soon as 8 bytes are present, so a bad
 * frame is rejected before its announced size is ever buffered). */
int ns_frame_check(const uint8_t *buf, size_t len, size_t max_frame,
                   size_t *frame_len);

/* Decodes one whole frame (as accepted by ns_frame_check). out->body borrows
 * from frame. Returns 0, NS_EPROTO (unparsable header) or NS_ENOMEM; on error
 * out needs no close. */
int ns_cmd_decode(const uint8_t *frame, size_t frame_len, struct ns_cmd *out);
/* Frees what decode or ext_set allocated; the struct may be reused after
 * ns_cmd_init. */
void ns_cmd_close(struct ns_cmd *c);
void ns_cmd_init(struct ns_cmd *c);
/* A deep copy of src into dst (one arena block: ext fields, remark and body
 * owned by dst, freed by ns_cmd_close). 0 or NS_ENOMEM (dst untouched). */
int ns_cmd_copy(const struct ns_cmd *src, struct ns_cmd *dst);
/* Borrowed value of an ext field, or NULL. */
const char *ns_cmd_ext_find(const struct ns_cmd *c, const char *key);
/* Adds or replaces an ext field (copies both strings); sets has_ext. 0 or
 * NS_ENOMEM. */
int ns_cmd_ext_set(struct ns_cmd *c, const char *key, const char *value);
/* Copies remark. 0 or NS_ENOMEM. */
int ns_cmd_set_remark(struct ns_cmd *c, const char *remark);
/* Appends the whole frame (length, header info, header in c->ser, body) to out.
 * 0 or the buffer's error. */
int ns_cmd_encode(const struct ns_cmd *c, struct ns_buf *out);
/* The frame without its body: length (counting c->body_len body bytes),
 * header info and header, for a caller that sends the c->body_len bytes
 * itself right after (c->body is not read). 0, NS_ETOOBIG or the buffer's
 * error. */
int ns_cmd_encode_head(const struct ns_cmd *c, struct ns_buf *out);

/* Ext fields as RemotingCommand.decodeCommandCustomHeader fills a Long /
 * Integer / Boolean field (docs/compat.md): Long.parseLong / Integer.parseInt
 * (decimal, optional sign, range-checked) and Boolean.parseBoolean ("true" in
 * any case). false means the Java field stays null ("unset": absent, null or
 * unparsable) and leaves *out unchanged; each handler decides what unset
 * means (Java's NullPointerException on unboxing, or a default). */
bool ns_cmd_ext_int64(const struct ns_cmd *c, const char *key, int64_t *out);
bool ns_cmd_ext_int32(const struct ns_cmd *c, const char *key, int32_t *out);
bool ns_cmd_ext_bool(const struct ns_cmd *c, const char *key, bool *out);

const char *
ns_language_name(int32_t language); /* "JAVA"...; "OTHER" when out of range */
/* Name or decimal ordinal to enum; returns -1 when unknown. */
int32_t ns_language_parse(const char *text);

#endif
