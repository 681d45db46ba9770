/* libFuzzer driver for the remoting codec: frame boundaries, header decode of
 * both kinds, and encode. Any decoded frame must re-encode, and the re-encoding
 * must be a fixed point. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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
        struct ns_cmd c;
        rv = ns_cmd_decode(data + off, frame_len, &c);
        if (rv == 0) {
            round_trip(&c);
            int64_t n;
            bool b;
            ns_ext_int64(&c, "topic", &n);
            ns_ext_bool(&c, "topic", &b);
            ns_cmd_close(&c);
        } else {
            CHECK(rv == NS_EPROTO);
        }
        off += frame_len;
    }
    return 0;
}
