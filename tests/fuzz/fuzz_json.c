/* libFuzzer driver for the fastjson-compatible reader, and for the writer over
 * whatever the reader accepted (strings with arbitrary bytes, both flavours).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "raftns/err.h"
#include "raftns/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Not CHECK(): release builds define NDEBUG and these checks are the point. */
#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            abort();                                                           \
        }                                                                      \
    } while (0)

static void write_tree(struct ns_json_writer *w, const cJSON *item)
{
    if (cJSON_IsObject(item) || cJSON_IsArray(item)) {
        bool obj = cJSON_IsObject(item);
        obj ? ns_json_write_obj_begin(w) : ns_json_write_arr_begin(w);
        for (const cJSON *c = item->child; c != NULL; c = c->next) {
            if (obj) {
                ns_json_write_key(w, c->string);
                (void)ns_json_get_int64(item, c->string, 0);
                (void)ns_json_get_bool(item, c->string, false);
                (void)ns_json_get_string(item, c->string);
            }
            write_tree(w, c);
        }
        obj ? ns_json_write_obj_end(w) : ns_json_write_arr_end(w);
    } else if (cJSON_IsString(item)) {
        ns_json_write_str(w, item->valuestring);
    } else if (cJSON_IsBool(item)) {
        ns_json_write_bool(w, cJSON_IsTrue(item));
    } else if (cJSON_IsNumber(item)) {
        double d = item->valuedouble;
        ns_json_write_int(w, d > -9e18 && d < 9e18 ? (int64_t)d : 0);
    } else {
        ns_json_write_raw(w, "null", 4);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool hooked;
    if (!hooked) {
        ns_json_use_ns_alloc();
        hooked = true;
    }
    int rv = 1;
    cJSON *root = ns_json_parse_rv((const char *)data, size, &rv);
    if (root == NULL) {
        CHECK(rv == NS_EPROTO);
        return 0;
    }
    CHECK(rv == 0);
    for (int f = 0; f < 2; f++) {
        struct ns_buf out;
        struct ns_json_writer w;
        ns_buf_init(&out);
        ns_json_write_init(&w, &out, f ? NS_JSON_STANDARD : NS_JSON_LEGACY);
        write_tree(&w, root);
        CHECK(out.err == 0);
        if (f == 1) {
            /* standard output is valid JSON and reads back */
            cJSON *again = ns_json_parse((const char *)out.data, out.len);
            CHECK(again != NULL);
            cJSON_Delete(again);
        }
        ns_buf_close(&out);
    }
    cJSON_Delete(root);
    return 0;
}
