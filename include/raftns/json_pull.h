/* The JSON pull tokenizer of the fast scanners (src/remoting/header_scan.c,
 * src/route/register_body_scan.c): the grammar pulls one lexeme at a time
 * (a punctuation byte, a string, an integer, a number, a literal) or skips a
 * whole value; a reader that answers NS_EAGAIN may leave the cursor anywhere,
 * as the grammar then gives up. It is deliberately partial in
 * the same way as the scanners: whatever it is not sure the cJSON reference
 * path reads the same (docs/compat.md) answers NS_EAGAIN, so that path
 * decides. The input must already carry Java's U+FFFD replacement of
 * malformed UTF-8 (ns_utf8_java), which the callers apply to the whole text
 * once for both paths. Pure: no allocation, no I/O. */
#ifndef RAFTNS_JSON_PULL_H
#define RAFTNS_JSON_PULL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Integers are read only up to 15 digits: exact as a double, so the cJSON
 * path (which reads every number as a double) agrees with the fast path. */
#define NS_JSON_PULL_MAX_INT_DIGITS 15

/* Options of one text (ns_json_pull_init). */
enum {
    /* \uD8xx\uDCxx pairs decode to one code point (otherwise any surrogate
     * escape answers NS_EAGAIN). Lone or reversed surrogates always do. */
    NS_JSON_PULL_SURROGATE_PAIRS = 1u << 0,
    /* Skipped numbers may have leading zeros (007); otherwise a '0' must be
     * the whole integer part, as strict JSON wants. */
    NS_JSON_PULL_LEADING_ZEROS = 1u << 1,
    /* Object keys may be bare integers (-?[0-9]+), as fastjson reads them. */
    NS_JSON_PULL_INT_KEYS = 1u << 2,
    /* String keys starting with '$' ($ref) answer NS_EAGAIN. */
    NS_JSON_PULL_NO_REF_KEYS = 1u << 3,
};

/* The cursor over [p, end). The limits bound what ns_json_pull_number and
 * ns_json_pull_skip accept. */
struct ns_json_pull {
    const uint8_t *p;
    const uint8_t *end;
    unsigned flags;
    size_t max_number_chars; /* a skipped number's length */
    int max_depth;           /* of a skipped value (scalar or container) */
    int max_open_depth;      /* a container opening at this depth or deeper */
};

/* A string lexeme: raw is the text between the quotes (borrowed from the
 * input), len its decoded length. Escapes always decode shorter than they
 * are written, so len == raw_len exactly when raw holds no escape. */
struct ns_json_pull_str {
    const char *raw;
    size_t raw_len;
    size_t len;
};

/* Starts a cursor over [p, p+n) (borrowed; must outlive t) with flags (the
 * enum above) and the limits the caller then sets in t. Defaults: numbers of
 * 15 characters, values up to depth 16, containers opening below 16. */
void ns_json_pull_init(struct ns_json_pull *t, const uint8_t *p, size_t n,
                       unsigned flags);

/* Skips JSON blanks (space, tab, LF, CR; not the form feed cJSON skips). */
void ns_json_pull_skip_ws(struct ns_json_pull *t);

/* Next byte after blanks (consumed: nothing), or -1 at the end. */
int ns_json_pull_peek(struct ns_json_pull *t);

/* Consumes ch after blanks; false (nothing consumed but the blanks) when
 * something else comes. */
bool ns_json_pull_accept(struct ns_json_pull *t, uint8_t ch);

/* A string literal after blanks: checks it (closed, no control byte, known
 * escapes, \u0000 and surrogates per the flags refused) and fills *s. 0 or
 * NS_EAGAIN. */
int ns_json_pull_string(struct ns_json_pull *t, struct ns_json_pull_str *s);

/* Writes the s->len decoded bytes of s (from ns_json_pull_string) to out, no
 * NUL; out has room for s->len bytes. */
void ns_json_pull_unescape(const struct ns_json_pull *t,
                           const struct ns_json_pull_str *s, char *out);

/* An integer after blanks: -?[0-9]{1,15} not followed by '.', 'e', 'E', '+'
 * or '-'. Leading zeros are read (fastjson keeps "007"'s text). 0 or
 * NS_EAGAIN. */
int ns_json_pull_int(struct ns_json_pull *t, int64_t *v);

/* A number after blanks, not kept: -?int(.digits)?([eE][+-]?digits)? of at
 * most t->max_number_chars characters, leading zeros per the flags, not
 * followed by another number character. 0 or NS_EAGAIN. */
int ns_json_pull_number(struct ns_json_pull *t);

/* Literals; which is what ns_json_pull_literal reports. */
enum ns_json_pull_literal {
    NS_JSON_PULL_NULL = -1,
    NS_JSON_PULL_FALSE = 0,
    NS_JSON_PULL_TRUE = 1,
};

/* true, false or null after blanks into *which. Matches the word as a prefix
 * (the grammar refuses what follows). 0 or NS_EAGAIN. */
int ns_json_pull_literal(struct ns_json_pull *t, int *which);

/* Consumes the literal after blanks only when it is want. */
bool ns_json_pull_accept_literal(struct ns_json_pull *t, int want);

/* An object key and its colon after blanks: a string (s->raw points at it),
 * or a bare integer with NS_JSON_PULL_INT_KEYS (raw is its text, len ==
 * raw_len). 0 or NS_EAGAIN. */
int ns_json_pull_key(struct ns_json_pull *t, struct ns_json_pull_str *s);

/* Skips one value after blanks that sits at nesting depth depth: any JSON
 * value, with keys as ns_json_pull_key reads them, numbers as
 * ns_json_pull_number, no value deeper than t->max_depth and no container
 * opening at t->max_open_depth or deeper. 0 or NS_EAGAIN. */
int ns_json_pull_skip(struct ns_json_pull *t, int depth);

#endif
