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
#include "raftns/secret.h"
#include "raftns/server.h"

struct app {
    uv_loop_t loop;
    uv_signal_t sigterm;
    uv_signal_t sigint;
    uv_signal_t sighup; /* reloads the TLS certificates */
    struct ns_state state;
    struct ns_node *node;
    struct ns_server *server;
    struct ns_observe *observe; /* HTTP port and checkpoints */
    int n_signals_open;
    bool bad_config; /* exit 2: a TLS file could not be loaded, a bad path */
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
    bool insecure_dev;                /* weak or empty secrets allowed */
    char *secret;                     /* owned: the one this node uses */
    /* node-local ACL settings, taken out of the namesrv keys and --set */
    const char *acl_text[3]; /* borrowed: aclEnable, aclAnonymousRead,
                                aclBrokerNetworks */
    struct ns_acl_settings acl;
    struct ns_acl_net *acl_nets;    /* owned */
    struct ns_props settings;       /* file's namesrv keys, then --set */
    struct ns_server_tls tls;       /* borrows from settings */
    struct ns_client_limits limits; /* from the namesrv keys, then --set */
};

static const char *const ACL_KEYS[3] = {"aclEnable", "aclAnonymousRead",
                                        "aclBrokerNetworks"};

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
        "  --set KEY=VALUE        NamesrvConfig setting (repeatable); also\n"
        "                         aclEnable, aclAnonymousRead, "
        "aclBrokerNetworks\n"
        "                         tlsMode, tlsServerCertPath, "
        "tlsServerKeyPath,\n"
        "                         tlsServerTrustCertPath, "
        "tlsServerNeedClientAuth,\n"
        "                         httpTls, raftTls (disabled|enforcing: TLS "
        "1.3\n"
        "                         with mutual certificates between members)\n"
        "                         (or Java's tls.server.*), read at start;\n"
        "                         SIGHUP reloads the certificate files\n"
        "  --log-level LEVEL      debug|info|warn|error (default info)\n"
        "  --election-timeout-ms N (default 1000)\n"
        "  --heartbeat-ms N       (default 50)\n"
        "  --snapshot-threshold N entries between snapshots (default 4096)\n"
        "  --insecure-dev         accept an empty, short or placeholder "
        "cluster\n"
        "                         secret (development only)\n"
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
        if (strcmp(a, "--insecure-dev") == 0) {
            o->insecure_dev = true;
            continue;
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

/* Validates the namesrv keys of the file, then of --set (start-up keys are
 * allowed here), and takes this node's client limits from them. 0 or 2
 * (printed). */
static int check_settings(struct options *o)
{
    char err[256];
    if (ns_config_validate(&o->cluster.namesrv, NS_CONFIG_AT_START, err,
                           sizeof err) != 0) {
        fprintf(stderr, "raftns: %s: namesrv: %s\n", o->config_path, err);
        return 2;
    }
    if (ns_config_validate(&o->sets, NS_CONFIG_AT_START, err, sizeof err) !=
        0) {
        fprintf(stderr, "raftns: --set %s\n", err);
        return 2;
    }
    ns_client_limits_init(&o->limits);
    ns_client_limits_update(&o->limits, &o->cluster.namesrv);
    ns_client_limits_update(&o->limits, &o->sets);
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

static void data_dir_of(const struct options *o, char *dir, size_t len)
{
    if (o->data_dir != NULL) {
        snprintf(dir, len, "%s", o->data_dir);
    } else {
        snprintf(dir, len, "./raftns-data/%llu", o->id);
    }
}

/* secretFile of the cluster file, relative to the cluster file's directory. */
static int read_cluster_secret_file(struct options *o)
{
    char path[4096], err[512];
    const char *name = o->cluster.secret_file;
    const char *slash = strrchr(o->config_path, '/');
    if (name[0] == '/' || slash == NULL) {
        snprintf(path, sizeof path, "%s", name);
    } else {
        snprintf(path, sizeof path, "%.*s/%s", (int)(slash - o->config_path),
                 o->config_path, name);
    }
    if (ns_secret_read_file(path, &o->secret, err, sizeof err) != 0) {
        fprintf(stderr, "raftns: %s: %s\n", o->config_path, err);
        return 2;
    }
    if (err[0] != '\0') {
        fprintf(stderr, "raftns: warning: %s\n", err);
    }
    return 0;
}

/* Merges the file's namesrv keys and --set (which wins) into o->settings and
 * reads the TLS keys from it. 0 or 2 (printed). */
static int read_settings(struct options *o)
{
    const struct ns_props *srcs[2] = {&o->cluster.namesrv, &o->sets};
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < srcs[k]->n; i++) {
            const struct ns_prop *pr = &srcs[k]->items[i];
            if (ns_props_set(&o->settings, pr->key, pr->value) != 0) {
                fprintf(stderr, "raftns: out of memory reading settings\n");
                return 2;
            }
        }
    }
    for (size_t i = 0; i < o->settings.n; i++) {
        for (size_t k = 0; k < 3; k++) {
            if (strcmp(o->settings.items[i].key, ACL_KEYS[k]) == 0) {
                o->acl_text[k] = o->settings.items[i].value;
            }
        }
    }
    char err[256];
    if (ns_server_tls_parse(&o->settings, &o->tls, err, sizeof err) != 0) {
        fprintf(stderr, "raftns: %s\n", err);
        return 2;
    }
    return 0;
}

static bool is_acl_key(const char *key)
{
    for (size_t k = 0; k < 3; k++) {
        if (strcmp(key, ACL_KEYS[k]) == 0) {
            return true;
        }
    }
    return false;
}

/* Chooses the cluster secret (DESIGN.md §9: no default is open): the cluster
 * file's secret or secretFile, which must pass ns_secret_check unless
 * --insecure-dev; a node of a one-node cluster (or with no cluster file) that
 * has none uses its own random secret kept in its data dir. 0 or 2 (printed).
 */
static int choose_secret(struct options *o)
{
    char why[256];
    bool in_file = o->cluster.secret != NULL && o->cluster.secret[0] != '\0';
    if (o->cluster.secret_file != NULL) {
        if (read_cluster_secret_file(o) != 0) {
            return 2;
        }
    } else if (in_file) {
        o->secret = ns_strdup(o->cluster.secret);
    } else if (o->cluster.n_nodes > 1 && !o->insecure_dev) {
        fprintf(stderr,
                "raftns: %s: a cluster of %zu nodes needs a shared secret: set "
                "\"secretFile\" (or \"secret\") in the file, e.g. from "
                "`head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n'`\n",
                o->config_path, o->cluster.n_nodes);
        return 2;
    } else if (o->cluster.n_nodes > 1) {
        o->secret = ns_strdup("");
    } else {
        char dir[4096], err[512];
        int created = 0;
        data_dir_of(o, dir, sizeof dir);
        if (ns_secret_load_or_create(dir, &o->secret, &created, err,
                                     sizeof err) != 0) {
            fprintf(stderr, "raftns: %s\n", err);
            return 2;
        }
        if (created) {
            NS_LOG(NS_LOG_INFO, "generated this node's cluster secret in %s/%s",
                   dir, NS_SECRET_DATA_FILE);
        }
        return 0; /* random: no policy to check */
    }
    if (o->secret == NULL) {
        fprintf(stderr, "raftns: out of memory\n");
        return 2;
    }
    if (ns_secret_check(o->secret, why, sizeof why) != 0) {
        if (!o->insecure_dev) {
            fprintf(stderr,
                    "raftns: %s: %s; put a long random secret in the file "
                    "(\"secretFile\" or \"secret\"), or pass --insecure-dev "
                    "for a throwaway development cluster\n",
                    o->config_path, why);
            return 2;
        }
        NS_LOG(NS_LOG_WARN, "--insecure-dev: %s", why);
    }
    return 0;
}

static int parse_acl_bool(const char *key, const char *text, bool *out)
{
    if (text == NULL) {
        return 0;
    }
    if (strcmp(text, "true") == 0 || strcmp(text, "false") == 0) {
        *out = text[0] == 't';
        return 0;
    }
    fprintf(stderr, "raftns: %s must be true or false, not %s\n", key, text);
    return 2;
}

/* Fills o->acl from o->acl_text. 0 or 2 (printed). */
static int parse_acl_settings(struct options *o)
{
    o->acl.enable = false;
    o->acl.anonymous_read = true;
    if (parse_acl_bool(ACL_KEYS[0], o->acl_text[0], &o->acl.enable) != 0 ||
        parse_acl_bool(ACL_KEYS[1], o->acl_text[1], &o->acl.anonymous_read) !=
            0) {
        return 2;
    }
    const char *bad = NULL;
    int rv = ns_acl_nets_parse(o->acl_text[2] ? o->acl_text[2] : "",
                               &o->acl_nets, &o->acl.n_broker_nets, &bad);
    if (rv != 0) {
        fprintf(stderr,
                "raftns: aclBrokerNetworks: %s (want a.b.c.d/p,... at most "
                "%d)\n",
                rv == NS_EINVAL ? bad : "out of memory", NS_ACL_MAX_NETS);
        return 2;
    }
    o->acl.broker_nets = o->acl_nets;
    return 0;
}

/* The replicated NamesrvConfig never sees the TLS keys (they name files and
 * are read once at start) nor the ACL keys (node-local, so that no request can
 * turn ACL off). 0 or NS_ENOMEM. */
static int apply_settings(struct ns_config *cfg, const struct ns_props *all)
{
    struct ns_props kept;
    ns_props_init(&kept);
    int rv = 0;
    for (size_t i = 0; i < all->n && rv == 0; i++) {
        if (!ns_server_tls_is_key(all->items[i].key) &&
            !is_acl_key(all->items[i].key)) {
            rv = ns_props_set(&kept, all->items[i].key, all->items[i].value);
        }
    }
    if (rv == 0) {
        rv = ns_config_update(cfg, &kept, true);
    }
    ns_props_close(&kept);
    return rv;
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
        NS_LOG(NS_LOG_INFO, "received SIGHUP: reloading TLS certificates");
        ns_server_reload_tls(app->server);
        ns_node_reload_tls(app->node);
    }
}

static int run(struct app *app, const struct options *o)
{
    char dir[4096];
    data_dir_of(o, dir, sizeof dir);
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
        .secret = o->secret,
        .tls_cert_path = o->tls.raft ? o->tls.cert_path : NULL,
        .tls_key_path = o->tls.raft ? o->tls.key_path : NULL,
        .tls_ca_path = o->tls.raft ? o->tls.trust_path : NULL,
    };
    struct ns_server_config scfg = {
        .client_addr = o->client_addr,
        .id = o->id,
        .secret = o->secret,
        .cluster = o->cluster.n_nodes > 0 ? &o->cluster : NULL,
        .acl = &o->acl,
        .tls = &o->tls,
        .limits = o->limits,
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
    uv_signal_init(&app->loop, &app->sigterm);
    uv_signal_init(&app->loop, &app->sigint);
    uv_signal_init(&app->loop, &app->sighup);
    app->sigterm.data = app->sigint.data = app->sighup.data = app;
    app->n_signals_open = 3;
    if (rv == 0) {
        uv_signal_start(&app->sigterm, on_signal, SIGTERM);
        uv_signal_start(&app->sigint, on_signal, SIGINT);
        uv_signal_start(&app->sighup, on_sighup, SIGHUP);
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
    ns_props_init(&o.settings);
    ns_cluster_config_init(&o.cluster);
    ns_json_use_ns_alloc();
    int prv = parse_args(argc, argv, &o);
    if (prv == 0 && o.config_path != NULL) {
        prv = apply_cluster_file(&o);
    }
    if (prv == 0) {
        ns_log_set_node(o.id);
        prv = choose_secret(&o);
    }
    if (prv == 0) {
        prv = check_settings(&o);
    }
    if (prv == 0) {
        prv = read_settings(&o);
    }
    if (prv == 0) {
        prv = parse_acl_settings(&o);
    }
    if (prv != 0) {
        ns_free(o.secret);
        ns_free(o.acl_nets);
        ns_props_close(&o.settings);
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
    if (o.acl.enable) {
        NS_LOG(NS_LOG_INFO,
               "acl: on (anonymous reads %s, %zu broker networks, %zu seed "
               "accounts in the cluster file)",
               o.acl.anonymous_read ? "allowed" : "refused",
               o.acl.n_broker_nets, o.cluster.n_acl_accounts);
    }
    /* the file's namesrv keys first, --set overrides them */
    if (apply_settings(app.state.config, &o.settings) != 0) {
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
    ns_free(o.secret);
    ns_free(o.acl_nets);
    ns_props_close(&o.settings);
    ns_props_close(&o.sets);
    ns_cluster_config_close(&o.cluster);
    NS_LOG(NS_LOG_INFO, "stopped");
    return status;
}
