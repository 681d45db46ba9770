/* The one decimal integer parser: Java's Integer.parseInt / Long.parseLong
 * where a field needs Java's rules (any script's digits), the same grammar
 * with ASCII digits where the text is ours or fastjson's. Pure. */
#ifndef RAFTNS_DECIMAL_H
#define RAFTNS_DECIMAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum {
    /* One leading '+' or '-'. */
    NS_DECIMAL_SIGN = 1u << 0,
    /* Digits of every script in the Basic Multilingual Plane, written in
     * UTF-8, as Character.digit(ch, 10) reads them; otherwise 0-9 only. */
    NS_DECIMAL_JAVA_DIGITS = 1u << 1,
};

/* Parses all of [s, s+n) (borrowed): the sign the flags allow, at least one
 * digit, nothing else, and a value in [min, max]. Returns false (*out
 * untouched) otherwise, overflow included. Leading zeros are read. */
bool ns_decimal_parse(const char *s, size_t n, unsigned flags, int64_t min,
                      int64_t max, int64_t *out);

#endif
