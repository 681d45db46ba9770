/* Unit tests of the one decimal integer parser (src/base/decimal.c): the
 * grammar (sign only when allowed, digits only, whole span), both digit sets,
 * the range and overflow edges, and spans that are not NUL-terminated (copied
 * to exact-length buffers so that a sanitizer build sees an over-read). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "raftns/decimal.h"

#define SIGN NS_DECIMAL_SIGN
#define JAVA (NS_DECIMAL_SIGN | NS_DECIMAL_JAVA_DIGITS)

static bool parse_n(const char *text, size_t n, unsigned flags, int64_t min,
                    int64_t max, int64_t *out)
{
    char *copy = malloc(n > 0 ? n : 1);
    assert_non_null(copy);
    memcpy(copy, text, n);
    bool ok = ns_decimal_parse(copy, n, flags, min, max, out);
    free(copy);
    return ok;
}

static bool parse(const char *text, unsigned flags, int64_t *out)
{
    return parse_n(text, strlen(text), flags, INT64_MIN, INT64_MAX, out);
}

static void grammar(void **state)
{
    (void)state;
    int64_t v = 0;
    assert_true(parse("0", 0, &v));
    assert_int_equal(v, 0);
    assert_true(parse("007", 0, &v));
    assert_int_equal(v, 7);
    assert_true(parse("-12", SIGN, &v));
    assert_int_equal(v, -12);
    assert_true(parse("+12", SIGN, &v));
    assert_int_equal(v, 12);
    assert_true(parse("-0", SIGN, &v));
    assert_int_equal(v, 0);
    static const char *const bad[] = {"",   "-",   "+",   "--1", "+-1", " 1",
                                      "1 ", "1.0", "1e3", "0x1", "1,0", "a"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        v = 42;
        if (parse(bad[i], JAVA, &v) || v != 42) {
            fail_msg("accepted %s", bad[i]);
        }
    }
    /* A sign only with the flag. */
    assert_false(parse("-1", 0, &v));
    assert_false(parse("+1", 0, &v));
    assert_false(parse("-1", NS_DECIMAL_JAVA_DIGITS, &v));
    /* The span is the whole text, NUL bytes included. */
    assert_false(parse_n("12\0", 3, SIGN, INT64_MIN, INT64_MAX, &v));
    assert_true(parse_n("123", 2, SIGN, INT64_MIN, INT64_MAX, &v));
    assert_int_equal(v, 12);
}

static void ranges(void **state)
{
    (void)state;
    int64_t v;
    assert_true(parse("9223372036854775807", SIGN, &v));
    assert_int_equal(v, INT64_MAX);
    assert_true(parse("-9223372036854775808", SIGN, &v));
    assert_true(v == INT64_MIN);
    assert_false(parse("9223372036854775808", SIGN, &v));
    assert_false(parse("-9223372036854775809", SIGN, &v));
    assert_false(parse("99999999999999999999", SIGN, &v));
    assert_true(parse("000000000000000000000000000001", SIGN, &v));
    assert_int_equal(v, 1);
    const char *i32max = "2147483647", *i32over = "2147483648";
    assert_true(parse_n(i32max, 10, SIGN, INT32_MIN, INT32_MAX, &v));
    assert_false(parse_n(i32over, 10, SIGN, INT32_MIN, INT32_MAX, &v));
    assert_true(parse_n("-2147483648", 11, SIGN, INT32_MIN, INT32_MAX, &v));
    assert_int_equal(v, INT32_MIN);
    assert_false(parse_n("-2147483649", 11, SIGN, INT32_MIN, INT32_MAX, &v));
    assert_true(parse_n("13", 2, 0, 0, 13, &v));
    assert_false(parse_n("14", 2, 0, 0, 13, &v));
    assert_false(parse_n("-1", 2, SIGN, 0, 13, &v));
}

static void java_digits(void **state)
{
    (void)state;
    int64_t v;
    /* Arabic-Indic 1 2, full-width 1 2, Devanagari 9. */
    assert_true(parse("\xd9\xa1\xd9\xa2", JAVA, &v));
    assert_int_equal(v, 12);
    assert_true(parse("-\xef\xbc\x91\xef\xbc\x92", JAVA, &v));
    assert_int_equal(v, -12);
    assert_true(parse("1\xe0\xa5\xaf", JAVA, &v));
    assert_int_equal(v, 19);
    /* Only with the flag. */
    assert_false(parse("\xd9\xa1", SIGN, &v));
    /* Superscript two, a digit beyond the BMP, and a lone lead byte. */
    assert_false(parse("\xc2\xb2", JAVA, &v));
    assert_false(parse("\xf0\x9d\x9f\x8e", JAVA, &v));
    assert_false(parse("1\xd9", JAVA, &v));
    /* A character cut by the end of the span is not read past it. */
    assert_false(parse_n("\xef\xbc\x91", 2, JAVA, INT64_MIN, INT64_MAX, &v));
    assert_false(parse_n("\xd9\xa1", 1, JAVA, INT64_MIN, INT64_MAX, &v));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(grammar),
        cmocka_unit_test(ranges),
        cmocka_unit_test(java_digits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
