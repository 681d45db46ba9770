/* raftns-bench's command line: the usage text, --mix and the options. It only
 * fills struct opts; the load generator is raftns-bench.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/err.h"

#include "bench.h"

static const char usage_text[] =
    "usage: raftns-bench [options]\n"
    "  -a HOST:PORT        name server address (127.0.0.1:9876)\n"
    "  -c N                connections (16)\n"
    "  -d N                pipeline depth per connection (1)\n"
    "  --duration S        measure for S seconds (10)\n"
    "  --count N           or: stop after N requests\n"
    "  --mix K=W,...       kinds route register heartbeat hb904 cluster\n"
    "                      alltopics kv with weights (route=100)\n"
    "  --brokers B         setup: register B brokers (0)\n"
    "  --topics T          ... with T topics each (100)\n"
    "  --topic-pool P      ... drawn from P distinct topics (B*T)\n"
    "  --split S           ... in registrations of S topics (all)\n"
    "  --setup-conns N     connections used by the setup (4)\n"
    "  --no-setup          register nothing (a name server expires brokers\n"
    "                      whose connection closed, so rarely useful)\n"
    "  --reg-topics N      topics per register/heartbeat body (100)\n"
    "  --cluster NAME      cluster name of the bench brokers (BenchCluster)\n"
    "  --pid PID           report VmRSS/VmHWM of this local server process\n"
    "  --binary            ROCKETMQ binary headers (default JSON)\n"
    "  --grace S           wait S s for late replies at the end (5)\n"
    "  --client-version V  version field of route requests (the server's)\n"
    "  --broker-timeout MS heartbeatTimeoutMillis of the registrations\n"
    "  --hold S            keep connections (registrations) open S s after\n"
    "                      the report\n"
    "  --label TEXT        label in the report\n"
    "  --tls               connect with TLS (no verification unless --tls-ca)\n"
    "  --tls-ca FILE       verify the server against this CA\n"
    "  --json              JSON report on stdout (table on stderr)\n";

static int parse_mix(struct opts *o, const char *text)
{
    char *copy = ns_strdup(text), *save = NULL;
    int rv = 0;
    if (copy == NULL)
        return NS_ENOMEM;
    memset(o->weight, 0, sizeof(o->weight));
    o->weight_sum = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        unsigned w = 1;
        if (eq) {
            *eq = '\0';
            w = (unsigned)strtoul(eq + 1, NULL, 10);
        }
        int k;
        for (k = 0; k < BK_SETUP; k++) {
            if (strcmp(tok, bench_kind_names[k]) == 0)
                break;
        }
        if (k == BK_SETUP) {
            fprintf(stderr, "raftns-bench: unknown kind '%s'\n", tok);
            rv = NS_EINVAL;
            break;
        }
        o->weight[k] += w;
        o->weight_sum += w;
    }
    ns_free(copy);
    if (rv == 0 && o->weight_sum == 0)
        rv = NS_EINVAL;
    return rv;
}

int bench_parse_args(struct opts *o, int argc, char **argv)
{
    bool no_setup = false;
    const char *addr = "127.0.0.1:9876";
    memset(o, 0, sizeof(*o));
    o->conns = 16;
    o->depth = 1;
    o->duration = 10;
    o->topics = 100;
    o->setup_conns = 4;
    o->reg_topics = 100;
    o->ser_json = true;
    o->grace = 5;
    o->label = "run";
    o->cluster = "BenchCluster";
    o->mix_text = "route=100";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        bool takes = true;
        if (strcmp(a, "--json") == 0) {
            o->json = true;
            takes = false;
        } else if (strcmp(a, "--binary") == 0) {
            o->ser_json = false;
            takes = false;
        } else if (strcmp(a, "--tls") == 0) {
            o->tls = true;
            takes = false;
        } else if (strcmp(a, "--tls-ca") == 0 && v != NULL) {
            o->tls = true;
            o->tls_ca = v;
        } else if (strcmp(a, "--no-setup") == 0) {
            no_setup = true;
            takes = false;
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            fputs(usage_text, stdout);
            exit(0);
        } else if (v == NULL) {
            fprintf(stderr, "raftns-bench: %s needs a value\n", a);
            return NS_EINVAL;
        } else if (strcmp(a, "-a") == 0) {
            addr = v;
        } else if (strcmp(a, "-c") == 0) {
            o->conns = atoi(v);
        } else if (strcmp(a, "-d") == 0) {
            o->depth = atoi(v);
        } else if (strcmp(a, "--duration") == 0) {
            o->duration = atof(v);
        } else if (strcmp(a, "--count") == 0) {
            o->count = strtoull(v, NULL, 10);
        } else if (strcmp(a, "--mix") == 0) {
            o->mix_text = v;
        } else if (strcmp(a, "--brokers") == 0) {
            o->brokers = strtoull(v, NULL, 10);
        } else if (strcmp(a, "--topics") == 0) {
            o->topics = strtoull(v, NULL, 10);
        } else if (strcmp(a, "--topic-pool") == 0) {
            o->pool = strtoull(v, NULL, 10);
        } else if (strcmp(a, "--split") == 0) {
            o->split = strtoull(v, NULL, 10);
        } else if (strcmp(a, "--setup-conns") == 0) {
            o->setup_conns = atoi(v);
        } else if (strcmp(a, "--reg-topics") == 0) {
            o->reg_topics = atoi(v);
        } else if (strcmp(a, "--cluster") == 0) {
            o->cluster = v;
        } else if (strcmp(a, "--pid") == 0) {
            o->pid = atoi(v);
        } else if (strcmp(a, "--grace") == 0) {
            o->grace = atof(v);
        } else if (strcmp(a, "--broker-timeout") == 0) {
            bench_broker_timeout = v;
        } else if (strcmp(a, "--client-version") == 0) {
            bench_route_version = (int32_t)atoi(v);
        } else if (strcmp(a, "--hold") == 0) {
            o->hold = atof(v);
        } else if (strcmp(a, "--label") == 0) {
            o->label = v;
        } else {
            fprintf(stderr, "raftns-bench: unknown option %s\n%s", a,
                    usage_text);
            return NS_EINVAL;
        }
        if (takes)
            i++;
    }
    const char *colon = strrchr(addr, ':');
    if (colon == NULL || (size_t)(colon - addr) >= sizeof(o->host)) {
        fprintf(stderr, "raftns-bench: bad address %s\n", addr);
        return NS_EINVAL;
    }
    memcpy(o->host, addr, (size_t)(colon - addr));
    o->host[colon - addr] = '\0';
    o->port = atoi(colon + 1);
    if (o->conns < 1 || o->conns > 100000 || o->depth < 1 ||
        o->depth > 100000 || o->setup_conns < 1 || o->reg_topics < 1 ||
        o->topics < 1 || o->duration <= 0) {
        fprintf(stderr, "raftns-bench: bad numeric option\n");
        return NS_EINVAL;
    }
    if (o->pool == 0)
        o->pool = o->brokers * o->topics;
    if (no_setup) {
        /* Remember the topic pool but register nothing. */
        o->setup_conns = 0;
    }
    return parse_mix(o, o->mix_text);
}
