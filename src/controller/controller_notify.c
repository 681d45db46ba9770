/* NOTIFY_BROKER_ROLE_CHANGED (1008, docs/controller.md §3): after an election
 * was committed, the leader tells every member of the group whose heartbeat
 * is alive who the master is now. Oneway and best effort: brokers also poll
 * 1004, so a lost frame only delays a switch. One peer connection per broker
 * address, kept for the next election; it does not retry. */
#include <stdio.h>
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/codes.h"
#include "raftns/err.h"
#include "raftns/log.h"
#include "controller/controller_int.h"
#include "net/peer.h"

#define MAX_PEERS 256

static struct ns_controller_peer *peer_for(struct ns_controller *c,
                                           const char *addr)
{
    for (size_t i = 0; i < c->n_peers; i++) {
        if (strcmp(c->peers[i].addr, addr) == 0) {
            return &c->peers[i];
        }
    }
    if (c->n_peers == MAX_PEERS) { /* the oldest goes */
        ns_peer_close(c->peers[0].peer, NULL, NULL);
        ns_free(c->peers[0].addr);
        memmove(&c->peers[0], &c->peers[1],
                (c->n_peers - 1) * sizeof *c->peers);
        c->n_peers--;
    }
    struct ns_controller_peer *arr =
        ns_realloc(c->peers, (c->n_peers + 1) * sizeof *arr);
    if (arr == NULL) {
        return NULL;
    }
    c->peers = arr;
    struct ns_controller_peer p = {ns_strdup(addr), NULL, 0};
    int rv = NS_ENOMEM;
    if (p.addr != NULL) {
        rv = c->peer_factory != NULL
                 ? c->peer_factory->create(c->peer_factory->arg, &p.peer)
                 : ns_peer_create(c->loop, &p.peer);
    }
    if (rv != 0) {
        ns_free(p.addr);
        return NULL;
    }
    if (ns_peer_set_addr(p.peer, addr) != 0) {
        ns_peer_close(p.peer, NULL, NULL);
        ns_free(p.addr);
        return NULL;
    }
    arr[c->n_peers] = p;
    return &arr[c->n_peers++];
}

static int send_one(struct ns_controller *c, const struct ns_ctl_group *g,
                    const char *to)
{
    struct ns_controller_peer *p = peer_for(c, to);
    if (p == NULL) {
        return NS_ENOMEM;
    }
    const struct ns_ctl_member *m = ns_ctl_find_member(g, g->master_id);
    char id[24], epoch[16], sepoch[16], body[96];
    snprintf(id, sizeof id, "%lld", (long long)g->master_id);
    snprintf(epoch, sizeof epoch, "%d", (int)g->master_epoch);
    snprintf(sepoch, sizeof sepoch, "%d", (int)g->sync_epoch);
    int n = snprintf(body, sizeof body,
                     "{\"syncStateSet\":[%lld],\"syncStateSetEpoch\":%d}",
                     (long long)g->master_id, (int)g->sync_epoch);
    struct ns_cmd req;
    ns_cmd_init(&req);
    req.code = NS_CODE_NOTIFY_BROKER_ROLE_CHANGED;
    req.version = NS_SERVER_VERSION;
    req.body = (const uint8_t *)body;
    req.body_len = (size_t)n;
    int rv = 0;
    if (m != NULL && m->addr != NULL) {
        rv = ns_cmd_ext_set(&req, "masterAddress", m->addr);
    }
    if (rv == 0) {
        rv = ns_cmd_ext_set(&req, "masterBrokerId", id);
    }
    if (rv == 0) {
        rv = ns_cmd_ext_set(&req, "masterEpoch", epoch);
    }
    if (rv == 0) {
        rv = ns_cmd_ext_set(&req, "syncStateSetEpoch", sepoch);
    }
    if (rv == 0) {
        rv = ns_peer_oneway(p->peer, &req);
    }
    if (rv == 0) {
        p->epoch = g->master_epoch;
        c->stats.notified++;
    }
    ns_cmd_close(&req);
    return rv;
}

void ns_controller_notify(struct ns_controller *c, const char *name)
{
    const struct ns_ctl_group *g = ns_ctl_find(&c->state->ctl, name);
    if (g == NULL || !g->has_master) {
        return;
    }
    int64_t now = ns_controller_now(c);
    for (size_t i = 0; i < g->n_members; i++) {
        const struct ns_ctl_member *m = &g->members[i];
        if (m->addr == NULL || !ns_ctl_live_alive(&c->live, g->cluster,
                                                  g->broker_name, m->id, now)) {
            continue;
        }
        int rv = send_one(c, g, m->addr);
        if (rv != 0) {
            NS_LOG(NS_LOG_WARN, "controller: 1008 to %s (%s) not sent: %s",
                   m->addr, g->broker_name, ns_strerror(rv));
        }
    }
}

void ns_controller_notify_close(struct ns_controller *c)
{
    for (size_t i = 0; i < c->n_peers; i++) {
        ns_peer_close(c->peers[i].peer, NULL, NULL);
        ns_free(c->peers[i].addr);
    }
    c->n_peers = 0;
}
