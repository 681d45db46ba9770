/* Divergence by majority (docs/divergence.md): the pure half. A node's own
 * digest at every CHECKPOINT it applies, its judgement of the VERDICT entries
 * (the digest a majority of voters held), the leader's tally of the digests
 * voters report, and the bookkeeping that lets a diverged node replace its
 * state with a healthy node's and skip the entries that state already holds.
 * No I/O, no clock, no logging: raft/node/node_fsm.c, src/server/ and the
 * cluster tests drive it. */
#ifndef RAFTNS_DIVERGE_H
#define RAFTNS_DIVERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raftns/command.h"
#include "raftns/fsm.h"

#define NS_DIVERGE_RING 16       /* own (index, digest) marks remembered */
#define NS_DIVERGE_MAX_VOTES 128 /* votes the leader's tally holds */

/* A state digest a node computed right after applying the CHECKPOINT entry at
 * index. */
struct ns_diverge_mark {
    uint64_t index;
    uint64_t digest;
};

enum ns_diverge_health {
    NS_DIVERGE_UNJUDGED = 0,   /* no verdict about one of our digests yet */
    NS_DIVERGE_HEALTHY = 1,    /* the last verdict we could judge agreed */
    NS_DIVERGE_DIVERGED = 2,   /* a verdict's digest differs from ours */
    NS_DIVERGE_RECOVERING = 3, /* a healthy state was installed; diverged
                                  until a later verdict agrees */
};

/* What applying one entry meant for divergence. */
enum ns_diverge_event {
    NS_DIVERGE_EV_NONE = 0,  /* neither a CHECKPOINT nor a VERDICT */
    NS_DIVERGE_EV_MARK,      /* CHECKPOINT: our digest is remembered */
    NS_DIVERGE_EV_AGREE,     /* VERDICT equal to our digest */
    NS_DIVERGE_EV_RECOVERED, /* ... and we were diverged: no longer */
    NS_DIVERGE_EV_DIVERGED,  /* VERDICT differs from our digest */
    NS_DIVERGE_EV_UNJUDGED,  /* VERDICT for an index we hold no digest of,
                                or older than the last one */
};

/* One node's view. Zero-initialised (ns_diverge_init) it is unjudged. */
struct ns_diverge {
    struct ns_diverge_mark ring[NS_DIVERGE_RING];
    size_t ring_next;
    struct ns_diverge_mark last; /* newest own mark; index 0 = none */
    enum ns_diverge_health health;
    struct ns_diverge_mark verdict;       /* the last verdict applied */
    uint64_t healthy[NS_VERDICT_MAX_IDS]; /* its agreeing voters */
    size_t n_healthy;
    /* The verdict that judged us diverged, and our digest at its index. */
    struct ns_diverge_mark judged;
    uint64_t judged_local;
    uint64_t skip_through; /* entries <= this are inside an installed state */
    uint64_t installed_at; /* index of the last installed state, 0 = none */
    uint64_t n_diverged, n_recovered, n_verdicts, n_installs;
};

void ns_diverge_init(struct ns_diverge *d);
/* True while the node must not serve: diverged or recovering. */
bool ns_diverge_is_diverged(const struct ns_diverge *d);

/* After the FSM applied the entry at index (cmd/len: the command bytes,
 * borrowed) to s: remembers our digest at a CHECKPOINT, judges a VERDICT.
 * *ev says what happened. 0, or NS_ENOMEM (the digest could not be computed;
 * no mark taken). Undecodable verdicts are NS_EPROTO (nothing changed). */
int ns_diverge_on_apply(struct ns_diverge *d, const struct ns_state *s,
                        uint64_t index, const uint8_t *cmd, size_t len,
                        enum ns_diverge_event *ev);
/* Remembers digest as our mark at index, as a CHECKPOINT applied there does:
 * for a digest computed elsewhere (off the loop, raft/fsm_adapter.c). index
 * must be newer than every mark d holds. */
void ns_diverge_add_mark(struct ns_diverge *d, uint64_t index, uint64_t digest);
/* Our digest at index, or NULL (borrowed pointer into d). */
const struct ns_diverge_mark *ns_diverge_find(const struct ns_diverge *d,
                                              uint64_t index);
/* Copies at most cap of our marks newer than the last verdict (the votes not
 * yet decided), oldest first; returns how many. */
size_t ns_diverge_unjudged(const struct ns_diverge *d,
                           struct ns_diverge_mark *out, size_t cap);

/* --- recovery --- */

/* Replaces s with p/len (ns_snapshot_encode bytes, borrowed) taken by a
 * healthy node whose applied index was at, on a node whose raft applied index
 * is applied. Entries up to at then must be skipped (ns_diverge_skips), and
 * every later one applied: none twice, none lost. Returns 0 (recovering),
 * NS_EAGAIN (applied > at: this node already applied entries the state lacks;
 * fetch a newer one), or ns_snapshot_decode's NS_EPROTO / NS_EVERSION /
 * NS_ENOMEM (s and d unchanged). */
int ns_diverge_install(struct ns_diverge *d, struct ns_state *s,
                       const uint8_t *p, size_t len, uint64_t at,
                       uint64_t applied);
/* True when the entry at index is already inside the installed state. */
bool ns_diverge_skips(const struct ns_diverge *d, uint64_t index);
/* raft replaced the state with a snapshot of its own (InstallSnapshot or a
 * restart): nothing is to be skipped any more, older marks are dropped. */
void ns_diverge_restored(struct ns_diverge *d);
/* False while a snapshot labelled with raft's applied index would be wrong
 * (the installed state is ahead of it) or would save a state a verdict found
 * diverged. */
bool ns_diverge_may_snapshot(const struct ns_diverge *d, uint64_t applied);
/* The voter a diverged leader hands leadership to: the first voter (of
 * voters, n) the last verdict found healthy other than self; 0 when none
 * (let raft pick). */
uint64_t ns_diverge_transfer_target(const struct ns_diverge *d, uint64_t self,
                                    const uint64_t *voters, size_t n);

/* --- the majority rule and the leader's tally --- */

/* A digest voter id reported for the checkpoint at index. */
struct ns_diverge_vote {
    uint64_t index;
    uint64_t id;
    uint64_t digest;
};

enum ns_diverge_decision {
    NS_DIVERGE_PENDING = 0,     /* no majority yet, the missing votes could
                                   still make one */
    NS_DIVERGE_MAJORITY = 1,    /* one digest is held by > half the voters */
    NS_DIVERGE_NO_MAJORITY = 2, /* no digest can reach a majority any more */
};

/* The majority rule over the votes of ONE checkpoint (votes, n_votes; the
 * index fields are ignored). Only votes of ids in voters count, one per
 * voter (the first). MAJORITY sets *digest. Pure and total. */
enum ns_diverge_decision
ns_diverge_majority(const struct ns_diverge_vote *votes, size_t n_votes,
                    const uint64_t *voters, size_t n_voters, uint64_t *digest);

struct ns_diverge_tally {
    struct ns_diverge_vote votes[NS_DIVERGE_MAX_VOTES];
    size_t n;
    uint64_t closed_through;    /* checkpoints decided or given up */
    uint64_t no_majority_index; /* the last one without a majority, 0 none */
    uint64_t n_no_majority;
};

void ns_diverge_tally_init(struct ns_diverge_tally *t);
/* Votes for indexes up to index are no longer wanted (a verdict about index
 * was applied). */
void ns_diverge_tally_close(struct ns_diverge_tally *t, uint64_t index);
/* Records id's digest for the checkpoint at index; a later vote of the same id
 * for the same index replaces it; closed indexes are ignored; when full, the
 * oldest index's votes make room. */
void ns_diverge_tally_add(struct ns_diverge_tally *t, uint64_t index,
                          uint64_t id, uint64_t digest);
/* Decides the open checkpoints, oldest first, with the current voters. On the
 * first MAJORITY: fills *verdict (an initialised VERDICT command, caller
 * closes it on 0) and closes every index up to it. A NO_MAJORITY index is
 * closed and recorded. Returns MAJORITY (verdict filled), PENDING (nothing to
 * propose) or NS_ENOMEM. */
int ns_diverge_tally_decide(struct ns_diverge_tally *t, const uint64_t *voters,
                            size_t n_voters, struct ns_command *verdict);

#endif
