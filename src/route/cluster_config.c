/* Cluster file parsing and validation (cJSON): members, timeouts, secret and
 * NamesrvConfig settings. Pure: it parses a buffer and builds a struct; it
 * neither reads the file (src/server/cluster_config_load.c does) nor applies
 * anything to a node or a server. */
#include "raftns/cluster_config.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cJSON.h>

#include "raftns/alloc.h"
#include "raftns/err.h"

void ns_cluster_config_init(struct ns_cluster_config *c)
{
    memset(c, 0, sizeof *c);
    ns_props_init(&c->namesrv);
}

void ns_cluster_config_close(struct ns_cluster_config *c)
{
    for (size_t i = 0; i < c->n_nodes; i++) {
        ns_free(c->nodes[i].raft_addr);
        ns_free(c->nodes[i].client_addr);
        ns_free(c->nodes[i].http_addr);
    }
    ns_free(c->nodes);
    ns_free(c->secret);
    ns_free(c->secret_file);
    ns_props_close(&c->namesrv);
    for (size_t i = 0; i < c->n_acl_accounts; i++) {
        ns_acl_account_close(&c->acl_accounts[i]);
    }
    ns_free(c->acl_accounts);
    ns_cluster_config_init(c);
}

bool ns_cluster_config_addr_is_ipv4(const char *text)
{
    unsigned a, b, c, d, port;
    char tail;
    if (text == NULL || strlen(text) > 21) {
        return false;
    }
    if (sscanf(text, "%3u.%3u.%3u.%3u:%5u%c", &a, &b, &c, &d, &port, &tail) !=
        5) {
        return false;
    }
    for (const char *p = text; *p != '\0'; p++) {
        if ((*p < '0' || *p > '9') && *p != '.' && *p != ':') {
            return false;
        }
    }
    return a < 256 && b < 256 && c < 256 && d < 256 && port >= 1 &&
           port <= 65535;
}

/* Reads an optional non-negative integer key into *out (unchanged if absent).
 */
/* An absent key keeps *out (0 = the default); a present one must be in
 * [1, max]: the command-line flags refuse 0 too, so a file cannot ask for what
 * a flag may not. */
static int get_uint(const cJSON *obj, const char *key, unsigned max,
                    unsigned *out, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (v == NULL) {
        return 0;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > max ||
        v->valuedouble != (double)(unsigned)v->valuedouble) {
        ns_errf(err, errlen, "\"%s\" must be an integer 1..%u", key, max);
        return NS_EPROTO;
    }
    *out = (unsigned)v->valuedouble;
    return 0;
}

/* "commandVersion" names a format from 2 (what earlier releases with request
 * ids read) up to the newest this one reads. */
static int get_command_version(const cJSON *root, unsigned *out, char *err,
                               size_t errlen)
{
    int rv = get_uint(root, "commandVersion", NS_CLUSTER_COMMAND_VERSION_MAX,
                      out, err, errlen);
    if (rv != 0 || (*out != 0 && *out < NS_CLUSTER_COMMAND_VERSION_MIN)) {
        ns_errf(err, errlen, "\"commandVersion\" must be an integer %d..%d",
                NS_CLUSTER_COMMAND_VERSION_MIN, NS_CLUSTER_COMMAND_VERSION_MAX);
        rv = NS_EPROTO;
    }
    return rv;
}

static int dup_addr(const cJSON *node, const char *key, bool required,
                    char **out, size_t idx, char *err, size_t errlen)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(node, key);
    if (v == NULL && !required) {
        return 0;
    }
    if (!cJSON_IsString(v)) {
        ns_errf(err, errlen, "nodes[%zu]: missing string \"%s\"", idx, key);
        return NS_EPROTO;
    }
    if (!ns_cluster_config_addr_is_ipv4(v->valuestring)) {
        ns_errf(err, errlen,
                "nodes[%zu]: \"%s\" is \"%s\", want an IPv4 a.b.c.d:port", idx,
                key, v->valuestring);
        return NS_EPROTO;
    }
    *out = ns_strdup(v->valuestring);
    return *out == NULL ? NS_ENOMEM : 0;
}

/* A typo'd key ("electionTimeoutMS", "bootstrp") would silently keep the
 * default, so every key must be known; "comment" and keys starting with '_'
 * are the file's own notes. NULL-terminated known[]. */
static int check_keys(const cJSON *obj, const char *const *known,
                      const char *where, char *err, size_t errlen)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, obj)
    {
        const char *k = it->string;
        bool ok = strcmp(k, "comment") == 0 || k[0] == '_';
        const char *near = NULL;
        for (size_t i = 0; !ok && known[i] != NULL; i++) {
            ok = strcmp(k, known[i]) == 0;
            near = strcasecmp(k, known[i]) == 0 ? known[i] : near;
        }
        if (!ok) {
            ns_errf(err, errlen, "%sunknown key \"%s\"%s%s%s", where, k,
                    near ? " (did you mean \"" : "", near ? near : "",
                    near ? "\"?)" : "");
            return NS_EPROTO;
        }
    }
    return 0;
}

static int parse_node(const cJSON *item, size_t idx, struct ns_cluster_node *nd,
                      char *err, size_t errlen)
{
    if (!cJSON_IsObject(item)) {
        ns_errf(err, errlen, "nodes[%zu] is not an object", idx);
        return NS_EPROTO;
    }
    const cJSON *id = cJSON_GetObjectItemCaseSensitive(item, "id");
    if (!cJSON_IsNumber(id) || id->valuedouble < 1 ||
        id->valuedouble > 9007199254740991.0 ||
        id->valuedouble != (double)(uint64_t)id->valuedouble) {
        ns_errf(err, errlen, "nodes[%zu]: \"id\" must be an integer >= 1", idx);
        return NS_EPROTO;
    }
    nd->id = (uint64_t)id->valuedouble;
    static const char *const known[] = {"id",   "raft",      "client",
                                        "http", "bootstrap", NULL};
    char where[32];
    snprintf(where, sizeof where, "nodes[%zu]: ", idx);
    if (check_keys(item, known, where, err, errlen) != 0) {
        return NS_EPROTO;
    }
    int rv = dup_addr(item, "raft", true, &nd->raft_addr, idx, err, errlen);
    if (rv == 0) {
        rv = dup_addr(item, "client", true, &nd->client_addr, idx, err, errlen);
    }
    if (rv == 0) {
        rv = dup_addr(item, "http", false, &nd->http_addr, idx, err, errlen);
    }
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(item, "bootstrap");
    if (rv == 0 && b != NULL && !cJSON_IsBool(b)) {
        ns_errf(err, errlen, "nodes[%zu]: \"bootstrap\" must be true or false",
                idx);
        rv = NS_EPROTO;
    }
    nd->bootstrap = cJSON_IsTrue(b);
    return rv;
}

static bool same_addr_used(const struct ns_cluster_node *a,
                           const struct ns_cluster_node *b)
{
    const char *xa[3] = {a->raft_addr, a->client_addr, a->http_addr};
    const char *xb[3] = {b->raft_addr, b->client_addr, b->http_addr};
    for (int i = 0; i < 3; i++) {
        for (int j = 0; j < 3; j++) {
            if (xa[i] != NULL && xb[j] != NULL && strcmp(xa[i], xb[j]) == 0) {
                return true;
            }
        }
    }
    return false;
}

static int parse_nodes(const cJSON *arr, struct ns_cluster_config *c, char *err,
                       size_t errlen)
{
    if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) < 1) {
        ns_errf(err, errlen, "\"nodes\" must be a non-empty array");
        return NS_EPROTO;
    }
    int count = cJSON_GetArraySize(arr);
    if (count > NS_CLUSTER_MAX_NODES) {
        ns_errf(err, errlen, "more than %d nodes", NS_CLUSTER_MAX_NODES);
        return NS_EPROTO;
    }
    c->nodes = ns_calloc((size_t)count, sizeof *c->nodes);
    if (c->nodes == NULL) {
        return NS_ENOMEM;
    }
    size_t n_boot = 0;
    const cJSON *item;
    cJSON_ArrayForEach(item, arr)
    {
        size_t i = c->n_nodes++;
        int rv = parse_node(item, i, &c->nodes[i], err, errlen);
        if (rv != 0) {
            return rv;
        }
        for (size_t j = 0; j < i; j++) {
            if (c->nodes[j].id == c->nodes[i].id) {
                ns_errf(err, errlen, "duplicate node id %llu",
                        (unsigned long long)c->nodes[i].id);
                return NS_EPROTO;
            }
            if (same_addr_used(&c->nodes[j], &c->nodes[i])) {
                ns_errf(err, errlen, "nodes %llu and %llu share an address",
                        (unsigned long long)c->nodes[j].id,
                        (unsigned long long)c->nodes[i].id);
                return NS_EPROTO;
            }
        }
        n_boot += c->nodes[i].bootstrap ? 1 : 0;
    }
    if (n_boot == 0) {
        ns_errf(err, errlen, "no node has \"bootstrap\": true");
        return NS_EPROTO;
    }
    return 0;
}

static int parse_namesrv(const cJSON *obj, struct ns_cluster_config *c,
                         char *err, size_t errlen)
{
    if (obj == NULL) {
        return 0;
    }
    if (!cJSON_IsObject(obj)) {
        ns_errf(err, errlen, "\"namesrv\" must be an object");
        return NS_EPROTO;
    }
    const cJSON *kv;
    cJSON_ArrayForEach(kv, obj)
    {
        char num[32];
        const char *value = NULL;
        if (cJSON_IsString(kv)) {
            value = kv->valuestring;
        } else if (cJSON_IsBool(kv)) {
            value = cJSON_IsTrue(kv) ? "true" : "false";
        } else if (cJSON_IsNumber(kv)) {
            snprintf(num, sizeof num, "%.0f", kv->valuedouble);
            value = num;
        } else {
            ns_errf(err, errlen,
                    "namesrv.%s must be a string, number or boolean",
                    kv->string);
            return NS_EPROTO;
        }
        if (ns_props_set(&c->namesrv, kv->string, value) != 0) {
            return NS_ENOMEM;
        }
    }
    return 0;
}

static int parse_networks(const cJSON *arr, struct ns_acl_account *a,
                          size_t idx, char *err, size_t errlen)
{
    if (arr == NULL) {
        return 0;
    }
    int n = cJSON_GetArraySize(arr);
    if (!cJSON_IsArray(arr) || n > NS_ACL_MAX_NETS) {
        ns_errf(err, errlen,
                "acl.accounts[%zu].networks must be an array of "
                "at most %d CIDR strings",
                idx, NS_ACL_MAX_NETS);
        return NS_EPROTO;
    }
    if (n == 0) {
        return 0;
    }
    if ((a->nets = ns_calloc((size_t)n, sizeof *a->nets)) == NULL) {
        return NS_ENOMEM;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        if (!cJSON_IsString(it) ||
            ns_acl_net_parse(it->valuestring, &a->nets[a->n_nets]) != 0) {
            ns_errf(err, errlen,
                    "acl.accounts[%zu].networks: not an IPv4 "
                    "CIDR (a.b.c.d/p)",
                    idx);
            return NS_EPROTO;
        }
        a->n_nets++;
    }
    return 0;
}

static int parse_account(const cJSON *obj, struct ns_acl_account *a, size_t idx,
                         char *err, size_t errlen)
{
    const cJSON *ak = cJSON_GetObjectItemCaseSensitive(obj, "accessKey");
    const cJSON *sk = cJSON_GetObjectItemCaseSensitive(obj, "secretKey");
    const cJSON *role = cJSON_GetObjectItemCaseSensitive(obj, "role");
    if (!cJSON_IsObject(obj) || !cJSON_IsString(ak) || !cJSON_IsString(sk) ||
        !cJSON_IsString(role)) {
        ns_errf(err, errlen,
                "acl.accounts[%zu] needs string accessKey, "
                "secretKey and role",
                idx);
        return NS_EPROTO;
    }
    if (ns_acl_role_parse(role->valuestring, &a->role) != 0) {
        ns_errf(err, errlen,
                "acl.accounts[%zu].role must be admin, broker "
                "or reader",
                idx);
        return NS_EPROTO;
    }
    a->access_key = ns_strdup(ak->valuestring);
    a->secret_key = ns_strdup(sk->valuestring);
    if (a->access_key == NULL || a->secret_key == NULL) {
        return NS_ENOMEM;
    }
    int rv = parse_networks(cJSON_GetObjectItemCaseSensitive(obj, "networks"),
                            a, idx, err, errlen);
    const char *why = NULL;
    if (rv == 0 && ns_acl_account_validate(a, &why) != 0) {
        ns_errf(err, errlen, "acl.accounts[%zu]: %s", idx, why);
        rv = NS_EPROTO;
    }
    return rv;
}

static int parse_acl(const cJSON *obj, struct ns_cluster_config *c, char *err,
                     size_t errlen)
{
    if (obj == NULL) {
        return 0;
    }
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(obj, "accounts");
    int n = cJSON_GetArraySize(arr);
    if (!cJSON_IsObject(obj) || (arr != NULL && !cJSON_IsArray(arr)) ||
        n > NS_ACL_MAX_ACCOUNTS) {
        ns_errf(err, errlen,
                "\"acl\" must be {\"accounts\": [...]} with at "
                "most %d accounts",
                NS_ACL_MAX_ACCOUNTS);
        return NS_EPROTO;
    }
    if (n == 0) {
        return 0;
    }
    c->acl_accounts = ns_calloc((size_t)n, sizeof *c->acl_accounts);
    if (c->acl_accounts == NULL) {
        return NS_ENOMEM;
    }
    const cJSON *it;
    cJSON_ArrayForEach(it, arr)
    {
        size_t i = c->n_acl_accounts++;
        int rv = parse_account(it, &c->acl_accounts[i], i, err, errlen);
        if (rv != 0) {
            return rv;
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(c->acl_accounts[j].access_key,
                       c->acl_accounts[i].access_key) == 0) {
                ns_errf(err, errlen, "acl.accounts[%zu]: duplicate accessKey",
                        i);
                return NS_EPROTO;
            }
        }
    }
    return 0;
}

int ns_cluster_config_parse(const char *text, size_t len,
                            struct ns_cluster_config *c, char *err,
                            size_t errlen)
{
    int rv = NS_EPROTO;
    ns_errf(err, errlen, "ok");
    if (len > NS_CLUSTER_FILE_MAX) {
        ns_errf(err, errlen, "file larger than %u bytes", NS_CLUSTER_FILE_MAX);
        return NS_EPROTO;
    }
    cJSON *root = cJSON_ParseWithLength(text, len);
    if (root == NULL) {
        ns_errf(err, errlen, "not valid JSON");
        return NS_EPROTO;
    }
    if (!cJSON_IsObject(root)) {
        ns_errf(err, errlen, "top level must be an object");
        goto err_after_root;
    }
    /* every top-level key read below: a key added to the parse goes here too */
    static const char *const known[] = {
        "secret",         "secretFile",        "electionTimeoutMs",
        "heartbeatMs",    "snapshotThreshold", "snapshotBytes",
        "nodes",          "namesrv",           "acl",
        "forkStateBytes", "commandVersion",    NULL};
    if (check_keys(root, known, "", err, errlen) != 0) {
        goto err_after_root;
    }
    const cJSON *secret = cJSON_GetObjectItemCaseSensitive(root, "secret");
    if (secret != NULL && !cJSON_IsString(secret)) {
        ns_errf(err, errlen, "\"secret\" must be a string");
        goto err_after_root;
    }
    const cJSON *secret_file =
        cJSON_GetObjectItemCaseSensitive(root, "secretFile");
    if (secret_file != NULL &&
        (!cJSON_IsString(secret_file) || secret_file->valuestring[0] == '\0')) {
        ns_errf(err, errlen, "\"secretFile\" must be a non-empty path");
        goto err_after_root;
    }
    if (secret_file != NULL && secret != NULL) {
        ns_errf(err, errlen, "give \"secret\" or \"secretFile\", not both");
        goto err_after_root;
    }
    c->secret = ns_strdup(secret != NULL ? secret->valuestring : "");
    if (c->secret == NULL ||
        (secret_file != NULL &&
         (c->secret_file = ns_strdup(secret_file->valuestring)) == NULL)) {
        rv = NS_ENOMEM;
        goto err_after_root;
    }
    rv = get_uint(root, "electionTimeoutMs", 600000, &c->election_timeout_ms,
                  err, errlen);
    if (rv == 0) {
        rv = get_uint(root, "heartbeatMs", 600000, &c->heartbeat_ms, err,
                      errlen);
    }
    if (rv == 0) {
        rv = get_uint(root, "snapshotThreshold", 1u << 30,
                      &c->snapshot_threshold, err, errlen);
    }
    if (rv == 0) {
        rv = get_uint(root, "snapshotBytes", 1u << 30, &c->snapshot_bytes, err,
                      errlen);
    }
    if (rv == 0) {
        rv = get_uint(root, "forkStateBytes", 1u << 30, &c->fork_state_bytes,
                      err, errlen);
    }
    if (rv == 0) {
        rv = get_command_version(root, &c->command_version, err, errlen);
    }
    if (rv == 0) {
        rv = parse_nodes(cJSON_GetObjectItemCaseSensitive(root, "nodes"), c,
                         err, errlen);
    }
    if (rv == 0) {
        rv = parse_namesrv(cJSON_GetObjectItemCaseSensitive(root, "namesrv"), c,
                           err, errlen);
    }
    if (rv == 0) {
        rv = parse_acl(cJSON_GetObjectItemCaseSensitive(root, "acl"), c, err,
                       errlen);
    }
err_after_root:
    cJSON_Delete(root);
    if (rv != 0) {
        ns_cluster_config_close(c);
    }
    return rv;
}

const struct ns_cluster_node *
ns_cluster_config_find(const struct ns_cluster_config *c, uint64_t id)
{
    for (size_t i = 0; i < c->n_nodes; i++) {
        if (c->nodes[i].id == id) {
            return &c->nodes[i];
        }
    }
    return NULL;
}
