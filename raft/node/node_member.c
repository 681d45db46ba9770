/* Membership changes and leadership transfer of the raft node: one change at
 * a time (raft_add then raft_assign, removing a spare that cannot catch up),
 * and the member list. Not the replicated member table (raft/fsm.c). */
#include <stdlib.h>
#include <string.h>

#include "node_int.h"
#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/log.h"

static void change_done(struct change *c, int status, const char *msg)
{
    struct ns_node *n = c->node;
    n->change = NULL;
    if (c->cb != NULL) {
        c->cb(c->arg, status, msg);
    }
    ns_free(c);
}

static void change_cb(struct raft_change *req, int status);

static void change_cb(struct raft_change *req, int status)
{
    struct change *c = req->data;
    struct ns_node *n = c->node;
    if (c->step == 1 && status == 0 && !n->stopping) {
        c->step = 2;
        int rv = raft_assign(n->raft, &c->req, c->id, c->role, change_cb);
        if (rv == 0) {
            return;
        }
        status = rv;
    }
    if (c->step == 2 && status != 0 && !n->stopping) {
        /* The spare could not catch up (RAFT_NOCONNECTION, timeout): undo. */
        NS_LOG(NS_LOG_WARN, "node: member %llu not promoted: %s; removing it",
               (unsigned long long)c->id, raft_strerror(status));
        c->step = 3;
        c->status = status;
        if (raft_remove(n->raft, &c->req, c->id, change_cb) == 0) {
            return;
        }
    }
    if (c->step == 3) {
        status = c->status;
    }
    if (status == 0) {
        NS_LOG(NS_LOG_INFO, "node: membership change for %llu done",
               (unsigned long long)c->id);
    }
    change_done(c, status == 0 ? 0 : node_map_raft_status(status),
                status == 0 ? NULL : raft_strerror(status));
}

static int start_change(struct ns_node *n, uint64_t id, int step, int role,
                        const char *addr, ns_node_change_cb cb, void *arg)
{
    if (!ns_node_is_leader(n)) {
        return NS_ENOTLEADER;
    }
    if (n->change != NULL) {
        return NS_EAGAIN;
    }
    if (id == 0) {
        return NS_EINVAL;
    }
    struct change *c = ns_calloc(1, sizeof *c);
    if (c == NULL) {
        return NS_ENOMEM;
    }
    c->node = n;
    c->id = id;
    c->step = step;
    c->role = role;
    c->cb = cb;
    c->arg = arg;
    c->req.data = c;
    int rv = step == 1   ? raft_add(n->raft, &c->req, id, addr, change_cb)
             : step == 5 ? raft_assign(n->raft, &c->req, id, role, change_cb)
                         : raft_remove(n->raft, &c->req, id, change_cb);
    if (rv != 0) {
        NS_LOG(NS_LOG_WARN, "node: membership change for %llu refused: %s (%s)",
               (unsigned long long)id, raft_strerror(rv), raft_errmsg(n->raft));
        ns_free(c);
        return rv == RAFT_NOMEM ? NS_ENOMEM
               : rv == RAFT_NOTLEADER || rv == RAFT_LEADERSHIPLOST
                   ? NS_ENOTLEADER
               : rv == RAFT_CANTCHANGE ? NS_EAGAIN
                                       : NS_EINVAL;
    }
    n->change = c;
    return 0;
}

static int raft_role_of(int role)
{
    return role == NS_MEMBER_VOTER     ? RAFT_VOTER
           : role == NS_MEMBER_STANDBY ? RAFT_STANDBY
                                       : -1;
}

int ns_node_member_add(struct ns_node *n, uint64_t id, const char *raft_addr,
                       int role, ns_node_change_cb cb, void *arg)
{
    if (raft_addr == NULL || raft_role_of(role) < 0) {
        return NS_EINVAL;
    }
    return start_change(n, id, 1, raft_role_of(role), raft_addr, cb, arg);
}

int ns_node_member_assign(struct ns_node *n, uint64_t id, int role,
                          ns_node_change_cb cb, void *arg)
{
    if (raft_role_of(role) < 0) {
        return NS_EINVAL;
    }
    return start_change(n, id, 5, raft_role_of(role), NULL, cb, arg);
}

int ns_node_member_remove(struct ns_node *n, uint64_t id, ns_node_change_cb cb,
                          void *arg)
{
    return start_change(n, id, 4, RAFT_VOTER, NULL, cb, arg);
}

static void user_transfer_cb(struct raft_transfer *req)
{
    struct change *c = req->data;
    struct ns_node *n = c->node;
    bool moved = raft_state(n->raft) != RAFT_LEADER;
    change_done(c, moved ? 0 : NS_ETIMEDOUT,
                moved ? NULL : "leadership did not move");
}

int ns_node_transfer(struct ns_node *n, uint64_t id, ns_node_change_cb cb,
                     void *arg)
{
    if (!ns_node_is_leader(n)) {
        return NS_ENOTLEADER;
    }
    if (n->change != NULL) {
        return NS_EAGAIN;
    }
    struct change *c = ns_calloc(1, sizeof *c);
    if (c == NULL) {
        return NS_ENOMEM;
    }
    c->node = n;
    c->id = id;
    c->cb = cb;
    c->arg = arg;
    c->transfer.data = c;
    int rv = raft_transfer(n->raft, &c->transfer, id, user_transfer_cb);
    if (rv != 0) {
        NS_LOG(NS_LOG_WARN, "node: transfer to %llu refused: %s",
               (unsigned long long)id, raft_strerror(rv));
        ns_free(c);
        return rv == RAFT_NOMEM ? NS_ENOMEM : NS_EINVAL;
    }
    n->change = c;
    return 0;
}

int ns_node_members(const struct ns_node *n, struct ns_node_member **out,
                    size_t *n_out)
{
    const struct raft_configuration *conf = &n->raft->configuration;
    size_t bytes = conf->n * sizeof **out;
    for (unsigned i = 0; i < conf->n; i++) {
        bytes += strlen(conf->servers[i].address) + 1;
    }
    struct ns_node_member *m = ns_calloc(1, bytes > 0 ? bytes : 1);
    if (m == NULL) {
        return NS_ENOMEM;
    }
    char *text = (char *)(m + conf->n);
    for (unsigned i = 0; i < conf->n; i++) {
        size_t len = strlen(conf->servers[i].address) + 1;
        memcpy(text, conf->servers[i].address, len);
        m[i].id = conf->servers[i].id;
        m[i].raft_addr = text;
        m[i].role = conf->servers[i].role == RAFT_VOTER     ? NS_MEMBER_VOTER
                    : conf->servers[i].role == RAFT_STANDBY ? NS_MEMBER_STANDBY
                                                            : NS_MEMBER_SPARE;
        text += len;
    }
    *out = m;
    *n_out = conf->n;
    return 0;
}
