/* CHECKPOINT proposals (docs/divergence.md): the leader logs a CHECKPOINT
 * every N commands or T ms with a command, and every node remembers its own
 * digest when it applies one (raft/diverge.c, from raft/fsm_adapter.c). Which
 * digest is healthy is decided by a majority of voters (verdict.c), never by
 * the leader alone. This file also holds the corruption test hook. */
#include <inttypes.h>
#include <string.h>

#include "cluster/cluster.h"
#include "cluster/integrity.h"
#include "raftns/err.h"
#include "raftns/kv.h"
#include "raftns/log.h"

void ns_checkpoint_init(struct ns_checkpoint *c, unsigned every_entries,
                        unsigned every_ms, uint64_t corrupt_at)
{
    memset(c, 0, sizeof *c);
    c->every_entries = every_entries ? every_entries : NS_CHECKPOINT_ENTRIES;
    c->every_ms = every_ms ? every_ms : NS_CHECKPOINT_MS;
    c->corrupt_at = corrupt_at;
}

/* Test hook: changes the local state outside the log, as a bug would. */
static void corrupt_state(struct ns_integrity *ig, uint64_t index)
{
    struct ns_checkpoint *c = &ig->ckpt;
    c->corrupted = true;
    if (ns_kv_put(ig->state->kv, "raftns.test", "corrupt", "1") != 0) {
        NS_LOG(NS_LOG_ERROR, "checkpoint: test corruption out of memory");
        return;
    }
    NS_LOG(NS_LOG_WARN,
           "checkpoint: TEST HOOK corrupted the local state at index %" PRIu64
           " (RAFTNS_TEST_CORRUPT_AT)",
           index);
}

bool ns_checkpoint_on_apply(void *arg, uint64_t index, const uint8_t *cmd,
                            size_t len, const struct ns_apply_result *res)
{
    struct ns_integrity *ig = arg;
    struct ns_checkpoint *c = &ig->ckpt;
    (void)cmd;
    (void)len;
    if (c->corrupt_at != 0 && !c->corrupted && index >= c->corrupt_at) {
        corrupt_state(ig, index);
    }
    if (res->type == NS_CMD_CHECKPOINT) {
        c->n_pending = 0;
        c->first_pending_ms = 0;
        c->last_applied_ms = ns_integrity_now(ig);
    } else if (res->type != NS_CMD_VERDICT) {
        /* Verdicts do not count: each would otherwise call for the next
         * checkpoint, and that for the next verdict, for ever. */
        c->n_pending++;
        if (c->first_pending_ms == 0) {
            c->first_pending_ms = ns_integrity_now(ig) + 1; /* never 0 */
        }
    }
    return false;
}

static void proposed_cb(void *arg, int status, uint64_t index,
                        const struct ns_apply_result *res)
{
    struct ns_integrity *ig = arg;
    (void)index;
    (void)res;
    ig->ckpt.in_flight = false;
    if (status != 0) {
        NS_LOG(NS_LOG_INFO, "checkpoint: proposal not applied: %s",
               ns_strerror(status));
    }
}

uint64_t ns_checkpoint_gap_ms(uint64_t state_bytes, uint64_t digest_loop_ns)
{
    uint64_t by_size = state_bytes / NS_CHECKPOINT_GAP_BYTES_PER_MS;
    uint64_t by_cost =
        digest_loop_ns / 1000u * NS_CHECKPOINT_GAP_PER_DIGEST / 1000u;
    return by_size > by_cost ? by_size : by_cost;
}

static bool is_due(const struct ns_integrity *ig)
{
    const struct ns_checkpoint *c = &ig->ckpt;
    if (c->wanted) {
        return true; /* a recovering node waits to be judged */
    }
    if (c->n_pending == 0 || c->first_pending_ms == 0) {
        return false; /* nothing changed since: no log entry (heartbeats) */
    }
    uint64_t now = ns_integrity_now(ig);
    /* A simulated clock's milliseconds are not the loop's: there only the
     * state's size spaces checkpoints. */
    uint64_t gap_ms = ns_checkpoint_gap_ms(
        ns_state_bytes(ig->state),
        ig->clock == NULL ? ns_node_digest_loop_ns(ig->node) : 0);
    if (c->n_pending >= c->every_entries &&
        now - c->last_applied_ms >= gap_ms) {
        return true;
    }
    return now + 1 - c->first_pending_ms >= c->every_ms;
}

void ns_checkpoint_tick(struct ns_integrity *ig)
{
    struct ns_checkpoint *c = &ig->ckpt;
    /* A diverged leader still checkpoints: its digest is one vote and the
     * majority judges it (it hands leadership over meanwhile). */
    if (c->in_flight || !ns_node_is_leader(ig->node) || !is_due(ig)) {
        return;
    }
    const struct ns_diverge_mark *last = &ns_node_diverge(ig->node)->last;
    struct ns_command cmd;
    ns_command_init(&cmd, NS_CMD_CHECKPOINT);
    cmd.leader_time_ms = ns_clock_wall_ms();
    /* The leader's previous mark stays in the entry (format version 1) as a
     * record for log readers; nobody compares against it any more. */
    cmd.u.checkpoint.index = last->index;
    cmd.u.checkpoint.digest = last->digest;
    int rv =
        ns_cluster_submit(ig->cluster, &cmd, NS_SUBMIT_LEADER, proposed_cb, ig);
    if (rv == 0) {
        c->in_flight = true;
        c->wanted = false;
        NS_LOG(NS_LOG_DEBUG, "checkpoint: proposed");
    } else {
        NS_LOG(NS_LOG_WARN, "checkpoint: cannot propose: %s", ns_strerror(rv));
    }
    ns_command_close(&cmd);
}
