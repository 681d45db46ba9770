/* libFuzzer driver for the pull tokenizer of the fast scanners: arbitrary
 * bytes skipped as one value in both dialects (the header's and the register
 * body's), with the contract the scanners rely on checked against the
 * reference reader: a whole text the tokenizer accepts, the reader accepts
 * too; a string it accepts decodes to exactly the reader's string; an integer
 * it accepts is the reader's number. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "raftns/err.h"
#include "raftns/json.h"
#include "raftns/json_pull.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Not assert(): release builds define NDEBUG and these checks are the point. */
#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            abort();                                                           \
        }                                                                      \
    } while (0)

static void init_dialect(struct ns_json_pull *t, const uint8_t *data,
                         size_t size, bool body)
{
    if (body) {
        ns_json_pull_init(t, data, size,
                          NS_JSON_PULL_LEADING_ZEROS | NS_JSON_PULL_INT_KEYS |
                              NS_JSON_PULL_NO_REF_KEYS);
        t->max_number_chars = 31;
        t->max_open_depth = 17;
    } else {
        ns_json_pull_init(t, data, size, NS_JSON_PULL_SURROGATE_PAIRS);
    }
}

/* The reader's tree of the whole text, or NULL. */
static cJSON *reference(const uint8_t *data, size_t size)
{
    int rv = 1;
    cJSON *root = ns_json_parse_rv((const char *)data, size, &rv);
    CHECK(root != NULL || rv == NS_EPROTO || rv == NS_ENOMEM);
    return root;
}

static void check_string(const uint8_t *data, size_t size, bool body)
{
    struct ns_json_pull t;
    struct ns_json_pull_str s;
    init_dialect(&t, data, size, body);
    if (ns_json_pull_string(&t, &s) != 0) {
        return;
    }
    CHECK(s.len <= s.raw_len);
    char *out = malloc(s.len + 1);
    CHECK(out != NULL);
    out[s.len] = 'Z';
    ns_json_pull_unescape(&t, &s, out);
    CHECK(out[s.len] == 'Z'); /* exactly len bytes */
    ns_json_pull_skip_ws(&t);
    if (t.p == t.end) {
        cJSON *root = reference(data, size);
        if (root != NULL) {
            CHECK(cJSON_IsString(root));
            CHECK(strlen(root->valuestring) == s.len);
            CHECK(memcmp(root->valuestring, out, s.len) == 0);
            cJSON_Delete(root);
        }
    }
    free(out);
}

static void check_int(const uint8_t *data, size_t size)
{
    struct ns_json_pull t;
    int64_t v;
    init_dialect(&t, data, size, false);
    if (ns_json_pull_int(&t, &v) != 0) {
        return;
    }
    ns_json_pull_skip_ws(&t);
    if (t.p == t.end) {
        cJSON *root = reference(data, size);
        if (root != NULL) {
            CHECK(cJSON_IsNumber(root) && root->valuedouble == (double)v);
            cJSON_Delete(root);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool hooked;
    if (!hooked) {
        ns_json_use_ns_alloc();
        hooked = true;
    }
    for (int body = 0; body < 2; body++) {
        struct ns_json_pull t;
        init_dialect(&t, data, size, body);
        int rv = ns_json_pull_skip(&t, 0);
        CHECK(rv == 0 || rv == NS_EAGAIN);
        CHECK(t.p >= data && t.p <= data + size);
        ns_json_pull_skip_ws(&t);
        if (rv == 0 && t.p == t.end && !body) {
            /* The header dialect accepts only what the reader reads. */
            cJSON *root = reference(data, size);
            CHECK(root != NULL);
            cJSON_Delete(root);
        }
        check_string(data, size, body);
    }
    check_int(data, size);
    return 0;
}
