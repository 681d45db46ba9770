/* NamesrvConfig + NettyServerConfig settings (docs/protocol.md §6) as typed
 * key/value state with Java's defaults, parsing rules and protected keys (§7).
 * Path settings are shown as values but never used as paths; nothing here reads
 * or writes a file. Pure. */
#include "raftns/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <strings.h>

#include "raftns/alloc.h"
#include "raftns/decimal.h"
#include "raftns/err.h"
#include "raftns/sorted.h"

#define CONFIG_STATE_VERSION 1

enum setting_type { T_BOOL, T_INT, T_LONG, T_DOUBLE, T_STRING };

/* Characters a string setting may hold. */
enum charset {
    CS_NONE,  /* not a string */
    CS_TOKEN, /* [A-Za-z0-9._-] */
    CS_HOST,  /* [A-Za-z0-9.:-]: an IPv4/IPv6 literal or a host name */
    CS_LIST,  /* ';'-separated key names: [A-Za-z0-9._; -] */
    CS_TEXT,  /* printable ASCII and UTF-8, no control characters */
};

/* Flags of a setting. */
#define F_RUNTIME 1u /* 318 may change it: read per request or per timer */
#define F_LOCAL 2u   /* this node's start-up limit, never replicated */

#define KIB 1024LL
#define MIB (1024LL * 1024LL)
#define GIB (1024LL * 1024LL * 1024LL)

/* The validation table: type, default, allowed range (integers: [min, max];
 * strings: at most max bytes of charset cs), and whether 318 may change the
 * key at run time. Everything else is a start-up setting (Java reads it once):
 * it may come from --set or the cluster file only. */
struct known_setting {
    const char *key;
    enum setting_type type;
    const char *dflt;
    int64_t min, max;
    enum charset cs;
    unsigned flags;
};

#define BOOL_RT(k, d)                                                          \
    {                                                                          \
        k, T_BOOL, d, 0, 0, CS_NONE, F_RUNTIME                                 \
    }
#define BOOL_ST(k, d)                                                          \
    {                                                                          \
        k, T_BOOL, d, 0, 0, CS_NONE, 0                                         \
    }
#define INT_RT(k, d, lo, hi)                                                   \
    {                                                                          \
        k, T_INT, d, lo, hi, CS_NONE, F_RUNTIME                                \
    }
#define INT_ST(k, d, lo, hi)                                                   \
    {                                                                          \
        k, T_INT, d, lo, hi, CS_NONE, 0                                        \
    }
#define STR_ST(k, d, n, cs)                                                    \
    {                                                                          \
        k, T_STRING, d, 0, n, cs, 0                                            \
    }

/* Sorted by key: the 319 text and the state encoding walk this order. */
static const struct known_setting KNOWN[] = {
    STR_ST("bindAddress", "0.0.0.0", 253, CS_HOST),
    INT_ST("clientRequestThreadPoolNums", "8", 1, 1024),
    INT_ST("clientRequestThreadPoolQueueCapacity", "50000", 1, 10000000),
    BOOL_ST("clusterTest", "false"),
    STR_ST("configBlackList", "configBlackList;configStorePath;kvConfigPath",
           4096, CS_LIST),
    STR_ST("configStorePath", "~/namesrv/namesrv.properties", 4096, CS_TEXT),
    INT_ST("defaultThreadPoolNums", "16", 1, 1024),
    INT_ST("defaultThreadPoolQueueCapacity", "10000", 1, 10000000),
    BOOL_RT("deleteTopicWithBrokerRegistration", "false"),
    BOOL_RT("enableAllTopicList", "true"),
    BOOL_ST("enableControllerInNamesrv", "false"),
    BOOL_ST("enableShutdownGracefully", "false"),
    BOOL_RT("enableTopicList", "true"),
    STR_ST("kvConfigPath", "~/namesrv/kvConfig.json", 4096, CS_TEXT),
    INT_ST("listenPort", "9876", 1, 65535),
    BOOL_RT("needWaitForService", "false"),
    BOOL_RT("notifyMinBrokerIdChanged", "false"),
    BOOL_RT("orderMessageEnable", "false"),
    {"productEnvName", T_STRING, "center", 0, 64, CS_TOKEN, F_RUNTIME},
    BOOL_RT("returnOrderTopicConfigToBroker", "true"),
    STR_ST("rocketmqHome", "", 4096, CS_TEXT),
    /* Below 1 s the scan is busy work; above 10 min dead brokers linger. */
    {"scanNotActiveBrokerInterval", T_LONG, "5000", 1000, 600000, CS_NONE,
     F_RUNTIME},
    INT_ST("serverAsyncSemaphoreValue", "64", 1, 65535),
    INT_ST("serverCallbackExecutorThreads", "0", 0, 1024),
    /* Below 30 s, brokers (heartbeat every 30 s) are dropped between two
     * registrations; a day is the longest idle a client is worth. */
    INT_RT("serverChannelMaxIdleTimeSeconds", "120", 30, 86400),
    BOOL_ST("serverNettyWorkerGroupEnable", "true"),
    INT_ST("serverOnewaySemaphoreValue", "256", 1, 65535),
    BOOL_ST("serverPooledByteBufAllocatorEnable", "true"),
    INT_ST("serverSelectorThreads", "3", 1, 1024),
    INT_ST("serverSocketBacklog", "1024", 1, 65535),
    INT_ST("serverSocketRcvBufSize", "0", 0, 64 * MIB),
    INT_ST("serverSocketSndBufSize", "0", 0, 64 * MIB),
    INT_ST("serverWorkerThreads", "8", 1, 1024),
    INT_ST("shutdownWaitTimeSeconds", "30", 0, 3600),
    BOOL_RT("supportActingMaster", "false"),
    INT_ST("unRegisterBrokerQueueCapacity", "3000", 1, 10000000),
    BOOL_ST("useEpollNativeSelector", "false"),
    /* An hour without route answers after a start is already an outage. */
    INT_RT("waitSecondsForService", "45", 0, 3600),
    INT_ST("writeBufferHighWaterMark", "0", 0, GIB),
    INT_ST("writeBufferLowWaterMark", "0", 0, GIB),
};
#define N_KNOWN (sizeof KNOWN / sizeof KNOWN[0])

/* This node's client limits (conn.c): start-up only, and never part of the
 * replicated state or the 319 text, so nodes may differ and the snapshot format
 * and digest stay as they were. */
static const struct known_setting LOCAL[] = {
    /* At least two maximum frames, so one big request always fits. */
    {"clientBufferBudgetBytes", T_LONG, "268435456", 32 * MIB, 64 * GIB,
     CS_NONE, F_LOCAL},
    {"clientMaxConnections", T_INT, "10000", 1, 1000000, CS_NONE, F_LOCAL},
    {"clientMaxConnectionsPerIp", T_INT, "1000", 1, 1000000, CS_NONE, F_LOCAL},
    /* ACL (src/gateway/acl_gate.c): node-local so no request can turn it off */
    {"aclEnable", T_BOOL, "false", 0, 0, CS_NONE, F_LOCAL},
    {"aclAnonymousRead", T_BOOL, "true", 0, 0, CS_NONE, F_LOCAL},
    {"aclBrokerNetworks", T_STRING, "", 0, 4096, CS_TEXT, F_LOCAL},
    /* TLS (src/net/conn_tls.c), in raftns's and in Java's spelling */
    {"tlsMode", T_STRING, "", 0, 32, CS_TOKEN, F_LOCAL},
    {"tlsServerCertPath", T_STRING, "", 0, 4096, CS_TEXT, F_LOCAL},
    {"tlsServerKeyPath", T_STRING, "", 0, 4096, CS_TEXT, F_LOCAL},
    {"tlsServerTrustCertPath", T_STRING, "", 0, 4096, CS_TEXT, F_LOCAL},
    {"tlsServerNeedClientAuth", T_STRING, "", 0, 32, CS_TOKEN, F_LOCAL},
    {"httpTls", T_BOOL, "false", 0, 0, CS_NONE, F_LOCAL},
    {"raftTls", T_STRING, "", 0, 32, CS_TOKEN, F_LOCAL}, /* raft peer port */
    /* The controller's (src/controller/, docs/controller.md): node-local as
     * Java's ControllerConfig; enableControllerInNamesrv is above. */
    {"enableElectUncleanMaster", T_BOOL, "false", 0, 0, CS_NONE, F_LOCAL},
    {"notifyBrokerRoleChanged", T_BOOL, "true", 0, 0, CS_NONE, F_LOCAL},
    {"scanInactiveMasterInterval", T_LONG, "5000", 100, 600000, CS_NONE,
     F_LOCAL},
    {"electMasterMaxRetryCount", T_INT, "3", 0, 100, CS_NONE, F_LOCAL},
    {"controllerDLegerGroup", T_STRING, "DefaultControllerGroup", 0, 127,
     CS_TOKEN, F_LOCAL},
    {"controllerDLegerPeers", T_STRING, "", 0, 1024, CS_TEXT, F_LOCAL},
    {"tls.server.mode", T_STRING, "", 0, 32, CS_TOKEN, F_LOCAL},
    {"tls.server.certPath", T_STRING, "", 0, 4096, CS_TEXT, F_LOCAL},
    {"tls.server.keyPath", T_STRING, "", 0, 4096, CS_TEXT, F_LOCAL},
    {"tls.server.trustCertPath", T_STRING, "", 0, 4096, CS_TEXT, F_LOCAL},
    {"tls.server.need.client.auth", T_STRING, "", 0, 32, CS_TOKEN, F_LOCAL},
};
#define N_LOCAL (sizeof LOCAL / sizeof LOCAL[0])

struct setting {
    char *key;   /* owned */
    char *value; /* owned, canonical text of the typed value */
    enum setting_type type;
};

struct ns_config {
    struct setting *items; /* sorted by key */
    size_t n;
    struct ns_settings settings;
    uint64_t generation;
};

static size_t search(const struct ns_config *cfg, const char *key, bool *found)
{
    return ns_sorted_search(cfg->items, cfg->n, sizeof *cfg->items,
                            offsetof(struct setting, key), key, found);
}

static struct setting *find(const struct ns_config *cfg, const char *key)
{
    bool found;
    size_t i = search(cfg, key, &found);
    return found ? &cfg->items[i] : NULL;
}

static const struct known_setting *find_rule(const char *key)
{
    for (size_t i = 0; i < N_KNOWN; i++) {
        if (strcmp(KNOWN[i].key, key) == 0) {
            return &KNOWN[i];
        }
    }
    for (size_t i = 0; i < N_LOCAL; i++) {
        if (strcmp(LOCAL[i].key, key) == 0) {
            return &LOCAL[i];
        }
    }
    return NULL;
}

static int64_t clamp(const struct known_setting *rule, int64_t v)
{
    return v < rule->min ? rule->min : v > rule->max ? rule->max : v;
}

static bool get_bool(const struct ns_config *cfg, const char *key)
{
    const struct setting *s = find(cfg, key);
    return s != NULL && strcmp(s->value, "true") == 0;
}

/* The value as the server uses it: within the table's range even when a
 * command applied before validation existed stored one outside it (the stored
 * text, and so the replicated state, stays as it was applied). */
static int64_t get_long(const struct ns_config *cfg, const char *key)
{
    const struct setting *s = find(cfg, key);
    const struct known_setting *rule = find_rule(key);
    int64_t v = strtoll(s != NULL ? s->value : rule->dflt, NULL, 10);
    return clamp(rule, v);
}

static void refresh_settings(struct ns_config *cfg)
{
    struct ns_settings *st = &cfg->settings;
    st->order_message_enable = get_bool(cfg, "orderMessageEnable");
    st->return_order_topic_config_to_broker =
        get_bool(cfg, "returnOrderTopicConfigToBroker");
    st->support_acting_master = get_bool(cfg, "supportActingMaster");
    st->enable_all_topic_list = get_bool(cfg, "enableAllTopicList");
    st->enable_topic_list = get_bool(cfg, "enableTopicList");
    st->need_wait_for_service = get_bool(cfg, "needWaitForService");
    st->wait_seconds_for_service = get_long(cfg, "waitSecondsForService");
    st->delete_topic_with_broker_registration =
        get_bool(cfg, "deleteTopicWithBrokerRegistration");
    st->scan_not_active_broker_interval_ms =
        get_long(cfg, "scanNotActiveBrokerInterval");
    st->server_channel_max_idle_time_seconds =
        get_long(cfg, "serverChannelMaxIdleTimeSeconds");
}

struct ns_config *ns_config_create(void)
{
    struct ns_config *cfg = ns_calloc(1, sizeof *cfg);
    if (cfg == NULL) {
        return NULL;
    }
    cfg->items = ns_calloc(N_KNOWN, sizeof *cfg->items);
    if (cfg->items == NULL) {
        goto err_after_cfg;
    }
    for (size_t i = 0; i < N_KNOWN; i++) {
        struct setting *s = &cfg->items[i];
        s->type = KNOWN[i].type;
        s->key = ns_strdup(KNOWN[i].key);
        s->value = ns_strdup(KNOWN[i].dflt);
        cfg->n++;
        if (s->key == NULL || s->value == NULL) {
            goto err_after_cfg;
        }
    }
    refresh_settings(cfg);
    return cfg;

err_after_cfg:
    ns_config_destroy(cfg);
    return NULL;
}

void ns_config_destroy(struct ns_config *cfg)
{
    if (cfg == NULL) {
        return;
    }
    for (size_t i = 0; i < cfg->n; i++) {
        ns_free(cfg->items[i].key);
        ns_free(cfg->items[i].value);
    }
    ns_free(cfg->items);
    ns_free(cfg);
}

const struct ns_settings *ns_config_settings(const struct ns_config *cfg)
{
    return &cfg->settings;
}

const char *ns_config_get(const struct ns_config *cfg, const char *key)
{
    const struct setting *s = find(cfg, key);
    return s ? s->value : NULL;
}

/* Is key one of the ';'-separated (trimmed) names of list? */
static bool list_contains(const char *list, const char *key)
{
    size_t klen = strlen(key);
    const char *p = list;
    while (*p != '\0') {
        const char *end = strchr(p, ';');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        const char *b = p, *e = p + n;
        while (b < e && (unsigned char)*b <= ' ') {
            b++;
        }
        while (e > b && (unsigned char)e[-1] <= ' ') {
            e--;
        }
        if ((size_t)(e - b) == klen && memcmp(b, key, klen) == 0) {
            return true;
        }
        if (end == NULL) {
            break;
        }
        p = end + 1;
    }
    return false;
}

static bool is_protected(const struct ns_config *cfg, const char *key)
{
    const char *black = ns_config_get(cfg, "configBlackList");
    return strcmp(key, "rocketmqHome") == 0 ||
           (black != NULL && list_contains(black, key));
}

bool ns_config_is_protected_update(const struct ns_config *cfg,
                                   const struct ns_props *props)
{
    for (size_t i = 0; i < props->n; i++) {
        if (is_protected(cfg, props->items[i].key)) {
            return true;
        }
    }
    return false;
}

/* Java's Integer/Long.parseLong: optional sign, ASCII decimal digits only,
 * range-checked. */
static bool parse_java_long(const char *s, int64_t min, int64_t max,
                            int64_t *out)
{
    return ns_decimal_parse(s, strlen(s), NS_DECIMAL_SIGN, min, max, out);
}

/* The canonical text Java would show for value parsed as type, or NULL when it
 * does not parse (Java ignores the update). Owned. *bad is set when the value
 * was rejected. */
static char *canonical_value(enum setting_type type, const char *value,
                             bool *bad)
{
    char num[32];
    int64_t v;
    *bad = false;
    switch (type) {
    case T_BOOL:
        /* Boolean.parseBoolean: "true" in any case, anything else false. */
        return ns_strdup(strcasecmp(value, "true") == 0 ? "true" : "false");
    case T_INT:
    case T_LONG:
        if (!parse_java_long(value, type == T_INT ? INT32_MIN : INT64_MIN,
                             type == T_INT ? INT32_MAX : INT64_MAX, &v)) {
            *bad = true;
            return NULL;
        }
        snprintf(num, sizeof num, "%lld", (long long)v);
        return ns_strdup(num);
    case T_DOUBLE: {
        char *end;
        (void)strtod(value, &end);
        if (*value == '\0' || *end != '\0') {
            *bad = true;
            return NULL;
        }
        return ns_strdup(value);
    }
    case T_STRING:
        break;
    }
    return ns_strdup(value);
}

/* Inserts a new string-typed key at its sorted place. */
static int add_setting(struct ns_config *cfg, const char *key,
                       const char *value)
{
    bool found;
    size_t i = search(cfg, key, &found);
    char *k = ns_strdup(key), *v = ns_strdup(value);
    struct setting *items =
        k && v ? ns_realloc(cfg->items, (cfg->n + 1) * sizeof *items) : NULL;
    if (items == NULL) {
        ns_free(k);
        ns_free(v);
        return NS_ENOMEM;
    }
    cfg->items = items;
    memmove(&items[i + 1], &items[i], (cfg->n - i) * sizeof *items);
    items[i].key = k;
    items[i].value = v;
    items[i].type = T_STRING;
    cfg->n++;
    return 0;
}

int ns_config_update(struct ns_config *cfg, const struct ns_props *props,
                     bool allow_new_keys)
{
    int rv = 0;
    bool changed = false;
    for (size_t i = 0; i < props->n && rv == 0; i++) {
        const struct ns_prop *p = &props->items[i];
        /* Start-up files (allow_new_keys) are trusted and may set protected
         * keys. */
        if (!allow_new_keys && is_protected(cfg, p->key)) {
            continue;
        }
        const struct known_setting *rule = find_rule(p->key);
        if (rule != NULL && (rule->flags & F_LOCAL) != 0) {
            continue; /* never replicated: see ns_config_client_limits_update */
        }
        struct setting *s = find(cfg, p->key);
        if (s == NULL) {
            if (allow_new_keys) {
                rv = add_setting(cfg, p->key, p->value);
                changed = changed || rv == 0;
            }
            continue;
        }
        bool bad;
        char *v = canonical_value(s->type, p->value, &bad);
        if (bad) {
            continue;
        }
        if (v == NULL) {
            rv = NS_ENOMEM;
            break;
        }
        if (strcmp(v, s->value) == 0) {
            ns_free(v);
            continue;
        }
        ns_free(s->value);
        s->value = v;
        changed = true;
    }
    if (changed) {
        cfg->generation++;
        refresh_settings(cfg);
    }
    return rv;
}

/* --- validation (318, --set, the cluster file) --- */

static bool in_charset(enum charset cs, unsigned char ch)
{
    bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                 (ch >= '0' && ch <= '9');
    switch (cs) {
    case CS_TOKEN:
        return alnum || ch == '.' || ch == '_' || ch == '-';
    case CS_HOST:
        return alnum || ch == '.' || ch == ':' || ch == '-';
    case CS_LIST:
        return alnum || ch == '.' || ch == '_' || ch == '-' || ch == ';' ||
               ch == ' ';
    case CS_TEXT:
        return ch >= 0x20 && ch != 0x7f;
    case CS_NONE:
        break;
    }
    return false;
}

static const char *charset_text(enum charset cs)
{
    switch (cs) {
    case CS_TOKEN:
        return "[A-Za-z0-9._-]";
    case CS_HOST:
        return "[A-Za-z0-9.:-]";
    case CS_LIST:
        return "[A-Za-z0-9._- ] separated by ';'";
    case CS_TEXT:
    case CS_NONE:
        break;
    }
    return "printable characters";
}

static bool value_ok(const struct known_setting *rule, const char *value)
{
    int64_t v;
    size_t len = strlen(value);
    switch (rule->type) {
    case T_BOOL:
        return strcasecmp(value, "true") == 0 ||
               strcasecmp(value, "false") == 0;
    case T_INT:
    case T_LONG:
        return parse_java_long(value, INT64_MIN, INT64_MAX, &v) &&
               v >= rule->min && v <= rule->max;
    case T_DOUBLE:
        break;
    case T_STRING:
        if (len > (size_t)rule->max ||
            (len == 0 && (rule->cs == CS_TOKEN || rule->cs == CS_HOST))) {
            return false;
        }
        for (size_t i = 0; i < len; i++) {
            if (!in_charset(rule->cs, (unsigned char)value[i])) {
                return false;
            }
        }
        return true;
    }
    return false;
}

/* A short printable copy of untrusted text for a remark. */
static void shown(char *out, size_t size, const char *text)
{
    size_t n = 0, max = size > 4 ? size - 4 : 0;
    for (const char *p = text; *p != '\0' && n < max; p++) {
        unsigned char ch = (unsigned char)*p;
        out[n++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
    }
    if (strlen(text) > n) {
        memcpy(out + n, "...", 3);
        n += 3;
    }
    out[n] = '\0';
}

static int refuse(char *errmsg, size_t size, const struct ns_prop *p,
                  const struct known_setting *rule, bool runtime)
{
    char key[64], value[48];
    shown(key, sizeof key, p->key);
    shown(value, sizeof value, p->value);
    if (errmsg == NULL || size == 0) {
        return NS_EINVAL;
    }
    if (rule == NULL) {
        snprintf(errmsg, size, "%s: unknown setting", key);
    } else if (runtime && (rule->flags & F_RUNTIME) == 0) {
        snprintf(errmsg, size,
                 "%s: a start-up setting, read once at start; set it with "
                 "--set or the cluster file's namesrv section and restart",
                 key);
    } else if (rule->type == T_BOOL) {
        snprintf(errmsg, size, "%s=%s: must be true or false", key, value);
    } else if (rule->type == T_STRING) {
        snprintf(errmsg, size, "%s=%s: must be %sat most %lld bytes of %s", key,
                 value,
                 rule->cs == CS_TOKEN || rule->cs == CS_HOST ? "non-empty, "
                                                             : "",
                 (long long)rule->max, charset_text(rule->cs));
    } else {
        snprintf(errmsg, size, "%s=%s: must be an integer in [%lld, %lld]", key,
                 value, (long long)rule->min, (long long)rule->max);
    }
    return NS_EINVAL;
}

int ns_config_validate(const struct ns_props *props,
                       enum ns_config_origin origin, char *errmsg,
                       size_t errmsg_size)
{
    bool runtime = origin == NS_CONFIG_AT_RUNTIME;
    for (size_t i = 0; i < props->n; i++) {
        const struct ns_prop *p = &props->items[i];
        const struct known_setting *rule = find_rule(p->key);
        if (rule == NULL || (runtime && (rule->flags & F_RUNTIME) == 0) ||
            !value_ok(rule, p->value)) {
            return refuse(errmsg, errmsg_size, p, rule, runtime);
        }
    }
    return 0;
}

bool ns_config_is_runtime_key(const char *key)
{
    const struct known_setting *rule = find_rule(key);
    return rule != NULL && (rule->flags & F_RUNTIME) != 0;
}

/* --- this node's client limits --- */

static int64_t local_default(const char *key)
{
    return strtoll(find_rule(key)->dflt, NULL, 10);
}

void ns_config_client_limits_init(struct ns_client_limits *l)
{
    l->max_connections = local_default("clientMaxConnections");
    l->max_connections_per_ip = local_default("clientMaxConnectionsPerIp");
    l->buffer_budget_bytes = local_default("clientBufferBudgetBytes");
}

void ns_config_client_limits_update(struct ns_client_limits *l,
                                    const struct ns_props *props)
{
    for (size_t i = 0; i < props->n; i++) {
        const struct ns_prop *p = &props->items[i];
        const struct known_setting *rule = find_rule(p->key);
        int64_t v;
        if (rule == NULL || (rule->flags & F_LOCAL) == 0 ||
            !parse_java_long(p->value, INT64_MIN, INT64_MAX, &v)) {
            continue;
        }
        v = clamp(rule, v);
        if (strcmp(p->key, "clientMaxConnections") == 0) {
            l->max_connections = v;
        } else if (strcmp(p->key, "clientMaxConnectionsPerIp") == 0) {
            l->max_connections_per_ip = v;
        } else if (strcmp(p->key, "clientBufferBudgetBytes") == 0) {
            l->buffer_budget_bytes = v;
        }
    }
}

static const char *local_value(const struct ns_props *local, const char *key)
{
    for (size_t i = 0; local != NULL && i < local->n; i++) {
        if (strcmp(local->items[i].key, key) == 0) {
            return local->items[i].value;
        }
    }
    return NULL;
}

int ns_config_encode_properties_local(const struct ns_config *cfg,
                                      const struct ns_props *local,
                                      struct ns_buf *out)
{
    for (size_t i = 0; i < cfg->n; i++) {
        const char *mine = local_value(local, cfg->items[i].key);
        ns_buf_append_str(out, cfg->items[i].key);
        ns_buf_put_u8(out, '=');
        ns_buf_append_str(out, mine != NULL ? mine : cfg->items[i].value);
        ns_buf_put_u8(out, '\n');
    }
    return out->err;
}

int ns_config_encode_properties(const struct ns_config *cfg, struct ns_buf *out)
{
    return ns_config_encode_properties_local(cfg, NULL, out);
}

uint64_t ns_config_generation(const struct ns_config *cfg)
{
    return cfg->generation;
}

/* Layout: u16 version, u32 n, then n sorted (str key, str value) pairs. */
int ns_config_encode_state(const struct ns_config *cfg, struct ns_buf *out)
{
    ns_buf_put_u16(out, CONFIG_STATE_VERSION);
    ns_buf_put_u32(out, (uint32_t)cfg->n);
    for (size_t i = 0; i < cfg->n; i++) {
        ns_buf_put_str(out, cfg->items[i].key);
        ns_buf_put_str(out, cfg->items[i].value);
    }
    return out->err;
}

/* Values are taken as encoded (they were canonical when stored); keys not in
 * the state keep their current value, unknown ones are added. */
int ns_config_decode_state(struct ns_config *cfg, struct ns_rd *in)
{
    uint16_t version = ns_rd_u16(in);
    uint32_t count = ns_rd_u32(in);
    if (in->err) {
        return NS_EPROTO;
    }
    if (version != CONFIG_STATE_VERSION) {
        return version > CONFIG_STATE_VERSION ? NS_EVERSION : NS_EPROTO;
    }
    if (count > ns_rd_left(in) / 8) {
        return NS_EPROTO;
    }
    int rv = 0;
    for (uint32_t i = 0; i < count && rv == 0; i++) {
        char *key = NULL, *value = NULL;
        rv = ns_rd_str(in, &key);
        if (rv == 0) {
            rv = ns_rd_str(in, &value);
        }
        if (rv == 0 && (key == NULL || value == NULL)) {
            rv = NS_EPROTO;
        }
        struct setting *s = rv == 0 ? find(cfg, key) : NULL;
        if (s != NULL) {
            ns_free(s->value);
            s->value = value;
            value = NULL;
        } else if (rv == 0) {
            rv = add_setting(cfg, key, value);
        }
        ns_free(key);
        ns_free(value);
    }
    if (rv == 0) {
        refresh_settings(cfg);
    }
    return rv;
}
