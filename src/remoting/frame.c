/* Frame boundaries of the remoting protocol (docs/protocol.md §2.1): a
 * stateless look at the start of a receive buffer. It does not decode headers
 * and never buffers or allocates. */
#include "raftns/remoting.h"

#include "raftns/err.h"

int ns_frame_check(const uint8_t *buf, size_t len, size_t max_frame,
                   size_t *frame_len)
{
    if (len < 4) {
        return NS_EAGAIN;
    }
    uint32_t length = ns_load_u32(buf);
    /* Java reads a signed int: a "negative" length is an oversize frame. */
    if (length > INT32_MAX || (uint64_t)length + 4 > (uint64_t)max_frame) {
        return NS_ETOOBIG;
    }
    if (length < 4) {
        return NS_EPROTO;
    }
    if (len < 8) {
        return NS_EAGAIN;
    }
    uint32_t info = ns_load_u32(buf + 4);
    uint32_t type = info >> 24;
    uint32_t header_len = info & 0xFFFFFFu;
    if (type != NS_SER_JSON && type != NS_SER_ROCKETMQ) {
        return NS_EPROTO;
    }
    if (header_len > length - 4) {
        return NS_EPROTO;
    }
    if (len - 4 < length) {
        return NS_EAGAIN;
    }
    *frame_len = (size_t)length + 4;
    return 0;
}
