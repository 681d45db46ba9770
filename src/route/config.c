/* NamesrvConfig + NettyServerConfig settings (PROTOCOL.md §6) as typed
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
#include "raftns/err.h"
#include "raftns/sorted.h"

#define CONFIG_STATE_VERSION 1

enum setting_type { T_BOOL, T_INT, T_LONG, T_DOUBLE, T_STRING };

struct known_setting {
    const char *key;
    enum setting_type type;
    const char *dflt;
};

/* Sorted by key: the 319 text and the state encoding walk this order. */
static const struct known_setting KNOWN[] = {
    {"bindAddress", T_STRING, "0.0.0.0"},
    {"clientRequestThreadPoolNums", T_INT, "8"},
    {"clientRequestThreadPoolQueueCapacity", T_INT, "50000"},
    {"clusterTest", T_BOOL, "false"},
    {"configBlackList", T_STRING,
     "configBlackList;configStorePath;kvConfigPath"},
    {"configStorePath", T_STRING, "~/namesrv/namesrv.properties"},
    {"defaultThreadPoolNums", T_INT, "16"},
    {"defaultThreadPoolQueueCapacity", T_INT, "10000"},
    {"deleteTopicWithBrokerRegistration", T_BOOL, "false"},
    {"enableAllTopicList", T_BOOL, "true"},
    {"enableControllerInNamesrv", T_BOOL, "false"},
    {"enableShutdownGracefully", T_BOOL, "false"},
    {"enableTopicList", T_BOOL, "true"},
    {"kvConfigPath", T_STRING, "~/namesrv/kvConfig.json"},
    {"listenPort", T_INT, "9876"},
    {"needWaitForService", T_BOOL, "false"},
    {"notifyMinBrokerIdChanged", T_BOOL, "false"},
    {"orderMessageEnable", T_BOOL, "false"},
    {"productEnvName", T_STRING, "center"},
    {"returnOrderTopicConfigToBroker", T_BOOL, "true"},
    {"rocketmqHome", T_STRING, ""},
    {"scanNotActiveBrokerInterval", T_LONG, "5000"},
    {"serverAsyncSemaphoreValue", T_INT, "64"},
    {"serverCallbackExecutorThreads", T_INT, "0"},
    {"serverChannelMaxIdleTimeSeconds", T_INT, "120"},
    {"serverNettyWorkerGroupEnable", T_BOOL, "true"},
    {"serverOnewaySemaphoreValue", T_INT, "256"},
    {"serverPooledByteBufAllocatorEnable", T_BOOL, "true"},
    {"serverSelectorThreads", T_INT, "3"},
    {"serverSocketBacklog", T_INT, "1024"},
    {"serverSocketRcvBufSize", T_INT, "0"},
    {"serverSocketSndBufSize", T_INT, "0"},
    {"serverWorkerThreads", T_INT, "8"},
    {"shutdownWaitTimeSeconds", T_INT, "30"},
    {"supportActingMaster", T_BOOL, "false"},
    {"unRegisterBrokerQueueCapacity", T_INT, "3000"},
    {"useEpollNativeSelector", T_BOOL, "false"},
    {"waitSecondsForService", T_INT, "45"},
    {"writeBufferHighWaterMark", T_INT, "0"},
    {"writeBufferLowWaterMark", T_INT, "0"},
};
#define N_KNOWN (sizeof KNOWN / sizeof KNOWN[0])

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

static bool get_bool(const struct ns_config *cfg, const char *key)
{
    const struct setting *s = find(cfg, key);
    return s != NULL && strcmp(s->value, "true") == 0;
}

static int64_t get_long(const struct ns_config *cfg, const char *key)
{
    const struct setting *s = find(cfg, key);
    return s != NULL ? strtoll(s->value, NULL, 10) : 0;
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

/* Java's Integer/Long.parseLong: optional sign, decimal digits only,
 * range-checked. */
static bool parse_java_long(const char *s, int64_t min, int64_t max,
                            int64_t *out)
{
    const char *p = s;
    bool neg = false;
    if (*p == '+' || *p == '-') {
        neg = *p == '-';
        p++;
    }
    if (*p == '\0') {
        return false;
    }
    uint64_t limit = neg ? (uint64_t)(-(min + 1)) + 1 : (uint64_t)max;
    uint64_t v = 0;
    for (; *p != '\0'; p++) {
        if (*p < '0' || *p > '9') {
            return false;
        }
        unsigned d = (unsigned)(*p - '0');
        if (v > (limit - d) / 10) {
            return false;
        }
        v = v * 10 + d;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
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

int ns_config_encode_properties(const struct ns_config *cfg, struct ns_buf *out)
{
    for (size_t i = 0; i < cfg->n; i++) {
        ns_buf_append_str(out, cfg->items[i].key);
        ns_buf_put_u8(out, '=');
        ns_buf_append_str(out, cfg->items[i].value);
        ns_buf_put_u8(out, '\n');
    }
    return out->err;
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
