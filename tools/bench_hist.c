/* HDR-style latency histogram for raftns-bench: log-linear buckets (128 linear
 * sub-buckets per power of two) over 1 us .. 60 s in nanoseconds. It is not
 * thread-safe and never allocates. */
#include <string.h>

#include "bench.h"

static unsigned index_of(uint64_t v)
{
    if (v < 2 * BENCH_HIST_SUB)
        return (unsigned)v;
    unsigned m = 63u - (unsigned)__builtin_clzll(v); /* >= 8 */
    unsigned shift = m - 7u;
    return shift * BENCH_HIST_SUB + (unsigned)(v >> shift);
}

/* Midpoint of bucket idx. */
static uint64_t value_of(unsigned idx)
{
    if (idx < 2 * BENCH_HIST_SUB)
        return idx;
    unsigned k = idx / BENCH_HIST_SUB; /* = shift + 1 */
    unsigned shift = k - 1u;
    uint64_t sub = idx - (uint64_t)shift * BENCH_HIST_SUB;
    return (sub << shift) + ((1ull << shift) >> 1);
}

void bench_hist_init(struct bench_hist *h)
{
    memset(h, 0, sizeof(*h));
}

void bench_hist_record(struct bench_hist *h, uint64_t ns)
{
    if (ns < BENCH_HIST_MIN_NS)
        ns = BENCH_HIST_MIN_NS;
    if (ns > BENCH_HIST_MAX_NS)
        ns = BENCH_HIST_MAX_NS;
    unsigned i = index_of(ns);
    if (i >= BENCH_HIST_N)
        i = BENCH_HIST_N - 1;
    h->counts[i]++;
    if (h->total == 0 || ns < h->min_ns)
        h->min_ns = ns;
    if (ns > h->max_ns)
        h->max_ns = ns;
    h->total++;
    h->sum_ns += (double)ns;
}

void bench_hist_merge(struct bench_hist *into, const struct bench_hist *from)
{
    if (from->total == 0)
        return;
    for (unsigned i = 0; i < BENCH_HIST_N; i++)
        into->counts[i] += from->counts[i];
    if (into->total == 0 || from->min_ns < into->min_ns)
        into->min_ns = from->min_ns;
    if (from->max_ns > into->max_ns)
        into->max_ns = from->max_ns;
    into->total += from->total;
    into->sum_ns += from->sum_ns;
}

uint64_t bench_hist_quantile(const struct bench_hist *h, double q)
{
    if (h->total == 0)
        return 0;
    double want = q * (double)h->total;
    uint64_t rank = (uint64_t)want;
    if ((double)rank < want)
        rank++;
    if (rank == 0)
        rank = 1;
    uint64_t seen = 0;
    for (unsigned i = 0; i < BENCH_HIST_N; i++) {
        seen += h->counts[i];
        if (seen >= rank) {
            uint64_t v = value_of(i);
            return v > h->max_ns ? h->max_ns : v;
        }
    }
    return h->max_ns;
}
