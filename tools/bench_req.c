/* Request builders of raftns-bench: RegisterBrokerBody JSON (by printf, and
 * from pre-rendered topic entries), REGISTER_BROKER and simple request frames,
 * CRC32 for bodyCrc32, and pre-encoded templates whose opaque is patched in
 * place. It does no I/O and keeps no state of its own. */
#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/codes.h"
#include "raftns/crc32.h"
#include "raftns/err.h"
#include "raftns/remoting.h"

#include "bench.h"

const char *const bench_kind_names[BK_COUNT] = {
    "route",   "register",  "heartbeat", "hb904",
    "cluster", "alltopics", "kv",        "setup",
};

uint32_t bench_crc32(const uint8_t *p, size_t n)
{
    return ns_crc32(p, n);
}

/* A RegisterBrokerBody up to the first topic entry. */
static void body_head(struct ns_buf *out, uint64_t counter, uint64_t timestamp)
{
    ns_buf_printf(out,
                  "{\"filterServerList\":[],\"topicConfigSerializeWrapper\":{"
                  "\"dataVersion\":{\"counter\":%" PRIu64
                  ",\"stateVersion\":0,\"timestamp\":%" PRIu64 "},"
                  "\"mappingDataVersion\":{\"counter\":0,\"stateVersion\":0,"
                  "\"timestamp\":%" PRIu64 "},\"topicConfigTable\":{",
                  counter, timestamp, timestamp);
}

int bench_register_body(struct ns_buf *out, const char *prefix, uint64_t first,
                        uint64_t n, uint64_t pool, uint64_t counter,
                        uint64_t timestamp)
{
    body_head(out, counter, timestamp);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t t = pool ? (first + i) % pool : first + i;
        ns_buf_printf(out,
                      "%s\"%s%" PRIu64 "\":{\"attributes\":{},\"order\":false,"
                      "\"perm\":6,\"readQueueNums\":4,\"topicFilterType\":"
                      "\"SINGLE_TAG\",\"topicName\":\"%s%" PRIu64
                      "\",\"topicSysFlag\":0,\"writeQueueNums\":4}",
                      i ? "," : "", prefix, t, prefix, t);
    }
    ns_buf_append_str(out, "},\"topicQueueMappingDetailMap\":{},"
                           "\"topicQueueMappingInfoMap\":{}}}");
    return out->err;
}

int bench_frags_init(struct bench_frags *f, const char *prefix, uint64_t pool)
{
    struct ns_buf arena;
    int rv;
    f->arena = NULL;
    f->off = NULL;
    f->pool = pool;
    if (pool == 0 || pool > SIZE_MAX / sizeof(*f->off) - 1)
        return NS_EINVAL;
    f->off = ns_malloc((size_t)(pool + 1) * sizeof(*f->off));
    if (f->off == NULL)
        return NS_ENOMEM;
    ns_buf_init(&arena);
    /* The text of bench_register_body's entry for topic t, each entry
     * followed by its comma so that a run of consecutive topics is one
     * contiguous span of the arena. */
    for (uint64_t t = 0; t < pool; t++) {
        f->off[t] = arena.len;
        ns_buf_printf(&arena,
                      "\"%s%" PRIu64 "\":{\"attributes\":{},\"order\":false,"
                      "\"perm\":6,\"readQueueNums\":4,\"topicFilterType\":"
                      "\"SINGLE_TAG\",\"topicName\":\"%s%" PRIu64
                      "\",\"topicSysFlag\":0,\"writeQueueNums\":4},",
                      prefix, t, prefix, t);
    }
    f->off[pool] = arena.len;
    rv = arena.err;
    if (rv != 0)
        goto err_after_arena;
    size_t len;
    f->arena = (char *)ns_buf_take(&arena, &len);
    return 0;
err_after_arena:
    ns_buf_close(&arena);
    ns_free(f->off);
    f->off = NULL;
    return rv;
}

int bench_frags_body(const struct bench_frags *f, struct ns_buf *out,
                     uint64_t first, uint64_t n, uint64_t counter,
                     uint64_t timestamp)
{
    static const char tail[] = "},\"topicQueueMappingDetailMap\":{},"
                               "\"topicQueueMappingInfoMap\":{}}}";
    assert(f->arena != NULL && n <= UINT64_MAX - first);
    body_head(out, counter, timestamp);
    /* Runs up to the end of the pool, then from topic 0 again. */
    uint64_t t = first % f->pool;
    for (uint64_t left = n; left > 0;) {
        uint64_t run = f->pool - t < left ? f->pool - t : left;
        ns_buf_append(out, f->arena + f->off[t], f->off[t + run] - f->off[t]);
        left -= run;
        t = 0;
    }
    if (out->err != 0)
        return out->err;
    if (n > 0)
        out->len--; /* the last entry's comma */
    ns_buf_append(out, tail, sizeof(tail) - 1);
    return out->err;
}

void bench_frags_close(struct bench_frags *f)
{
    ns_free(f->arena);
    ns_free(f->off);
    f->arena = NULL;
    f->off = NULL;
}

int32_t bench_route_version = NS_SERVER_VERSION;
const char *bench_broker_timeout;

static int encode_cmd(struct ns_buf *out, int32_t code, const char *const *kv,
                      size_t n_kv, int32_t opaque, bool json,
                      const uint8_t *body, size_t body_len)
{
    struct ns_cmd c;
    int rv = 0;
    ns_cmd_init(&c);
    c.code = code;
    c.language = NS_LANG_JAVA;
    c.version = code == NS_CODE_GET_ROUTEINFO_BY_TOPIC ? bench_route_version
                                                       : NS_SERVER_VERSION;
    c.opaque = opaque;
    c.flag = 0;
    c.ser = json ? NS_SER_JSON : NS_SER_ROCKETMQ;
    c.body = body;
    c.body_len = body_len;
    for (size_t i = 0; i + 1 < 2 * n_kv; i += 2) {
        rv = ns_cmd_ext_set(&c, kv[i], kv[i + 1]);
        if (rv != 0)
            goto err_after_cmd;
    }
    rv = ns_cmd_encode(&c, out);
err_after_cmd:
    c.body = NULL;
    ns_cmd_close(&c);
    return rv;
}

int bench_encode_simple(struct ns_buf *out, int32_t code, const char *const *kv,
                        size_t n_kv, int32_t opaque, bool json)
{
    return encode_cmd(out, code, kv, n_kv, opaque, json, NULL, 0);
}

int bench_encode_register(struct ns_buf *out, const struct bench_broker *br,
                          const uint8_t *body, size_t body_len, int32_t opaque,
                          bool json)
{
    char crc[16];
    snprintf(crc, sizeof(crc), "%u",
             (unsigned)(bench_crc32(body, body_len) & 0x7FFFFFFFu));
    const char *kv[] = {
        "brokerName",
        br->name,
        "brokerAddr",
        br->addr,
        "clusterName",
        br->cluster,
        "haServerAddr",
        br->ha,
        "brokerId",
        "0",
        "compressed",
        "false",
        "bodyCrc32",
        crc,
        "enableActingMaster",
        "false",
        "heartbeatTimeoutMillis",
        bench_broker_timeout,
    };
    size_t n = sizeof(kv) / sizeof(kv[0]) / 2;
    /* Without --broker-timeout the field is left out (the 120 s default). */
    return encode_cmd(out, NS_CODE_REGISTER_BROKER, kv,
                      bench_broker_timeout != NULL ? n : n - 1, opaque, json,
                      body, body_len);
}

int bench_tmpl_init(struct bench_tmpl *t, uint8_t *frame, size_t len, bool json)
{
    static const char key[] = "\"opaque\":100000000";
    t->data = frame;
    t->len = len;
    t->json = json;
    if (!json) {
        t->opaque_off = 4 + 4 + 2 + 1 + 2;
        return len >= t->opaque_off + 4 ? 0 : NS_EPROTO;
    }
    if (len < 8)
        return NS_EPROTO;
    size_t hlen = ns_load_u32(frame + 4) & 0xFFFFFFu;
    const uint8_t *h = frame + 8;
    if (hlen > len - 8)
        return NS_EPROTO;
    const void *at = memmem(h, hlen, key, sizeof(key) - 1);
    if (at == NULL)
        return NS_EPROTO;
    t->opaque_off = (size_t)((const uint8_t *)at - frame) + 9;
    return 0;
}

int bench_tmpl_append(const struct bench_tmpl *t, struct ns_buf *out,
                      int32_t opaque)
{
    size_t at = out->len;
    if (ns_buf_append(out, t->data, t->len) != 0)
        return out->err;
    uint8_t *p = out->data + at + t->opaque_off;
    uint32_t v = (uint32_t)opaque;
    if (t->json) {
        for (int i = 8; i >= 0; i--) {
            p[i] = (uint8_t)('0' + v % 10);
            v /= 10;
        }
    } else {
        p[0] = (uint8_t)(v >> 24);
        p[1] = (uint8_t)(v >> 16);
        p[2] = (uint8_t)(v >> 8);
        p[3] = (uint8_t)v;
    }
    return 0;
}

void bench_tmpl_close(struct bench_tmpl *t)
{
    ns_free(t->data);
    t->data = NULL;
}
