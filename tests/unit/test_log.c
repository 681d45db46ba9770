/* The log sink: text and JSON lines on the stream it is given, the JSON one
 * escaped so that every line parses back to the message logged. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cJSON.h>
#include <cmocka.h>

#include "raftns/log.h"

/* Logs msg to a temporary stream and returns its one line (static buffer). */
static const char *logged(bool json, const char *msg)
{
    static char line[8192];
    FILE *f = tmpfile();
    assert_non_null(f);
    ns_log_set_node(7);
    ns_log_set_output(f, json);
    ns_log_write(NS_LOG_WARN, "%s", msg);
    ns_log_set_output(NULL, false);
    rewind(f);
    assert_non_null(fgets(line, sizeof line, f));
    char rest[8];
    assert_null(fgets(rest, sizeof rest, f)); /* exactly one line */
    fclose(f);
    return line;
}

static void text_line(void **state)
{
    (void)state;
    const char *line = logged(false, "node: hello");
    assert_non_null(strstr(line, "Z node=7 WARN node: hello\n"));
}

static void json_line_round_trips(void **state)
{
    (void)state;
    static const char *const msgs[] = {
        "plain",
        "quote \" backslash \\ slash /",
        "control \n\t\r\x01 bytes",
        "utf-8 \xc3\xa9\xe2\x82\xac",
        "",
    };
    for (size_t i = 0; i < sizeof msgs / sizeof msgs[0]; i++) {
        const char *line = logged(true, msgs[i]);
        assert_int_equal(line[strlen(line) - 1], '\n');
        cJSON *doc = cJSON_Parse(line);
        assert_non_null(doc);
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(doc, "msg");
        assert_true(cJSON_IsString(msg));
        assert_string_equal(msg->valuestring, msgs[i]);
        assert_string_equal(
            cJSON_GetObjectItemCaseSensitive(doc, "level")->valuestring,
            "WARN");
        assert_int_equal(
            (int)cJSON_GetObjectItemCaseSensitive(doc, "node")->valuedouble, 7);
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(doc, "time");
        assert_true(cJSON_IsString(t) && strlen(t->valuestring) == 24);
        cJSON_Delete(doc);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(text_line),
        cmocka_unit_test(json_line_round_trips),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
