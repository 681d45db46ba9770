/* Unit tests of the java.util.Properties parser (src/route/props.c):
 * separators, comments, escapes, continuations, ISO-8859-1 input, duplicates,
 * malformed \u escapes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "raftns/alloc.h"
#include "raftns/config.h"
#include "raftns/err.h"

static const char *get(const struct ns_props *p, const char *key)
{
    for (size_t i = 0; i < p->n; i++) {
        if (strcmp(p->items[i].key, key) == 0) {
            return p->items[i].value;
        }
    }
    return NULL;
}

static void parse_ok(const char *text, struct ns_props *p)
{
    assert_int_equal(ns_props_parse(text, strlen(text), p), 0);
}

static void test_separators(void **state)
{
    (void)state;
    struct ns_props p;
    parse_ok("a=1\nb:2\nc 3\n  d = 4 \ne\t:\t5\nf\n g=\nh==x\n", &p);
    assert_int_equal(p.n, 8);
    assert_string_equal(get(&p, "a"), "1");
    assert_string_equal(get(&p, "b"), "2");
    assert_string_equal(get(&p, "c"), "3");
    assert_string_equal(get(&p, "d"), "4 "); /* trailing whitespace kept */
    assert_string_equal(get(&p, "e"), "5");
    assert_string_equal(get(&p, "f"), "");
    assert_string_equal(get(&p, "g"), "");
    assert_string_equal(get(&p, "h"), "=x");
    /* Sorted by key. */
    for (size_t i = 1; i < p.n; i++) {
        assert_true(strcmp(p.items[i - 1].key, p.items[i].key) < 0);
    }
    ns_props_close(&p);
}

static void test_comments_and_blank_lines(void **state)
{
    (void)state;
    struct ns_props p;
    parse_ok("# comment=1\n! other:2\n\n   \r\n  #x=y\nk=v # not a comment\r\n",
             &p);
    assert_int_equal(p.n, 1);
    assert_string_equal(get(&p, "k"), "v # not a comment");
    ns_props_close(&p);
    parse_ok("", &p);
    assert_int_equal(p.n, 0);
    ns_props_close(&p);
}

static void test_escapes(void **state)
{
    (void)state;
    struct ns_props p;
    parse_ok("k\\=ey=a\\tb\\nc\\rd\\fe\\\\f\\qg\nsp\\ ace=1\nu=\\u00e9\\u20AC\n"
             "pair=\\uD83D\\uDE00\nlone=\\uD83Dx\n",
             &p);
    assert_string_equal(get(&p, "k=ey"), "a\tb\nc\rd\fe\\fqg");
    assert_string_equal(get(&p, "sp ace"), "1");
    assert_string_equal(get(&p, "u"), "\xC3\xA9\xE2\x82\xAC");
    assert_string_equal(get(&p, "pair"), "\xF0\x9F\x98\x80");
    assert_string_equal(get(&p, "lone"), "?x");
    ns_props_close(&p);
}

static void test_continuation(void **state)
{
    (void)state;
    struct ns_props p;
    parse_ok("list=a,\\\n    b,\\\r\n\tc\nnext=1\neven=x\\\\\nafter=2\nend=z\\",
             &p);
    assert_string_equal(get(&p, "list"), "a,b,c");
    assert_string_equal(get(&p, "next"), "1");
    assert_string_equal(get(&p, "even"), "x\\");
    assert_string_equal(get(&p, "after"), "2");
    assert_string_equal(get(&p, "end"), "z");
    ns_props_close(&p);
}

static void test_latin1_and_duplicates(void **state)
{
    (void)state;
    struct ns_props p;
    /* UTF-8 "é" is read as two ISO-8859-1 chars, each stored as UTF-8 (what
     * Java does). */
    parse_ok("x=\xC3\xA9\nd=1\nd=2\n{key=value}\n", &p);
    assert_string_equal(get(&p, "x"), "\xC3\x83\xC2\xA9");
    assert_string_equal(get(&p, "d"), "2");
    assert_string_equal(get(&p, "{key"), "value}");
    assert_int_equal(p.n, 3);
    ns_props_close(&p);
}

static void test_malformed_unicode(void **state)
{
    (void)state;
    const char *bad[] = {"k=\\u12", "k=\\uZZZZ", "k\\u00=1",
                         "a=1\nb=\\u00g0\n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct ns_props p;
        assert_int_equal(ns_props_parse(bad[i], strlen(bad[i]), &p), NS_EPROTO);
        assert_int_equal(p.n, 0);
        ns_props_close(&p);
    }
}

static void test_set(void **state)
{
    (void)state;
    struct ns_props p;
    ns_props_init(&p);
    assert_int_equal(ns_props_set(&p, "b", "1"), 0);
    assert_int_equal(ns_props_set(&p, "a", "2"), 0);
    assert_int_equal(ns_props_set(&p, "b", "3"), 0);
    assert_int_equal(p.n, 2);
    assert_string_equal(p.items[0].key, "a");
    assert_string_equal(p.items[1].value, "3");
    ns_props_close(&p);
}

static void test_alloc_failure(void **state)
{
    (void)state;
    const char *text = "a=1\nb=\\u00e9\nc 3\na=4\n";
    bool ok = false;
    for (long k = 0; !ok && k < 200; k++) {
        struct ns_props p;
        ns_alloc_fail_at(k, 1);
        int rv = ns_props_parse(text, strlen(text), &p);
        ns_alloc_fail_at(-1, 0);
        assert_true(rv == 0 || rv == NS_ENOMEM);
        ok = rv == 0;
        if (ok) {
            assert_int_equal(p.n, 3);
            assert_string_equal(get(&p, "a"), "4");
        }
        ns_props_close(&p);
    }
    assert_true(ok);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_separators),
        cmocka_unit_test(test_comments_and_blank_lines),
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_continuation),
        cmocka_unit_test(test_latin1_and_duplicates),
        cmocka_unit_test(test_malformed_unicode),
        cmocka_unit_test(test_set),
        cmocka_unit_test(test_alloc_failure),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
