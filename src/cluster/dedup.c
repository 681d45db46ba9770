/* The one de-duplication step of the write path (docs/exactly-once.md): a
 * write whose effect the state already holds is answered from the state
 * without an entry (ns_dedup_registration_held: the heartbeat short-cut of
 * any node, and the leader's answer to a forwarded registration), and on the
 * leader a command identical to a pending one shares that one's entry
 * (ns_dedup_propose). The request id makes a copy that gets past both
 * harmless (raft/reqid.c); it does not depend on this step. */
#include <string.h>

#include "cluster/cluster_int.h"
#include "raftns/alloc.h"
#include "raftns/command.h"
#include "raftns/config.h"
#include "raftns/err.h"
#include "raftns/log.h"
#include "raftns/route.h"

int ns_dedup_registration_held(const struct ns_cluster *cl,
                               const struct ns_register *reg,
                               struct ns_register_result *master)
{
    const struct ns_settings *st = ns_config_settings(cl->state->config);
#ifdef RAFTNS_BREAK_NO_DEDUP
    return 0; /* TEST-ONLY MUTANT: no registration is ever held */
#endif
    if (!ns_route_is_unchanged_registration(
            cl->state->route, reg, st->delete_topic_with_broker_registration)) {
        return 0;
    }
    int rv = ns_route_find_master(cl->state->route, reg, master);
    return rv != 0 ? rv : 1;
}

/* Identical pending commands on the leader share one log entry. */
struct shared_waiter {
    ns_node_index_cb cb;
    void *arg;
    struct shared_waiter *next;
};

struct shared {
    struct ns_cluster *cl;
    uint8_t *key; /* the command's bytes (same_command compares them) */
    size_t len;
    struct shared_waiter *waiters;
    struct shared *prev, *next;
};

static void shared_done(void *arg, int status, uint64_t index,
                        const struct ns_apply_result *res)
{
    struct shared *sh = arg;
    struct ns_cluster *cl = sh->cl;
    if (sh->prev != NULL) {
        sh->prev->next = sh->next;
    } else {
        cl->shared = sh->next;
    }
    if (sh->next != NULL) {
        sh->next->prev = sh->prev;
    }
    struct shared_waiter *w = sh->waiters;
    while (w != NULL) {
        struct shared_waiter *next = w->next;
        w->cb(w->arg, status, index, res);
        ns_free(w);
        w = next;
    }
    ns_free(sh->key);
    ns_free(sh);
}

/* Equal but for the leader time, and (any_id) for the request id. */
static bool same_command(const struct shared *sh, const uint8_t *bytes,
                         size_t len, bool any_id)
{
#ifdef RAFTNS_BREAK_NO_DEDUP
    return false; /* TEST-ONLY MUTANT: identical commands never share */
#endif
    return ns_command_same_write(sh->key, sh->len, bytes, len, any_id);
}

int ns_dedup_propose(struct ns_cluster *cl, const uint8_t *bytes, size_t len,
                     bool any_id, ns_node_index_cb cb, void *arg)
{
    struct shared_waiter *w = ns_calloc(1, sizeof *w);
    if (w == NULL) {
        return NS_ENOMEM;
    }
    w->cb = cb;
    w->arg = arg;
    for (struct shared *sh = cl->shared; sh != NULL; sh = sh->next) {
        if (same_command(sh, bytes, len, any_id)) {
            w->next = sh->waiters;
            sh->waiters = w;
            NS_LOG(NS_LOG_DEBUG, "forward: identical pending command joined");
            return 0;
        }
    }
    struct shared *sh = ns_calloc(1, sizeof *sh);
    uint8_t *key = ns_malloc(len > 0 ? len : 1);
    if (sh == NULL || key == NULL) {
        ns_free(sh);
        ns_free(key);
        ns_free(w);
        return NS_ENOMEM;
    }
    memcpy(key, bytes, len);
    sh->cl = cl;
    sh->key = key;
    sh->len = len;
    sh->waiters = w;
    int rv = ns_node_propose_indexed(cl->node, bytes, len, shared_done, sh);
    if (rv != 0) {
        ns_free(key);
        ns_free(sh);
        ns_free(w);
        return rv;
    }
    sh->next = cl->shared;
    if (sh->next != NULL) {
        sh->next->prev = sh;
    }
    cl->shared = sh;
    return 0;
}
