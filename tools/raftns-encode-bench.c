/* raftns-encode-bench: how long encoding the whole state takes on one thread,
 * the work a checkpoint digest or a snapshot of a small state does on the
 * event loop (BENCHMARKS.md, "Topics in one block"). It builds the state as
 * raftns-bench's register mix leaves it on a server, through the route's own
 * registration: BROKERS brokers, each with a pool of 1,000 topics of its own,
 * registering 100 of them with the window one further each time, while other
 * blocks are allocated and freed between the topics as a server's requests
 * do. Then it encodes the state 21 times and prints the median.
 * Usage: raftns-encode-bench [REGISTRATIONS [BROKERS]]   (64,000 and 64) */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "raftns/alloc.h"
#include "raftns/buf.h"
#include "raftns/err.h"
#include "raftns/fsm.h"
#include "raftns/route.h"

#define POOL 1000
#define TOPICS_PER_REGISTRATION 100
#define ENCODES 21
#define CHURN_SLOTS 4096

static double encbench_now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int encbench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a;
    double y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Blocks of 64-4,064 bytes allocated and freed in turn, so that topics land
 * among other blocks as on a server's heap. */
struct encbench_churn {
    void *slots[CHURN_SLOTS];
    unsigned next;
};

static void encbench_churn_step(struct encbench_churn *c)
{
    unsigned i = c->next % CHURN_SLOTS;
    free(c->slots[i]);
    c->slots[i] = malloc(64 + (size_t)(c->next * 37u) % 4000);
    c->next++;
}

static void encbench_churn_close(struct encbench_churn *c)
{
    for (unsigned i = 0; i < CHURN_SLOTS; i++) {
        free(c->slots[i]);
    }
}

static int encbench_register(struct ns_route *route, int broker,
                             int64_t counter, struct encbench_churn *churn)
{
    char buf[64];
    struct ns_register r;
    ns_register_init(&r);
    r.cluster = ns_strdup("DefaultCluster");
    snprintf(buf, sizeof buf, "broker-%d", broker);
    r.broker_name = ns_strdup(buf);
    snprintf(buf, sizeof buf, "10.0.%d.%d:10911", broker / 250, broker % 250);
    r.broker_addr = ns_strdup(buf);
    r.heartbeat_timeout_ms = NS_DEFAULT_HEARTBEAT_TIMEOUT_MS;
    r.acting_master = -1;
    r.dv.counter = counter;
    r.dv.timestamp = 1700000000000LL + counter;
    r.topics = ns_calloc(TOPICS_PER_REGISTRATION, sizeof(*r.topics));
    int rv = r.cluster == NULL || r.broker_name == NULL ||
                     r.broker_addr == NULL || r.topics == NULL
                 ? NS_ENOMEM
                 : 0;
    for (int i = 0; rv == 0 && i < TOPICS_PER_REGISTRATION; i++) {
        snprintf(buf, sizeof buf, "BenchReg%d-%" PRId64, broker,
                 (counter + i) % POOL);
        struct ns_topic_config *t = &r.topics[r.n_topics++];
        t->name = ns_strdup(buf);
        t->read_queues = t->write_queues = 4;
        t->perm = 6;
        rv = t->name == NULL ? NS_ENOMEM : 0;
        encbench_churn_step(churn);
    }
    struct ns_register_result res;
    if (rv == 0) {
        rv = ns_route_register_broker(route, &r, false, &res);
    }
    if (rv == 0) {
        ns_register_result_close(&res);
    }
    ns_register_close(&r);
    return rv;
}

int main(int argc, char **argv)
{
    long registrations = argc > 1 ? atol(argv[1]) : 64000;
    int brokers = argc > 2 ? atoi(argv[2]) : 64;
    if (registrations <= 0 || brokers <= 0 || brokers > 60000) {
        fprintf(stderr, "usage: %s [REGISTRATIONS [BROKERS]]\n", argv[0]);
        return 2;
    }
    struct ns_state s;
    if (ns_state_init(&s) != 0) {
        return 1;
    }
    struct encbench_churn churn = {0};
    double t0 = encbench_now_ms();
    for (long k = 0; k < registrations; k++) {
        if (encbench_register(s.route, (int)(k % brokers), 1 + k / brokers,
                              &churn) != 0) {
            fprintf(stderr, "registration %ld failed\n", k);
            return 1;
        }
    }
    double reg_ms = encbench_now_ms() - t0;
    struct ns_buf out;
    ns_buf_init(&out);
    double ms[ENCODES];
    for (int i = 0; i < ENCODES; i++) {
        ns_buf_reset(&out);
        t0 = encbench_now_ms();
        if (ns_snapshot_encode(&s, &out) != 0 || out.err != 0) {
            return 1;
        }
        ms[i] = encbench_now_ms() - t0;
    }
    qsort(ms, ENCODES, sizeof ms[0], encbench_cmp_double);
    printf("{\"registrations\": %ld, \"brokers\": %d, \"topics\": %zu, "
           "\"register_us\": %.2f, \"state_bytes\": %zu, \"encode_ms_median\": "
           "%.2f, \"encode_ms_min\": %.2f, \"encode_ms_max\": %.2f}\n",
           registrations, brokers, ns_route_n_topics(s.route),
           reg_ms * 1e3 / (double)registrations, out.len, ms[ENCODES / 2],
           ms[0], ms[ENCODES - 1]);
    ns_buf_close(&out);
    encbench_churn_close(&churn);
    ns_state_close(&s);
    return 0;
}
