/* Java's readings of a number, exactly (docs/compat.md "Field decoding"):
 * fastjson turning a JSON number literal or string into an int/long field or
 * a String map value, and Integer.parseInt / Long.parseLong of an ext value.
 * Works on the number's text, never on a double, so 64-bit values stay exact.
 * It does not find numbers in a document (json_span.c does). Pure. */
#include <string.h>

#include "raftns/decimal.h"
#include "raftns/err.h"
#include "raftns/json.h"

#define SCALE_LIMIT 100 /* fastjson: |scale| beyond it needs an exact value */
#define EXP_CLAMP 100000000L

static bool is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

/* The parts of a literal -?digits(.digits)?([eE][+-]?digits)?: the digit run
 * of the integer part and of the fraction, the exponent (clamped), and
 * whether it is an integer literal (no '.', no exponent). */
struct literal {
    const char *start; /* the sign, or the first digit */
    bool neg;
    const char *int_digits;
    size_t n_int;
    const char *frac_digits;
    size_t n_frac;
    long exp;
    bool integral;
};

static bool split_literal(const char *p, size_t len, struct literal *l)
{
    const char *e = p + len;
    memset(l, 0, sizeof *l);
    l->start = p;
    l->integral = true;
    if (p < e && (*p == '-' || *p == '+')) {
        l->neg = *p++ == '-';
    }
    l->int_digits = p;
    while (p < e && is_digit(*p)) {
        p++;
    }
    l->n_int = (size_t)(p - l->int_digits);
    if (p < e && *p == '.') {
        l->integral = false;
        l->frac_digits = ++p;
        while (p < e && is_digit(*p)) {
            p++;
        }
        l->n_frac = (size_t)(p - l->frac_digits);
    }
    if (l->n_int == 0) {
        return false; /* ".5", "-" */
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        l->integral = false;
        p++;
        bool eneg = false;
        if (p < e && (*p == '+' || *p == '-')) {
            eneg = *p++ == '-';
        }
        const char *d = p;
        long x = 0;
        while (p < e && is_digit(*p)) {
            if (x < EXP_CLAMP) {
                x = x * 10 + (*p - '0');
            }
            p++;
        }
        if (p == d) {
            return false;
        }
        l->exp = eneg ? -x : x;
    }
    return p == e;
}

/* The i-th digit of the unscaled value (integer digits then fraction). */
static int digit_at(const struct literal *l, size_t i)
{
    return i < l->n_int ? l->int_digits[i] - '0'
                        : l->frac_digits[i - l->n_int] - '0';
}

/* BigDecimal.{int,long}Value of a non-integer literal, or the exact variant
 * fastjson uses when |scale| > 100. bits is 32 or 64. Returns false when Java
 * throws (ArithmeticException from the exact variant). */
static bool decimal_value(const struct literal *l, int bits, uint64_t *out)
{
    size_t n = l->n_int + l->n_frac;
    long scale = (long)l->n_frac - l->exp;
    bool exact = scale < -SCALE_LIMIT || scale > SCALE_LIMIT;
    bool any_digit = false;
    uint64_t v = 0;
    /* Digits kept by truncation toward zero: all but the last `scale`. */
    size_t keep = scale <= 0 ? n : (size_t)scale >= n ? 0 : n - (size_t)scale;
    uint64_t limit = bits == 32 ? (uint64_t)INT32_MAX : (uint64_t)INT64_MAX;
    limit += l->neg ? 1 : 0;
    for (size_t i = 0; i < n; i++) {
        int d = digit_at(l, i);
        if (i >= keep) {
            if (exact && d != 0) {
                return false; /* a fraction: intValueExact throws */
            }
            continue;
        }
        any_digit |= d != 0;
        if (exact && any_digit && v > (limit - (uint64_t)d) / 10) {
            return false;
        }
        v = v * 10 + (uint64_t)d; /* wraps: Java keeps the low bits */
    }
    for (long k = scale; k < 0; k++) {
        if (!any_digit) {
            break;
        }
        if (exact) {
            return false; /* at least 10^101: never fits */
        }
        v *= 10;
    }
    *out = l->neg ? 0 - v : v;
    return true;
}

/* An integer literal that must fit [-(limit+1), limit]. */
static bool integral_value(const struct literal *l, uint64_t limit,
                           uint64_t *out)
{
    int64_t v;
    size_t n = (size_t)(l->int_digits + l->n_int - l->start);
    if (!ns_decimal_parse(l->start, n, NS_DECIMAL_SIGN, -(int64_t)limit - 1,
                          (int64_t)limit, &v)) {
        return false;
    }
    *out = (uint64_t)v;
    return true;
}

int ns_json_number_to_int64(const char *p, size_t len, int64_t *out)
{
    struct literal l;
    uint64_t v;
    if (!split_literal(p, len, &l)) {
        return NS_EPROTO;
    }
    bool ok = l.integral ? integral_value(&l, (uint64_t)INT64_MAX, &v)
                         : decimal_value(&l, 64, &v);
    if (!ok) {
        return NS_EPROTO;
    }
    *out = (int64_t)v;
    return 0;
}

int ns_json_number_to_int32(const char *p, size_t len, int32_t *out)
{
    struct literal l;
    uint64_t v;
    if (!split_literal(p, len, &l)) {
        return NS_EPROTO;
    }
    bool ok = l.integral ? integral_value(&l, (uint64_t)INT32_MAX, &v)
                         : decimal_value(&l, 32, &v);
    if (!ok) {
        return NS_EPROTO;
    }
    *out = (int32_t)(uint32_t)v;
    return 0;
}

static void put_zeros(struct ns_buf *out, long n)
{
    for (long i = 0; i < n; i++) {
        ns_buf_append(out, "0", 1);
    }
}

/* BigDecimal.toString(): plain when the scale is >= 0 and the adjusted
 * exponent >= -6, scientific otherwise. */
static void put_decimal(struct ns_buf *out, const struct literal *l)
{
    size_t n = l->n_int + l->n_frac;
    size_t first = 0;
    while (first + 1 < n && digit_at(l, first) == 0) {
        first++; /* leading zeros are not part of the unscaled value */
    }
    bool zero = first + 1 == n && digit_at(l, first) == 0;
    long n_coef = (long)(n - first);
    long scale = (long)l->n_frac - l->exp;
    long adjusted = -scale + (n_coef - 1);
    char d;
    if (l->neg && !zero) {
        ns_buf_append(out, "-", 1);
    }
    if (scale == 0 || (scale > 0 && adjusted >= -6)) {
        long int_len = n_coef - scale;
        if (int_len <= 0) {
            ns_buf_append(out, "0.", 2);
            put_zeros(out, -int_len);
        }
        for (long i = 0; i < n_coef; i++) {
            if (i == int_len && int_len > 0) {
                ns_buf_append(out, ".", 1);
            }
            d = (char)('0' + digit_at(l, first + (size_t)i));
            ns_buf_append(out, &d, 1);
        }
        return;
    }
    for (long i = 0; i < n_coef; i++) {
        if (i == 1) {
            ns_buf_append(out, ".", 1);
        }
        d = (char)('0' + digit_at(l, first + (size_t)i));
        ns_buf_append(out, &d, 1);
    }
    char exp[24];
    size_t k = sizeof exp;
    long a = adjusted < 0 ? -adjusted : adjusted;
    do {
        exp[--k] = (char)('0' + a % 10);
        a /= 10;
    } while (a != 0);
    exp[--k] = adjusted < 0 ? '-' : '+';
    exp[--k] = 'E';
    ns_buf_append(out, exp + k, sizeof exp - k);
}

int ns_json_number_text(const char *p, size_t len, struct ns_buf *out)
{
    struct literal l;
    if (!split_literal(p, len, &l)) {
        return NS_EPROTO;
    }
    if (l.integral) {
        ns_buf_append(out, p, len); /* fastjson keeps an integer's text */
    } else {
        put_decimal(out, &l);
    }
    return out->err;
}

/* Integer.parseInt / Long.parseLong: an optional sign, at least one decimal
 * digit (any script's, as Character.digit), nothing else, no overflow. */
static bool parse_java(const char *s, uint64_t limit, uint64_t *out)
{
    int64_t v;
    if (!ns_decimal_parse(s, strlen(s),
                          NS_DECIMAL_SIGN | NS_DECIMAL_JAVA_DIGITS,
                          -(int64_t)limit - 1, (int64_t)limit, &v)) {
        return false;
    }
    *out = (uint64_t)v;
    return true;
}

bool ns_json_number_parse_int64(const char *s, int64_t *out)
{
    uint64_t v;
    if (s == NULL || !parse_java(s, (uint64_t)INT64_MAX, &v)) {
        return false;
    }
    *out = (int64_t)v;
    return true;
}

bool ns_json_number_parse_int32(const char *s, int32_t *out)
{
    uint64_t v;
    if (s == NULL || !parse_java(s, (uint64_t)INT32_MAX, &v)) {
        return false;
    }
    *out = (int32_t)(uint32_t)v;
    return true;
}

/* fastjson's castToInt/castToLong of a string: "", "null" and "NULL" are
 * null; commas are dropped; (int only) a trailing ".0*" is dropped; then
 * Integer.parseInt / Long.parseLong. */
static int string_to(const char *s, bool is_int, uint64_t *out)
{
    if (s[0] == '\0' || strcmp(s, "null") == 0 || strcmp(s, "NULL") == 0) {
        return 1;
    }
    char buf[64];
    size_t n = 0;
    for (const char *q = s; *q != '\0'; q++) {
        if (*q == ',') {
            continue;
        }
        if (n + 1 >= sizeof buf) {
            return NS_EPROTO; /* longer than any int64 in decimal */
        }
        buf[n++] = *q;
    }
    buf[n] = '\0';
    if (is_int) {
        char *dot = strrchr(buf, '.');
        if (dot != NULL && strspn(dot + 1, "0") == strlen(dot + 1)) {
            *dot = '\0';
        }
    }
    uint64_t limit = is_int ? (uint64_t)INT32_MAX : (uint64_t)INT64_MAX;
    return parse_java(buf, limit, out) ? 0 : NS_EPROTO;
}

int ns_json_string_to_int64(const char *s, int64_t *out)
{
    uint64_t v;
    int rv = string_to(s, false, &v);
    if (rv == 0) {
        *out = (int64_t)v;
    }
    return rv;
}

int ns_json_string_to_int32(const char *s, int32_t *out)
{
    uint64_t v;
    int rv = string_to(s, true, &v);
    if (rv == 0) {
        *out = (int32_t)(uint32_t)v;
    }
    return rv;
}
