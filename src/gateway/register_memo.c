/* The decoded-registration memo: a direct-mapped table, keyed by the exact
 * bytes a REGISTER_BROKER decode depends on, bounded in entries and bytes. It
 * is a cache of a pure function (header fields + version + body -> decoded
 * registration) plus the route epoch at which the owner last found the entry
 * unchanged; it makes no decision about the route itself. */
#include "gateway/register_memo.h"

#include <string.h>

#include "raftns/alloc.h"
#include "raftns/err.h"

#define MEMO_SLOTS NS_REGISTER_MEMO_SLOTS
#define MEMO_MAX_BYTES (64u * 1024u * 1024u)
#define KEY_MAX 1024u

struct ns_register_memo {
    bool used;
    bool delete_missing; /* with which the route check passed at epoch */
    uint64_t epoch;
    uint8_t *key; /* owned */
    size_t key_len;
    uint8_t *body; /* owned copy of the request body */
    size_t body_len;
    size_t bytes; /* charged to the table's bytes */
    struct ns_register reg;
};

/* Every header field the handler's decode and CRC check read. */
static const char *const KEY_FIELDS[] = {
    "clusterName",
    "brokerName",
    "brokerAddr",
    "haServerAddr",
    "__ZONE_NAME",
    "brokerId",
    "heartbeatTimeoutMillis",
    "enableActingMaster",
    "compressed",
    "bodyCrc32",
};

/* Writes the key of cmd into out; returns its length, 0 when over cap. */
static size_t build_key(const struct ns_cmd *cmd, uint8_t *out, size_t cap)
{
    size_t n = 0;
    uint32_t v = (uint32_t)cmd->version;
    if (cap < 4) {
        return 0;
    }
    out[n++] = (uint8_t)(v >> 24);
    out[n++] = (uint8_t)(v >> 16);
    out[n++] = (uint8_t)(v >> 8);
    out[n++] = (uint8_t)v;
    for (size_t i = 0; i < sizeof KEY_FIELDS / sizeof *KEY_FIELDS; i++) {
        const char *val = ns_cmd_ext_find(cmd, KEY_FIELDS[i]);
        size_t len = val != NULL ? strlen(val) : 0;
        if (len + 2 > cap - n) {
            return 0;
        }
        out[n++] = val != NULL; /* absent and "" differ */
        memcpy(out + n, val != NULL ? val : "", len);
        n += len;
        out[n++] = 0;
    }
    return n;
}

static size_t slot_of(const uint8_t *key, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) {
        h = (h ^ key[i]) * 1099511628211ull;
    }
    return (size_t)(h % MEMO_SLOTS);
}

static void clear_entry(struct ns_register_memo_table *t,
                        struct ns_register_memo *e)
{
    if (!e->used) {
        return;
    }
    ns_free(e->key);
    ns_free(e->body);
    ns_register_close(&e->reg);
    t->bytes -= e->bytes;
    memset(e, 0, sizeof *e);
}

/* The entry remembered for cmd's key (whatever its body), or NULL. */
static struct ns_register_memo *find_entry(struct ns_register_memo_table *t,
                                           const struct ns_cmd *cmd)
{
    uint8_t key[KEY_MAX];
    size_t len = build_key(cmd, key, sizeof key);
    if (len == 0) {
        return NULL;
    }
    struct ns_register_memo *e = &t->slots[slot_of(key, len)];
    if (!e->used || e->key_len != len || memcmp(e->key, key, len) != 0) {
        return NULL;
    }
    return e;
}

int ns_register_memo_init(struct ns_register_memo_table *t)
{
    t->bytes = 0;
    t->slots = ns_calloc(MEMO_SLOTS, sizeof *t->slots);
    return t->slots != NULL ? 0 : NS_ENOMEM;
}

void ns_register_memo_close(struct ns_register_memo_table *t)
{
    if (t->slots == NULL) {
        return;
    }
    for (size_t i = 0; i < MEMO_SLOTS; i++) {
        clear_entry(t, &t->slots[i]);
    }
    ns_free(t->slots);
    t->slots = NULL;
}

struct ns_register_memo *ns_register_memo_find(struct ns_register_memo_table *t,
                                               const struct ns_cmd *cmd)
{
    struct ns_register_memo *e = find_entry(t, cmd);
    if (e == NULL || e->body_len != cmd->body_len ||
        (cmd->body_len > 0 && memcmp(e->body, cmd->body, cmd->body_len))) {
        return NULL;
    }
    return e;
}

const struct ns_register *ns_register_memo_reg(const struct ns_register_memo *m)
{
    return &m->reg;
}

bool ns_register_memo_is_current(const struct ns_register_memo *m,
                                 uint64_t epoch, bool delete_missing)
{
    return m->epoch == epoch && m->delete_missing == delete_missing;
}

void ns_register_memo_mark(struct ns_register_memo *m, uint64_t epoch,
                           bool delete_missing)
{
    m->epoch = epoch;
    m->delete_missing = delete_missing;
}

bool ns_register_memo_put(struct ns_register_memo_table *t,
                          const struct ns_cmd *cmd, struct ns_register *reg,
                          uint64_t epoch, bool delete_missing)
{
    uint8_t key[KEY_MAX];
    size_t len = build_key(cmd, key, sizeof key);
    /* A rough charge for the decoded form: about twice the body. */
    size_t bytes = len + 3 * cmd->body_len;
    if (len == 0 || cmd->body_len > MEMO_MAX_BYTES / 4) {
        return false;
    }
    struct ns_register_memo *e = &t->slots[slot_of(key, len)];
    clear_entry(t, e);
    if (t->bytes + bytes > MEMO_MAX_BYTES) {
        return false;
    }
    uint8_t *k = ns_malloc(len);
    uint8_t *b = ns_malloc(cmd->body_len > 0 ? cmd->body_len : 1);
    if (k == NULL || b == NULL) {
        ns_free(k);
        ns_free(b);
        return false;
    }
    memcpy(k, key, len);
    if (cmd->body_len > 0) {
        memcpy(b, cmd->body, cmd->body_len);
    }
    e->used = true;
    e->key = k;
    e->key_len = len;
    e->body = b;
    e->body_len = cmd->body_len;
    e->bytes = bytes;
    e->reg = *reg;
    ns_register_memo_mark(e, epoch, delete_missing);
    ns_register_init(reg);
    t->bytes += bytes;
    return true;
}

void ns_register_memo_drop(struct ns_register_memo_table *t,
                           const struct ns_cmd *cmd)
{
    struct ns_register_memo *e = find_entry(t, cmd);
    if (e != NULL) {
        clear_entry(t, e);
    }
}
