/* libFuzzer driver for the remoting codec: frame boundaries, header decode of
 * both kinds, and encode. Any decoded frame must re-encode, and the re-encoding
 * must be a fixed point; a JSON header the fast path decodes must decode the
 * same through cJSON. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/remoting/header_codec.h"
#include "raftns/err.h"
#include "raftns/remoting.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Not CHECK(): release builds define NDEBUG and these checks are the point. */
#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            abort();                                                           \
        }                                                                      \
    } while (0)

static void round_trip(const struct ns_cmd *c)
{
    struct ns_buf first;
    struct ns_buf second;
    struct ns_cmd again;
    ns_buf_init(&first);
    ns_buf_init(&second);
    if (ns_cmd_encode(c, &first) != 0) {
        goto out; /* e.g. an ext key too long for the binary form */
    }
    size_t frame_len = 0;
    int rv = ns_frame_check(first.data, first.len, SIZE_MAX, &frame_len);
    CHECK(rv == 0 && frame_len == first.len);
    rv = ns_cmd_decode(first.data, first.len, &again);
    CHECK(rv == 0);
    CHECK(again.code == c->code && again.opaque == c->opaque);
    CHECK(again.body_len == c->body_len);
    rv = ns_cmd_encode(&again, &second);
    CHECK(rv == 0);
    CHECK(second.len == first.len);
    CHECK(memcmp(second.data, first.data, first.len) == 0);
    ns_cmd_close(&again);
out:
    ns_buf_close(&second);
    ns_buf_close(&first);
}

static bool same_str(const char *a, const char *b)
{
    return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* Differential check of the JSON header fast path against the cJSON path. */
static void compare_paths(const uint8_t *h, size_t h_len)
{
    struct ns_cmd fast;
    struct ns_cmd tree;
    ns_cmd_init(&fast);
    ns_cmd_init(&tree);
    int rv_fast = header_json_scan(h, h_len, &fast);
    int rv_tree = header_json_decode_tree(h, h_len, &tree);
    CHECK(rv_fast == 0 || rv_fast == NS_EAGAIN);
    if (rv_fast == 0) {
        CHECK(rv_tree == 0);
        CHECK(fast.code == tree.code && fast.language == tree.language);
        CHECK(fast.version == tree.version && fast.opaque == tree.opaque);
        CHECK(fast.flag == tree.flag && fast.has_ext == tree.has_ext);
        CHECK(same_str(fast.remark, tree.remark));
        CHECK(fast.n_ext == tree.n_ext);
        for (size_t i = 0; i < fast.n_ext; i++) {
            CHECK(same_str(fast.ext[i].key, tree.ext[i].key));
            CHECK(same_str(fast.ext[i].value, tree.ext[i].value));
        }
    }
    ns_cmd_close(&fast);
    ns_cmd_close(&tree);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    size_t off = 0;
    while (off < size) {
        size_t frame_len = 0;
        int rv =
            ns_frame_check(data + off, size - off, NS_FRAME_MAX, &frame_len);
        if (rv != 0) {
            CHECK(rv == NS_EAGAIN || rv == NS_EPROTO || rv == NS_ETOOBIG);
            CHECK(rv != NS_EAGAIN || size - off < 8 ||
                  ns_load_u32(data + off) + 4 > size - off);
            break;
        }
        CHECK(frame_len >= 8 && frame_len <= size - off);
        if (data[off + 4] == NS_SER_JSON) {
            size_t h_len = ns_load_u32(data + off + 4) & 0xFFFFFFu;
            compare_paths(data + off + 8, h_len);
        }
        struct ns_cmd c;
        rv = ns_cmd_decode(data + off, frame_len, &c);
        if (rv == 0) {
            round_trip(&c);
            int64_t n;
            bool b;
            ns_cmd_ext_int64(&c, "topic", &n);
            ns_cmd_ext_bool(&c, "topic", &b);
            ns_cmd_close(&c);
        } else {
            CHECK(rv == NS_EPROTO);
        }
        off += frame_len;
    }
    return 0;
}
