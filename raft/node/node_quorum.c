/* The reports of a node on its peers (raftns/node.h): which voters it heard
 * from, the warning a node without a leader logs about it, and the leader's
 * replication lag per member. A node that stays a candidate says why ("1 of 3
 * voters heard") instead of nothing. It judges nothing: raft elects, this
 * only reports. */
#include <stdio.h>
#include <string.h>

#include "node_int.h"
#include "node_transport.h"
#include "raftns/log.h"

#define WARN_AFTER_TIMEOUTS 3 /* election timeouts without a leader */
#define WARN_EVERY_MS 10000

void ns_node_quorum(const struct ns_node *n, struct ns_node_quorum *q)
{
    const struct raft_configuration *conf = &n->raft->configuration;
    uint64_t now = ns_clock_now(&n->clock);
    uint64_t window = 2 * (uint64_t)n->raft->election_timeout;
    memset(q, 0, sizeof *q);
    q->window_ms = window < 2000 ? 2000 : window;
    for (unsigned i = 0; i < conf->n; i++) {
        const struct raft_server *s = &conf->servers[i];
        if (s->role != RAFT_VOTER) {
            continue;
        }
        q->n_voters++;
        uint64_t last = s->id == n->id
                            ? now
                            : node_transport_last_heard(&n->transport, s->id);
        bool heard = last != 0 && now - last <= q->window_ms;
        q->in_configuration = q->in_configuration || s->id == n->id;
        if (heard && q->n_heard < NS_NODE_QUORUM_MAX) {
            q->heard[q->n_heard++] = s->id;
        } else if (!heard && q->n_not_heard < NS_NODE_QUORUM_MAX) {
            q->not_heard[q->n_not_heard++] = s->id;
        }
    }
    q->needed = q->n_voters / 2 + 1;
    q->has_quorum = q->n_voters > 0 && q->n_heard >= q->needed;
    q->leaderless_ms = n->leaderless_since != 0 ? now - n->leaderless_since : 0;
}

/* "2@127.0.0.1:9887 3@127.0.0.1:9888" for the ids of list. */
static void describe(const struct ns_node *n, const uint64_t *ids, size_t n_ids,
                     char *out, size_t cap)
{
    const struct raft_configuration *conf = &n->raft->configuration;
    size_t used = 0;
    out[0] = '\0';
    for (size_t k = 0; k < n_ids && used + 1 < cap; k++) {
        const char *addr = "?";
        for (unsigned i = 0; i < conf->n; i++) {
            if (conf->servers[i].id == ids[k]) {
                addr = conf->servers[i].address;
            }
        }
        int w = snprintf(out + used, cap - used, "%s%llu@%s", k ? " " : "",
                         (unsigned long long)ids[k], addr);
        if (w < 0) {
            break;
        }
        used += (size_t)w;
    }
    if (used >= cap) {
        out[cap - 1] = '\0';
    }
}

void node_quorum_tick(struct ns_node *n)
{
    uint64_t now = ns_clock_now(&n->clock);
    if (!n->started || n->stopping || n->leader_id != 0 ||
        ns_node_is_leader(n)) {
        n->leaderless_since = 0;
        return;
    }
    if (n->leaderless_since == 0) {
        n->leaderless_since = now;
        return;
    }
    uint64_t after = WARN_AFTER_TIMEOUTS * (uint64_t)n->raft->election_timeout;
    if (now - n->leaderless_since < after ||
        (n->quorum_logged_ms != 0 &&
         now - n->quorum_logged_ms < WARN_EVERY_MS)) {
        return;
    }
    n->quorum_logged_ms = now;
    struct ns_node_quorum q;
    char heard[512], missing[512];
    ns_node_quorum(n, &q);
    describe(n, q.heard, q.n_heard, heard, sizeof heard);
    describe(n, q.not_heard, q.n_not_heard, missing, sizeof missing);
    if (!q.in_configuration) {
        NS_LOG(NS_LOG_WARN,
               "node: no leader for %llu ms, and this node (%llu) is not a "
               "voter of the configuration in its data dir %s (voters: %s%s%s)",
               (unsigned long long)(now - n->leaderless_since),
               (unsigned long long)n->id, n->dir, heard,
               q.n_not_heard ? " " : "", missing);
    } else if (!q.has_quorum) {
        NS_LOG(NS_LOG_WARN,
               "node: cannot reach a quorum: no leader for %llu ms; heard "
               "from %zu of %zu voters in the last %llu ms (%s), not from "
               "%s; a leader needs %zu",
               (unsigned long long)(now - n->leaderless_since), q.n_heard,
               q.n_voters, (unsigned long long)q.window_ms, heard,
               q.n_not_heard ? missing : "-", q.needed);
    } else {
        NS_LOG(NS_LOG_WARN,
               "node: no leader for %llu ms although %zu of %zu voters were "
               "heard (%s); an election is running",
               (unsigned long long)(now - n->leaderless_since), q.n_heard,
               q.n_voters, heard);
    }
}

size_t ns_node_replication_lag(const struct ns_node *n, struct ns_node_lag *out,
                               size_t cap)
{
    struct raft *r = (struct raft *)n->raft;
    if (!n->started || raft_state(r) != RAFT_LEADER ||
        r->leader_state.progress == NULL) {
        return 0;
    }
    raft_index last = raft_last_index(r);
    size_t k = 0;
    for (unsigned i = 0; i < r->configuration.n && k < cap; i++) {
        const struct raft_server *s = &r->configuration.servers[i];
        raft_index match =
            s->id == n->id ? last : r->leader_state.progress[i].match_index;
        out[k].id = s->id;
        out[k].lag = last > match ? last - match : 0;
        k++;
    }
    return k;
}
