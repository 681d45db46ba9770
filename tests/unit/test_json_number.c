/* Unit tests of the exact Java number readings (src/json/json_number.c,
 * json_span.c) and of the DataVersion reader built on them: 64-bit values
 * stay exact, ranges are Java's, and each expected value is what fastjson
 * 1.2.69 / Integer.parseInt / Long.parseLong give for the same text
 * (docs/compat.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "raftns/err.h"
#include "raftns/json.h"
#include "raftns/route.h"
#include "raftns/utf8.h"

struct int_case {
    const char *text;
    int rv;
    int64_t value;
};

static void number_to_int32(void **state)
{
    (void)state;
    static const struct int_case cases[] = {
        {"0", 0, 0},
        {"-0", 0, 0},
        {"2147483647", 0, INT32_MAX},
        {"-2147483648", 0, INT32_MIN},
        {"2147483648", NS_EPROTO, 0},  /* integer literal: must fit */
        {"-2147483649", NS_EPROTO, 0}, /* */
        {"1099511627776", NS_EPROTO, 0},
        {"0106", 0, 106},
        {"106.5", 0, 106}, /* BigDecimal.intValue truncates */
        {"-106.9", 0, -106},
        {"106.", 0, 106},
        {"1e2", 0, 100},
        {"1.065e2", 0, 106},
        {"10650e-2", 0, 106},
        {"2147483648.5", 0, INT32_MIN}, /* keeps the low 32 bits */
        {"4294967297.7", 0, 1},
        {"1e10", 0, 1410065408},
        {"1e100", 0, 0},         /* 10^100 = 2^100 * 5^100 */
        {"1e101", NS_EPROTO, 0}, /* scale -101: intValueExact throws */
        {"1e400", NS_EPROTO, 0},
        {"1.5e-3", 0, 0},
        {"-0.5", 0, 0},
        {".5", NS_EPROTO, 0},
        {"-", NS_EPROTO, 0},
        {"1e", NS_EPROTO, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int32_t v = 12345;
        int rv =
            ns_json_number_to_int32(cases[i].text, strlen(cases[i].text), &v);
        if (rv != cases[i].rv || (rv == 0 && v != cases[i].value)) {
            fail_msg("%s: rv %d value %d, want rv %d value %lld", cases[i].text,
                     rv, v, cases[i].rv, (long long)cases[i].value);
        }
    }
}

static void number_to_int64(void **state)
{
    (void)state;
    static const struct int_case cases[] = {
        {"9007199254740993", 0, 9007199254740993LL}, /* 2^53 + 1, exact */
        {"9223372036854775807", 0, INT64_MAX},
        {"-9223372036854775808", 0, INT64_MIN},
        {"9223372036854775808", NS_EPROTO, 0},
        {"-9223372036854775809", NS_EPROTO, 0},
        {"-1", 0, -1},
        {"1e308", NS_EPROTO, 0},
        {"1.5", 0, 1},
        {"1e2", 0, 100},
        {"9223372036854775808.5", 0, INT64_MIN},
        {"1e19", 0, -8446744073709551616LL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t v = 12345;
        int rv =
            ns_json_number_to_int64(cases[i].text, strlen(cases[i].text), &v);
        if (rv != cases[i].rv || (rv == 0 && v != cases[i].value)) {
            fail_msg("%s: rv %d value %lld, want rv %d value %lld",
                     cases[i].text, rv, (long long)v, cases[i].rv,
                     (long long)cases[i].value);
        }
    }
}

static void string_to_int(void **state)
{
    (void)state;
    static const struct int_case cases32[] = {
        {"105", 0, 105},
        {"+105", 0, 105},
        {"-1", 0, -1},
        {"1,05", 0, 105},
        {"10.00", 0, 10},
        {"10.", 0, 10},
        {"", 1, 0},
        {"null", 1, 0},
        {"NULL", 1, 0},
        {" 105", NS_EPROTO, 0},
        {"106.5", NS_EPROTO, 0},
        {"1e2", NS_EPROTO, 0},
        {"abc", NS_EPROTO, 0},
        {"2147483648", NS_EPROTO, 0},
        {"Null", NS_EPROTO, 0},
    };
    for (size_t i = 0; i < sizeof cases32 / sizeof cases32[0]; i++) {
        int32_t v = 7;
        int rv = ns_json_string_to_int32(cases32[i].text, &v);
        if (rv != cases32[i].rv || (rv == 0 && v != cases32[i].value)) {
            fail_msg("int %s: rv %d value %d", cases32[i].text, rv, v);
        }
    }
    static const struct int_case cases64[] = {
        {"9223372036854775807", 0, INT64_MAX},
        {"1,5", 0, 15},
        {"+5", 0, 5},
        {"5.0", NS_EPROTO, 0}, /* only the int form drops ".0" */
        {" 5", NS_EPROTO, 0},
        {"", 1, 0},
        {"9223372036854775808", NS_EPROTO, 0},
    };
    for (size_t i = 0; i < sizeof cases64 / sizeof cases64[0]; i++) {
        int64_t v = 7;
        int rv = ns_json_string_to_int64(cases64[i].text, &v);
        if (rv != cases64[i].rv || (rv == 0 && v != cases64[i].value)) {
            fail_msg("long %s: rv %d value %lld", cases64[i].text, rv,
                     (long long)v);
        }
    }
}

static void java_parse(void **state)
{
    (void)state;
    int64_t l = 0;
    int32_t i = 0;
    assert_true(ns_json_number_parse_int64("9223372036854775807", &l));
    assert_true(l == INT64_MAX);
    assert_false(ns_json_number_parse_int64("9223372036854775808", &l));
    assert_true(ns_json_number_parse_int64("-9223372036854775808", &l));
    assert_true(l == INT64_MIN);
    assert_true(ns_json_number_parse_int64("+7", &l));
    assert_int_equal(l, 7);
    assert_false(ns_json_number_parse_int64("", &l));
    assert_false(ns_json_number_parse_int64("-", &l));
    assert_false(ns_json_number_parse_int64("abc", &l));
    assert_false(ns_json_number_parse_int64("1e3", &l));
    assert_false(ns_json_number_parse_int64(" 1", &l));
    assert_false(ns_json_number_parse_int64("1.0", &l));
    assert_false(ns_json_number_parse_int64(NULL, &l));
    /* Character.digit accepts every script's digits (Java run: "١٢" and
     * fullwidth "１２" are 12); the superscript ² and a digit beyond the BMP
     * are not decimal digits to parseInt. */
    assert_true(ns_json_number_parse_int64("\xd9\xa1\xd9\xa2", &l));
    assert_int_equal(l, 12);
    assert_true(ns_json_number_parse_int32("-\xef\xbc\x91\xef\xbc\x92", &i));
    assert_int_equal(i, -12);
    assert_false(ns_json_number_parse_int64("\xc2\xb2", &l));
    assert_false(ns_json_number_parse_int64("\xf0\x9d\x9f\x8e", &l));
    assert_true(ns_json_number_parse_int32("2147483647", &i));
    assert_int_equal(i, INT32_MAX);
    assert_false(ns_json_number_parse_int32("2147483648", &i));
    assert_true(ns_json_number_parse_int32("-2147483648", &i));
    assert_int_equal(i, INT32_MIN);
}

static void number_text(void **state)
{
    (void)state;
    /* fastjson's String value of each literal (BigDecimal.toString for the
     * non-integers), as a Java run of the same text gives. */
    static const char *const cases[][2] = {
        {"1", "1"},
        {"-0", "-0"},
        {"007", "007"},
        {"99999999999999999999999", "99999999999999999999999"},
        {"1.50", "1.50"},
        {"1e308", "1E+308"},
        {"1e400", "1E+400"},
        {"1.5e3", "1.5E+3"},
        {"150e-2", "1.50"},
        {"1e-7", "1E-7"},
        {"-0.0", "0.0"},
        {"0e5", "0E+5"},
        {"1E2", "1E+2"},
        {"1.0e+2", "1.0E+2"},
        {"-1.5", "-1.5"},
        {"0.000001", "0.000001"},
        {"0.0000001", "1E-7"},
        {"123456789012345678901234567890.5",
         "123456789012345678901234567890.5"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct ns_buf b;
        ns_buf_init(&b);
        assert_int_equal(
            ns_json_number_text(cases[i][0], strlen(cases[i][0]), &b), 0);
        ns_buf_append(&b, "", 1);
        if (strcmp((const char *)b.data, cases[i][1]) != 0) {
            fail_msg("%s: got %s want %s", cases[i][0], (const char *)b.data,
                     cases[i][1]);
        }
        ns_buf_close(&b);
    }
}

static void member_spans(void **state)
{
    (void)state;
    const char *t = " { \"a\" : 9007199254740993 , 1:{\"x\":[1,\"}\"]},"
                    "\"b\":\"s\\\"\", \"c\":-1.5e3 } ";
    static const char *const want[] = {"9007199254740993", "{\"x\":[1,\"}\"]}",
                                       "\"s\\\"\"", "-1.5e3"};
    struct ns_json_members it;
    struct ns_json_span sp;
    assert_true(ns_json_members_init(&it, t, strlen(t)));
    for (size_t i = 0; i < 4; i++) {
        assert_int_equal(ns_json_members_next(&it, &sp), 1);
        assert_int_equal(sp.len, strlen(want[i]));
        assert_memory_equal(sp.p, want[i], sp.len);
    }
    assert_int_equal(ns_json_members_next(&it, &sp), 0);
    assert_true(ns_json_members_init(&it, "{}", 2));
    assert_int_equal(ns_json_members_next(&it, &sp), 0);
    assert_false(ns_json_members_init(&it, "[1]", 3));
}

static int decode_dv(const char *text, struct ns_data_version *dv)
{
    return ns_data_version_decode((const uint8_t *)text, strlen(text), 77, dv,
                                  NULL);
}

static void data_version_exact(void **state)
{
    (void)state;
    struct ns_data_version dv;
    assert_int_equal(
        decode_dv("{\"counter\":9007199254740993,\"timestamp\":1}", &dv), 0);
    assert_true(dv.counter == 9007199254740993LL);
    assert_int_equal(decode_dv("{\"counter\":9223372036854775807,"
                               "\"timestamp\":9223372036854775807}",
                               &dv),
                     0);
    assert_true(dv.counter == INT64_MAX && dv.timestamp == INT64_MAX);
    assert_int_equal(decode_dv("{\"counter\":-1,\"timestamp\":1}", &dv), 0);
    assert_true(dv.counter == -1);
    assert_int_equal(decode_dv("{\"counter\":\"5\",\"timestamp\":1.5}", &dv),
                     0);
    assert_true(dv.counter == 5 && dv.timestamp == 1);
    assert_int_equal(decode_dv("{\"counter\":5}", &dv), 0);
    assert_true(dv.timestamp == 77); /* Java's constructor: now */
    assert_int_equal(decode_dv("{\"counter\":null,\"timestamp\":null}", &dv),
                     0);
    assert_true(dv.counter == 0 && dv.timestamp == 77);
    /* What fastjson throws on. */
    static const char *const bad[] = {
        "{\"counter\":9223372036854775808,\"timestamp\":1}",
        "{\"counter\":1e308,\"timestamp\":1}",
        "{\"counter\":\"abc\",\"timestamp\":1}",
        "{\"counter\":true}",
        "{\"counter\":{}}",
        "{\"timestamp\":[1]}",
        "{\"counter\":\"5.0\"}",
        "[1]",
        "1",
        "\"x\"",
        "{",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (decode_dv(bad[i], &dv) != NS_EPROTO) {
            fail_msg("accepted %s", bad[i]);
        }
    }
    assert_int_equal(decode_dv("null", &dv), NS_ENOTFOUND);
    assert_int_equal(decode_dv("[]", &dv), NS_ENOTFOUND);
}

/* The register body keeps 64-bit counters exact on the cJSON path too (a
 * shape the fast scanner leaves to it: a 19-digit counter). */
static void register_body_exact(void **state)
{
    (void)state;
    const char *body = "{\"topicConfigSerializeWrapper\":{\"dataVersion\":"
                       "{\"counter\":9223372036854775807,\"timestamp\":"
                       "9007199254740993},\"topicConfigTable\":{}},"
                       "\"filterServerList\":[]}";
    struct ns_register r;
    char err[256] = "";
    ns_register_init(&r);
    assert_int_equal(ns_register_decode_body(&r, 409, false,
                                             (const uint8_t *)body,
                                             strlen(body), 5, err, sizeof err),
                     0);
    assert_true(r.dv.counter == INT64_MAX);
    assert_true(r.dv.timestamp == 9007199254740993LL);
    ns_register_close(&r);
    const char *bad = "{\"topicConfigSerializeWrapper\":{\"dataVersion\":"
                      "{\"counter\":1e308,\"timestamp\":1}}}";
    ns_register_init(&r);
    assert_int_equal(ns_register_decode_body(&r, 409, false,
                                             (const uint8_t *)bad, strlen(bad),
                                             5, err, sizeof err),
                     NS_EPROTO);
    assert_non_null(strstr(err, "counter"));
    ns_register_close(&r);
}

/* U+FFFD per malformed sequence, as a Java 17 run of new String(bytes,
 * UTF_8) gave for the same bytes ("R" = one replacement). */
static void utf8_as_java(void **state)
{
    (void)state;
    static const struct {
        const char *in;
        size_t len;
        const char *want; /* R = EF BF BD */
    } cases[] = {
        {"\xff", 1, "R"},
        {"\xc3", 1, "R"},
        {"\xc3"
         "A",
         2, "RA"},
        {"\xe2\x82", 2, "R"},
        {"\xe2\x82"
         "A",
         3, "RA"},
        {"\xed\xa0\x80", 3, "R"},
        {"\xed\xbf\xbf", 3, "R"},
        {"\xf4\x90\x80\x80", 4, "RRRR"},
        {"\xc0\x80", 2, "RR"},
        {"\xf0\x9f\x98", 3, "R"},
        {"\xf0\x9f\x98"
         "A",
         4, "RA"},
        {"\xe0\x80\xa0", 3, "RRR"},
        {"\xf0\x80\x80\x80", 4, "RRRR"},
        {"\x80", 1, "R"},
        {"\xbf"
         "A",
         2, "RA"},
        {"\xf8\x88\x80\x80", 4, "RRRR"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct ns_buf out;
        struct ns_buf want;
        ns_buf_init(&out);
        ns_buf_init(&want);
        for (const char *w = cases[i].want; *w != '\0'; w++) {
            if (*w == 'R') {
                ns_buf_append(&want, "\xef\xbf\xbd", 3);
            } else {
                ns_buf_append(&want, w, 1);
            }
        }
        int rv = ns_utf8_java((const uint8_t *)cases[i].in, cases[i].len, &out);
        if (rv != 1 || out.len != want.len ||
            memcmp(out.data, want.data, want.len) != 0) {
            fail_msg("case %zu: rv %d, %zu bytes", i, rv, out.len);
        }
        ns_buf_close(&out);
        ns_buf_close(&want);
    }
    struct ns_buf out;
    ns_buf_init(&out);
    const char *good = "a\xc3\xa9\xe0\xa0\x80\xf0\x9f\x98\x80";
    assert_int_equal(ns_utf8_java((const uint8_t *)good, strlen(good), &out),
                     0);
    assert_int_equal(out.len, 0);
    ns_buf_close(&out);
}

/* The ASCII words skipped at once must never hide a byte that is not ASCII:
 * a malformed byte at every offset of a long ASCII run (each word position
 * and the tail shorter than a word) is replaced exactly there, and a
 * well-formed sequence anywhere leaves the text as it is. */
static void utf8_at_every_offset(void **state)
{
    (void)state;
    static const char *const seqs[] = {"\x80", "\xff", "\xc3", "\xed\xa0\x80"};
    static const size_t seq_lens[] = {1, 1, 1, 3};
    for (size_t k = 0; k < sizeof seqs / sizeof seqs[0]; k++) {
        for (size_t total = 1; total <= 40; total++) {
            for (size_t at = 0; at + seq_lens[k] <= total; at++) {
                uint8_t in[48];
                memset(in, 'a', sizeof in);
                memcpy(in + at, seqs[k], seq_lens[k]);
                struct ns_buf out;
                ns_buf_init(&out);
                int rv = ns_utf8_java(in, total, &out);
                /* each of these is one U+FFFD */
                size_t want_len = total - seq_lens[k] + 3;
                if (rv != 1 || out.len != want_len ||
                    memcmp(out.data, in, at) != 0 ||
                    memcmp((const uint8_t *)out.data + at, "\xef\xbf\xbd", 3) !=
                        0 ||
                    memcmp((const uint8_t *)out.data + at + 3,
                           in + at + seq_lens[k],
                           total - at - seq_lens[k]) != 0) {
                    fail_msg("seq %zu, %zu bytes, at %zu: rv %d, %zu bytes", k,
                             total, at, rv, out.len);
                }
                ns_buf_close(&out);
                memcpy(in + at, "\xc3\xa9", seq_lens[k] >= 2 ? 2 : 0);
                if (seq_lens[k] >= 2) {
                    in[at + 2] = 'a';
                    ns_buf_init(&out);
                    assert_int_equal(ns_utf8_java(in, total, &out), 0);
                    assert_int_equal(out.len, 0);
                    ns_buf_close(&out);
                }
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(number_to_int32),
        cmocka_unit_test(number_to_int64),
        cmocka_unit_test(string_to_int),
        cmocka_unit_test(java_parse),
        cmocka_unit_test(number_text),
        cmocka_unit_test(member_spans),
        cmocka_unit_test(data_version_exact),
        cmocka_unit_test(register_body_exact),
        cmocka_unit_test(utf8_as_java),
        cmocka_unit_test(utf8_at_every_offset),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
