/* fastjson-compatible JSON (docs/protocol.md §4): a reader that accepts what
 * Java brokers write (bare integer keys, $ref objects) on top of cJSON, and a
 * writer for the legacy and standard flavours. Pure; memory only. */
#ifndef RAFTNS_JSON_H
#define RAFTNS_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cJSON.h>

#include "raftns/buf.h"

#define NS_JSON_MAX_DEPTH 64

/* Routes cJSON's allocations through ns_malloc (call once at start;
 * idempotent). */
void ns_json_use_ns_alloc(void);

/* Parses len bytes of fastjson output. Bare integer object keys become string
 * keys. Returns an owned tree (free with cJSON_Delete) or NULL when the text is
 * not JSON, nests deeper than NS_JSON_MAX_DEPTH, or memory runs out. */
cJSON *ns_json_parse(const char *text, size_t len);
/* As ns_json_parse; when it returns NULL, *rv says why: NS_EPROTO (not JSON,
 * trailing bytes, too deep) or NS_ENOMEM. *rv is 0 on success. Lets decoders
 * report NS_ENOMEM faithfully. */
cJSON *ns_json_parse_rv(const char *text, size_t len, int *rv);

/* Field helpers over a parsed tree (borrowed). Missing or wrong-typed fields
 * give the default; numbers given as strings are accepted, as fastjson does. */
int64_t ns_json_get_int64(const cJSON *obj, const char *key, int64_t dflt);
bool ns_json_get_bool(const cJSON *obj, const char *key, bool dflt);
const char *ns_json_get_string(const cJSON *obj,
                               const char *key); /* borrowed or NULL */

enum ns_json_flavour {
    NS_JSON_LEGACY, /* fastjson defaults: bare numeric map keys, raw UTF-8, '/'
                       as is */
    NS_JSON_STANDARD, /* + BrowserCompatible, QuoteFieldNames: quoted keys,
                         \uXXXX, \/ */
};

/* Streaming writer that tracks commas. Errors are sticky in the output buffer.
 * Callers write bean properties in alphabetical order and skip nulls, as
 * fastjson does. */
struct ns_json_writer {
    struct ns_buf *out; /* borrowed */
    enum ns_json_flavour flavour;
    int depth;
    bool first[NS_JSON_MAX_DEPTH];
};

void ns_json_write_init(struct ns_json_writer *w, struct ns_buf *out,
                        enum ns_json_flavour flavour);
void ns_json_write_obj_begin(struct ns_json_writer *w);
void ns_json_write_obj_end(struct ns_json_writer *w);
void ns_json_write_arr_begin(struct ns_json_writer *w);
void ns_json_write_arr_end(struct ns_json_writer *w);
void ns_json_write_key(struct ns_json_writer *w, const char *key);
/* A numeric map key: bare in legacy, quoted in standard. */
void ns_json_write_key_int(struct ns_json_writer *w, int64_t key);
void ns_json_write_str(struct ns_json_writer *w, const char *s);
/* Longs beyond +-9007199254740991 are quoted in the standard flavour. */
void ns_json_write_int(struct ns_json_writer *w, int64_t v);
void ns_json_write_bool(struct ns_json_writer *w, bool v);
/* Appends an already-encoded JSON value as the next element. */
void ns_json_write_raw(struct ns_json_writer *w, const char *json, size_t len);
/* Appends s as a JSON string literal (with quotes) in the given flavour's
 * escaping. */
void ns_json_write_string(struct ns_buf *out, const char *s,
                          enum ns_json_flavour flavour);

/* --- Exact numbers (json_number.c, json_span.c; docs/compat.md) --- */

/* A value's raw text inside a document (borrowed). */
struct ns_json_span {
    const char *p;
    size_t len;
};

/* Cursor over the member values of the object text [text, text+len), in
 * document order, so that the i-th span belongs to cJSON's i-th child of the
 * same text parsed by ns_json_parse. init: false when the text does not start
 * with '{'. next: 1 and *out, 0 at the end, -1 on text it cannot skip. */
struct ns_json_members {
    const char *p;
    const char *end;
    bool done;
    bool bare_key; /* the member last returned had an unquoted key */
};
bool ns_json_members_init(struct ns_json_members *it, const char *text,
                          size_t len);
int ns_json_members_next(struct ns_json_members *it, struct ns_json_span *out);
/* Raw text of member (a child of obj, the tree of [text, text+len)). */
bool ns_json_span_of(const char *text, size_t len, const cJSON *obj,
                     const cJSON *member, struct ns_json_span *out);

/* fastjson reading a JSON number literal into a Java int / long field: an
 * integer literal must fit the type; a literal with a fraction or exponent is
 * a BigDecimal truncated toward zero keeping the low 32/64 bits (its exact
 * value when |scale| > 100). 0, or NS_EPROTO where Java throws. */
int ns_json_number_to_int32(const char *p, size_t len, int32_t *out);
int ns_json_number_to_int64(const char *p, size_t len, int64_t *out);
/* fastjson reading a JSON string into a Java int / long field: 0 and *out;
 * 1 when Java takes it as null ("", "null", "NULL"); NS_EPROTO where Java
 * throws. Commas are dropped; the int form also drops a trailing ".0*". */
int ns_json_string_to_int32(const char *s, int32_t *out);
int ns_json_string_to_int64(const char *s, int64_t *out);
/* A number literal as fastjson stores it into a String map value: an integer
 * literal verbatim, any other as BigDecimal.toString(). 0, NS_EPROTO (not a
 * literal) or the buffer's error. */
int ns_json_number_text(const char *p, size_t len, struct ns_buf *out);
/* Integer.parseInt / Long.parseLong (ASCII digits, optional sign). */
bool ns_json_number_parse_int32(const char *s, int32_t *out);
bool ns_json_number_parse_int64(const char *s, int64_t *out);

#endif
