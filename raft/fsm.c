/* The replicated state machine: ns_fsm_apply, a table of
 * apply_<command>() functions over the route, KV, config and controller
 * modules. It never
 * validates (commands are checked before they are proposed) and never does I/O.
 * Snapshots are in snapshot.c. */
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/fsm.h"
#include "raftns/sorted.h"

void ns_fsm_result_close(struct ns_apply_result *res)
{
    ns_register_result_close(&res->reg);
}

static int apply_register_broker(struct ns_state *s, const struct ns_command *c,
                                 struct ns_apply_result *res)
{
    const struct ns_settings *st = ns_config_settings(s->config);
    return ns_route_register_broker(s->route, &c->u.reg,
                                    st->delete_topic_with_broker_registration,
                                    &res->reg);
}

static int apply_unregister_brokers(struct ns_state *s,
                                    const struct ns_command *c,
                                    struct ns_apply_result *res)
{
    (void)res;
    return ns_route_unregister_brokers(s->route, c->u.brokers.refs,
                                       c->u.brokers.n);
}

static int apply_expire_brokers(struct ns_state *s, const struct ns_command *c,
                                struct ns_apply_result *res)
{
    (void)res;
    return ns_route_expire_brokers(s->route, c->u.brokers.refs, c->u.brokers.n);
}

static int apply_expire_brokers_seen(struct ns_state *s,
                                     const struct ns_command *c,
                                     struct ns_apply_result *res)
{
    (void)res;
    return ns_route_expire_brokers_seen(s->route, c->u.brokers.refs,
                                        c->u.brokers.regs_seen, c->u.brokers.n);
}

static int apply_kv_put(struct ns_state *s, const struct ns_command *c,
                        struct ns_apply_result *res)
{
    (void)res;
    return ns_kv_put(s->kv, c->u.kv.ns, c->u.kv.key, c->u.kv.value);
}

static int apply_kv_delete(struct ns_state *s, const struct ns_command *c,
                           struct ns_apply_result *res)
{
    (void)res;
    return ns_kv_delete(s->kv, c->u.kv.ns, c->u.kv.key);
}

static int apply_wipe_write_perm(struct ns_state *s, const struct ns_command *c,
                                 struct ns_apply_result *res)
{
    return ns_route_wipe_write_perm(s->route, c->u.perm.broker_name,
                                    &res->count);
}

static int apply_add_write_perm(struct ns_state *s, const struct ns_command *c,
                                struct ns_apply_result *res)
{
    return ns_route_add_write_perm(s->route, c->u.perm.broker_name,
                                   &res->count);
}

static int apply_delete_topic(struct ns_state *s, const struct ns_command *c,
                              struct ns_apply_result *res)
{
    (void)res;
    return ns_route_delete_topic(s->route, c->u.topic_delete.topic,
                                 c->u.topic_delete.cluster);
}

static int apply_register_topic(struct ns_state *s, const struct ns_command *c,
                                struct ns_apply_result *res)
{
    (void)res;
    return ns_route_register_topic(s->route, c->u.topic_register.topic,
                                   c->u.topic_register.qds,
                                   c->u.topic_register.n);
}

static int apply_update_config(struct ns_state *s, const struct ns_command *c,
                               struct ns_apply_result *res)
{
    (void)res;
    return ns_config_update(s->config, &c->u.config, false);
}

static int apply_checkpoint(struct ns_state *s, const struct ns_command *c,
                            struct ns_apply_result *res)
{
    (void)res;
    s->last_checkpoint_digest = c->u.checkpoint.digest;
    return 0;
}

/* A verdict changes no table: each node judges its own digest against it
 * (raft/diverge.c). Only the last one is remembered, outside the snapshot
 * like last_checkpoint_digest, so digests and snapshot bytes stay as they
 * were. */
static int apply_verdict(struct ns_state *s, const struct ns_command *c,
                         struct ns_apply_result *res)
{
    (void)res;
    s->last_verdict_index = c->u.verdict.index;
    s->last_verdict_digest = c->u.verdict.digest;
    return 0;
}

/* Index of id in the sorted member array (found) or its insertion point. */
static size_t search_member(const struct ns_state *s, uint64_t id, bool *found)
{
    return ns_sorted_search_u64(s->members, s->n_members, sizeof *s->members,
                                offsetof(struct ns_member, id), id, found);
}

static int apply_set_member(struct ns_state *s, const struct ns_command *c,
                            struct ns_apply_result *res)
{
    (void)res;
    bool found;
    size_t i = search_member(s, c->u.member.id, &found);
    bool remove = c->u.member.raft_addr == NULL &&
                  c->u.member.client_addr == NULL &&
                  c->u.member.http_addr == NULL;
    if (remove) {
        if (found) {
            ns_state_member_close(&s->members[i]);
            memmove(&s->members[i], &s->members[i + 1],
                    (s->n_members - i - 1) * sizeof *s->members);
            s->n_members--;
        }
        return 0;
    }
    struct ns_member m = {c->u.member.id, ns_strdup(c->u.member.raft_addr),
                          ns_strdup(c->u.member.client_addr),
                          ns_strdup(c->u.member.http_addr)};
    if ((c->u.member.raft_addr && !m.raft_addr) ||
        (c->u.member.client_addr && !m.client_addr) ||
        (c->u.member.http_addr && !m.http_addr)) {
        goto err_after_member;
    }
    if (found) {
        ns_state_member_close(&s->members[i]);
        s->members[i] = m;
        return 0;
    }
    struct ns_member *arr =
        ns_realloc(s->members, (s->n_members + 1) * sizeof *arr);
    if (arr == NULL) {
        goto err_after_member;
    }
    s->members = arr;
    memmove(&arr[i + 1], &arr[i], (s->n_members - i) * sizeof *arr);
    arr[i] = m;
    s->n_members++;
    return 0;

err_after_member:
    ns_state_member_close(&m);
    return NS_ENOMEM;
}

static int apply_acl_put(struct ns_state *s, const struct ns_command *c,
                         struct ns_apply_result *res)
{
    (void)res;
    s->acl.seeded = true; /* managed by raftnsctl from now on */
    return ns_acl_put(&s->acl, &c->u.acl_put);
}

static int apply_acl_remove(struct ns_state *s, const struct ns_command *c,
                            struct ns_apply_result *res)
{
    (void)res;
    s->acl.seeded = true;
    return ns_acl_remove(&s->acl, c->u.acl_remove.access_key);
}

/* Only the first seed counts: every leader may propose the file's accounts
 * until one was applied, and later ones change nothing. */
static int apply_acl_seed(struct ns_state *s, const struct ns_command *c,
                          struct ns_apply_result *res)
{
    (void)res;
    if (s->acl.seeded) {
        return 0;
    }
    for (size_t i = 0; i < c->u.acl_seed.n; i++) {
        int rv = ns_acl_put(&s->acl, &c->u.acl_seed.items[i]);
        if (rv != 0) {
            return rv;
        }
    }
    s->acl.seeded = true;
    return 0;
}

/* The five controller events share one applier: the table's own
 * (raft/controller.c). */
static int apply_ctl(struct ns_state *s, const struct ns_command *c,
                     struct ns_apply_result *res)
{
    (void)res;
    return ns_ctl_apply(&s->ctl, ns_command_ctl_event(c->type), &c->u.ctl);
}

typedef int (*apply_fn)(struct ns_state *s, const struct ns_command *c,
                        struct ns_apply_result *res);

static const apply_fn APPLY[] = {
    [NS_CMD_REGISTER_BROKER] = apply_register_broker,
    [NS_CMD_UNREGISTER_BROKERS] = apply_unregister_brokers,
    [NS_CMD_EXPIRE_BROKERS] = apply_expire_brokers,
    [NS_CMD_KV_PUT] = apply_kv_put,
    [NS_CMD_KV_DELETE] = apply_kv_delete,
    [NS_CMD_WIPE_WRITE_PERM] = apply_wipe_write_perm,
    [NS_CMD_ADD_WRITE_PERM] = apply_add_write_perm,
    [NS_CMD_DELETE_TOPIC] = apply_delete_topic,
    [NS_CMD_REGISTER_TOPIC] = apply_register_topic,
    [NS_CMD_UPDATE_CONFIG] = apply_update_config,
    [NS_CMD_CHECKPOINT] = apply_checkpoint,
    [NS_CMD_SET_MEMBER] = apply_set_member,
    [NS_CMD_ACL_PUT] = apply_acl_put,
    [NS_CMD_ACL_REMOVE] = apply_acl_remove,
    [NS_CMD_ACL_SEED] = apply_acl_seed,
    [NS_CMD_VERDICT] = apply_verdict,
    [NS_CMD_CTL_ALTER_SYNC_STATE_SET] = apply_ctl,
    [NS_CMD_CTL_APPLY_BROKER_ID] = apply_ctl,
    [NS_CMD_CTL_ELECT_MASTER] = apply_ctl,
    [NS_CMD_CTL_CLEAN_BROKER_DATA] = apply_ctl,
    [NS_CMD_CTL_UPDATE_BROKER_ADDRESS] = apply_ctl,
    [NS_CMD_EXPIRE_BROKERS_SEEN] = apply_expire_brokers_seen,
};

/* A copy of a command applied before answers what its first apply would
 * answer now, and changes nothing. */
static int answer_duplicate(const struct ns_state *s,
                            const struct ns_command *c,
                            struct ns_apply_result *res)
{
    switch (c->type) {
    case NS_CMD_REGISTER_BROKER:
        return ns_route_find_master(s->route, &c->u.reg, &res->reg);
    case NS_CMD_WIPE_WRITE_PERM:
    case NS_CMD_ADD_WRITE_PERM:
        res->count =
            ns_route_count_broker_topics(s->route, c->u.perm.broker_name);
        return 0;
    default:
        return 0;
    }
}

int ns_fsm_apply(struct ns_state *s, const struct ns_command *c,
                 struct ns_apply_result *res)
{
    struct ns_apply_result scratch;
    if (res == NULL) {
        res = &scratch;
    }
    memset(res, 0, sizeof *res);
    res->type = c->type;
    if ((size_t)c->type >= sizeof APPLY / sizeof APPLY[0] ||
        APPLY[c->type] == NULL) {
        return NS_EINVAL; /* programmer error: decode never yields an unknown
                             type */
    }
    int rv = 0;
    res->reqid = c->reqid.origin != 0 ? ns_reqid_check(&s->reqids, &c->reqid)
                                      : NS_REQID_NEW;
    if (res->reqid == NS_REQID_DUPLICATE) {
        rv = answer_duplicate(s, c, res);
    } else if (res->reqid == NS_REQID_NEW) {
        rv = APPLY[c->type](s, c, res);
        if (rv == 0 && c->reqid.origin != 0) {
            rv = ns_reqid_record(&s->reqids, &c->reqid, c->leader_time_ms);
        }
    }
    if (res == &scratch) {
        ns_fsm_result_close(&scratch);
    }
    s->n_applied++;
    return rv;
}

int ns_fsm_apply_bytes(struct ns_state *s, const uint8_t *p, size_t len,
                       struct ns_apply_result *res)
{
    struct ns_command c;
    int rv = ns_command_decode(p, len, &c);
    if (rv != 0) {
        if (res != NULL) {
            memset(res, 0, sizeof *res);
        }
        return rv;
    }
    rv = ns_fsm_apply(s, &c, res);
    ns_command_close(&c);
    return rv;
}
