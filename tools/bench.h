/* Shared pieces of raftns-bench: the latency histogram, the request builders
 * and the report writers. Not a library: only the bench tool includes it. */
#ifndef RAFTNS_BENCH_H
#define RAFTNS_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "raftns/buf.h"

/* --- histogram: log-linear buckets, 128 per power of two (<0.4% error) --- */
#define BENCH_HIST_SUB 128
#define BENCH_HIST_N 4096
#define BENCH_HIST_MIN_NS 1000ull        /* 1 us */
#define BENCH_HIST_MAX_NS 60000000000ull /* 60 s */

struct bench_hist {
    uint64_t counts[BENCH_HIST_N];
    uint64_t total;
    uint64_t min_ns;
    uint64_t max_ns;
    double sum_ns;
};

void bench_hist_init(struct bench_hist *h);
/* Records one value; values are clamped to [1 us, 60 s]. */
void bench_hist_record(struct bench_hist *h, uint64_t ns);
void bench_hist_merge(struct bench_hist *into, const struct bench_hist *from);
/* Value at quantile q (0..1) in ns: the midpoint of the bucket holding the
 * ceil(q*total)-th value; 0 when empty. */
uint64_t bench_hist_quantile(const struct bench_hist *h, double q);

/* --- requests --- */
enum bench_kind {
    BK_ROUTE = 0, /* 105 over the registered topics */
    BK_REGISTER,  /* 103 with a changed 100-topic set and a new DataVersion */
    BK_HEARTBEAT, /* 103 unchanged (same body, same DataVersion) */
    BK_HB904,     /* 904 BROKER_HEARTBEAT */
    BK_CLUSTER,   /* 106 */
    BK_ALLTOPICS, /* 206 */
    BK_KV,        /* 100 PUT_KV_CONFIG, a new value each time (replicated) */
    BK_SETUP,     /* 103 of the scenario setup (not measured) */
    BK_COUNT
};
extern const char *const bench_kind_names[BK_COUNT];

/* CRC-32 (zlib's, the one of java.util.zip.CRC32) of p[0, n). */
uint32_t bench_crc32(const uint8_t *p, size_t n);

/* Appends a RegisterBrokerBody (5.x JSON shape) with n topics named
 * "<prefix><(first + i) % pool>" for i in [0, n) and DataVersion counter. */
int bench_register_body(struct ns_buf *out, const char *prefix, uint64_t first,
                        uint64_t n, uint64_t pool, uint64_t counter,
                        uint64_t timestamp);

/* The topic entries of one prefix and pool rendered once, so that a body is
 * a few memcpys instead of one printf per topic: bench_frags_body's output is
 * byte for byte bench_register_body's (tests/unit/test_bench_req.c). */
struct bench_frags {
    char *arena;   /* owned: entry 0 ',' entry 1 ',' ... entry pool-1 ',' */
    size_t *off;   /* owned: pool + 1 offsets, entry t at arena + off[t] */
    uint64_t pool; /* >= 1 */
};
/* Renders the pool entries "<prefix><t>" for t in [0, pool); prefix is
 * borrowed. 0, NS_EINVAL (pool 0), or NS_ENOMEM (f then holds nothing). */
int bench_frags_init(struct bench_frags *f, const char *prefix, uint64_t pool);
/* Appends what bench_register_body(out, prefix, first, n, pool, counter,
 * timestamp) appends, for f's prefix and pool, when first + n does not pass
 * UINT64_MAX. 0 or out->err. */
int bench_frags_body(const struct bench_frags *f, struct ns_buf *out,
                     uint64_t first, uint64_t n, uint64_t counter,
                     uint64_t timestamp);
void bench_frags_close(struct bench_frags *f);

/* One broker identity. */
struct bench_broker {
    char name[48];
    char addr[32];
    char ha[32];
    const char *cluster; /* borrowed */
};

/* Appends a whole REGISTER_BROKER frame (JSON header) for body. */
int bench_encode_register(struct ns_buf *out, const struct bench_broker *br,
                          const uint8_t *body, size_t body_len, int32_t opaque,
                          bool json);
/* The version field of route requests (--client-version; default the
 * server's own): below 413 the server answers in Java 4.9.8's shape. */
extern int32_t bench_route_version;
/* heartbeatTimeoutMillis of the bench's registrations (--broker-timeout), or
 * NULL: left out, the server's 120 s, after which held brokers expire. */
extern const char *bench_broker_timeout;
/* Appends a whole request frame (code, optional ext pairs, no body). */
int bench_encode_simple(struct ns_buf *out, int32_t code, const char *const *kv,
                        size_t n_kv, int32_t opaque, bool json);

/* A pre-encoded frame whose opaque can be patched in place: opaques are kept
 * in [BENCH_OPAQUE_LO, BENCH_OPAQUE_HI] so the JSON text has a fixed width. */
#define BENCH_OPAQUE_LO 100000000
#define BENCH_OPAQUE_HI 999999999
struct bench_tmpl {
    uint8_t *data; /* owned */
    size_t len;
    size_t opaque_off; /* where the opaque lives (9 digits, or 4 bytes BE) */
    bool json;
};
/* Makes a template from a frame encoded with opaque BENCH_OPAQUE_LO.
 * Takes frame (ns_malloc'd) on success. 0 or NS_EPROTO. */
int bench_tmpl_init(struct bench_tmpl *t, uint8_t *frame, size_t len,
                    bool json);
int bench_tmpl_append(const struct bench_tmpl *t, struct ns_buf *out,
                      int32_t opaque);
void bench_tmpl_close(struct bench_tmpl *t);

/* --- results --- */
#define BENCH_MAX_CODES 32
struct bench_codes {
    int32_t code[BENCH_MAX_CODES];
    uint64_t count[BENCH_MAX_CODES];
    size_t n;
    uint64_t other; /* codes past BENCH_MAX_CODES */
};
void bench_codes_add(struct bench_codes *c, int32_t code);

struct bench_result {
    const char *label; /* borrowed */
    const char *addr;  /* borrowed */
    const char *mix;   /* borrowed */
    int connections;
    int depth;
    uint64_t brokers, topics, pool, split;
    double setup_s; /* wall time of the setup registrations */
    uint64_t setup_requests;
    uint64_t setup_errors;
    long setup_rss_kb;   /* after setup, -1 without --pid */
    double elapsed_s;    /* measured phase */
    uint64_t completed;  /* replies (any code) in the measured phase */
    uint64_t ok;         /* replies with code 0 */
    uint64_t closed;     /* requests lost to a closed connection */
    uint64_t unanswered; /* still in flight when the drain grace ended */
    struct bench_codes codes;
    struct bench_hist all;
    struct bench_hist kind[BK_COUNT];
    uint64_t bytes_in, bytes_out;
    long rss_kb, hwm_kb; /* at the end, -1 without --pid */
    double client_cpu_s; /* user+sys of the bench process */
};

void bench_report_json(FILE *f, const struct bench_result *r);
void bench_report_table(FILE *f, const struct bench_result *r);

/* Command-line options of raftns-bench (bench_args.c). */
struct opts {
    char host[64];
    int port;
    int conns;
    int depth;
    double duration;
    uint64_t count;
    unsigned weight[BK_COUNT];
    unsigned weight_sum;
    const char *mix_text;
    uint64_t brokers, topics, pool, split;
    int setup_conns;
    int reg_topics;
    int pid;
    bool json;
    bool ser_json;
    double grace;
    double hold;
    const char *label;
    const char *cluster;
    bool tls;
    const char *tls_ca; /* NULL with --tls: no verification */
};

/* Parses argv into o (zeroed by the caller): 0, or non-zero after printing a
 * usage error. --help prints the usage and exits 0. */
int bench_parse_args(struct opts *o, int argc, char **argv);

#endif
