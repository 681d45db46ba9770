/* raftns: signals and the loop. It wires a node and a server together from the
 * options (main_options.c) and holds no protocol or raft logic itself. */
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
#include "raftns/observe.h"
#include "raftns/node.h"
#include "raftns/secret.h"
#include "raftns/server.h"
#include "raftns/version.h"
#include "main_datadir.h"
#include "main_log.h"
#include "main_notify.h"
#include "main_options.h"
#include "main_restore.h"

struct app {
    uv_loop_t loop;
    uv_signal_t sigterm;
    uv_signal_t sigint;
    uv_signal_t sighup;     /* reloads the TLS certificates, reopens the log */
    uv_timer_t ready_timer; /* until READY=1 went to systemd (main_notify.h) */
    bool notified_ready;
    struct ns_state state;
    struct ns_node *node;
    struct ns_server *server;
    struct ns_observe *observe; /* HTTP port and checkpoints */
    int n_signals_open;
    bool bad_config; /* exit 2: a TLS file could not be loaded, a bad path */
    bool stopping;
    bool node_stopped;
};

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
    uv_close((uv_handle_t *)&app->ready_timer, signal_closed);
    uv_close((uv_handle_t *)&app->sigterm, signal_closed);
    uv_close((uv_handle_t *)&app->sigint, signal_closed);
    uv_close((uv_handle_t *)&app->sighup, signal_closed);
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
    ns_main_notify("STOPPING=1\nSTATUS=stopping");
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

static void on_sighup(uv_signal_t *h, int signum)
{
    struct app *app = h->data;
    (void)signum;
    if (app->server != NULL && !app->stopping) {
        ns_main_log_reopen();
        NS_LOG(NS_LOG_INFO, "received SIGHUP: reloading TLS certificates");
        ns_server_reload_tls(app->server);
        ns_node_reload_tls(app->node);
    }
}

/* Type=notify: systemd starts the units ordered after this one only once the
 * node serves (ready: caught up with the leader, not diverged). */
static void ready_tick(uv_timer_t *t)
{
    struct app *app = t->data;
    if (app->notified_ready || app->stopping || !ns_node_is_ready(app->node) ||
        ns_node_is_diverged(app->node)) {
        return;
    }
    char text[128];
    snprintf(text, sizeof text, "READY=1\nSTATUS=ready (node %llu)",
             (unsigned long long)ns_node_id(app->node));
    ns_main_notify(text);
    app->notified_ready = true;
    uv_timer_stop(t);
}

static int run(struct app *app, const struct options *o)
{
    char dir[4096];
    ns_options_data_dir(o, dir, sizeof dir);
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
        .snapshot_bytes = o->snapshot_bytes,
        .fork_state_bytes = o->cluster.fork_state_bytes,
        .bootstrap = n_boot > 0 ? boot : NULL,
        .n_bootstrap = n_boot,
        .remote_ready = o->cluster.n_nodes > 1,
        .secret = o->secret,
        .tls_cert_path = o->tls.raft ? o->tls.cert_path : NULL,
        .tls_key_path = o->tls.raft ? o->tls.key_path : NULL,
        .tls_ca_path = o->tls.raft ? o->tls.trust_path : NULL,
        .write_wait_ms = o->waits.write_ms,
    };
    struct ns_server_config scfg = {
        .client_addr = o->client_addr,
        .id = o->id,
        .secret = o->secret,
        .cluster = o->cluster.n_nodes > 0 ? &o->cluster : NULL,
        .acl = &o->acl,
        .tls = &o->tls,
        .limits = o->limits,
        .waits = o->waits,
        .settings = &o->settings,
    };
    int rv = ns_node_create(&app->loop, &ncfg, &app->state, &app->node);
    app->bad_config = rv == NS_EINVAL;
    if (rv == 0) {
        rv = ns_server_create(&app->loop, &scfg, &app->state, app->node,
                              &app->server);
        app->bad_config = rv == NS_EIO;
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
    if (rv == 0) {
        ns_main_explain_data_dir(o, dir, app->node);
    }
    uv_signal_init(&app->loop, &app->sigterm);
    uv_signal_init(&app->loop, &app->sigint);
    uv_signal_init(&app->loop, &app->sighup);
    uv_timer_init(&app->loop, &app->ready_timer);
    app->sigterm.data = app->sigint.data = app->sighup.data = app;
    app->ready_timer.data = app;
    app->n_signals_open = 4;
    if (rv == 0) {
        uv_timer_start(&app->ready_timer, ready_tick, 0, 50);
        uv_signal_start(&app->sigterm, on_signal, SIGTERM);
        uv_signal_start(&app->sigint, on_signal, SIGINT);
        uv_signal_start(&app->sighup, on_sighup, SIGHUP);
        NS_LOG(NS_LOG_INFO,
               "raftns %s (git %s) node %llu started: client %s, raft %s, "
               "data %s",
               ns_version(), ns_version_git(), o->id, o->client_addr,
               o->raft_addr, dir);
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
    ns_json_use_ns_alloc();
    if (argc > 1 && strcmp(argv[1], "restore") == 0) {
        return ns_restore_main(argc - 1, argv + 1);
    }
    int prv = ns_options_load(&o, argc, argv);
    if (prv != 0) {
        return prv == 1 ? 0 : 2;
    }
    ns_log_set_node(o.id);
    /* a peer node that closed its socket must not kill this one */
    signal(SIGPIPE, SIG_IGN);
    raise_nofile();
    memset(&app, 0, sizeof app);
    if (uv_loop_init(&app.loop) != 0 || ns_state_init(&app.state) != 0) {
        fprintf(stderr, "raftns: cannot initialise\n");
        return 1;
    }
    if (o.acl.enable) {
        NS_LOG(NS_LOG_INFO,
               "acl: on (anonymous reads %s, %zu broker networks, %zu seed "
               "accounts in the cluster file)",
               o.acl.anonymous_read ? "allowed" : "refused",
               o.acl.n_broker_nets, o.cluster.n_acl_accounts);
    }
    /* the file's namesrv keys first, --set overrides them */
    if (ns_options_apply_settings(app.state.config, &o.settings) != 0) {
        NS_LOG(NS_LOG_ERROR, "out of memory applying --set");
        status = 1;
    } else if (run(&app, &o) != 0) {
        status = app.bad_config ? 2 : 1;
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
    ns_options_close(&o);
    NS_LOG(NS_LOG_INFO, "stopped");
    ns_main_log_close();
    return status;
}
