/* Unit tests of the JSON pull tokenizer (src/json/json_pull.c): each lexeme
 * reader accepts exactly the shapes the fast scanners rely on and answers
 * NS_EAGAIN for everything else, including every truncation, bad escapes,
 * surrogates and nesting past the limits. Inputs are copied into buffers of
 * their exact length so that a sanitizer build sees any read past the end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "raftns/err.h"
#include "raftns/json_pull.h"

#define HEADER_FLAGS NS_JSON_PULL_SURROGATE_PAIRS
#define BODY_FLAGS                                                             \
    (NS_JSON_PULL_LEADING_ZEROS | NS_JSON_PULL_INT_KEYS |                      \
     NS_JSON_PULL_NO_REF_KEYS)

/* An exact-length heap copy of n bytes of text, and a cursor over it. */
struct input {
    uint8_t *bytes;
    struct ns_json_pull t;
};

static struct ns_json_pull *open_n(struct input *in, const char *text, size_t n,
                                   unsigned flags)
{
    in->bytes = malloc(n > 0 ? n : 1);
    assert_non_null(in->bytes);
    memcpy(in->bytes, text, n);
    ns_json_pull_init(&in->t, in->bytes, n, flags);
    return &in->t;
}

static struct ns_json_pull *open_text(struct input *in, const char *text,
                                      unsigned flags)
{
    return open_n(in, text, strlen(text), flags);
}

static void close_input(struct input *in)
{
    free(in->bytes);
}

static bool at_end(const struct ns_json_pull *t)
{
    return t->p == t->end;
}

/* Reads the string lexeme of text with flags: its decoded form into out
 * (cap bytes, NUL-terminated), or -1 when the tokenizer refuses it. */
static long decode(const char *text, unsigned flags, char *out, size_t cap)
{
    struct input in;
    struct ns_json_pull *t = open_text(&in, text, flags);
    struct ns_json_pull_str s;
    long rv = -1;
    int r = ns_json_pull_string(t, &s);
    if (r == 0) {
        assert_true(at_end(t));
        assert_true(s.len <= s.raw_len);
        assert_true(s.len + 1 < cap);
        memset(out, 'Z', cap);
        ns_json_pull_unescape(t, &s, out);
        assert_int_equal(out[s.len], 'Z'); /* exactly len bytes written */
        out[s.len] = '\0';
        rv = (long)s.len;
    } else {
        assert_int_equal(r, NS_EAGAIN);
    }
    close_input(&in);
    return rv;
}

static void strings_decode(void **state)
{
    (void)state;
    char out[64];
    assert_int_equal(decode("\"\"", 0, out, sizeof out), 0);
    assert_int_equal(decode("  \"abc\"", 0, out, sizeof out), 3);
    assert_string_equal(out, "abc");
    assert_int_equal(
        decode("\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"", 0, out, sizeof out), 12);
    assert_string_equal(out, "a\"b\\c/d\b\f\n\r\t");
    assert_int_equal(
        decode("\"\\u0041\\u00e9\\u4e2d\\uFFFF\"", 0, out, sizeof out),
        1 + 2 + 3 + 3);
    assert_string_equal(out, "A\xc3\xa9\xe4\xb8\xad\xef\xbf\xbf");
    /* Bytes >= 0x80 and DEL stand for themselves (U+FFFD was applied). */
    assert_int_equal(decode("\"\x7f\xc3\xa9\xef\xbf\xbd\"", 0, out, sizeof out),
                     6);
    assert_string_equal(out, "\x7f\xc3\xa9\xef\xbf\xbd");
}

static void string_raw_is_borrowed(void **state)
{
    (void)state;
    struct input in;
    struct ns_json_pull *t = open_text(&in, "\"plain\" \"es\\ncaped\"", 0);
    struct ns_json_pull_str s;
    assert_int_equal(ns_json_pull_string(t, &s), 0);
    assert_ptr_equal(s.raw, (const char *)in.bytes + 1);
    assert_int_equal(s.raw_len, 5);
    assert_int_equal(s.len, 5);
    assert_int_equal(ns_json_pull_string(t, &s), 0);
    assert_int_equal(s.raw_len, 9);
    assert_int_equal(s.len, 8);
    assert_true(at_end(t));
    close_input(&in);
}

static void surrogates(void **state)
{
    (void)state;
    char out[64];
    /* A well-formed pair is one code point with the flag, refused without. */
    assert_int_equal(
        decode("\"\\ud83d\\ude00\"", HEADER_FLAGS, out, sizeof out), 4);
    assert_string_equal(out, "\xf0\x9f\x98\x80");
    assert_int_equal(
        decode("\"\\uDBFF\\uDFFF\"", HEADER_FLAGS, out, sizeof out), 4);
    assert_string_equal(out, "\xf4\x8f\xbf\xbf");
    assert_int_equal(decode("\"\\ud83d\\ude00\"", 0, out, sizeof out), -1);
    static const char *const bad[] = {
        "\"\\ud800\"",         /* lone high */
        "\"\\udc00\"",         /* lone low */
        "\"\\udc00\\ud800\"",  /* reversed */
        "\"\\ud800\\u0041\"",  /* high then not a low */
        "\"\\ud800\\ud800\"",  /* high then high */
        "\"\\ud800x\\udc00\"", /* not adjacent */
        "\"\\ud800\\n\"",      /* high then another escape */
        "\"\\ud800\\udc0\"",   /* low cut short */
        "\"\\ud800\\",         /* cut after the high */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        if (decode(bad[i], HEADER_FLAGS, out, sizeof out) != -1 ||
            decode(bad[i], 0, out, sizeof out) != -1) {
            fail_msg("accepted %s", bad[i]);
        }
    }
}

/* The plain run is scanned eight bytes a round: a byte that ends it ('"',
 * '\\', a control byte) is found at every offset of a round and of the tail,
 * and bytes just above the stops (' ', '#', ']', 0x7f, 0x80, 0xff) never end
 * it. Every string is "<pad><byte>x" with the text ending right after. */
static void string_run_offsets(void **state)
{
    (void)state;
    static const uint8_t stops[] = {'"', '\\', 0x00, 0x01, 0x1f};
    static const uint8_t plain[] = {' ', '!', '#', '[', ']', 0x7f, 0x80, 0xff};
    char text[64];
    for (size_t pad = 0; pad < 40; pad++) {
        text[0] = '"';
        memset(text + 1, 'a', pad);
        for (size_t k = 0; k < sizeof stops + sizeof plain; k++) {
            bool stop = k < sizeof stops;
            text[1 + pad] = (char)(stop ? stops[k] : plain[k - sizeof stops]);
            memcpy(text + 2 + pad, "x\"", 2);
            size_t n = pad + 4;
            struct input in;
            struct ns_json_pull_str s;
            struct ns_json_pull *t = open_n(&in, text, n, 0);
            int rv = ns_json_pull_string(t, &s);
            if (k == 0) { /* the quote closes the string after pad bytes */
                assert_int_equal(rv, 0);
                assert_int_equal(s.len, pad);
                assert_ptr_equal(t->p, in.bytes + pad + 2);
            } else if (stop) { /* "\\x" is an unknown escape */
                assert_int_equal(rv, NS_EAGAIN);
            } else {
                assert_int_equal(rv, 0);
                assert_int_equal(s.len, pad + 2);
                assert_true(at_end(t));
            }
            close_input(&in);
        }
    }
}

static void bad_strings(void **state)
{
    (void)state;
    char out[64];
    static const char *const bad[] = {
        "abc",       "\"abc",       "\"abc\\",  "\"\\x\"",        "\"\\U0041\"",
        "\"\\u12\"", "\"\\u12g4\"", "\"\\u\"",  "\"\\u0000\"",    "\"a\tb\"",
        "\"a\nb\"",  "\"\x01\"",    "\"\x1f\"", "\"\\\xc3\xa9\"", "\"\\'\"",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        if (decode(bad[i], HEADER_FLAGS, out, sizeof out) != -1) {
            fail_msg("accepted %s", bad[i]);
        }
    }
    /* A raw NUL byte inside the quotes is a control byte too. */
    struct input in;
    struct ns_json_pull_str s;
    struct ns_json_pull *t = open_n(&in, "\"a\0b\"", 5, 0);
    assert_int_equal(ns_json_pull_string(t, &s), NS_EAGAIN);
    close_input(&in);
}

static int read_int(const char *text, int64_t *v)
{
    struct input in;
    struct ns_json_pull *t = open_text(&in, text, 0);
    int rv = ns_json_pull_int(t, v);
    if (rv == 0 && !at_end(t) && *t->p != ',') {
        rv = 99; /* stopped early */
    }
    close_input(&in);
    return rv;
}

static void integers(void **state)
{
    (void)state;
    int64_t v;
    assert_int_equal(read_int(" 0", &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(read_int("-0", &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(read_int("007", &v), 0);
    assert_int_equal(v, 7);
    assert_int_equal(read_int("999999999999999", &v), 0);
    assert_int_equal(v, 999999999999999);
    assert_int_equal(read_int("-123456789012345,", &v), 0);
    assert_int_equal(v, -123456789012345);
    static const char *const bad[] = {
        "1234567890123456",
        "-1234567890123456",
        "1.5",
        "1e3",
        "1E3",
        "1+",
        "1-",
        "-",
        "+1",
        "",
        "x",
        "--1",
        " ",
        ".5",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        if (read_int(bad[i], &v) != NS_EAGAIN) {
            fail_msg("accepted %s", bad[i]);
        }
    }
}

static int skip_number(const char *text, unsigned flags, size_t max_chars)
{
    struct input in;
    struct ns_json_pull *t = open_text(&in, text, flags);
    t->max_number_chars = max_chars;
    int rv = ns_json_pull_number(t);
    if (rv == 0 && !at_end(t) && *t->p != ',') {
        rv = 99;
    }
    close_input(&in);
    return rv;
}

static void numbers(void **state)
{
    (void)state;
    static const char *const good[] = {
        "0",    "-0", "1.5e3", "-0.25E-2", "1e+10", "123456789012345",
        "0.5,", "10", "1E0",   "-9.9e-9",  "0e0",
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        if (skip_number(good[i], 0, 15) != 0 ||
            skip_number(good[i], NS_JSON_PULL_LEADING_ZEROS, 15) != 0) {
            fail_msg("refused %s", good[i]);
        }
    }
    static const char *const bad[] = {
        "1.",
        "1.e3",
        "1e",
        "1e+",
        "-",
        "+1",
        ".5",
        "-.5",
        "1.5.",
        "1e3e",
        "1-",
        "0x1",
        "1234567890123456",
        "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        if (skip_number(bad[i], 0, 15) == 0 ||
            skip_number(bad[i], NS_JSON_PULL_LEADING_ZEROS, 15) == 0) {
            fail_msg("accepted %s", bad[i]);
        }
    }
    /* Leading zeros only with the flag. */
    assert_int_equal(skip_number("007", 0, 15), NS_EAGAIN);
    assert_int_equal(skip_number("-01.5", 0, 15), NS_EAGAIN);
    assert_int_equal(skip_number("007", NS_JSON_PULL_LEADING_ZEROS, 15), 0);
    assert_int_equal(skip_number("-01.5", NS_JSON_PULL_LEADING_ZEROS, 15), 0);
    /* The length limit counts every character. */
    assert_int_equal(skip_number("-1.2345678901e10", 0, 16), 0);
    assert_int_equal(skip_number("-1.2345678901e10", 0, 15), NS_EAGAIN);
    assert_int_equal(skip_number("1234567890123456789012345678901", 0, 31), 0);
    assert_int_equal(skip_number("12345678901234567890123456789012", 0, 31),
                     NS_EAGAIN);
}

static void literals(void **state)
{
    (void)state;
    struct input in;
    int which = 42;
    struct ns_json_pull *t = open_text(&in, " true false\tnull", 0);
    assert_int_equal(ns_json_pull_literal(t, &which), 0);
    assert_int_equal(which, NS_JSON_PULL_TRUE);
    assert_false(ns_json_pull_accept_literal(t, NS_JSON_PULL_NULL));
    assert_int_equal(*t->p, 'f'); /* blanks consumed, the word not */
    assert_true(ns_json_pull_accept_literal(t, NS_JSON_PULL_FALSE));
    assert_int_equal(ns_json_pull_literal(t, &which), 0);
    assert_int_equal(which, NS_JSON_PULL_NULL);
    assert_true(at_end(t));
    assert_int_equal(ns_json_pull_literal(t, &which), NS_EAGAIN);
    close_input(&in);
    static const char *const bad[] = {"tru", "fals", "nul", "True", "NULL", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        t = open_text(&in, bad[i], 0);
        if (ns_json_pull_literal(t, &which) != NS_EAGAIN) {
            fail_msg("accepted %s", bad[i]);
        }
        close_input(&in);
    }
}

static void blanks_and_punctuation(void **state)
{
    (void)state;
    struct input in;
    struct ns_json_pull *t = open_text(&in, " \t\r\n{\f}", 0);
    assert_true(ns_json_pull_accept(t, '{'));
    assert_false(ns_json_pull_accept(t, '}')); /* form feed is not blank */
    assert_int_equal(ns_json_pull_peek(t), '\f');
    t->p++;
    assert_true(ns_json_pull_accept(t, '}'));
    assert_int_equal(ns_json_pull_peek(t), -1);
    assert_false(ns_json_pull_accept(t, '}'));
    close_input(&in);
}

static int read_key(const char *text, unsigned flags, char *out, size_t cap)
{
    struct input in;
    struct ns_json_pull *t = open_text(&in, text, flags);
    struct ns_json_pull_str s;
    int rv = ns_json_pull_key(t, &s);
    if (rv == 0) {
        assert_true(s.len < cap);
        ns_json_pull_unescape(t, &s, out);
        out[s.len] = '\0';
    }
    close_input(&in);
    return rv;
}

static void keys(void **state)
{
    (void)state;
    char out[32];
    assert_int_equal(read_key(" \"k\" : 1", 0, out, sizeof out), 0);
    assert_string_equal(out, "k");
    assert_int_equal(read_key("\"k\" 1", 0, out, sizeof out), NS_EAGAIN);
    assert_int_equal(read_key("\"k\"", 0, out, sizeof out), NS_EAGAIN);
    /* Bare integer keys only with the flag, as their text. */
    assert_int_equal(read_key("-12 :", 0, out, sizeof out), NS_EAGAIN);
    assert_int_equal(read_key("-12 :", BODY_FLAGS, out, sizeof out), 0);
    assert_string_equal(out, "-12");
    assert_int_equal(read_key("007:", BODY_FLAGS, out, sizeof out), 0);
    assert_string_equal(out, "007");
    assert_int_equal(read_key("-:", BODY_FLAGS, out, sizeof out), NS_EAGAIN);
    assert_int_equal(read_key("1.5:", BODY_FLAGS, out, sizeof out), NS_EAGAIN);
    assert_int_equal(read_key("a:", BODY_FLAGS, out, sizeof out), NS_EAGAIN);
    /* $ref keys (however written) are refused only with the flag. */
    assert_int_equal(read_key("\"$ref\":", 0, out, sizeof out), 0);
    assert_int_equal(read_key("\"$ref\":", BODY_FLAGS, out, sizeof out),
                     NS_EAGAIN);
    assert_int_equal(read_key("\"\\u0024ref\":", BODY_FLAGS, out, sizeof out),
                     NS_EAGAIN);
    assert_int_equal(read_key("\"a$\":", BODY_FLAGS, out, sizeof out), 0);
    assert_int_equal(read_key("\"\\u00e9$\":", BODY_FLAGS, out, sizeof out), 0);
    assert_int_equal(read_key("\"\\n\":", BODY_FLAGS, out, sizeof out), 0);
    assert_int_equal(read_key("\"\":", BODY_FLAGS, out, sizeof out), 0);
}

/* skip_text over text with the header's limits (body: the register body's). */
static int skip_text(const char *text, size_t n, bool body)
{
    struct input in;
    struct ns_json_pull *t =
        open_n(&in, text, n, body ? BODY_FLAGS : HEADER_FLAGS);
    if (body) {
        t->max_number_chars = 31;
        t->max_open_depth = 17;
    }
    int rv = ns_json_pull_skip(t, 0);
    if (rv == 0) {
        ns_json_pull_skip_ws(t);
        rv = at_end(t) ? 0 : 99;
    }
    close_input(&in);
    return rv;
}

static void skips_values(void **state)
{
    (void)state;
    static const char *const good[] = {
        "{}",
        " [ ] ",
        "{\"a\":[1,-2.5e+3,0.5,true,false,null,\"\\u00e9\",{\"b\":[[]]}]}",
        "[\"x\",{\"y\":{}},[[],[{}]]]",
        "\"s\"",
        "-1.5",
        "null",
    };
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        if (skip_text(good[i], strlen(good[i]), false) != 0 ||
            skip_text(good[i], strlen(good[i]), true) != 0) {
            fail_msg("refused %s", good[i]);
        }
    }
    static const char *const bad[] = {
        "{",     "{\"a\"}",   "{\"a\":}",  "{\"a\":1,}", "[1,]",
        "[1 2]", "{\"a\" 1}", "[}",        "{]",         "{\"a\":1:2}",
        "[tru]", "[+1]",      "[\"\\x\"]", "",           "x",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        if (skip_text(bad[i], strlen(bad[i]), false) == 0 ||
            skip_text(bad[i], strlen(bad[i]), true) == 0) {
            fail_msg("accepted %s", bad[i]);
        }
    }
    /* The two key and number dialects. */
    assert_int_equal(skip_text("{1:2}", 5, false), NS_EAGAIN);
    assert_int_equal(skip_text("{1:2}", 5, true), 0);
    assert_int_equal(skip_text("{\"$ref\":\"$\"}", 12, false), 0);
    assert_int_equal(skip_text("{\"$ref\":\"$\"}", 12, true), NS_EAGAIN);
    assert_int_equal(skip_text("[01]", 4, false), NS_EAGAIN);
    assert_int_equal(skip_text("[01]", 4, true), 0);
}

/* n nested arrays around inner ("" for none). */
static char *nest(int n, const char *inner)
{
    size_t len = 2 * (size_t)n + strlen(inner);
    char *s = malloc(len + 1);
    assert_non_null(s);
    memset(s, '[', (size_t)n);
    memcpy(s + n, inner, strlen(inner));
    memset(s + n + strlen(inner), ']', (size_t)n);
    s[len] = '\0';
    return s;
}

static int skip_nest(int n, const char *inner, bool body)
{
    char *s = nest(n, inner);
    int rv = skip_text(s, strlen(s), body);
    free(s);
    return rv;
}

static void nesting_limits(void **state)
{
    (void)state;
    /* Header limits: at most 16 containers open, whatever they hold. */
    assert_int_equal(skip_nest(16, "1", false), 0);
    assert_int_equal(skip_nest(16, "", false), 0);
    assert_int_equal(skip_nest(17, "", false), NS_EAGAIN);
    assert_int_equal(skip_nest(17, "1", false), NS_EAGAIN);
    /* Body limits: no value deeper than 16, so a 17th container only empty. */
    assert_int_equal(skip_nest(16, "1", true), 0);
    assert_int_equal(skip_nest(17, "", true), 0);
    assert_int_equal(skip_nest(17, "1", true), NS_EAGAIN);
    assert_int_equal(skip_nest(18, "", true), NS_EAGAIN);
    /* Hostile depth fails early instead of recursing through all of it. */
    assert_int_equal(skip_nest(100000, "", false), NS_EAGAIN);
    assert_int_equal(skip_nest(100000, "", true), NS_EAGAIN);
    /* Depth is counted from the caller's starting depth. */
    struct input in;
    struct ns_json_pull *t = open_text(&in, "[[1]]", BODY_FLAGS);
    assert_int_equal(ns_json_pull_skip(t, 15), NS_EAGAIN);
    close_input(&in);
    t = open_text(&in, "[[1]]", BODY_FLAGS);
    assert_int_equal(ns_json_pull_skip(t, 14), 0);
    close_input(&in);
}

/* Every proper prefix of a container or string is refused; none reads past
 * its end (the sanitizer build checks the exact-length copies). */
static void truncation_at_every_byte(void **state)
{
    (void)state;
    static const char *const texts[] = {
        ("{\"a\\u00e9\\ud83d\\ude00\\n\":[1,-2.5e+3,true,false,null,{}],"
         "\"b\":\"x\"}"),
        "[{\"k\":{\"l\":[\"\\\\\",\"\\/\"]}},0,-0.5E-7]",
        "\"\\ud83d\\ude00\\u0041\\t\"",
    };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        size_t n = strlen(texts[i]);
        assert_int_equal(skip_text(texts[i], n, false), 0);
        for (size_t k = 0; k < n; k++) {
            if (skip_text(texts[i], k, false) != NS_EAGAIN) {
                fail_msg("prefix %zu of %s accepted", k, texts[i]);
            }
        }
    }
    /* Each lexeme reader on every prefix of its lexeme. */
    static const char *const strs[] = {"\"ab\\u00e9\\ud83d\\ude00\\\"\"",
                                       "\"\\u0041\""};
    for (size_t i = 0; i < sizeof strs / sizeof *strs; i++) {
        for (size_t k = 0; k < strlen(strs[i]); k++) {
            struct input in;
            struct ns_json_pull_str s;
            struct ns_json_pull *t = open_n(&in, strs[i], k, HEADER_FLAGS);
            assert_int_equal(ns_json_pull_string(t, &s), NS_EAGAIN);
            close_input(&in);
        }
    }
    static const char *const words[] = {"true", "false", "null"};
    for (size_t i = 0; i < 3; i++) {
        for (size_t k = 0; k < strlen(words[i]); k++) {
            struct input in;
            int which;
            struct ns_json_pull *t = open_n(&in, words[i], k, 0);
            assert_int_equal(ns_json_pull_literal(t, &which), NS_EAGAIN);
            close_input(&in);
        }
    }
}

/* Every single-byte change of a text: the tokenizer answers 0 or NS_EAGAIN
 * and never reads outside it; accepted strings decode to their length. */
static void mutations(void **state)
{
    (void)state;
    const char *text = "{\"a\\u00e9\":[1,\"x\\ud83d\\ude00\",{\"b\":-2.5e3}],"
                       "\"c\":true,\"d\":\"\\n\"}";
    size_t n = strlen(text);
    static const char subst[] = "{}[],:\"\\ 0-9.eEtnul$xu\t\x01\x80";
    char *buf = malloc(n);
    assert_non_null(buf);
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < sizeof subst - 1; k++) {
            memcpy(buf, text, n);
            buf[i] = subst[k];
            for (int body = 0; body < 2; body++) {
                int rv = skip_text(buf, n, body);
                assert_true(rv == 0 || rv == NS_EAGAIN || rv == 99);
            }
        }
    }
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(strings_decode),
        cmocka_unit_test(string_raw_is_borrowed),
        cmocka_unit_test(surrogates),
        cmocka_unit_test(string_run_offsets),
        cmocka_unit_test(bad_strings),
        cmocka_unit_test(integers),
        cmocka_unit_test(numbers),
        cmocka_unit_test(literals),
        cmocka_unit_test(blanks_and_punctuation),
        cmocka_unit_test(keys),
        cmocka_unit_test(skips_values),
        cmocka_unit_test(nesting_limits),
        cmocka_unit_test(truncation_at_every_byte),
        cmocka_unit_test(mutations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
