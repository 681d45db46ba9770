/* Divergence detection (DESIGN.md §7): every node remembers its state digest
 * at each CHECKPOINT it applies; checkpoint k+1, proposed by the leader,
 * carries the leader's (index_k, digest_k), so every node compares digests at
 * the same applied index. A mismatch marks the node diverged. The FSM apply of
 * CHECKPOINT stays pure (raft/fsm.c); this file is the node-local part. */
#include <inttypes.h>
#include <string.h>

#include "raftns/err.h"
#include "raftns/kv.h"
#include "raftns/log.h"
#include "observe.h"

void ns_checkpoint_init(struct ns_checkpoint *c, unsigned every_entries,
                        unsigned every_ms, uint64_t corrupt_at)
{
    memset(c, 0, sizeof *c);
    c->every_entries = every_entries ? every_entries : NS_CHECKPOINT_ENTRIES;
    c->every_ms = every_ms ? every_ms : NS_CHECKPOINT_MS;
    c->corrupt_at = corrupt_at;
}

static const struct ns_ckpt_mark *find_mark(const struct ns_checkpoint *c,
                                            uint64_t index)
{
    for (size_t i = 0; i < NS_CKPT_RING; i++) {
        if (c->ring[i].index == index) {
            return &c->ring[i];
        }
    }
    return NULL;
}

/* Test hook: changes the local state outside the log, as a bug would. */
static void corrupt_state(struct ns_observe *o, uint64_t index)
{
    struct ns_checkpoint *c = &o->ckpt;
    c->corrupted = true;
    if (ns_kv_put(o->state->kv, "raftns.test", "corrupt", "1") != 0) {
        NS_LOG(NS_LOG_ERROR, "checkpoint: test corruption out of memory");
        return;
    }
    NS_LOG(NS_LOG_WARN,
           "checkpoint: TEST HOOK corrupted the local state at index %" PRIu64
           " (RAFTNS_TEST_CORRUPT_AT)",
           index);
}

/* Compares the leader's mark carried by a CHECKPOINT with ours. */
static void compare(struct ns_observe *o, uint64_t index, const uint8_t *cmd,
                    size_t len)
{
    struct ns_checkpoint *c = &o->ckpt;
    struct ns_command command;
    int rv = ns_command_decode(cmd, len, &command);
    if (rv != 0) {
        NS_LOG(NS_LOG_ERROR, "checkpoint: cannot decode entry %" PRIu64 ": %s",
               index, ns_strerror(rv));
        return;
    }
    struct ns_ckpt_mark leader = {command.u.checkpoint.index,
                                  command.u.checkpoint.digest};
    ns_command_close(&command);
    if (leader.index == 0) {
        return; /* the leader had no mark yet: this one starts the chain */
    }
    const struct ns_ckpt_mark *mine = find_mark(c, leader.index);
    if (mine == NULL) {
        /* We joined or restored a snapshot after that checkpoint. */
        NS_LOG(NS_LOG_DEBUG,
               "checkpoint: no local digest at index %" PRIu64 " to compare",
               leader.index);
        return;
    }
    if (mine->digest != leader.digest && !c->diverged) {
        c->diverged = true;
        c->expected = leader;
        c->actual_digest = mine->digest;
        NS_LOG(NS_LOG_ERROR,
               "checkpoint: STATE DIVERGED at index %" PRIu64
               ": leader digest %016" PRIx64 ", ours %016" PRIx64
               " (checked at entry %" PRIu64 "); this node stops serving",
               leader.index, leader.digest, mine->digest, index);
    } else if (mine->digest == leader.digest) {
        NS_LOG(NS_LOG_DEBUG,
               "checkpoint: digest at index %" PRIu64 " agrees (%016" PRIx64
               ")",
               leader.index, leader.digest);
    }
}

bool ns_checkpoint_on_apply(void *arg, uint64_t index, const uint8_t *cmd,
                            size_t len, const struct ns_apply_result *res)
{
    struct ns_observe *o = arg;
    struct ns_checkpoint *c = &o->ckpt;
    if (c->corrupt_at != 0 && !c->corrupted && index >= c->corrupt_at) {
        corrupt_state(o, index);
    }
    if (res->type != NS_CMD_CHECKPOINT) {
        if (c->first_pending_ms == 0) {
            c->first_pending_ms = uv_now(o->loop) + 1; /* never 0 */
        }
        return c->diverged;
    }
    compare(o, index, cmd, len);
    uint64_t digest = 0;
    int rv = ns_state_digest(o->state, &digest);
    if (rv != 0) {
        NS_LOG(NS_LOG_ERROR, "checkpoint: digest at %" PRIu64 " failed: %s",
               index, ns_strerror(rv));
        return c->diverged;
    }
    c->last.index = index;
    c->last.digest = digest;
    c->ring[c->ring_next] = c->last;
    c->ring_next = (c->ring_next + 1) % NS_CKPT_RING;
    c->applied_at_last = o->state->n_applied;
    c->first_pending_ms = 0;
    return c->diverged;
}

static void proposed_cb(void *arg, int status,
                        const struct ns_apply_result *res)
{
    struct ns_observe *o = arg;
    (void)res;
    o->ckpt.in_flight = false;
    if (status != 0) {
        NS_LOG(NS_LOG_INFO, "checkpoint: proposal not applied: %s",
               ns_strerror(status));
    }
}

static bool is_due(const struct ns_observe *o)
{
    const struct ns_checkpoint *c = &o->ckpt;
    uint64_t pending = o->state->n_applied - c->applied_at_last;
    if (pending == 0 || c->first_pending_ms == 0) {
        return false; /* nothing changed since: no log entry (heartbeats) */
    }
    if (pending >= c->every_entries) {
        return true;
    }
    return uv_now(o->loop) + 1 - c->first_pending_ms >= c->every_ms;
}

void ns_checkpoint_tick(struct ns_observe *o)
{
    struct ns_checkpoint *c = &o->ckpt;
    if (c->in_flight || c->diverged || ns_node_is_diverged(o->node) ||
        !ns_node_is_leader(o->node) || !is_due(o)) {
        return;
    }
    struct ns_command cmd;
    struct ns_buf b;
    ns_command_init(&cmd, NS_CMD_CHECKPOINT);
    cmd.leader_time_ms = ns_wall_ms();
    cmd.u.checkpoint.index = c->last.index;
    cmd.u.checkpoint.digest = c->last.digest;
    ns_buf_init(&b);
    int rv = ns_command_encode(&cmd, &b);
    if (rv == 0 && b.err != 0) {
        rv = b.err;
    }
    if (rv == 0) {
        rv = ns_node_propose(o->node, b.data, b.len, proposed_cb, o);
    }
    if (rv == 0) {
        c->in_flight = true;
        NS_LOG(NS_LOG_DEBUG,
               "checkpoint: proposed, carrying index %" PRIu64
               " digest %016" PRIx64,
               c->last.index, c->last.digest);
    } else {
        NS_LOG(NS_LOG_WARN, "checkpoint: cannot propose: %s", ns_strerror(rv));
    }
    ns_buf_close(&b);
    ns_command_close(&cmd);
}
