/* Report writers of raftns-bench: one JSON object, or a human table, from a
 * finished run. They only format; measuring happens in raftns-bench.c. */
#include <inttypes.h>

#include "raftns/codes.h"

#include "bench.h"

void bench_codes_add(struct bench_codes *c, int32_t code)
{
    for (size_t i = 0; i < c->n; i++) {
        if (c->code[i] == code) {
            c->count[i]++;
            return;
        }
    }
    if (c->n == BENCH_MAX_CODES) {
        c->other++;
        return;
    }
    c->code[c->n] = code;
    c->count[c->n++] = 1;
}

static double us(uint64_t ns)
{
    return (double)ns / 1000.0;
}

static void json_hist(FILE *f, const struct bench_hist *h, double elapsed)
{
    fprintf(f,
            "{\"count\":%" PRIu64 ",\"throughput\":%.1f,\"mean_us\":%.1f,"
            "\"min_us\":%.1f,\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,"
            "\"p999_us\":%.1f,\"max_us\":%.1f}",
            h->total, elapsed > 0 ? (double)h->total / elapsed : 0.0,
            h->total ? h->sum_ns / (double)h->total / 1000.0 : 0.0,
            us(h->min_ns), us(bench_hist_quantile(h, 0.50)),
            us(bench_hist_quantile(h, 0.90)), us(bench_hist_quantile(h, 0.99)),
            us(bench_hist_quantile(h, 0.999)), us(h->max_ns));
}

void bench_report_json(FILE *f, const struct bench_result *r)
{
    fprintf(f,
            "{\"tool\":\"raftns-bench\",\"label\":\"%s\",\"addr\":\"%s\","
            "\"mix\":\"%s\",\"connections\":%d,\"depth\":%d,",
            r->label, r->addr, r->mix, r->connections, r->depth);
    fprintf(f,
            "\"setup\":{\"brokers\":%" PRIu64 ",\"topics_per_broker\":%" PRIu64
            ",\"topic_pool\":%" PRIu64 ",\"split\":%" PRIu64
            ",\"requests\":%" PRIu64 ",\"errors\":%" PRIu64
            ",\"seconds\":%.3f,\"rss_kb\":%ld},",
            r->brokers, r->topics, r->pool, r->split, r->setup_requests,
            r->setup_errors, r->setup_s, r->setup_rss_kb);
    fprintf(f,
            "\"elapsed_s\":%.3f,\"completed\":%" PRIu64 ",\"ok\":%" PRIu64
            ",\"throughput\":%.1f,",
            r->elapsed_s, r->completed, r->ok,
            r->elapsed_s > 0 ? (double)r->completed / r->elapsed_s : 0.0);
    fprintf(f, "\"latency\":");
    json_hist(f, &r->all, r->elapsed_s);
    fprintf(f, ",\"by_kind\":{");
    bool first = true;
    for (int k = 0; k < BK_COUNT; k++) {
        if (r->kind[k].total == 0 || k == BK_SETUP)
            continue;
        fprintf(f, "%s\"%s\":", first ? "" : ",", bench_kind_names[k]);
        json_hist(f, &r->kind[k], r->elapsed_s);
        first = false;
    }
    fprintf(f, "},\"errors\":{\"closed\":%" PRIu64 ",\"unanswered\":%" PRIu64,
            r->closed, r->unanswered);
    for (size_t i = 0; i < r->codes.n; i++) {
        if (r->codes.code[i] != NS_CODE_SUCCESS)
            fprintf(f, ",\"code_%d\":%" PRIu64, r->codes.code[i],
                    r->codes.count[i]);
    }
    fprintf(f, ",\"other_codes\":%" PRIu64 "},", r->codes.other);
    fprintf(f,
            "\"bytes_in\":%" PRIu64 ",\"bytes_out\":%" PRIu64
            ",\"server_rss_kb\":%ld,\"server_hwm_kb\":%ld,"
            "\"client_cpu_s\":%.3f}\n",
            r->bytes_in, r->bytes_out, r->rss_kb, r->hwm_kb, r->client_cpu_s);
}

static void table_row(FILE *f, const char *name, const struct bench_hist *h,
                      double elapsed)
{
    fprintf(f, "%-10s %10" PRIu64 " %11.0f %9.1f %9.1f %9.1f %9.1f %9.1f\n",
            name, h->total, elapsed > 0 ? (double)h->total / elapsed : 0.0,
            us(bench_hist_quantile(h, 0.50)), us(bench_hist_quantile(h, 0.90)),
            us(bench_hist_quantile(h, 0.99)), us(bench_hist_quantile(h, 0.999)),
            us(h->max_ns));
}

void bench_report_table(FILE *f, const struct bench_result *r)
{
    fprintf(f, "raftns-bench %s: %s  mix %s  %d conn x depth %d\n", r->label,
            r->addr, r->mix, r->connections, r->depth);
    if (r->setup_requests)
        fprintf(f,
                "setup: %" PRIu64 " brokers x %" PRIu64 " topics (pool %" PRIu64
                ", split %" PRIu64 "): %" PRIu64 " requests in %.3f s, %" PRIu64
                " errors, rss %ld kB\n",
                r->brokers, r->topics, r->pool, r->split, r->setup_requests,
                r->setup_s, r->setup_errors, r->setup_rss_kb);
    fprintf(f, "%-10s %10s %11s %9s %9s %9s %9s %9s\n", "kind", "requests",
            "req/s", "p50 us", "p90 us", "p99 us", "p99.9 us", "max us");
    for (int k = 0; k < BK_COUNT; k++) {
        if (r->kind[k].total && k != BK_SETUP)
            table_row(f, bench_kind_names[k], &r->kind[k], r->elapsed_s);
    }
    table_row(f, "all", &r->all, r->elapsed_s);
    fprintf(f,
            "elapsed %.3f s, ok %" PRIu64 ", closed %" PRIu64
            ", unanswered %" PRIu64,
            r->elapsed_s, r->ok, r->closed, r->unanswered);
    for (size_t i = 0; i < r->codes.n; i++) {
        if (r->codes.code[i] != NS_CODE_SUCCESS)
            fprintf(f, ", code %d: %" PRIu64, r->codes.code[i],
                    r->codes.count[i]);
    }
    fprintf(f, "\nserver rss %ld kB (hwm %ld kB), client cpu %.2f s\n",
            r->rss_kb, r->hwm_kb, r->client_cpu_s);
}
