/* raftns: argv, settings, signals and the loop. It wires a node and a server
 * together and holds no protocol or raft logic itself. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <uv.h>

#include "raftns/alloc.h"
#include "raftns/cluster_config.h"
#include "raftns/config.h"
#include "raftns/err.h"
#include "raftns/fsm.h"
#include "raftns/json.h"
#include "raftns/log.h"
#include "raftns/metrics.h"
#include "raftns/node.h"
#include "raftns/server.h"

struct app {
    uv_loop_t loop;
    uv_signal_t sigterm;
    uv_signal_t sigint;
    struct ns_state state;
    struct ns_node *node;
    struct ns_server *server;
    struct ns_observe *observe; /* HTTP port and checkpoints */
    int n_signals_open;
    bool stopping;
    bool node_stopped;
};

struct options {
    const char *config_path;
    unsigned long long id;
    const char *data_dir;
    const char *client_addr;
    const char *raft_addr;
    const char *http_addr;
    unsigned election_ms;
    unsigned checkpoint_entries, checkpoint_ms; /* 0 = defaults (metrics.h) */
    unsigned heartbeat_ms;
    unsigned snapshot_threshold;
    struct ns_props sets;
    struct ns_cluster_config cluster; /* from --config */
};

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: raftns [options]\n"
        "  --config FILE          cluster file (cluster-configs/README.md);\n"
        "                         flags given as well override it\n"
        "  --id N                 node id (default 1)\n"
        "  --data-dir DIR         data dir (default ./raftns-data/<id>)\n"
        "  --client-addr IP:PORT  remoting listener (default 127.0.0.1:9876)\n"
        "  --raft-addr IP:PORT    raft transport (default 127.0.0.1:9886)\n"
        "  --http-addr IP:PORT    /status /metrics /healthz (default "
        "127.0.0.1:9896)\n"
        "  --checkpoint-entries N leader checkpoints the state digest every N "
        "commands (default 1000)\n"
        "  --checkpoint-ms N      ... or N ms after the first unchecked "
        "command (default 30000)\n"
        "  --set KEY=VALUE        NamesrvConfig setting (repeatable)\n"
        "  --log-level LEVEL      debug|info|warn|error (default info)\n"
        "  --election-timeout-ms N (default 1000)\n"
        "  --heartbeat-ms N       (default 50)\n"
        "  --snapshot-threshold N entries between snapshots (default 4096)\n"
        "  --help\n");
}

static int parse_uint(const char *text, unsigned long long *out)
{
    char *end = NULL;
    unsigned long long v = strtoull(text, &end, 10);
    if (text[0] == '\0' || text[0] == '-' || *end != '\0') {
        return NS_EINVAL;
    }
    *out = v;
    return 0;
}

/* Returns 0, 1 (help printed: exit 0) or 2 (error printed: exit 2). */
static int parse_args(int argc, char **argv, struct options *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        unsigned long long n = 0;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return 1;
        }
        if (v == NULL) {
            fprintf(stderr, "raftns: %s needs a value (or is unknown)\n", a);
            return 2;
        }
        i++;
        if (strcmp(a, "--config") == 0) {
            o->config_path = v;
        } else if (strcmp(a, "--snapshot-threshold") == 0) {
            if (parse_uint(v, &n) != 0 || n == 0 || n > (1u << 30)) {
                fprintf(stderr, "raftns: bad %s %s\n", a, v);
                return 2;
            }
            o->snapshot_threshold = (unsigned)n;
        } else if (strcmp(a, "--id") == 0) {
            if (parse_uint(v, &o->id) != 0 || o->id == 0) {
                fprintf(stderr, "raftns: bad --id %s\n", v);
                return 2;
            }
        } else if (strcmp(a, "--data-dir") == 0) {
            o->data_dir = v;
        } else if (strcmp(a, "--client-addr") == 0) {
            o->client_addr = v;
        } else if (strcmp(a, "--raft-addr") == 0) {
            o->raft_addr = v;
        } else if (strcmp(a, "--http-addr") == 0) {
            o->http_addr = v;
        } else if (strcmp(a, "--log-level") == 0) {
            if (ns_log_parse_level(v, &ns_log_threshold) != 0) {
                fprintf(stderr, "raftns: bad --log-level %s\n", v);
                return 2;
            }
        } else if (strcmp(a, "--election-timeout-ms") == 0 ||
                   strcmp(a, "--heartbeat-ms") == 0) {
            if (parse_uint(v, &n) != 0 || n == 0 || n > 600000) {
                fprintf(stderr, "raftns: bad %s %s\n", a, v);
                return 2;
            }
            *(a[2] == 'e' ? &o->election_ms : &o->heartbeat_ms) = (unsigned)n;
        } else if (strcmp(a, "--checkpoint-entries") == 0 ||
                   strcmp(a, "--checkpoint-ms") == 0) {
            if (parse_uint(v, &n) != 0 || n == 0 || n > 100000000) {
                fprintf(stderr, "raftns: bad %s %s\n", a, v);
                return 2;
            }
            *(a[13] == 'e' ? &o->checkpoint_entries : &o->checkpoint_ms) =
                (unsigned)n;
        } else if (strcmp(a, "--set") == 0) {
            const char *eq = strchr(v, '=');
            char *key = eq ? ns_strndup(v, (size_t)(eq - v)) : NULL;
            int rv = key ? ns_props_set(&o->sets, key, eq + 1) : NS_EINVAL;
            ns_free(key);
            if (rv != 0) {
                fprintf(stderr, "raftns: bad --set %s (want KEY=VALUE)\n", v);
                return 2;
            }
        } else {
            fprintf(stderr, "raftns: unknown option %s\n", a);
            return 2;
        }
    }
    return 0;
}

/* Fills options not given as flags from the cluster file. 0 or 2 (printed). */
static int apply_cluster_file(struct options *o)
{
    char err[256];
    int rv =
        ns_cluster_config_load(o->config_path, &o->cluster, err, sizeof err);
    if (rv != 0) {
        fprintf(stderr, "raftns: %s: %s\n", o->config_path, err);
        return 2;
    }
    const struct ns_cluster_node *me =
        ns_cluster_config_find(&o->cluster, o->id);
    if (me == NULL) {
        fprintf(stderr, "raftns: %s has no node with id %llu (use --id)\n",
                o->config_path, o->id);
        return 2;
    }
    o->client_addr = o->client_addr ? o->client_addr : me->client_addr;
    o->raft_addr = o->raft_addr ? o->raft_addr : me->raft_addr;
    o->http_addr = o->http_addr ? o->http_addr : me->http_addr;
    o->election_ms =
        o->election_ms ? o->election_ms : o->cluster.election_timeout_ms;
    o->heartbeat_ms =
        o->heartbeat_ms ? o->heartbeat_ms : o->cluster.heartbeat_ms;
    o->snapshot_threshold = o->snapshot_threshold
                                ? o->snapshot_threshold
                                : o->cluster.snapshot_threshold;
    return 0;
}

static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
            NS_LOG(NS_LOG_WARN, "cannot raise the open-file limit");
        }
    }
}

static void signal_closed(uv_handle_t *h)
{
    struct app *app = h->data;
    app->n_signals_open--;
}

static void node_stopped(void *arg)
{
    struct app *app = arg;
    app->node_stopped = true;
    uv_close((uv_handle_t *)&app->sigterm, signal_closed);
    uv_close((uv_handle_t *)&app->sigint, signal_closed);
}

static void server_stopped(void *arg)
{
    struct app *app = arg;
    ns_node_stop(app->node, node_stopped, app);
}

static void observe_stopped(void *arg)
{
    struct app *app = arg;
    ns_server_stop(app->server, server_stopped, app);
}

static void begin_stop(struct app *app)
{
    if (app->stopping) {
        return;
    }
    app->stopping = true;
    if (app->observe != NULL) {
        ns_observe_stop(app->observe, observe_stopped, app);
    } else {
        ns_server_stop(app->server, server_stopped, app);
    }
}

static void on_signal(uv_signal_t *h, int signum)
{
    struct app *app = h->data;
    NS_LOG(NS_LOG_INFO, "received signal %d: stopping", signum);
    begin_stop(app);
}

static int run(struct app *app, const struct options *o)
{
    char dir[4096];
    if (o->data_dir != NULL) {
        snprintf(dir, sizeof dir, "%s", o->data_dir);
    } else {
        snprintf(dir, sizeof dir, "./raftns-data/%llu", o->id);
    }
    struct ns_node_member boot[NS_CLUSTER_MAX_NODES];
    size_t n_boot = 0;
    for (size_t i = 0; i < o->cluster.n_nodes; i++) {
        const struct ns_cluster_node *nd = &o->cluster.nodes[i];
        if (nd->bootstrap) {
            boot[n_boot].id = nd->id;
            boot[n_boot].raft_addr =
                nd->id == o->id ? o->raft_addr : nd->raft_addr;
            boot[n_boot].role = NS_MEMBER_VOTER;
            n_boot++;
        }
    }
    struct ns_node_config ncfg = {
        .id = o->id,
        .data_dir = dir,
        .raft_addr = o->raft_addr,
        .election_timeout_ms = o->election_ms,
        .heartbeat_ms = o->heartbeat_ms,
        .snapshot_threshold = o->snapshot_threshold,
        .bootstrap = n_boot > 0 ? boot : NULL,
        .n_bootstrap = n_boot,
        .remote_ready = o->cluster.n_nodes > 1,
        .secret = o->cluster.secret,
    };
    struct ns_server_config scfg = {
        .client_addr = o->client_addr,
        .id = o->id,
        .secret = o->cluster.secret,
        .cluster = o->cluster.n_nodes > 0 ? &o->cluster : NULL,
    };
    int rv = ns_node_create(&app->loop, &ncfg, &app->state, &app->node);
    if (rv == 0) {
        rv = ns_server_create(&app->loop, &scfg, &app->state, app->node,
                              &app->server);
    }
    struct ns_observe_config ocfg = {
        .http_addr = o->http_addr,
        .checkpoint_entries = o->checkpoint_entries,
        .checkpoint_ms = o->checkpoint_ms,
    };
    if (rv == 0) {
        rv = ns_observe_create(&app->loop, &ocfg, &app->state, app->node,
                               app->server, &app->observe);
    }
    if (rv == 0) {
        rv = ns_server_start(app->server);
    }
    if (rv == 0) {
        rv = ns_observe_start(app->observe);
    }
    if (rv == 0) {
        rv = ns_node_start(app->node);
    }
    uv_signal_init(&app->loop, &app->sigterm);
    uv_signal_init(&app->loop, &app->sigint);
    app->sigterm.data = app->sigint.data = app;
    app->n_signals_open = 2;
    if (rv == 0) {
        uv_signal_start(&app->sigterm, on_signal, SIGTERM);
        uv_signal_start(&app->sigint, on_signal, SIGINT);
        NS_LOG(NS_LOG_INFO,
               "raftns node %llu started: client %s, raft %s, data %s", o->id,
               o->client_addr, o->raft_addr, dir);
    }
    if (rv != 0) {
        if (app->server != NULL) {
            begin_stop(app);
        } else if (app->node != NULL) {
            ns_node_stop(app->node, node_stopped, app);
        } else {
            node_stopped(app);
        }
    }
    uv_run(&app->loop, UV_RUN_DEFAULT);
    return rv;
}

int main(int argc, char **argv)
{
    struct options o = {.id = 1};
    struct app app;
    int status = 0;
    ns_props_init(&o.sets);
    ns_cluster_config_init(&o.cluster);
    ns_json_use_ns_alloc();
    int prv = parse_args(argc, argv, &o);
    if (prv == 0 && o.config_path != NULL) {
        prv = apply_cluster_file(&o);
    }
    if (prv != 0) {
        ns_props_close(&o.sets);
        ns_cluster_config_close(&o.cluster);
        return prv == 1 ? 0 : 2;
    }
    o.client_addr = o.client_addr ? o.client_addr : "127.0.0.1:9876";
    o.raft_addr = o.raft_addr ? o.raft_addr : "127.0.0.1:9886";
    o.http_addr = o.http_addr ? o.http_addr : "127.0.0.1:9896";
    ns_log_set_node(o.id);
    /* a peer node that closed its socket must not kill this one */
    signal(SIGPIPE, SIG_IGN);
    raise_nofile();
    memset(&app, 0, sizeof app);
    if (uv_loop_init(&app.loop) != 0 || ns_state_init(&app.state) != 0) {
        fprintf(stderr, "raftns: cannot initialise\n");
        return 1;
    }
    /* the file's namesrv keys first, --set overrides them */
    if (ns_config_update(app.state.config, &o.cluster.namesrv, true) != 0 ||
        ns_config_update(app.state.config, &o.sets, true) != 0) {
        NS_LOG(NS_LOG_ERROR, "out of memory applying --set");
        status = 1;
    } else if (run(&app, &o) != 0) {
        status = 1;
    }
    ns_observe_destroy(app.observe);
    ns_server_destroy(app.server);
    ns_node_destroy(app.node);
    int lrv = uv_loop_close(&app.loop);
    if (lrv != 0) {
        NS_LOG(NS_LOG_ERROR, "loop did not close cleanly: %s",
               uv_strerror(lrv));
        status = 1;
    }
    ns_state_close(&app.state);
    ns_props_close(&o.sets);
    ns_cluster_config_close(&o.cluster);
    NS_LOG(NS_LOG_INFO, "stopped");
    return status;
}
