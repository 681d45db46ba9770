/* Binary encoding of replicated commands (include/raftns/command.h). It only
 * encodes and decodes; applying a command is fsm.c's job. Pure.
 *
 * WARNING: this is a persisted and replicated format (the raft log). All
 * integers big-endian, strings u32-length-prefixed (0xFFFFFFFF = NULL).
 * Version 1: u8 version, u8 type, u64 leader_time_ms, payload. Version 2 (a
 * command with a request id): u8 version, u8 type, u64 leader_time_ms, u64
 * origin (not 0), u64 run, u64 seq, payload. The payload per type:
 *   REGISTER_BROKER   str cluster, str broker_name, str broker_addr, str?
 * ha_addr, str? zone, u64 broker_id, u64 heartbeat_timeout_ms, u8 acting_master
 * (0xFF = -1), u64 dv.counter, u64 dv.state_version, u64 dv.timestamp, u32
 * n_topics {str name, u32 read, u32 write, u32 perm, u32 sys_flag}, u32
 * n_mappings {str topic, str bname, str? scope, u64 epoch, u32 total_queues, u8
 * dirty, u32 n_ids {u32 key, u32 value}}, u8 has_filter_servers, u32
 * n_filter_servers {str} UNREGISTER/EXPIRE u32 n {str cluster, str broker_addr,
 * str? broker_name, u64 broker_id} KV_PUT            str ns, str key, str?
 * value KV_DELETE         str ns, str key WIPE/ADD_PERM     str broker_name
 *   DELETE_TOPIC      str topic, str? cluster
 *   REGISTER_TOPIC    str topic, u32 n {str broker_name, u32 read, u32 write,
 * u32 perm, u32 sys_flag} UPDATE_CONFIG     u32 n {str key, str value}
 *   CHECKPOINT        u64 index, u64 digest
 *   SET_MEMBER        u64 id, str? raft_addr, str? client_addr, str? http_addr
 *   ACL_PUT           account
 *   ACL_REMOVE        str access_key
 *   ACL_SEED          u32 n {account}
 *   VERDICT           u64 index, u64 digest, u32 n_agree {u64 id}, u32
 * n_dissent {u64 id} (each at most NS_VERDICT_MAX_IDS)
 *   CTL_*             the event's payload (ns_ctl_event_encode,
 * raft/controller.c)
 * where account = str access_key, str secret_key, u8 role (1 reader, 2 broker,
 * 3 admin), u32 n_nets {u32 addr, u8 prefix} (ns_acl_encode_account).
 * Version 3: version 2's layout, except that REGISTER_BROKER's n_topics and
 * topics are in the compact form of raft/command_topics.c.
 * Never change this layout; add a version or a type. */
/* EXPIRE_BROKERS_SEEN: u32 n {str cluster, str broker_addr, str? broker_name,
 * u64 broker_id, u64 regs_seen}. */
#include <string.h>

#include "command_int.h"
#include "raftns/alloc.h"
#include "raftns/cluster_config.h"
#include "raftns/command.h"
#include "raftns/err.h"

_Static_assert(NS_CLUSTER_COMMAND_VERSION_MIN == NS_COMMAND_VERSION_REQID &&
                   NS_CLUSTER_COMMAND_VERSION_MAX == NS_COMMAND_VERSION,
               "the cluster file's commandVersion range follows the formats");

bool ns_command_is_client_write(enum ns_command_type type)
{
    switch (type) {
    case NS_CMD_REGISTER_BROKER:
    case NS_CMD_UNREGISTER_BROKERS:
    case NS_CMD_KV_PUT:
    case NS_CMD_KV_DELETE:
    case NS_CMD_WIPE_WRITE_PERM:
    case NS_CMD_ADD_WRITE_PERM:
    case NS_CMD_DELETE_TOPIC:
    case NS_CMD_REGISTER_TOPIC:
    case NS_CMD_UPDATE_CONFIG:
    case NS_CMD_ACL_PUT:
    case NS_CMD_ACL_REMOVE:
        return true;
    case NS_CMD_ACL_SEED: /* the leader seeds from its own cluster file */
    case NS_CMD_EXPIRE_BROKERS:
    case NS_CMD_EXPIRE_BROKERS_SEEN:
    case NS_CMD_CHECKPOINT:
    case NS_CMD_VERDICT:
    case NS_CMD_SET_MEMBER:
        return false;
    case NS_CMD_CTL_ALTER_SYNC_STATE_SET: /* decided on the leader only */
    case NS_CMD_CTL_APPLY_BROKER_ID:
    case NS_CMD_CTL_ELECT_MASTER:
    case NS_CMD_CTL_CLEAN_BROKER_DATA:
    case NS_CMD_CTL_UPDATE_BROKER_ADDRESS:
        return false;
    }
    return false;
}

enum ns_ctl_event_type ns_command_ctl_event(enum ns_command_type type)
{
    switch (type) {
    case NS_CMD_CTL_ALTER_SYNC_STATE_SET:
        return NS_CTL_EV_ALTER_SYNC_STATE_SET;
    case NS_CMD_CTL_APPLY_BROKER_ID:
        return NS_CTL_EV_APPLY_BROKER_ID;
    case NS_CMD_CTL_ELECT_MASTER:
        return NS_CTL_EV_ELECT_MASTER;
    case NS_CMD_CTL_CLEAN_BROKER_DATA:
        return NS_CTL_EV_CLEAN_BROKER_DATA;
    case NS_CMD_CTL_UPDATE_BROKER_ADDRESS:
        return NS_CTL_EV_UPDATE_BROKER_ADDRESS;
    default:
        return (enum ns_ctl_event_type)0;
    }
}

void ns_command_init(struct ns_command *c, enum ns_command_type type)
{
    memset(c, 0, sizeof *c);
    c->version = NS_COMMAND_VERSION_PLAIN;
    c->type = type;
    if (type == NS_CMD_REGISTER_BROKER) {
        ns_register_init(&c->u.reg);
    }
}

static void close_refs(struct ns_broker_ref *refs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ns_free(refs[i].cluster);
        ns_free(refs[i].broker_addr);
        ns_free(refs[i].broker_name);
    }
    ns_free(refs);
}

void ns_command_close(struct ns_command *c)
{
    switch (c->type) {
    case NS_CMD_REGISTER_BROKER:
        ns_register_close(&c->u.reg);
        break;
    case NS_CMD_UNREGISTER_BROKERS:
    case NS_CMD_EXPIRE_BROKERS:
    case NS_CMD_EXPIRE_BROKERS_SEEN:
        close_refs(c->u.brokers.refs, c->u.brokers.n);
        ns_free(c->u.brokers.regs_seen);
        break;
    case NS_CMD_KV_PUT:
    case NS_CMD_KV_DELETE:
        ns_free(c->u.kv.ns);
        ns_free(c->u.kv.key);
        ns_free(c->u.kv.value);
        break;
    case NS_CMD_WIPE_WRITE_PERM:
    case NS_CMD_ADD_WRITE_PERM:
        ns_free(c->u.perm.broker_name);
        break;
    case NS_CMD_DELETE_TOPIC:
        ns_free(c->u.topic_delete.topic);
        ns_free(c->u.topic_delete.cluster);
        break;
    case NS_CMD_REGISTER_TOPIC:
        ns_free(c->u.topic_register.topic);
        for (size_t i = 0; i < c->u.topic_register.n; i++) {
            ns_free(c->u.topic_register.qds[i].broker_name);
        }
        ns_free(c->u.topic_register.qds);
        break;
    case NS_CMD_UPDATE_CONFIG:
        ns_props_close(&c->u.config);
        break;
    case NS_CMD_CHECKPOINT:
        break;
    case NS_CMD_SET_MEMBER:
        ns_free(c->u.member.raft_addr);
        ns_free(c->u.member.client_addr);
        ns_free(c->u.member.http_addr);
        break;
    case NS_CMD_ACL_PUT:
        ns_acl_account_close(&c->u.acl_put);
        break;
    case NS_CMD_ACL_REMOVE:
        ns_free(c->u.acl_remove.access_key);
        break;
    case NS_CMD_ACL_SEED:
        for (size_t i = 0; i < c->u.acl_seed.n; i++) {
            ns_acl_account_close(&c->u.acl_seed.items[i]);
        }
        ns_free(c->u.acl_seed.items);
        break;
    case NS_CMD_VERDICT:
        ns_free(c->u.verdict.agree);
        ns_free(c->u.verdict.dissent);
        break;
    case NS_CMD_CTL_ALTER_SYNC_STATE_SET:
    case NS_CMD_CTL_APPLY_BROKER_ID:
    case NS_CMD_CTL_ELECT_MASTER:
    case NS_CMD_CTL_CLEAN_BROKER_DATA:
    case NS_CMD_CTL_UPDATE_BROKER_ADDRESS:
        ns_ctl_event_close(&c->u.ctl);
        break;
    }
    memset(&c->u, 0, sizeof c->u);
}

/* --- encode --- */

static void put_i32(struct ns_buf *b, int32_t v)
{
    ns_buf_put_u32(b, (uint32_t)v);
}

static void put_i64(struct ns_buf *b, int64_t v)
{
    ns_buf_put_u64(b, (uint64_t)v);
}

static void encode_register(const struct ns_register *r, bool compact,
                            struct ns_buf *b)
{
    ns_buf_put_str(b, r->cluster ? r->cluster : "");
    ns_buf_put_str(b, r->broker_name ? r->broker_name : "");
    ns_buf_put_str(b, r->broker_addr ? r->broker_addr : "");
    ns_buf_put_str(b, r->ha_addr);
    ns_buf_put_str(b, r->zone);
    put_i64(b, r->broker_id);
    put_i64(b, r->heartbeat_timeout_ms);
    ns_buf_put_u8(b, (uint8_t)r->acting_master);
    put_i64(b, r->dv.counter);
    put_i64(b, r->dv.state_version);
    put_i64(b, r->dv.timestamp);
    if (compact) {
        ns_command_topics_encode(r, b);
    } else {
        ns_buf_put_u32(b, (uint32_t)r->n_topics);
        for (size_t i = 0; i < r->n_topics; i++) {
            const struct ns_topic_config *t = &r->topics[i];
            ns_buf_put_str(b, t->name);
            put_i32(b, t->read_queues);
            put_i32(b, t->write_queues);
            put_i32(b, t->perm);
            put_i32(b, t->sys_flag);
        }
    }
    ns_buf_put_u32(b, (uint32_t)r->n_mappings);
    for (size_t i = 0; i < r->n_mappings; i++) {
        const struct ns_mapping_info *m = &r->mappings[i];
        ns_buf_put_str(b, m->topic);
        ns_buf_put_str(b, m->bname);
        ns_buf_put_str(b, m->scope);
        put_i64(b, m->epoch);
        put_i32(b, m->total_queues);
        ns_buf_put_u8(b, m->dirty ? 1 : 0);
        ns_buf_put_u32(b, (uint32_t)m->n_curr_ids);
        for (size_t j = 0; j < m->n_curr_ids; j++) {
            put_i32(b, m->curr_ids[j].key);
            put_i32(b, m->curr_ids[j].value);
        }
    }
    ns_buf_put_u8(b, r->has_filter_servers ? 1 : 0);
    ns_buf_put_u32(b, (uint32_t)r->n_filter_servers);
    for (size_t i = 0; i < r->n_filter_servers; i++) {
        ns_buf_put_str(b, r->filter_servers[i]);
    }
}

static void encode_payload(const struct ns_command *c, uint8_t version,
                           struct ns_buf *b)
{
    switch (c->type) {
    case NS_CMD_REGISTER_BROKER:
        encode_register(&c->u.reg, version >= NS_COMMAND_VERSION_COMPACT, b);
        break;
    case NS_CMD_UNREGISTER_BROKERS:
    case NS_CMD_EXPIRE_BROKERS:
    case NS_CMD_EXPIRE_BROKERS_SEEN:
        ns_buf_put_u32(b, (uint32_t)c->u.brokers.n);
        for (size_t i = 0; i < c->u.brokers.n; i++) {
            const struct ns_broker_ref *r = &c->u.brokers.refs[i];
            ns_buf_put_str(b, r->cluster ? r->cluster : "");
            ns_buf_put_str(b, r->broker_addr ? r->broker_addr : "");
            ns_buf_put_str(b, r->broker_name);
            put_i64(b, r->broker_id);
            if (c->type == NS_CMD_EXPIRE_BROKERS_SEEN) {
                ns_buf_put_u64(b, c->u.brokers.regs_seen[i]);
            }
        }
        break;
    case NS_CMD_KV_PUT:
    case NS_CMD_KV_DELETE:
        ns_buf_put_str(b, c->u.kv.ns ? c->u.kv.ns : "");
        ns_buf_put_str(b, c->u.kv.key ? c->u.kv.key : "");
        if (c->type == NS_CMD_KV_PUT) {
            ns_buf_put_str(b, c->u.kv.value);
        }
        break;
    case NS_CMD_WIPE_WRITE_PERM:
    case NS_CMD_ADD_WRITE_PERM:
        ns_buf_put_str(b, c->u.perm.broker_name ? c->u.perm.broker_name : "");
        break;
    case NS_CMD_DELETE_TOPIC:
        ns_buf_put_str(b,
                       c->u.topic_delete.topic ? c->u.topic_delete.topic : "");
        ns_buf_put_str(b, c->u.topic_delete.cluster);
        break;
    case NS_CMD_REGISTER_TOPIC:
        ns_buf_put_str(b, c->u.topic_register.topic ? c->u.topic_register.topic
                                                    : "");
        ns_buf_put_u32(b, (uint32_t)c->u.topic_register.n);
        for (size_t i = 0; i < c->u.topic_register.n; i++) {
            const struct ns_queue_data *q = &c->u.topic_register.qds[i];
            ns_buf_put_str(b, q->broker_name ? q->broker_name : "");
            put_i32(b, q->read_queues);
            put_i32(b, q->write_queues);
            put_i32(b, q->perm);
            put_i32(b, q->sys_flag);
        }
        break;
    case NS_CMD_UPDATE_CONFIG:
        ns_buf_put_u32(b, (uint32_t)c->u.config.n);
        for (size_t i = 0; i < c->u.config.n; i++) {
            ns_buf_put_str(b, c->u.config.items[i].key);
            ns_buf_put_str(b, c->u.config.items[i].value);
        }
        break;
    case NS_CMD_CHECKPOINT:
        ns_buf_put_u64(b, c->u.checkpoint.index);
        ns_buf_put_u64(b, c->u.checkpoint.digest);
        break;
    case NS_CMD_SET_MEMBER:
        ns_buf_put_u64(b, c->u.member.id);
        ns_buf_put_str(b, c->u.member.raft_addr);
        ns_buf_put_str(b, c->u.member.client_addr);
        ns_buf_put_str(b, c->u.member.http_addr);
        break;
    case NS_CMD_ACL_PUT:
        ns_acl_encode_account(&c->u.acl_put, b);
        break;
    case NS_CMD_ACL_REMOVE:
        ns_buf_put_str(
            b, c->u.acl_remove.access_key ? c->u.acl_remove.access_key : "");
        break;
    case NS_CMD_ACL_SEED:
        ns_buf_put_u32(b, (uint32_t)c->u.acl_seed.n);
        for (size_t i = 0; i < c->u.acl_seed.n; i++) {
            ns_acl_encode_account(&c->u.acl_seed.items[i], b);
        }
        break;
    case NS_CMD_VERDICT:
        ns_buf_put_u64(b, c->u.verdict.index);
        ns_buf_put_u64(b, c->u.verdict.digest);
        ns_buf_put_u32(b, (uint32_t)c->u.verdict.n_agree);
        for (size_t i = 0; i < c->u.verdict.n_agree; i++) {
            ns_buf_put_u64(b, c->u.verdict.agree[i]);
        }
        ns_buf_put_u32(b, (uint32_t)c->u.verdict.n_dissent);
        for (size_t i = 0; i < c->u.verdict.n_dissent; i++) {
            ns_buf_put_u64(b, c->u.verdict.dissent[i]);
        }
        break;
    case NS_CMD_CTL_ALTER_SYNC_STATE_SET:
    case NS_CMD_CTL_APPLY_BROKER_ID:
    case NS_CMD_CTL_ELECT_MASTER:
    case NS_CMD_CTL_CLEAN_BROKER_DATA:
    case NS_CMD_CTL_UPDATE_BROKER_ADDRESS:
        ns_ctl_event_encode(ns_command_ctl_event(c->type), &c->u.ctl, b);
        break;
    }
}

static bool has_reqid(uint8_t version)
{
    return version == NS_COMMAND_VERSION_REQID ||
           version == NS_COMMAND_VERSION_COMPACT;
}

int ns_command_encode_as(const struct ns_command *c, uint8_t max_version,
                         struct ns_buf *out)
{
    /* Version 3 changes only registrations: every other command keeps the
     * bytes a node of version 2 reads. */
    uint8_t version = NS_COMMAND_VERSION_PLAIN;
    if (c->reqid.origin != 0) {
        version = c->type == NS_CMD_REGISTER_BROKER &&
                          max_version >= NS_COMMAND_VERSION_COMPACT
                      ? NS_COMMAND_VERSION_COMPACT
                      : NS_COMMAND_VERSION_REQID;
    }
    ns_buf_put_u8(out, version);
    ns_buf_put_u8(out, (uint8_t)c->type);
    put_i64(out, c->leader_time_ms);
    if (has_reqid(version)) {
        ns_buf_put_u64(out, c->reqid.origin);
        ns_buf_put_u64(out, c->reqid.run);
        ns_buf_put_u64(out, c->reqid.seq);
    }
    encode_payload(c, version, out);
    return out->err;
}

int ns_command_encode(const struct ns_command *c, struct ns_buf *out)
{
    return ns_command_encode_as(c, NS_COMMAND_VERSION, out);
}

/* --- decode --- */

static int32_t rd_i32(struct ns_rd *r)
{
    return (int32_t)ns_rd_u32(r);
}

static int64_t rd_i64(struct ns_rd *r)
{
    return (int64_t)ns_rd_u64(r);
}

static int rd_bool(struct ns_rd *r, bool *out)
{
    uint8_t v = ns_rd_u8(r);
    if (r->err || v > 1) {
        return NS_EPROTO;
    }
    *out = v == 1;
    return 0;
}

/* A string that must not be NULL. */
static int rd_req_str(struct ns_rd *r, char **out)
{
    int rv = ns_rd_str(r, out);
    if (rv == 0 && *out == NULL) {
        rv = NS_EPROTO;
    }
    return rv;
}

/* Reads a u32 count and checks that count elements of at least min_size bytes
 * fit. */
static int rd_count(struct ns_rd *r, size_t min_size, size_t *n)
{
    uint32_t v = ns_rd_u32(r);
    if (r->err || v > ns_rd_left(r) / min_size) {
        return NS_EPROTO;
    }
    *n = v;
    return 0;
}

static void *alloc_array(size_t n, size_t size)
{
    return ns_calloc(n ? n : 1, size);
}

static int decode_mapping(struct ns_rd *r, struct ns_mapping_info *m)
{
    int rv = rd_req_str(r, &m->topic);
    if (rv == 0) {
        rv = rd_req_str(r, &m->bname);
    }
    if (rv == 0) {
        rv = ns_rd_str(r, &m->scope);
    }
    if (rv != 0) {
        return rv;
    }
    m->epoch = rd_i64(r);
    m->total_queues = rd_i32(r);
    size_t n;
    rv = rd_bool(r, &m->dirty);
    if (rv == 0) {
        rv = rd_count(r, 8, &n);
    }
    if (rv != 0) {
        return rv;
    }
    m->curr_ids = alloc_array(n, sizeof *m->curr_ids);
    if (m->curr_ids == NULL) {
        return NS_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        m->curr_ids[i].key = rd_i32(r);
        m->curr_ids[i].value = rd_i32(r);
    }
    m->n_curr_ids = n;
    return r->err;
}

/* The n topics of a registration, their names in one block
 * (ns_register.topic_names): every node decodes each entry it applies, and an
 * allocation per name cost about as much as the rest of the decode. A first
 * pass over the names sizes the block. */
static int decode_topics(struct ns_rd *r, struct ns_register *g, size_t n)
{
    struct ns_rd sizing = *r;
    size_t bytes = 1;
    for (size_t i = 0; i < n; i++) {
        uint32_t len = ns_rd_u32(&sizing);
        if (sizing.err || len == UINT32_MAX ||
            ns_rd_bytes(&sizing, (size_t)len + 16) == NULL) {
            return NS_EPROTO;
        }
        bytes += (size_t)len + 1;
    }
    if ((g->topics = alloc_array(n, sizeof *g->topics)) == NULL ||
        (g->topic_names = ns_malloc(bytes)) == NULL) {
        return NS_ENOMEM;
    }
    char *names = g->topic_names;
    for (; g->n_topics < n; g->n_topics++) {
        struct ns_topic_config *t = &g->topics[g->n_topics];
        uint32_t len = ns_rd_u32(r);
        const uint8_t *p = ns_rd_bytes(r, len);
        memcpy(names, p, len);
        names[len] = '\0';
        t->name = names;
        names += (size_t)len + 1;
        t->read_queues = rd_i32(r);
        t->write_queues = rd_i32(r);
        t->perm = rd_i32(r);
        t->sys_flag = rd_i32(r);
    }
    return 0;
}

static int decode_register(struct ns_rd *r, bool compact, struct ns_register *g)
{
    int rv = rd_req_str(r, &g->cluster);
    if (rv == 0) {
        rv = rd_req_str(r, &g->broker_name);
    }
    if (rv == 0) {
        rv = rd_req_str(r, &g->broker_addr);
    }
    if (rv == 0) {
        rv = ns_rd_str(r, &g->ha_addr);
    }
    if (rv == 0) {
        rv = ns_rd_str(r, &g->zone);
    }
    if (rv != 0) {
        return rv;
    }
    g->broker_id = rd_i64(r);
    g->heartbeat_timeout_ms = rd_i64(r);
    g->acting_master = (int8_t)ns_rd_u8(r);
    g->dv.counter = rd_i64(r);
    g->dv.state_version = rd_i64(r);
    g->dv.timestamp = rd_i64(r);
    if (r->err || g->acting_master < -1 || g->acting_master > 1) {
        return NS_EPROTO;
    }
    size_t n;
    if (compact) {
        rv = ns_command_topics_decode(r, g);
    } else if ((rv = rd_count(r, 20, &n)) == 0) {
        rv = decode_topics(r, g, n);
    }
    if (rv != 0) {
        return rv;
    }
    if ((rv = rd_count(r, 29, &n)) != 0) {
        return rv;
    }
    if ((g->mappings = alloc_array(n, sizeof *g->mappings)) == NULL) {
        return NS_ENOMEM;
    }
    while (g->n_mappings < n) {
        rv = decode_mapping(r, &g->mappings[g->n_mappings++]);
        if (rv != 0) {
            return rv;
        }
    }
    if ((rv = rd_bool(r, &g->has_filter_servers)) != 0 ||
        (rv = rd_count(r, 4, &n)) != 0) {
        return rv;
    }
    if ((g->filter_servers = alloc_array(n, sizeof *g->filter_servers)) ==
        NULL) {
        return NS_ENOMEM;
    }
    for (; g->n_filter_servers < n; g->n_filter_servers++) {
        if ((rv = rd_req_str(r, &g->filter_servers[g->n_filter_servers])) !=
            0) {
            return rv;
        }
    }
    return r->err;
}

static int decode_refs(struct ns_rd *r, struct ns_command *c)
{
    size_t n;
    bool seen = c->type == NS_CMD_EXPIRE_BROKERS_SEEN;
    int rv = rd_count(r, seen ? 28 : 20, &n);
    if (rv != 0) {
        return rv;
    }
    if ((c->u.brokers.refs = alloc_array(n, sizeof *c->u.brokers.refs)) ==
            NULL ||
        (seen && (c->u.brokers.regs_seen = alloc_array(
                      n, sizeof *c->u.brokers.regs_seen)) == NULL)) {
        return NS_ENOMEM;
    }
    for (; c->u.brokers.n < n; c->u.brokers.n++) {
        struct ns_broker_ref *ref = &c->u.brokers.refs[c->u.brokers.n];
        if ((rv = rd_req_str(r, &ref->cluster)) != 0 ||
            (rv = rd_req_str(r, &ref->broker_addr)) != 0 ||
            (rv = ns_rd_str(r, &ref->broker_name)) != 0) {
            c->u.brokers.n++; /* partially filled: close frees it */
            return rv;
        }
        ref->broker_id = rd_i64(r);
        if (seen) {
            c->u.brokers.regs_seen[c->u.brokers.n] = ns_rd_u64(r);
        }
    }
    return r->err;
}

static int decode_topic_register(struct ns_rd *r, struct ns_command *c)
{
    size_t n;
    int rv = rd_req_str(r, &c->u.topic_register.topic);
    if (rv == 0) {
        rv = rd_count(r, 20, &n);
    }
    if (rv != 0) {
        return rv;
    }
    c->u.topic_register.qds = alloc_array(n, sizeof *c->u.topic_register.qds);
    if (c->u.topic_register.qds == NULL) {
        return NS_ENOMEM;
    }
    for (; c->u.topic_register.n < n; c->u.topic_register.n++) {
        struct ns_queue_data *q =
            &c->u.topic_register.qds[c->u.topic_register.n];
        if ((rv = rd_req_str(r, &q->broker_name)) != 0) {
            return rv;
        }
        q->read_queues = rd_i32(r);
        q->write_queues = rd_i32(r);
        q->perm = rd_i32(r);
        q->sys_flag = rd_i32(r);
    }
    return r->err;
}

/* Keys must be strictly increasing (ns_props is sorted), so the encoding is
 * canonical. */
static int decode_config(struct ns_rd *r, struct ns_props *p)
{
    size_t n;
    int rv = rd_count(r, 8, &n);
    if (rv != 0) {
        return rv;
    }
    if ((p->items = alloc_array(n, sizeof *p->items)) == NULL) {
        return NS_ENOMEM;
    }
    for (; p->n < n; p->n++) {
        struct ns_prop *it = &p->items[p->n];
        rv = rd_req_str(r, &it->key);
        if (rv == 0) {
            rv = rd_req_str(r, &it->value);
        }
        if (rv == 0 && p->n > 0 &&
            strcmp(p->items[p->n - 1].key, it->key) >= 0) {
            rv = NS_EPROTO;
        }
        if (rv != 0) {
            p->n++;
            return rv;
        }
    }
    return 0;
}

static int decode_acl_seed(struct ns_rd *r, struct ns_command *c)
{
    size_t n;
    int rv = rd_count(r, 13, &n);
    if (rv != 0 || n > NS_ACL_MAX_ACCOUNTS) {
        return rv != 0 ? rv : NS_EPROTO;
    }
    c->u.acl_seed.items = alloc_array(n, sizeof *c->u.acl_seed.items);
    if (c->u.acl_seed.items == NULL) {
        return NS_ENOMEM;
    }
    for (; c->u.acl_seed.n < n; c->u.acl_seed.n++) {
        rv = ns_acl_decode_account(r, &c->u.acl_seed.items[c->u.acl_seed.n]);
        if (rv != 0) {
            return rv; /* the failed one is closed already */
        }
    }
    return 0;
}

static int decode_ids(struct ns_rd *r, uint64_t **ids, size_t *n_out)
{
    size_t n;
    int rv = rd_count(r, 8, &n);
    if (rv != 0 || n > NS_VERDICT_MAX_IDS) {
        return rv != 0 ? rv : NS_EPROTO;
    }
    if ((*ids = alloc_array(n, sizeof **ids)) == NULL) {
        return NS_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        (*ids)[i] = ns_rd_u64(r);
    }
    *n_out = n;
    return r->err;
}

static int decode_verdict(struct ns_rd *r, struct ns_command *c)
{
    c->u.verdict.index = ns_rd_u64(r);
    c->u.verdict.digest = ns_rd_u64(r);
    int rv = decode_ids(r, &c->u.verdict.agree, &c->u.verdict.n_agree);
    if (rv == 0) {
        rv = decode_ids(r, &c->u.verdict.dissent, &c->u.verdict.n_dissent);
    }
    return rv;
}

static int decode_payload(struct ns_rd *r, struct ns_command *c)
{
    int rv = 0;
    switch (c->type) {
    case NS_CMD_REGISTER_BROKER:
        return decode_register(r, c->version == NS_COMMAND_VERSION_COMPACT,
                               &c->u.reg);
    case NS_CMD_UNREGISTER_BROKERS:
    case NS_CMD_EXPIRE_BROKERS:
    case NS_CMD_EXPIRE_BROKERS_SEEN:
        return decode_refs(r, c);
    case NS_CMD_KV_PUT:
    case NS_CMD_KV_DELETE:
        rv = rd_req_str(r, &c->u.kv.ns);
        if (rv == 0) {
            rv = rd_req_str(r, &c->u.kv.key);
        }
        if (rv == 0 && c->type == NS_CMD_KV_PUT) {
            rv = ns_rd_str(r, &c->u.kv.value);
        }
        return rv;
    case NS_CMD_WIPE_WRITE_PERM:
    case NS_CMD_ADD_WRITE_PERM:
        return rd_req_str(r, &c->u.perm.broker_name);
    case NS_CMD_DELETE_TOPIC:
        rv = rd_req_str(r, &c->u.topic_delete.topic);
        return rv ? rv : ns_rd_str(r, &c->u.topic_delete.cluster);
    case NS_CMD_REGISTER_TOPIC:
        return decode_topic_register(r, c);
    case NS_CMD_UPDATE_CONFIG:
        return decode_config(r, &c->u.config);
    case NS_CMD_CHECKPOINT:
        c->u.checkpoint.index = ns_rd_u64(r);
        c->u.checkpoint.digest = ns_rd_u64(r);
        return r->err;
    case NS_CMD_SET_MEMBER:
        c->u.member.id = ns_rd_u64(r);
        rv = ns_rd_str(r, &c->u.member.raft_addr);
        if (rv == 0) {
            rv = ns_rd_str(r, &c->u.member.client_addr);
        }
        return rv ? rv : ns_rd_str(r, &c->u.member.http_addr);
    case NS_CMD_ACL_PUT:
        return ns_acl_decode_account(r, &c->u.acl_put);
    case NS_CMD_ACL_REMOVE:
        return rd_req_str(r, &c->u.acl_remove.access_key);
    case NS_CMD_ACL_SEED:
        return decode_acl_seed(r, c);
    case NS_CMD_VERDICT:
        return decode_verdict(r, c);
    case NS_CMD_CTL_ALTER_SYNC_STATE_SET:
    case NS_CMD_CTL_APPLY_BROKER_ID:
    case NS_CMD_CTL_ELECT_MASTER:
    case NS_CMD_CTL_CLEAN_BROKER_DATA:
    case NS_CMD_CTL_UPDATE_BROKER_ADDRESS:
        return ns_ctl_event_decode(ns_command_ctl_event(c->type), r, &c->u.ctl);
    }
    return NS_EPROTO;
}

static bool is_known_type(uint8_t t)
{
    return t >= NS_CMD_REGISTER_BROKER && t <= NS_CMD_EXPIRE_BROKERS_SEEN;
}

bool ns_command_same_write(const uint8_t *a, size_t a_len, const uint8_t *b,
                           size_t b_len, bool any_id)
{
    /* u8 version, u8 type, then leader_time_ms, 8 bytes, and in versions 2
     * and 3 the request id (24 bytes) before the payload */
    size_t skip = 8;
    if (any_id && b_len > 0 && has_reqid(b[0])) {
        skip += 24;
    }
    if (a_len != b_len || b_len < 2 + skip) {
        return false;
    }
    return memcmp(a, b, 2) == 0 &&
           memcmp(a + 2 + skip, b + 2 + skip, b_len - 2 - skip) == 0;
}

int ns_command_peek_type(const uint8_t *p, size_t len)
{
    size_t head = len > 0 && has_reqid(p[0]) ? 34 : 10;
    if (len < head || (!has_reqid(p[0]) && p[0] != NS_COMMAND_VERSION_PLAIN) ||
        !is_known_type(p[1])) {
        return 0;
    }
    return p[1];
}

int ns_command_decode(const uint8_t *p, size_t len, struct ns_command *out)
{
    struct ns_rd r;
    ns_rd_init(&r, p, len);
    uint8_t version = ns_rd_u8(&r);
    uint8_t type = ns_rd_u8(&r);
    int64_t leader_time = rd_i64(&r);
    memset(out, 0, sizeof *out);
    out->type = NS_CMD_CHECKPOINT; /* nothing owned yet */
    if (r.err) {
        return NS_EPROTO;
    }
    if (!has_reqid(version) && version != NS_COMMAND_VERSION_PLAIN) {
        return version > NS_COMMAND_VERSION ? NS_EVERSION : NS_EPROTO;
    }
    struct ns_reqid id = {0, 0, 0};
    if (has_reqid(version)) {
        id.origin = ns_rd_u64(&r);
        id.run = ns_rd_u64(&r);
        id.seq = ns_rd_u64(&r);
        if (r.err || id.origin == 0) {
            return NS_EPROTO;
        }
    }
    if (!is_known_type(type)) {
        return NS_EPROTO;
    }
    ns_command_init(out, (enum ns_command_type)type);
    out->version = version;
    out->leader_time_ms = leader_time;
    out->reqid = id;
    int rv = decode_payload(&r, out);
    if (rv == 0 && r.err != 0) {
        rv = r.err;
    }
    if (rv == 0 && ns_rd_left(&r) != 0) {
        rv = NS_EPROTO;
    }
    if (rv != 0) {
        ns_command_close(out);
        ns_command_init(out, NS_CMD_CHECKPOINT);
    }
    return rv;
}
