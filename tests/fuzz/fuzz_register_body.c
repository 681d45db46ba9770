/* libFuzzer driver: arbitrary bytes as a REGISTER_BROKER body, decoded with
 * both compressed flags and request versions 0, 409 and 479; a decoded body
 * must encode as a command (version 3, compact topics) and decode back to the
 * same topics, and the JSON forms must decode
 * exactly as the cJSON path alone decodes them (the fast path's contract). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/command.h"
#include "raftns/err.h"
#include "raftns/json.h"
#include "raftns/route.h"
#include "../../src/route/register_body_scan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_command(struct ns_register *r)
{
    struct ns_command c;
    ns_command_init(&c, NS_CMD_REGISTER_BROKER);
    c.reqid.origin = 1;
    c.u.reg = *r;
    struct ns_buf b;
    ns_buf_init(&b);
    if (ns_command_encode(&c, &b) != 0 ||
        b.data[0] != NS_COMMAND_VERSION_COMPACT) {
        abort();
    }
    struct ns_command d;
    if (ns_command_decode(b.data, b.len, &d) != 0 ||
        d.u.reg.n_topics != r->n_topics ||
        d.u.reg.n_mappings != r->n_mappings) {
        abort();
    }
    for (size_t i = 0; i < r->n_topics; i++) {
        const struct ns_topic_config *x = &r->topics[i],
                                     *y = &d.u.reg.topics[i];
        if (strcmp(x->name, y->name) != 0 || x->read_queues != y->read_queues ||
            x->write_queues != y->write_queues || x->perm != y->perm ||
            x->sys_flag != y->sys_flag) {
            abort();
        }
    }
    ns_command_close(&d);
    ns_buf_close(&b);
}

static bool same_str(const char *a, const char *b)
{
    return (a == NULL && b == NULL) ||
           (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static bool same_mapping(const struct ns_mapping_info *x,
                         const struct ns_mapping_info *y)
{
    return same_str(x->topic, y->topic) && same_str(x->bname, y->bname) &&
           same_str(x->scope, y->scope) && x->epoch == y->epoch &&
           x->total_queues == y->total_queues && x->dirty == y->dirty &&
           x->n_curr_ids == y->n_curr_ids &&
           (x->n_curr_ids == 0 ||
            memcmp(x->curr_ids, y->curr_ids,
                   x->n_curr_ids * sizeof *x->curr_ids) == 0);
}

static bool same_body(const struct ns_register *a, const struct ns_register *b)
{
    if (memcmp(&a->dv, &b->dv, sizeof a->dv) != 0 ||
        a->n_topics != b->n_topics || a->n_mappings != b->n_mappings ||
        a->has_filter_servers != b->has_filter_servers ||
        a->n_filter_servers != b->n_filter_servers) {
        return false;
    }
    for (size_t i = 0; i < a->n_topics; i++) {
        const struct ns_topic_config *x = &a->topics[i], *y = &b->topics[i];
        if (!same_str(x->name, y->name) || x->read_queues != y->read_queues ||
            x->write_queues != y->write_queues || x->perm != y->perm ||
            x->sys_flag != y->sys_flag) {
            return false;
        }
    }
    for (size_t i = 0; i < a->n_mappings; i++) {
        if (!same_mapping(&a->mappings[i], &b->mappings[i])) {
            return false;
        }
    }
    for (size_t i = 0; i < a->n_filter_servers; i++) {
        if (!same_str(a->filter_servers[i], b->filter_servers[i])) {
            return false;
        }
    }
    return true;
}

/* The JSON forms: fast path (with fallback) against the cJSON path alone. */
static void check_differential(const uint8_t *data, size_t size,
                               int32_t version)
{
    struct ns_register a, b;
    char err_a[256], err_b[256];
    ns_register_init(&a);
    ns_register_init(&b);
    int rv_a = ns_register_decode_body(&a, version, false, data, size, 1, err_a,
                                       sizeof err_a);
    int rv_b = register_decode_body_tree(&b, version, false, data, size, 1,
                                         err_b, sizeof err_b);
    if (rv_a != rv_b || strcmp(err_a, err_b) != 0 || !same_body(&a, &b)) {
        abort();
    }
    ns_register_close(&a);
    ns_register_close(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int32_t versions[] = {0, 409, 479};
    ns_json_use_ns_alloc();
    check_differential(data, size, 0);
    check_differential(data, size, 479);
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
            } else if ((rv != NS_EPROTO && rv != NS_ETOOBIG) ||
                       err[0] == '\0') {
                abort();
            }
            ns_register_close(&r);
        }
    }
    return 0;
}
