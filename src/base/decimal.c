/* The decimal integer parser of include/raftns/decimal.h. The Java digit
 * set is the one Integer.parseInt accepts (docs/compat.md "Field decoding").
 * Pure. */
#include "raftns/decimal.h"

/* The zero of every run of ten decimal digits (Unicode category Nd) in the
 * Basic Multilingual Plane: Character.digit(ch, 10) accepts them all, and
 * parseInt reads UTF-16 units, so digits beyond the BMP never count. */
static const uint16_t DIGIT_ZEROS[] = {
    0x0030, 0x0660, 0x06F0, 0x07C0, 0x0966, 0x09E6, 0x0A66, 0x0AE6,
    0x0B66, 0x0BE6, 0x0C66, 0x0CE6, 0x0D66, 0x0DE6, 0x0E50, 0x0ED0,
    0x0F20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80,
    0x1A90, 0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620, 0xA8D0, 0xA900,
    0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10};

static bool is_cont(uint8_t b)
{
    return (b & 0xC0) == 0x80;
}

/* The digit value of the UTF-8 character at *p (inside [*p, end)),
 * advancing *p, or -1. */
static int java_digit(const uint8_t **p, const uint8_t *end)
{
    const uint8_t *q = *p;
    size_t left = (size_t)(end - q);
    uint32_t cp;
    size_t n;
    if (q[0] < 0x80) {
        cp = q[0];
        n = 1;
    } else if ((q[0] & 0xE0) == 0xC0 && left >= 2 && is_cont(q[1])) {
        cp = (uint32_t)(q[0] & 0x1F) << 6 | (q[1] & 0x3F);
        n = 2;
    } else if ((q[0] & 0xF0) == 0xE0 && left >= 3 && is_cont(q[1]) &&
               is_cont(q[2])) {
        cp = (uint32_t)(q[0] & 0x0F) << 12 | (uint32_t)(q[1] & 0x3F) << 6 |
             (q[2] & 0x3F);
        n = 3;
    } else {
        return -1;
    }
    for (size_t i = 0; i < sizeof DIGIT_ZEROS / sizeof DIGIT_ZEROS[0]; i++) {
        if (cp >= DIGIT_ZEROS[i] && cp < DIGIT_ZEROS[i] + 10u) {
            *p += n;
            return (int)(cp - DIGIT_ZEROS[i]);
        }
    }
    return -1;
}

static int ascii_digit(const uint8_t **p)
{
    uint8_t ch = **p;
    if (ch < '0' || ch > '9') {
        return -1;
    }
    (*p)++;
    return ch - '0';
}

bool ns_decimal_parse(const char *s, size_t n, unsigned flags, int64_t min,
                      int64_t max, int64_t *out)
{
    const uint8_t *p = (const uint8_t *)s;
    const uint8_t *end = p + n;
    bool neg = false;
    if ((flags & NS_DECIMAL_SIGN) && p < end && (*p == '+' || *p == '-')) {
        neg = *p++ == '-';
    }
    if (p == end) {
        return false;
    }
    /* The magnitude stays within what an int64 of that sign can hold. */
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t v = 0;
    while (p < end) {
        int digit = (flags & NS_DECIMAL_JAVA_DIGITS) ? java_digit(&p, end)
                                                     : ascii_digit(&p);
        if (digit < 0) {
            return false;
        }
        uint64_t d = (uint64_t)digit;
        if (v > (limit - d) / 10) {
            return false;
        }
        v = v * 10 + d;
    }
    int64_t x = neg ? (int64_t)(0 - v) : (int64_t)v;
    if (x < min || x > max) {
        return false;
    }
    *out = x;
    return true;
}
