/* raftns's command line, cluster file and start-up settings (main_options.h).
 * It reads files and prints what is wrong; it starts nothing. */
#include "main_options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raftns/acl.h"
#include "raftns/alloc.h"
#include "raftns/cluster_config_load.h"
#include "raftns/err.h"
#include "raftns/log.h"
#include "raftns/secret.h"
#include "raftns/version.h"
#include "main_log.h"

static const char *const ACL_KEYS[3] = {"aclEnable", "aclAnonymousRead",
                                        "aclBrokerNetworks"};

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: raftns [options]\n"
        "       raftns restore --from FILE --config FILE --id N --data-dir "
        "DIR\n"
        "                         (a new cluster's node from a backup: raftns\n"
        "                         restore --help)\n"
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
        "  --snapshot-threshold N at most N entries between snapshots, each\n"
        "                         node at its own index (default 16384)\n"
        "  --snapshot-bytes N     ... or once the entries since the last\n"
        "                         pass N bytes; a snapshot keeps the newest\n"
        "                         entries within N/4 (default 64 MiB)\n"
        "  --wait NAME=MS         how long a request waits on the cluster\n"
        "                         (repeatable; docs/waits.md): write 3000,\n"
        "                         apply-min 1000, consistent-read 3000,\n"
        "                         read-forward 2000, peer-request 3000,\n"
        "                         admin-relay 10000, admin-leader 5000\n"
        "  --insecure-dev         accept an empty, short or placeholder "
        "cluster\n"
        "                         secret (development only)\n"
        "  --log-file PATH        log to PATH (appended; reopened on "
        "SIGHUP)\n"
        "                         instead of stderr\n"
        "  --log-format FORMAT    text (default) or json (one object a line)\n"
        "  --check-config FILE    validate a cluster file (and the flags "
        "given\n"
        "                         with it), print a summary and exit 0, or\n"
        "                         print what is wrong and exit 2; starts "
        "nothing\n"
        "  --version              print the version and git revision\n"
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

/* Every flag that takes a value: a flag missing its value and an unknown flag
 * get different answers. */
static const char *const VALUE_FLAGS[] = {
    "--config",
    "--id",
    "--data-dir",
    "--client-addr",
    "--raft-addr",
    "--http-addr",
    "--log-level",
    "--log-file",
    "--log-format",
    "--election-timeout-ms",
    "--heartbeat-ms",
    "--snapshot-threshold",
    "--snapshot-bytes",
    "--checkpoint-entries",
    "--checkpoint-ms",
    "--wait",
    "--set",
    "--check-config",
};

static bool takes_value(const char *flag)
{
    for (size_t i = 0; i < sizeof VALUE_FLAGS / sizeof VALUE_FLAGS[0]; i++) {
        if (strcmp(flag, VALUE_FLAGS[i]) == 0) {
            return true;
        }
    }
    return false;
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
        if (strcmp(a, "--version") == 0) {
            printf("raftns %s (git %s)\n", ns_version(), ns_version_git());
            return 1;
        }
        if (strcmp(a, "--insecure-dev") == 0) {
            o->insecure_dev = true;
            continue;
        }
        if (!takes_value(a)) {
            fprintf(stderr, "raftns: unknown option %s (see raftns --help)\n",
                    a);
            return 2;
        }
        if (v == NULL) {
            fprintf(stderr, "raftns: %s needs a value\n", a);
            return 2;
        }
        i++;
        if (strcmp(a, "--check-config") == 0) {
            o->check_config = true;
            o->config_path = v;
        } else if (strcmp(a, "--log-file") == 0) {
            o->log_file = v;
        } else if (strcmp(a, "--log-format") == 0) {
            if (strcmp(v, "text") != 0 && strcmp(v, "json") != 0) {
                fprintf(stderr, "raftns: bad --log-format %s (text|json)\n", v);
                return 2;
            }
            o->log_json = v[0] == 'j';
        } else if (strcmp(a, "--config") == 0) {
            o->config_path = v;
        } else if (strcmp(a, "--snapshot-threshold") == 0) {
            if (parse_uint(v, &n) != 0 || n == 0 || n > (1u << 30)) {
                fprintf(stderr, "raftns: bad %s %s\n", a, v);
                return 2;
            }
            o->snapshot_threshold = (unsigned)n;
        } else if (strcmp(a, "--snapshot-bytes") == 0) {
            if (parse_uint(v, &n) != 0 || n < 4096 || n > (1u << 30)) {
                fprintf(stderr, "raftns: bad %s %s\n", a, v);
                return 2;
            }
            o->snapshot_bytes = (unsigned)n;
        } else if (strcmp(a, "--id") == 0) {
            if (parse_uint(v, &o->id) != 0 || o->id == 0) {
                fprintf(stderr, "raftns: bad --id %s\n", v);
                return 2;
            }
            o->id_given = true;
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
        } else if (strcmp(a, "--wait") == 0) {
            char err[160];
            if (ns_waits_set(&o->waits, v, err, sizeof err) != 0) {
                fprintf(stderr, "raftns: bad --wait %s\n", err);
                return 2;
            }
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
    ns_config_client_limits_init(&o->limits);
    ns_config_client_limits_update(&o->limits, &o->cluster.namesrv);
    ns_config_client_limits_update(&o->limits, &o->sets);
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
    if (me == NULL && o->check_config && !o->id_given) {
        return 0; /* the file alone is checked: no node of it is this one */
    }
    if (me == NULL) {
        fprintf(stderr, "raftns: %s has no node with id %llu (use --id)\n",
                o->config_path, o->id);
        return 2;
    }
    o->client_addr = o->client_addr ? o->client_addr : me->client_addr;
    o->raft_addr = o->raft_addr ? o->raft_addr : me->raft_addr;
    o->http_addr = o->http_addr ? o->http_addr : me->http_addr;
    /* an override that takes another member's address: raft's own word for
     * it is "server address already in use", read as a taken port */
    for (size_t i = 0; i < o->cluster.n_nodes; i++) {
        const struct ns_cluster_node *nd = &o->cluster.nodes[i];
        const char *taken =
            nd == me                                       ? NULL
            : strcmp(o->raft_addr, nd->raft_addr) == 0     ? "--raft-addr"
            : strcmp(o->client_addr, nd->client_addr) == 0 ? "--client-addr"
                                                           : NULL;
        if (taken != NULL) {
            fprintf(stderr, "raftns: %s %s is node %llu's address in %s\n",
                    taken, taken[2] == 'r' ? o->raft_addr : o->client_addr,
                    (unsigned long long)nd->id, o->config_path);
            return 2;
        }
    }
    o->election_ms =
        o->election_ms ? o->election_ms : o->cluster.election_timeout_ms;
    o->heartbeat_ms =
        o->heartbeat_ms ? o->heartbeat_ms : o->cluster.heartbeat_ms;
    o->snapshot_threshold = o->snapshot_threshold
                                ? o->snapshot_threshold
                                : o->cluster.snapshot_threshold;
    o->snapshot_bytes =
        o->snapshot_bytes ? o->snapshot_bytes : o->cluster.snapshot_bytes;
    return 0;
}

void ns_options_data_dir(const struct options *o, char *dir, size_t len)
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

/* Chooses the cluster secret (docs/design.md §9: no default is open): the
 * cluster file's secret or secretFile, which must pass ns_secret_check unless
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
    } else if (o->check_config) {
        return 0; /* a one-node file: the node makes its own secret at start */
    } else {
        char dir[4096], err[512];
        int created = 0;
        ns_options_data_dir(o, dir, sizeof dir);
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
int ns_options_apply_settings(struct ns_config *cfg, const struct ns_props *all)
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

/* The effective raft timings (flag, else file, else default): a heartbeat
 * not shorter than the election timeout makes followers start elections
 * against a live leader. 0 or 2 (printed). */
static int check_timings(struct options *o)
{
    unsigned election = o->election_ms ? o->election_ms : 1000;
    unsigned heartbeat = o->heartbeat_ms ? o->heartbeat_ms : 50;
    if (heartbeat >= election) {
        fprintf(stderr,
                "raftns: heartbeat %u ms must be shorter than the election "
                "timeout %u ms (heartbeatMs / --heartbeat-ms, "
                "electionTimeoutMs / --election-timeout-ms%s%s)\n",
                heartbeat, election, o->config_path ? "; file " : "",
                o->config_path ? o->config_path : "");
        return 2;
    }
    return 0;
}

/* --check-config: everything a start would check of the file, nothing
 * started, nothing written. */
static int report_check(const struct options *o)
{
    printf("%s: ok: %zu node%s (", o->config_path, o->cluster.n_nodes,
           o->cluster.n_nodes == 1 ? "" : "s");
    for (size_t i = 0; i < o->cluster.n_nodes; i++) {
        const struct ns_cluster_node *nd = &o->cluster.nodes[i];
        printf("%s%llu %s%s", i ? ", " : "", (unsigned long long)nd->id,
               nd->raft_addr, nd->bootstrap ? "" : " joining");
    }
    printf("), election timeout %u ms, heartbeat %u ms, %zu namesrv "
           "setting%s\n",
           o->election_ms ? o->election_ms : 1000,
           o->heartbeat_ms ? o->heartbeat_ms : 50, o->cluster.namesrv.n,
           o->cluster.namesrv.n == 1 ? "" : "s");
    /* one line a node, for people and for scripts/run.sh */
    for (size_t i = 0; i < o->cluster.n_nodes; i++) {
        const struct ns_cluster_node *nd = &o->cluster.nodes[i];
        printf("node %llu raft %s client %s http %s\n",
               (unsigned long long)nd->id, nd->raft_addr, nd->client_addr,
               nd->http_addr != NULL ? nd->http_addr : "-");
    }
    return 1;
}

int ns_options_load(struct options *o, int argc, char **argv)
{
    ns_props_init(&o->sets);
    ns_props_init(&o->settings);
    ns_cluster_config_init(&o->cluster);
    ns_waits_init(&o->waits);
    int prv = parse_args(argc, argv, o);
    /* before anything logs (a generated secret, a warning), so those lines
     * land in the --log-file too */
    if (prv == 0 && !o->check_config &&
        ns_main_log_open(o->log_file, o->log_json) != 0) {
        prv = 2;
    }
    if (prv == 0 && o->config_path != NULL) {
        prv = apply_cluster_file(o);
    }
    if (prv == 0 && o->check_config && o->config_path == NULL) {
        prv = 2; /* not reached: --check-config sets the path */
    }
    if (prv == 0) {
        prv = check_timings(o);
    }
    /* every check before the one step that may write (a one-node secret) */
    if (prv == 0) {
        prv = check_settings(o);
    }
    if (prv == 0) {
        prv = read_settings(o);
    }
    if (prv == 0) {
        prv = parse_acl_settings(o);
    }
    if (prv == 0) {
        ns_log_set_node(o->id);
        prv = choose_secret(o);
    }
    if (prv == 0 && o->check_config) {
        prv = report_check(o);
    }
    if (prv != 0) {
        ns_options_close(o);
        return prv;
    }
    o->client_addr = o->client_addr ? o->client_addr : "127.0.0.1:9876";
    o->raft_addr = o->raft_addr ? o->raft_addr : "127.0.0.1:9886";
    o->http_addr = o->http_addr ? o->http_addr : "127.0.0.1:9896";
    return 0;
}

void ns_options_close(struct options *o)
{
    ns_free(o->secret);
    o->secret = NULL;
    ns_free(o->acl_nets);
    o->acl_nets = NULL;
    ns_props_close(&o->settings);
    ns_props_close(&o->sets);
    ns_cluster_config_close(&o->cluster);
}
