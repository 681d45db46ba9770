/* raftns-bench: a single-threaded libuv load generator for any RocketMQ name
 * server: N connections with a pipeline depth, a request mix, an optional
 * scenario setup (B brokers with T topics), and a report with an HDR-style
 * latency histogram. It is a measuring tool, not a client library: it never
 * retries and stops a connection at the first transport error. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <uv.h>

#include "raftns/alloc.h"
#include "raftns/codes.h"
#include "raftns/err.h"
#include "raftns/remoting.h"
#include "raftns/tls.h"

#include "bench.h"

#define RX_CHUNK 65536
#define TS_BASE 1700000000000ull
#define REG_POOL 1000

enum phase { PH_CONNECT, PH_SETUP, PH_MEASURE, PH_DRAIN, PH_DONE };

struct inflight {
    int32_t opaque;
    uint8_t kind;
    uint64_t t0;
};

struct conn {
    uv_tcp_t tcp;
    uv_connect_t connect;
    uv_write_t write;
    struct bench *b;
    int idx;
    bool alive;
    bool writing;
    struct ns_buf rx, out, wbuf;
    struct ns_tls *tls;  /* owned with --tls */
    struct inflight *fl; /* ring of depth */
    int fl_head, fl_n;
    uint64_t reg_counter;
    struct bench_frags reg_frags; /* lazily, at the first register */
    struct ns_buf reg_body;       /* reused by every register */
    struct bench_broker reg, hb;
    struct bench_tmpl hb_tmpl, hb904_tmpl;
    bool hb_ready;
};

struct bench {
    struct opts o;
    uv_loop_t *loop;
    uv_timer_t timer;
    struct conn *c;
    int n_connected, n_pending_connect, n_alive;
    enum phase phase;
    int32_t next_opaque;
    uint64_t setup_items, setup_next, setup_batches;
    uint64_t t_setup0, t_measure0, t_last_reply, t_drain0;
    uint64_t sent, mix_seq, route_seq, inflight_total;
    struct bench_tmpl *route_tmpl; /* lazily built, one per topic of pool */
    uint64_t n_route_topics;
    struct bench_tmpl cluster_tmpl, alltopics_tmpl;
    struct bench_result r;
    int exit_code;
    struct ns_tls_ctx *tls_ctx;
    uint8_t cipher[RX_CHUNK]; /* TLS: ciphertext read, fed at once */
};

static uint64_t now_ns(void)
{
    return uv_hrtime();
}

static int32_t take_opaque(struct bench *b)
{
    int32_t o = b->next_opaque;
    b->next_opaque = o >= BENCH_OPAQUE_HI ? BENCH_OPAQUE_LO : o + 1;
    return o;
}

static void read_rss(int pid, long *rss, long *hwm)
{
    char path[64], line[256];
    *rss = -1;
    *hwm = -1;
    if (pid <= 0)
        return;
    snprintf(path, sizeof(path), "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "VmRSS:", 6) == 0)
            *rss = strtol(line + 6, NULL, 10);
        else if (strncmp(line, "VmHWM:", 6) == 0)
            *hwm = strtol(line + 6, NULL, 10);
    }
    fclose(f);
}

/* --- request generation --- */

static int make_tmpl(struct bench *b, struct bench_tmpl *t, struct ns_buf *fr)
{
    size_t len;
    uint8_t *data;
    if (fr->err)
        return fr->err;
    data = ns_buf_take(fr, &len);
    int rv = bench_tmpl_init(t, data, len, b->o.ser_json);
    if (rv != 0)
        ns_free(data);
    return rv;
}

static int simple_tmpl(struct bench *b, struct bench_tmpl *t, int32_t code,
                       const char *const *kv, size_t n_kv)
{
    struct ns_buf fr;
    ns_buf_init(&fr);
    int rv = bench_encode_simple(&fr, code, kv, n_kv, BENCH_OPAQUE_LO,
                                 b->o.ser_json);
    if (rv == 0)
        rv = make_tmpl(b, t, &fr);
    ns_buf_close(&fr);
    return rv;
}

static void topic_name(char *out, size_t n, uint64_t t)
{
    snprintf(out, n, "BenchTopic%" PRIu64, t);
}

static int route_frame(struct bench *b, struct ns_buf *out, int32_t opaque)
{
    uint64_t t = b->route_seq++ % b->n_route_topics;
    struct bench_tmpl *tm = &b->route_tmpl[t];
    if (tm->data == NULL) {
        char name[48];
        topic_name(name, sizeof(name), t);
        const char *kv[] = {"topic", name};
        int rv = simple_tmpl(b, tm, NS_CODE_GET_ROUTEINFO_BY_TOPIC, kv, 1);
        if (rv != 0)
            return rv;
    }
    return bench_tmpl_append(tm, out, opaque);
}

/* A REGISTER_BROKER with a changed topic set: this connection's pool of
 * REG_POOL topics, the window starting one further each time. */
static int register_frame(struct bench *b, struct conn *c, struct ns_buf *out,
                          int32_t opaque)
{
    int rv;
    if (c->reg_frags.arena == NULL) {
        char prefix[32];
        snprintf(prefix, sizeof(prefix), "BenchReg%d-", c->idx);
        rv = bench_frags_init(&c->reg_frags, prefix, REG_POOL);
        if (rv != 0)
            return rv;
    }
    c->reg_counter++;
    ns_buf_reset(&c->reg_body);
    rv = bench_frags_body(&c->reg_frags, &c->reg_body, c->reg_counter,
                          (uint64_t)b->o.reg_topics, c->reg_counter,
                          TS_BASE + c->reg_counter);
    if (rv == 0)
        rv = bench_encode_register(out, &c->reg, c->reg_body.data,
                                   c->reg_body.len, opaque, b->o.ser_json);
    return rv;
}

/* A PUT_KV_CONFIG of this connection's key with a new value: every one is a
 * replicated write (an unchanged value would be one too, but a new one shows
 * in the state). */
static int kv_frame(struct bench *b, struct conn *c, struct ns_buf *out,
                    int32_t opaque)
{
    char key[32], value[32];
    snprintf(key, sizeof(key), "BenchKv%d", c->idx);
    snprintf(value, sizeof(value), "%" PRIu64, ++c->reg_counter);
    const char *kv[] = {"namespace", "bench", "key", key, "value", value};
    return bench_encode_simple(out, NS_CODE_PUT_KV_CONFIG, kv, 3, opaque,
                               b->o.ser_json);
}

static int heartbeat_tmpls(struct bench *b, struct conn *c)
{
    struct ns_buf body, fr;
    char prefix[32];
    int rv;
    ns_buf_init(&body);
    ns_buf_init(&fr);
    snprintf(prefix, sizeof(prefix), "BenchHb%d-", c->idx);
    rv = bench_register_body(&body, prefix, 0, (uint64_t)b->o.reg_topics, 0, 1,
                             TS_BASE);
    if (rv == 0)
        rv = bench_encode_register(&fr, &c->hb, body.data, body.len,
                                   BENCH_OPAQUE_LO, b->o.ser_json);
    if (rv == 0)
        rv = make_tmpl(b, &c->hb_tmpl, &fr);
    if (rv == 0) {
        const char *kv[] = {
            "clusterName", c->hb.cluster, "brokerAddr", c->hb.addr,
            "brokerName",  c->hb.name,    "brokerId",   "0"};
        rv = simple_tmpl(b, &c->hb904_tmpl, NS_CODE_BROKER_HEARTBEAT, kv, 4);
    }
    c->hb_ready = rv == 0;
    ns_buf_close(&body);
    ns_buf_close(&fr);
    return rv;
}

static int setup_frame(struct bench *b, struct ns_buf *out, int32_t opaque)
{
    uint64_t item = b->setup_next++;
    uint64_t br_i = item / b->setup_batches, batch = item % b->setup_batches;
    uint64_t split = b->o.split ? b->o.split : b->o.topics;
    uint64_t first = br_i * b->o.topics + batch * split;
    uint64_t n = b->o.topics - batch * split;
    struct bench_broker br;
    struct ns_buf body;
    if (n > split)
        n = split;
    snprintf(br.name, sizeof(br.name), "bench-b%" PRIu64, br_i);
    snprintf(br.addr, sizeof(br.addr), "10.%u.%u.%u:10911",
             (unsigned)(br_i >> 16) & 255, (unsigned)(br_i >> 8) & 255,
             (unsigned)br_i & 255);
    snprintf(br.ha, sizeof(br.ha), "10.%u.%u.%u:10912",
             (unsigned)(br_i >> 16) & 255, (unsigned)(br_i >> 8) & 255,
             (unsigned)br_i & 255);
    br.cluster = b->o.cluster;
    ns_buf_init(&body);
    int rv = bench_register_body(&body, "BenchTopic", first, n, b->o.pool, 1,
                                 TS_BASE);
    if (rv == 0)
        rv = bench_encode_register(out, &br, body.data, body.len, opaque,
                                   b->o.ser_json);
    ns_buf_close(&body);
    return rv;
}

static int pick_kind(struct bench *b)
{
    unsigned x = (unsigned)(b->mix_seq++ % b->o.weight_sum);
    for (int k = 0; k < BK_COUNT; k++) {
        if (x < b->o.weight[k])
            return k;
        x -= b->o.weight[k];
    }
    return BK_ROUTE;
}

/* Appends one request to c->out when the phase allows one; true if it did. */
static bool next_request(struct bench *b, struct conn *c)
{
    int kind, rv;
    int32_t opaque = take_opaque(b);
    if (b->phase == PH_SETUP) {
        if (c->idx >= b->o.setup_conns || b->setup_next >= b->setup_items)
            return false;
        kind = BK_SETUP;
        rv = setup_frame(b, &c->out, opaque);
    } else if (b->phase == PH_MEASURE) {
        if (b->o.count && b->sent >= b->o.count)
            return false;
        kind = pick_kind(b);
        switch (kind) {
        case BK_ROUTE:
            rv = route_frame(b, &c->out, opaque);
            break;
        case BK_REGISTER:
            rv = register_frame(b, c, &c->out, opaque);
            break;
        case BK_HEARTBEAT:
        case BK_HB904:
            rv = c->hb_ready ? 0 : heartbeat_tmpls(b, c);
            if (rv == 0)
                rv = bench_tmpl_append(kind == BK_HB904 ? &c->hb904_tmpl
                                                        : &c->hb_tmpl,
                                       &c->out, opaque);
            break;
        case BK_CLUSTER:
            rv = bench_tmpl_append(&b->cluster_tmpl, &c->out, opaque);
            break;
        case BK_KV:
            rv = kv_frame(b, c, &c->out, opaque);
            break;
        default:
            rv = bench_tmpl_append(&b->alltopics_tmpl, &c->out, opaque);
            break;
        }
        b->sent++;
    } else {
        return false;
    }
    if (rv != 0) {
        fprintf(stderr, "raftns-bench: encode: %s\n", ns_strerror(rv));
        exit(1);
    }
    int slot = (c->fl_head + c->fl_n) % b->o.depth;
    c->fl[slot].opaque = opaque;
    c->fl[slot].kind = (uint8_t)kind;
    c->fl[slot].t0 = now_ns();
    c->fl_n++;
    b->inflight_total++;
    return true;
}

static void on_write(uv_write_t *req, int status);

static void conn_fail(struct conn *c, const char *what, int status);

/* TLS: encrypts the queued requests into wbuf. False when nothing to send. */
static bool tls_seal(struct conn *c)
{
    if (c->out.len > 0) {
        int rv = ns_tls_write(c->tls, c->out.data, c->out.len);
        ns_buf_reset(&c->out);
        if (rv != 0) {
            conn_fail(c, "TLS write", UV_EPROTO);
            return false;
        }
    }
    if (ns_tls_pending(c->tls) == 0)
        return false;
    ns_buf_reset(&c->wbuf);
    return ns_tls_drain(c->tls, &c->wbuf) == 0 && c->wbuf.len > 0;
}

static void flush(struct conn *c)
{
    if (c->writing || !c->alive)
        return;
    if (c->tls != NULL) {
        if (!tls_seal(c))
            return;
    } else {
        if (c->out.len == 0)
            return;
        struct ns_buf tmp = c->wbuf;
        c->wbuf = c->out;
        c->out = tmp;
        ns_buf_reset(&c->out);
    }
    uv_buf_t buf = uv_buf_init((char *)c->wbuf.data, (unsigned)c->wbuf.len);
    c->b->r.bytes_out += c->wbuf.len;
    if (uv_write(&c->write, (uv_stream_t *)&c->tcp, &buf, 1, on_write) == 0)
        c->writing = true;
}

static void pump(struct conn *c)
{
    struct bench *b = c->b;
    while (c->alive && c->fl_n < b->o.depth && next_request(b, c))
        ;
    flush(c);
}

static void pump_all(struct bench *b)
{
    for (int i = 0; i < b->o.conns; i++)
        pump(&b->c[i]);
}

/* --- phases --- */

static void on_close(uv_handle_t *h)
{
    (void)h;
}

static void close_all(struct bench *b);

static void report(struct bench *b)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    b->r.client_cpu_s = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
                        (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
    if (b->o.json)
        bench_report_json(stdout, &b->r);
    bench_report_table(b->o.json ? stderr : stdout, &b->r);
    fflush(stdout);
    fflush(stderr);
}

static void on_hold_end(uv_timer_t *t)
{
    close_all(t->data);
}

static void finish(struct bench *b)
{
    if (b->phase == PH_DONE)
        return;
    b->phase = PH_DONE;
    uint64_t end = b->t_last_reply > b->t_measure0 ? b->t_last_reply : now_ns();
    b->r.elapsed_s = b->t_measure0 ? (double)(end - b->t_measure0) / 1e9 : 0;
    b->r.unanswered = b->inflight_total;
    read_rss(b->o.pid, &b->r.rss_kb, &b->r.hwm_kb);
    report(b);
    if (b->o.hold > 0) {
        /* Keep the connections (and so the registrations) alive a while. */
        uv_timer_stop(&b->timer);
        uv_timer_start(&b->timer, on_hold_end, (uint64_t)(b->o.hold * 1000), 0);
        return;
    }
    close_all(b);
}

static void close_all(struct bench *b)
{
    for (int i = 0; i < b->o.conns; i++) {
        if (!uv_is_closing((uv_handle_t *)&b->c[i].tcp))
            uv_close((uv_handle_t *)&b->c[i].tcp, on_close);
    }
    uv_close((uv_handle_t *)&b->timer, on_close);
}

static void start_measure(struct bench *b)
{
    b->phase = PH_MEASURE;
    b->t_measure0 = now_ns();
    pump_all(b);
}

static void check_phase(struct bench *b)
{
    if (b->phase == PH_SETUP && b->setup_next >= b->setup_items &&
        b->inflight_total == 0) {
        b->r.setup_s = (double)(now_ns() - b->t_setup0) / 1e9;
        long hwm;
        read_rss(b->o.pid, &b->r.setup_rss_kb, &hwm);
        start_measure(b);
    }
    if (b->phase == PH_MEASURE && b->o.count && b->sent >= b->o.count &&
        b->inflight_total == 0)
        finish(b);
    if (b->phase == PH_DRAIN && b->inflight_total == 0)
        finish(b);
    if (b->n_alive == 0 && b->phase != PH_CONNECT)
        finish(b);
}

static void on_timer(uv_timer_t *t)
{
    struct bench *b = t->data;
    uint64_t now = now_ns();
    if (b->phase == PH_MEASURE && !b->o.count &&
        now - b->t_measure0 >= (uint64_t)(b->o.duration * 1e9)) {
        b->phase = PH_DRAIN;
        b->t_drain0 = now;
    }
    if (b->phase == PH_DRAIN &&
        now - b->t_drain0 >= (uint64_t)(b->o.grace * 1e9))
        finish(b);
    check_phase(b);
}

static void conn_fail(struct conn *c, const char *what, int status)
{
    struct bench *b = c->b;
    if (!c->alive)
        return;
    fprintf(stderr, "raftns-bench: connection %d: %s: %s\n", c->idx, what,
            uv_strerror(status));
    c->alive = false;
    b->n_alive--;
    if (b->phase == PH_MEASURE || b->phase == PH_DRAIN)
        b->r.closed += (uint64_t)c->fl_n;
    else if (b->phase == PH_SETUP)
        b->r.setup_errors += (uint64_t)c->fl_n;
    b->inflight_total -= (uint64_t)c->fl_n;
    c->fl_n = 0;
    uv_read_stop((uv_stream_t *)&c->tcp);
    check_phase(b);
}

static void on_write(uv_write_t *req, int status)
{
    struct conn *c = req->data;
    c->writing = false;
    if (status < 0) {
        conn_fail(c, "write", status);
        return;
    }
    flush(c);
}

static void on_reply(struct conn *c, const struct ns_cmd *cmd, uint64_t now)
{
    struct bench *b = c->b;
    int found = -1;
    for (int i = 0; i < c->fl_n; i++) {
        int slot = (c->fl_head + i) % b->o.depth;
        if (c->fl[slot].opaque == cmd->opaque) {
            found = slot;
            break;
        }
    }
    if (found < 0)
        return; /* not ours (a late or unsolicited frame) */
    struct inflight f = c->fl[found];
    /* Keep the ring dense: move the head entry into the freed slot. */
    c->fl[found] = c->fl[c->fl_head];
    c->fl_head = (c->fl_head + 1) % b->o.depth;
    c->fl_n--;
    b->inflight_total--;
    if (f.kind == BK_SETUP) {
        b->r.setup_requests++;
        if (cmd->code != NS_CODE_SUCCESS)
            b->r.setup_errors++;
        return;
    }
    uint64_t lat = now - f.t0;
    bench_hist_record(&b->r.all, lat);
    bench_hist_record(&b->r.kind[f.kind], lat);
    b->r.completed++;
    if (cmd->code == NS_CODE_SUCCESS)
        b->r.ok++;
    bench_codes_add(&b->r.codes, cmd->code);
    b->t_last_reply = now;
}

static void on_alloc(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    struct conn *c = h->data;
    (void)hint;
    if (c->tls != NULL) {
        *buf = uv_buf_init((char *)c->b->cipher, sizeof c->b->cipher);
        return;
    }
    if (ns_buf_reserve(&c->rx, RX_CHUNK) != 0) {
        *buf = uv_buf_init(NULL, 0);
        return;
    }
    *buf = uv_buf_init((char *)c->rx.data + c->rx.len,
                       (unsigned)(c->rx.cap - c->rx.len));
}

/* TLS: decrypts n bytes of b->cipher into rx. 0 or an NS_E* code. */
static int tls_open(struct conn *c, size_t n)
{
    int rv = ns_tls_feed(c->tls, c->b->cipher, n);
    size_t got = RX_CHUNK;
    while (rv == 0 && got == RX_CHUNK) {
        if (ns_buf_reserve(&c->rx, RX_CHUNK) != 0)
            return NS_ENOMEM;
        rv = ns_tls_read(c->tls, c->rx.data + c->rx.len, RX_CHUNK, &got);
        c->rx.len += rv == 0 ? got : 0;
    }
    if (rv == 0)
        flush(c); /* handshake records */
    return rv;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct conn *c = s->data;
    (void)buf;
    if (nread < 0) {
        conn_fail(c, "read", (int)nread);
        return;
    }
    c->b->r.bytes_in += (uint64_t)nread;
    if (c->tls == NULL) {
        c->rx.len += (size_t)nread;
    } else if (tls_open(c, (size_t)nread) != 0) {
        fprintf(stderr, "raftns-bench: connection %d: TLS: %s\n", c->idx,
                ns_tls_error(c->tls));
        conn_fail(c, "TLS", UV_EPROTO);
        return;
    }
    size_t off = 0;
    uint64_t now = now_ns();
    for (;;) {
        size_t flen;
        int rv = ns_frame_check(c->rx.data + off, c->rx.len - off, NS_FRAME_MAX,
                                &flen);
        if (rv == NS_EAGAIN)
            break;
        struct ns_cmd cmd;
        if (rv == 0)
            rv = ns_cmd_decode(c->rx.data + off, flen, &cmd);
        if (rv != 0) {
            conn_fail(c, "bad reply frame", UV_EPROTO);
            return;
        }
        on_reply(c, &cmd, now);
        ns_cmd_close(&cmd);
        off += flen;
    }
    if (off > 0) {
        memmove(c->rx.data, c->rx.data + off, c->rx.len - off);
        c->rx.len -= off;
    }
    check_phase(c->b);
    if (c->b->phase == PH_SETUP || c->b->phase == PH_MEASURE)
        pump(c);
}

static void on_connect(uv_connect_t *req, int status)
{
    struct conn *c = req->data;
    struct bench *b = c->b;
    b->n_pending_connect--;
    if (status < 0) {
        fprintf(stderr, "raftns-bench: connect %d: %s\n", c->idx,
                uv_strerror(status));
        b->exit_code = 3;
    } else {
        c->alive = true;
        b->n_alive++;
        b->n_connected++;
        uv_tcp_nodelay(&c->tcp, 1);
        if (b->tls_ctx != NULL &&
            ns_tls_create(b->tls_ctx, b->o.tls_ca ? b->o.host : NULL,
                          &c->tls) != 0) {
            fprintf(stderr, "raftns-bench: cannot start TLS\n");
            exit(1);
        }
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    }
    if (b->n_pending_connect > 0)
        return;
    if (b->n_alive == 0) {
        finish(b);
        return;
    }
    if (b->setup_items > 0) {
        b->phase = PH_SETUP;
        b->t_setup0 = now_ns();
        pump_all(b);
    } else {
        start_measure(b);
    }
}

/* --- command line --- */

int main(int argc, char **argv)
{
    static struct bench bench;
    struct bench *b = &bench;
    struct sockaddr_in sa;
    int rv;

    if (bench_parse_args(&b->o, argc, argv) != 0)
        return 2;
    if (uv_ip4_addr(b->o.host, b->o.port, &sa) != 0) {
        fprintf(stderr, "raftns-bench: bad IPv4 address %s\n", b->o.host);
        return 2;
    }
    if (b->o.tls) {
        char err[512];
        struct ns_tls_client_opts to = {.ca_path = b->o.tls_ca,
                                        .insecure = b->o.tls_ca == NULL};
        if (ns_tls_ctx_create_client(&to, &b->tls_ctx, err, sizeof err) != 0) {
            fprintf(stderr, "raftns-bench: %s\n", err);
            return 2;
        }
    }
    b->loop = uv_default_loop();
    b->next_opaque = BENCH_OPAQUE_LO + 1;
    b->r.label = b->o.label;
    b->r.mix = b->o.mix_text;
    char addr_text[96];
    snprintf(addr_text, sizeof(addr_text), "%.63s:%d", b->o.host,
             b->o.port & 0xFFFF);
    b->r.addr = addr_text;
    b->r.connections = b->o.conns;
    b->r.depth = b->o.depth;
    b->r.brokers = b->o.brokers;
    b->r.topics = b->o.topics;
    b->r.pool = b->o.pool;
    b->r.split = b->o.split;
    b->r.setup_rss_kb = -1;
    b->r.rss_kb = b->r.hwm_kb = -1;
    uint64_t split = b->o.split ? b->o.split : b->o.topics;
    b->setup_batches = (b->o.topics + split - 1) / split;
    b->setup_items = b->o.setup_conns ? b->o.brokers * b->setup_batches : 0;
    b->n_route_topics = b->o.pool ? b->o.pool : 1;
    b->route_tmpl = ns_calloc(b->n_route_topics, sizeof(*b->route_tmpl));
    b->c = ns_calloc((size_t)b->o.conns, sizeof(*b->c));
    if (b->route_tmpl == NULL || b->c == NULL) {
        fprintf(stderr, "raftns-bench: out of memory\n");
        return 1;
    }
    if (simple_tmpl(b, &b->cluster_tmpl, NS_CODE_GET_BROKER_CLUSTER_INFO, NULL,
                    0) != 0 ||
        simple_tmpl(b, &b->alltopics_tmpl,
                    NS_CODE_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, NULL, 0) != 0) {
        fprintf(stderr, "raftns-bench: cannot encode templates\n");
        return 1;
    }
    uv_timer_init(b->loop, &b->timer);
    b->timer.data = b;
    uv_timer_start(&b->timer, on_timer, 20, 20);
    b->n_pending_connect = b->o.conns;
    for (int i = 0; i < b->o.conns; i++) {
        struct conn *c = &b->c[i];
        c->b = b;
        c->idx = i;
        c->fl = ns_calloc((size_t)b->o.depth, sizeof(*c->fl));
        if (c->fl == NULL) {
            fprintf(stderr, "raftns-bench: out of memory\n");
            return 1;
        }
        ns_buf_init(&c->rx);
        ns_buf_init(&c->out);
        ns_buf_init(&c->wbuf);
        ns_buf_init(&c->reg_body);
        snprintf(c->reg.name, sizeof(c->reg.name), "bench-r%d", i);
        snprintf(c->reg.addr, sizeof(c->reg.addr), "11.0.%d.%d:10911",
                 (i >> 8) & 255, i & 255);
        snprintf(c->reg.ha, sizeof(c->reg.ha), "11.0.%d.%d:10912",
                 (i >> 8) & 255, i & 255);
        c->reg.cluster = b->o.cluster;
        snprintf(c->hb.name, sizeof(c->hb.name), "bench-h%d", i);
        snprintf(c->hb.addr, sizeof(c->hb.addr), "12.0.%d.%d:10911",
                 (i >> 8) & 255, i & 255);
        snprintf(c->hb.ha, sizeof(c->hb.ha), "12.0.%d.%d:10912", (i >> 8) & 255,
                 i & 255);
        c->hb.cluster = b->o.cluster;
        uv_tcp_init(b->loop, &c->tcp);
        c->tcp.data = c;
        c->connect.data = c;
        c->write.data = c;
        rv = uv_tcp_connect(&c->connect, &c->tcp, (const struct sockaddr *)&sa,
                            on_connect);
        if (rv != 0) {
            fprintf(stderr, "raftns-bench: connect: %s\n", uv_strerror(rv));
            return 3;
        }
    }
    uv_run(b->loop, UV_RUN_DEFAULT);
    for (int i = 0; i < b->o.conns; i++) {
        ns_tls_destroy(b->c[i].tls);
        bench_frags_close(&b->c[i].reg_frags);
        ns_buf_close(&b->c[i].reg_body);
    }
    ns_tls_ctx_unref(b->tls_ctx);
    if (b->exit_code == 0 && b->r.completed == 0)
        b->exit_code = 1;
    return b->exit_code;
}
