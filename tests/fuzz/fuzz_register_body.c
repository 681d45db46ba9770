/* libFuzzer driver: arbitrary bytes as a REGISTER_BROKER body, decoded with
 * both compressed flags and request versions 0, 409 and 479; a decoded body
 * must encode as a command and decode back. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/command.h"
#include "raftns/err.h"
#include "raftns/json.h"
#include "raftns/route.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_command(struct ns_register *r)
{
    struct ns_command c;
    ns_command_init(&c, NS_CMD_REGISTER_BROKER);
    c.u.reg = *r;
    struct ns_buf b;
    ns_buf_init(&b);
    if (ns_command_encode(&c, &b) != 0) {
        abort();
    }
    struct ns_command d;
    if (ns_command_decode(b.data, b.len, &d) != 0 ||
        d.u.reg.n_topics != r->n_topics ||
        d.u.reg.n_mappings != r->n_mappings) {
        abort();
    }
    ns_command_close(&d);
    ns_buf_close(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int32_t versions[] = {0, 409, 479};
    ns_json_use_ns_alloc();
    for (int compressed = 0; compressed < 2; compressed++) {
        for (size_t v = 0; v < sizeof versions / sizeof versions[0]; v++) {
            struct ns_register r;
            char err[256];
            ns_register_init(&r);
            r.cluster = ns_strdup("c");
            r.broker_name = ns_strdup("b");
            r.broker_addr = ns_strdup("a");
            int rv = ns_register_decode_body(&r, versions[v], compressed != 0,
                                             data, size, 1, err, sizeof err);
            if (rv == 0) {
                check_command(&r);
            } else if (rv != NS_EPROTO || err[0] == '\0') {
                abort();
            }
            ns_register_close(&r);
        }
    }
    return 0;
}
