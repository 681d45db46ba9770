/* libFuzzer driver: arbitrary bytes as a replicated command, applied to a fresh
 * state, whose snapshot must then decode and re-encode to the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "raftns/err.h"
#include "raftns/fsm.h"
#include "raftns/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ns_json_use_ns_alloc();
    struct ns_command c;
    if (ns_command_decode(data, size, &c) != 0) {
        return 0;
    }
    struct ns_state s;
    if (ns_state_init(&s) != 0) {
        abort();
    }
    struct ns_apply_result res;
    if (ns_fsm_apply(&s, &c, &res) != 0) {
        abort();
    }
    ns_fsm_result_close(&res);
    ns_command_close(&c);

    struct ns_buf a, b;
    ns_buf_init(&a);
    ns_buf_init(&b);
    struct ns_state t;
    if (ns_snapshot_encode(&s, &a) != 0 || ns_state_init(&t) != 0 ||
        ns_snapshot_decode(&t, a.data, a.len) != 0 ||
        ns_snapshot_encode(&t, &b) != 0 || a.len != b.len ||
        memcmp(a.data, b.data, a.len) != 0) {
        abort();
    }
    ns_state_close(&t);
    ns_buf_close(&a);
    ns_buf_close(&b);
    ns_state_close(&s);
    return 0;
}
