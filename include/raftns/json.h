/* fastjson-compatible JSON (PROTOCOL.md §4): a reader that accepts what Java
 * brokers write (bare integer keys, $ref objects) on top of cJSON, and a writer
 * for the legacy and standard flavours. Pure; memory only. */
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
struct ns_jw {
    struct ns_buf *out; /* borrowed */
    enum ns_json_flavour flavour;
    int depth;
    bool first[NS_JSON_MAX_DEPTH];
};

void ns_jw_init(struct ns_jw *w, struct ns_buf *out,
                enum ns_json_flavour flavour);
void ns_jw_obj_begin(struct ns_jw *w);
void ns_jw_obj_end(struct ns_jw *w);
void ns_jw_arr_begin(struct ns_jw *w);
void ns_jw_arr_end(struct ns_jw *w);
void ns_jw_key(struct ns_jw *w, const char *key);
/* A numeric map key: bare in legacy, quoted in standard. */
void ns_jw_key_int(struct ns_jw *w, int64_t key);
void ns_jw_str(struct ns_jw *w, const char *s);
/* Longs beyond +-9007199254740991 are quoted in the standard flavour. */
void ns_jw_int(struct ns_jw *w, int64_t v);
void ns_jw_bool(struct ns_jw *w, bool v);
/* Appends an already-encoded JSON value as the next element. */
void ns_jw_raw(struct ns_jw *w, const char *json, size_t len);
/* Appends s as a JSON string literal (with quotes) in the given flavour's
 * escaping. */
void ns_json_write_string(struct ns_buf *out, const char *s,
                          enum ns_json_flavour flavour);

#endif
