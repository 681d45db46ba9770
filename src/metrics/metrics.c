/* Process-wide request counters and latency histograms, and their Prometheus
 * text. Requests are counted in one place (ns_reply_send); the other counters
 * (forwards, write copies, refusals, expiries, limits) where the event
 * happens. This file only stores and prints. Gauges that read the node or the
 * state are in observe.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raftns/codes.h"
#include "raftns/command.h"
#include "raftns/metrics.h"

#define MAX_CODES 128 /* distinct request codes tracked; more share "other" */
#define OTHER_CODE INT32_MIN
#define MAX_ACL_REASONS 16

/* Histogram upper bounds in seconds (Prometheus "le"). */
static const double bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025,
                                0.005,  0.01,    0.025,  0.05,  0.1,
                                0.25,   0.5,     1,      2.5,   5};
#define N_BOUNDS (sizeof bounds / sizeof bounds[0])

struct code_stats {
    int32_t code;
    uint64_t requests;
    uint64_t errors;
    uint64_t buckets[N_BOUNDS]; /* non-cumulative; +Inf = requests */
    uint64_t sum_ns;
};

static struct {
    struct code_stats codes[MAX_CODES];
    size_t n_codes;
    uint64_t forwarded;
    uint64_t reads_forwarded;
    uint64_t copies_duplicate, copies_stale;
    uint64_t expired;
    uint64_t private_refused;
    struct {
        const char *reason; /* static */
        uint64_t n;
    } acl[MAX_ACL_REASONS];
    size_t n_acl;
    uint64_t limits[NS_LIMIT_N_KINDS];
    uint64_t written[NS_COMMAND_VERSION + 1]; /* by format version */
    struct {
        uint64_t buckets[N_BOUNDS]; /* non-cumulative */
        uint64_t n, sum_ns, max_ns;
    } lag;
} m;

static const char *const limit_names[NS_LIMIT_N_KINDS] = {
    "client_connections",   "client_connections_per_ip",
    "client_buffer_budget", "http_connections",
    "command_size",         "register_topics",
};

void ns_metrics_limit(enum ns_metrics_limit_kind kind)
{
    m.limits[kind]++;
}

static struct code_stats *find_code(int32_t code)
{
    for (size_t i = 0; i < m.n_codes; i++) {
        if (m.codes[i].code == code) {
            return &m.codes[i];
        }
    }
    if (m.n_codes < MAX_CODES - 1) {
        m.codes[m.n_codes].code = code;
        return &m.codes[m.n_codes++];
    }
    /* The last slot collects every code beyond the table. */
    m.codes[MAX_CODES - 1].code = OTHER_CODE;
    m.n_codes = MAX_CODES;
    return &m.codes[MAX_CODES - 1];
}

void ns_metrics_request(int32_t req_code, int32_t reply_code,
                        uint64_t elapsed_ns)
{
    struct code_stats *c = find_code(req_code);
    c->requests++;
    if (reply_code != NS_CODE_SUCCESS) {
        c->errors++;
    }
    c->sum_ns += elapsed_ns;
    double secs = (double)elapsed_ns / 1e9;
    for (size_t i = 0; i < N_BOUNDS; i++) {
        if (secs <= bounds[i]) {
            c->buckets[i]++;
            break;
        }
    }
}

void ns_metrics_loop_lag(uint64_t lag_ns)
{
    double secs = (double)lag_ns / 1e9;
    for (size_t b = 0; b < N_BOUNDS; b++) {
        if (secs <= bounds[b]) {
            m.lag.buckets[b]++;
            break;
        }
    }
    m.lag.n++;
    m.lag.sum_ns += lag_ns;
    if (lag_ns > m.lag.max_ns) {
        m.lag.max_ns = lag_ns;
    }
}

static void encode_lag(struct ns_buf *out)
{
    uint64_t cum = 0;
    ns_buf_append_str(out, "# HELP raftns_event_loop_lag_seconds How late a "
                           "200 ms timer fired: how long the event loop was "
                           "busy with other work.\n"
                           "# TYPE raftns_event_loop_lag_seconds histogram\n");
    for (size_t b = 0; b < N_BOUNDS; b++) {
        cum += m.lag.buckets[b];
        ns_buf_printf(out,
                      "raftns_event_loop_lag_seconds_bucket{le=\"%g\"} "
                      "%llu\n",
                      bounds[b], (unsigned long long)cum);
    }
    ns_buf_printf(out,
                  "raftns_event_loop_lag_seconds_bucket{le=\"+Inf\"} %llu\n"
                  "raftns_event_loop_lag_seconds_sum %.9f\n"
                  "raftns_event_loop_lag_seconds_count %llu\n"
                  "# HELP raftns_event_loop_lag_max_seconds The largest "
                  "event loop lag seen since start.\n"
                  "# TYPE raftns_event_loop_lag_max_seconds gauge\n"
                  "raftns_event_loop_lag_max_seconds %.6f\n",
                  (unsigned long long)m.lag.n, (double)m.lag.sum_ns / 1e9,
                  (unsigned long long)m.lag.n, (double)m.lag.max_ns / 1e9);
}

void ns_metrics_forwarded(void)
{
    m.forwarded++;
}

void ns_metrics_read_forwarded(void)
{
    m.reads_forwarded++;
}

uint64_t ns_metrics_write_copies(bool stale)
{
    return stale ? m.copies_stale : m.copies_duplicate;
}

void ns_metrics_command_written(uint8_t v)
{
    if (v >= NS_COMMAND_VERSION_PLAIN && v <= NS_COMMAND_VERSION) {
        m.written[v]++;
    }
}

uint64_t ns_metrics_commands_written(uint8_t v)
{
    return v <= NS_COMMAND_VERSION ? m.written[v] : 0;
}

void ns_metrics_write_copy(bool stale)
{
    if (stale) {
        m.copies_stale++;
    } else {
        m.copies_duplicate++;
    }
}

void ns_metrics_private_refused(void)
{
    m.private_refused++;
}

void ns_metrics_expired(uint64_t n_brokers)
{
    m.expired += n_brokers;
}

void ns_metrics_acl_refused(const char *reason)
{
    for (size_t i = 0; i < m.n_acl; i++) {
        if (strcmp(m.acl[i].reason, reason) == 0) {
            m.acl[i].n++;
            return;
        }
    }
    if (m.n_acl < MAX_ACL_REASONS) {
        m.acl[m.n_acl].reason = reason;
        m.acl[m.n_acl++].n = 1;
    }
}

static void code_label(char *out, size_t len, int32_t code)
{
    if (code == OTHER_CODE) {
        snprintf(out, len, "other");
    } else {
        snprintf(out, len, "%d", (int)code);
    }
}

static int compare_codes(const void *a, const void *b)
{
    const struct code_stats *x = a, *y = b;
    return (x->code > y->code) - (x->code < y->code);
}

void ns_metrics_encode(struct ns_buf *out)
{
    char label[16];
    /* Sorted output is stable and easy to diff; sorting the table keeps it. */
    qsort(m.codes, m.n_codes, sizeof m.codes[0], compare_codes);
    ns_buf_append_str(out, "# HELP raftns_requests_total Requests answered, "
                           "by request code.\n"
                           "# TYPE raftns_requests_total counter\n");
    for (size_t i = 0; i < m.n_codes; i++) {
        code_label(label, sizeof label, m.codes[i].code);
        ns_buf_printf(out, "raftns_requests_total{code=\"%s\"} %llu\n", label,
                      (unsigned long long)m.codes[i].requests);
    }
    ns_buf_append_str(out, "# HELP raftns_request_errors_total Requests "
                           "answered with a non-zero code.\n"
                           "# TYPE raftns_request_errors_total counter\n");
    for (size_t i = 0; i < m.n_codes; i++) {
        code_label(label, sizeof label, m.codes[i].code);
        ns_buf_printf(out, "raftns_request_errors_total{code=\"%s\"} %llu\n",
                      label, (unsigned long long)m.codes[i].errors);
    }
    ns_buf_append_str(out, "# HELP raftns_request_duration_seconds Time from "
                           "dispatch to reply.\n"
                           "# TYPE raftns_request_duration_seconds "
                           "histogram\n");
    for (size_t i = 0; i < m.n_codes; i++) {
        const struct code_stats *c = &m.codes[i];
        uint64_t cum = 0;
        code_label(label, sizeof label, c->code);
        for (size_t b = 0; b < N_BOUNDS; b++) {
            cum += c->buckets[b];
            ns_buf_printf(out,
                          "raftns_request_duration_seconds_bucket{code=\"%s\","
                          "le=\"%g\"} %llu\n",
                          label, bounds[b], (unsigned long long)cum);
        }
        ns_buf_printf(out,
                      "raftns_request_duration_seconds_bucket{code=\"%s\","
                      "le=\"+Inf\"} %llu\n"
                      "raftns_request_duration_seconds_sum{code=\"%s\"} %.9f\n"
                      "raftns_request_duration_seconds_count{code=\"%s\"} "
                      "%llu\n",
                      label, (unsigned long long)c->requests, label,
                      (double)c->sum_ns / 1e9, label,
                      (unsigned long long)c->requests);
    }
    ns_buf_printf(out,
                  "# HELP raftns_forwarded_writes_total Writes this node "
                  "forwarded to the leader.\n"
                  "# TYPE raftns_forwarded_writes_total counter\n"
                  "raftns_forwarded_writes_total %llu\n"
                  "# HELP raftns_expired_brokers_total Brokers this node "
                  "proposed to expire.\n"
                  "# TYPE raftns_expired_brokers_total counter\n"
                  "raftns_expired_brokers_total %llu\n"
                  "# HELP raftns_private_refused_total Private node-to-node "
                  "requests refused: missing, wrong, expired or replayed "
                  "signature.\n"
                  "# TYPE raftns_private_refused_total counter\n"
                  "raftns_private_refused_total %llu\n",
                  (unsigned long long)m.forwarded,
                  (unsigned long long)m.expired,
                  (unsigned long long)m.private_refused);
    ns_buf_printf(out,
                  "# HELP raftns_forwarded_reads_total Reads this node could "
                  "not answer itself, answered by another node.\n"
                  "# TYPE raftns_forwarded_reads_total counter\n"
                  "raftns_forwarded_reads_total %llu\n"
                  "# HELP raftns_write_copies_total Copies of writes this "
                  "leader did not apply again: applied before, or refused as "
                  "stale.\n"
                  "# TYPE raftns_write_copies_total counter\n"
                  "raftns_write_copies_total{verdict=\"duplicate\"} %llu\n"
                  "raftns_write_copies_total{verdict=\"stale\"} %llu\n",
                  (unsigned long long)m.reads_forwarded,
                  (unsigned long long)m.copies_duplicate,
                  (unsigned long long)m.copies_stale);
    ns_buf_append_str(out,
                      "# HELP raftns_commands_written_total Commands this node "
                      "encoded for the raft log, by format version (the "
                      "cluster file's commandVersion caps it).\n"
                      "# TYPE raftns_commands_written_total counter\n");
    for (uint8_t v = NS_COMMAND_VERSION_PLAIN; v <= NS_COMMAND_VERSION; v++) {
        ns_buf_printf(out,
                      "raftns_commands_written_total{version=\"%u\"} %llu\n",
                      (unsigned)v, (unsigned long long)m.written[v]);
    }
    ns_buf_append_str(out, "# HELP raftns_acl_refusals_total Requests the ACL "
                           "gate refused (code 16), by reason.\n"
                           "# TYPE raftns_acl_refusals_total counter\n");
    for (size_t i = 0; i < m.n_acl; i++) {
        ns_buf_printf(out, "raftns_acl_refusals_total{reason=\"%s\"} %llu\n",
                      m.acl[i].reason, (unsigned long long)m.acl[i].n);
    }
    encode_lag(out);
    ns_buf_printf(out, "# HELP raftns_limit_refusals_total Connections and "
                       "requests refused or closed by a resource limit.\n"
                       "# TYPE raftns_limit_refusals_total counter\n");
    for (int k = 0; k < NS_LIMIT_N_KINDS; k++) {
        ns_buf_printf(out, "raftns_limit_refusals_total{limit=\"%s\"} %llu\n",
                      limit_names[k], (unsigned long long)m.limits[k]);
    }
}
