/* An InstallSnapshot that arrives while this follower takes or stores a
 * snapshot of its own is held here and handed to raft once that is done.
 * libraft 0.15 drops such a message without an answer (src/replication.c,
 * replicationInstallSnapshot: "the leader will eventually retry"), and the
 * leader retries only after its install-snapshot timeout (30 s): the follower
 * stays behind for that long (docs/raft-0.15.md §18). Delivering a message
 * late is what any network may do, and raft checks its term when it gets it.
 * One message is held at most: a newer one replaces it. */
#include <string.h>

#include "node_int.h"

static bool raft_busy_with_snapshot(const struct raft *r)
{
    /* the condition under which raft 0.15 drops an InstallSnapshot */
    return r->snapshot.pending.term != 0 || r->snapshot.put.data != NULL;
}

static void free_held(struct ns_node *n)
{
    if (n->install_held) {
        raft_free(n->install_msg.install_snapshot.data.base);
        raft_configuration_close(&n->install_msg.install_snapshot.conf);
        n->install_held = false;
    }
}

bool node_install_hold(struct ns_node *n, const struct raft_message *m)
{
    if (m->type != RAFT_IO_INSTALL_SNAPSHOT ||
        !raft_busy_with_snapshot(n->raft)) {
        return false;
    }
    free_held(n);
    n->install_msg = *m; /* takes its data and configuration */
    n->install_held = true;
    n->installs_held++;
    return true;
}

void node_install_flush(struct ns_node *n)
{
    if (!n->install_held || n->raft_closed ||
        raft_busy_with_snapshot(n->raft)) {
        return;
    }
    struct raft_message m = n->install_msg;
    n->install_held = false;
    n->raft_recv(n->raft->io, &m);
}

void node_install_drop(struct ns_node *n)
{
    free_held(n);
}

uint64_t ns_node_installs_held(const struct ns_node *n)
{
    return n->installs_held;
}
