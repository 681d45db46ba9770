/* The one raft FSM of raftns: the struct raft_fsm callbacks (version 1:
 * apply, snapshot, restore) over a struct ns_state and its struct ns_diverge,
 * and the log entry framing every proposer writes and apply reads. The node
 * (the files of raft/node/) and the raft_fixture tests (tests/cluster/) both
 * run it. It does not propose, knows no node, no loop and no proposal list:
 * what the node adds (the in-flight result, checkpoint digests, test mutants)
 * comes in through optional hooks. It logs what it refuses. */
#ifndef RAFTNS_FSM_ADAPTER_H
#define RAFTNS_FSM_ADAPTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <raft.h>

#include "raftns/diverge.h"
#include "raftns/fsm.h"

/* WARNING: log entry framing, a persisted format. raft 0.15's segment writer
 * pads entries to 8 bytes but its loader does not skip the padding, so an
 * entry whose length is not a multiple of 8 corrupts the segment on restart.
 * Every entry is therefore: u32 big-endian command length, the command bytes,
 * zero padding to a multiple of 8. Apply checks only that the length fits in
 * the entry (an entry raft hands back is not re-checked for padding). */
#define NS_FSM_ADAPTER_ENTRY_PREFIX 4

/* Frames the len command bytes at cmd (borrowed) into *out, whose base comes
 * from raft_malloc (the caller's until raft_apply returns 0, raft's after).
 * Returns 0, or NS_ENOMEM (too long for the u32 prefix, or out of memory;
 * *out untouched). */
int ns_fsm_adapter_entry_encode(const uint8_t *cmd, size_t len,
                                struct raft_buffer *out);
/* Checks the framing of an entry and finds its command: 0 with *cmd (pointing
 * into buf->base, borrowed) and *len, or NS_EPROTO (shorter than the prefix,
 * or a length that does not fit in the entry; *cmd and *len untouched). */
int ns_fsm_adapter_entry_decode(const struct raft_buffer *buf,
                                const uint8_t **cmd, size_t *len);

/* Where a caller wants the result of one entry (the node: the proposal in
 * flight at that index). filled turns true only when the entry applied; a
 * slot left unfilled holds nothing to close. */
struct ns_fsm_adapter_result {
    struct ns_apply_result res;
    bool filled;
};

/* All optional (NULL). Every hook runs on the thread raft applies on, inside
 * the raft callback, and must not call into raft. */
struct ns_fsm_adapter_hooks {
    /* The slot for the result of the entry at index, or NULL (the result is
     * closed after the entry). Runs once per entry that is not skipped, before
     * it is applied. The slot must stay valid until the apply returns. */
    struct ns_fsm_adapter_result *(*find_result)(void *arg, uint64_t index);
    /* Runs after the entry at index applied cleanly, with its command bytes
     * and result (borrowed for the call), before the divergence bookkeeping.
     * Returning true marks the adapter diverged. */
    bool (*on_applied)(void *arg, uint64_t index, const uint8_t *cmd,
                       size_t len, const struct ns_apply_result *res);
    void *arg; /* borrowed, passed to every hook */
};

/* Snapshots off the loop (raft FSM version 3; the first three set, or none).
 * raft 0.15 calls freeze on the loop when a snapshot is due, then collect on a
 * libuv pool thread (raft_io async_work), while the loop goes on applying
 * entries; release runs on the loop when raft is done with the snapshot,
 * whether or not collect ran. */
struct ns_fsm_adapter_snapshotter {
    /* Captures the state (borrowed) as it is at raft's applied index, in
     * O(small) loop time. 0, or an NS_E* (no snapshot this time). */
    int (*freeze)(void *arg, const struct ns_state *state);
    /* The encoding (ns_snapshot_encode) of what freeze captured, in *data
     * from raft_malloc (the adapter's; *len bytes). Pool thread: must touch
     * neither the live state nor raft. 0 or an NS_E*. */
    int (*collect)(void *arg, uint8_t **data, size_t *len);
    /* Drops what freeze captured, if collect did not take it. */
    void (*release)(void *arg);
    /* Optional: the state is about to be replaced by a restore; what freeze
     * captured must not read it from now on (collect then fails). */
    void (*replaced)(void *arg);
    void *arg; /* borrowed */
};

/* Checkpoint digests off the loop (all set, or none): at a CHECKPOINT the
 * adapter calls start instead of computing the digest itself, and the mark
 * is taken when finish delivers it. The mark waits (finish with wait) before
 * the next CHECKPOINT or VERDICT is applied, so marks stay in index order and
 * a verdict always finds our digest. All on the loop. */
struct ns_fsm_adapter_digester {
    /* Starts computing ns_snapshot_digest of state (borrowed) as it is now.
     * 0; NS_EAGAIN: the state is better hashed on the loop; or another NS_E*
     * (a failure: the adapter logs it and computes it on the loop). */
    int (*start)(void *arg, const struct ns_state *state);
    /* The digest started last: 0 with *digest; NS_EAGAIN while it is not
     * ready and !wait; another NS_E* if it failed. */
    int (*finish)(void *arg, bool wait, uint64_t *digest);
    /* Forgets the digest under way (the state was replaced). */
    void (*abandon)(void *arg);
    void *arg; /* borrowed */
};

struct ns_fsm_adapter {
    struct raft_fsm fsm;    /* hand &fsm to raft_init / raft_fixture_grow */
    struct raft *raft;      /* borrowed (ns_fsm_adapter_bind) */
    struct ns_state *state; /* borrowed */
    struct ns_diverge *dv;  /* borrowed: digests, skipping an installed state */
    struct ns_fsm_adapter_hooks hooks;
    /* An entry did not decode or on_applied said so: the node must stop
     * serving (permanent). */
    bool diverged;
    bool snapshot_postponed; /* logged once until a snapshot is taken */
    int first_error;         /* first NS_E* of an entry or its bookkeeping */
    uint64_t last_index;     /* of the last entry applied or skipped */
    /* Entries whose index did not grow (raft applies in order: stays 0). */
    uint64_t n_out_of_order;
    uint64_t n_applies; /* entries handed to the state machine (or refused) */
    uint64_t n_skipped; /* entries inside an installed state */
    uint64_t n_snapshots, n_restores;
    struct ns_fsm_adapter_snapshotter snap; /* .freeze NULL: version 1 */
    uint64_t snap_t0;                       /* uv_hrtime of the last freeze */
    int snap_error;                         /* collect's result (pool thread) */
    struct ns_fsm_adapter_digester digest;  /* .start NULL: on the loop */
    uint64_t digest_at; /* index of the digest under way, 0 = none */
    /* How long the last CHECKPOINT's digest held the loop, ns, over all the
     * calls it took (the start of its fork, or each step of its capture);
     * 0 = none yet. The leader spaces checkpoints by it. */
    uint64_t digest_loop_ns;
};

/* Sets up a over state and dv (both borrowed, must outlive a) with hooks
 * (copied; NULL = none), and a->fsm (version 1, data = a). Bind the raft that
 * runs a->fsm before it starts. */
void ns_fsm_adapter_init(struct ns_fsm_adapter *a, struct ns_state *state,
                         struct ns_diverge *dv,
                         const struct ns_fsm_adapter_hooks *hooks);
/* Switches a->fsm to version 3 with snap (copied): snapshots are frozen on
 * the loop and encoded by snap->collect off it. Call before raft_init; the
 * raft_io must have version >= 2 and async_work (raft_uv: set io.version = 2
 * after raft_uv_init; 0.15 leaves it at 1 although it implements async_work).
 */
void ns_fsm_adapter_set_snapshotter(
    struct ns_fsm_adapter *a, const struct ns_fsm_adapter_snapshotter *snap);
/* Computes checkpoint digests through dg (copied) from now on. */
void ns_fsm_adapter_set_digester(struct ns_fsm_adapter *a,
                                 const struct ns_fsm_adapter_digester *dg);
/* Takes the mark of a digest under way if it is ready (without waiting);
 * call it once per loop turn. */
void ns_fsm_adapter_poll(struct ns_fsm_adapter *a);
/* Forgets a digest under way: the state is about to be replaced. */
void ns_fsm_adapter_drop_digest(struct ns_fsm_adapter *a);
/* The raft instance (borrowed) whose log a->fsm applies: raft 0.15 tells apply
 * no index, so the adapter reads raft_last_applied() of it. Call after
 * raft_init (raft_fixture_grow) and before raft_start. */
void ns_fsm_adapter_bind(struct ns_fsm_adapter *a, struct raft *r);

#endif
