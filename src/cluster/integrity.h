/* The cluster room's divergence work (checkpoint.c, verdict.c, recovery.c;
 * docs/divergence.md): the leader's CHECKPOINT proposals, digest reports and
 * majority verdicts, and a diverged node's copy of the leader's state. One
 * struct ns_integrity per cluster (ns_cluster_integrity; integrity.c). It
 * answers no request itself: the gateway hands it the plain bytes of
 * DIGEST_REPORT and STATE_FETCH and turns what it returns into replies; the
 * observer configures it, ticks it and reports its counters. */
#ifndef RAFTNS_INTEGRITY_H
#define RAFTNS_INTEGRITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "raftns/clock.h"

#include "raftns/buf.h"
#include "raftns/diverge.h"
#include "raftns/fsm.h"
#include "raftns/node.h"

struct ns_cluster;

#define NS_CHECKPOINT_ENTRIES 1000 /* default: checkpoint every N commands */
#define NS_CHECKPOINT_MS 30000     /* ... or after T ms with any command */
/* A checkpoint due by its command count waits, after the last one, 1 ms per
 * this many bytes of state (ns_state_bytes). A digest costs about
 * 2 ns per such byte on an idle core (BENCHMARKS.md, "Periodic work of a small
 * state"), so digests take at most about 1/50 of the loop however fast writes
 * come; a small state is not held back (10 brokers x 100 topics: 25 ms). */
#define NS_CHECKPOINT_GAP_BYTES_PER_MS 10000u
/* ... and at least this many times as long as the leader's last digest held
 * its loop: on busy, shared cores a digest takes several times the estimate
 * above, and every node computes it at the same index, so each one delays
 * every write in flight (BENCHMARKS.md, "Where a follower's p99 goes").
 * 100: at most 1/100 of the loop. */
#define NS_CHECKPOINT_GAP_PER_DIGEST 100u

/* The least time (ms) between checkpoints due by their count, for a state of
 * state_bytes whose last digest held the loop digest_loop_ns (0 = unknown). */
uint64_t ns_checkpoint_gap_ms(uint64_t state_bytes, uint64_t digest_loop_ns);

/* The leader's CHECKPOINT proposals (checkpoint.c); the digests themselves
 * are the node's (raftns/diverge.h). */
struct ns_checkpoint {
    unsigned every_entries;
    unsigned every_ms;
    uint64_t n_pending;        /* commands since the last checkpoint, not
                                  counting CHECKPOINT and VERDICT entries */
    uint64_t first_pending_ms; /* uv_now of the first of them, or 0 */
    uint64_t last_applied_ms;  /* uv_now when the last CHECKPOINT applied */
    bool in_flight;
    bool wanted;         /* a recovering node waits for one (verdict.c) */
    uint64_t corrupt_at; /* test hook; 0 = off */
    bool corrupted;
};

/* Reports, the leader's tally, verdicts and step-down (verdict.c). */
struct ns_verdicts {
    struct ns_diverge_tally tally;
    bool leading;           /* the tally belongs to this term's leadership */
    bool in_flight;         /* a VERDICT proposal awaits its outcome */
    bool report_in_flight;  /* a DIGEST_REPORT awaits its answer */
    uint64_t reported_to;   /* leader the last report went to */
    uint64_t reported_upto; /* newest mark that report carried */
    uint64_t last_report_ms;
    uint64_t last_transfer_ms;
    uint64_t n_reports_sent, n_reports_received, n_proposed;
};

/* Copying a healthy state (recovery.c): the diverged node's fetch and the
 * leader's cached encoding. */
struct ns_recovery {
    bool fetching;
    uint64_t next_ms;    /* no new attempt before this uv_now */
    uint64_t backoff_ms; /* grows on failures */
    uint64_t at;         /* applied index the chunks belong to, 0 = first */
    uint64_t total;
    unsigned n_chunks; /* replies of the copy under way */
    struct ns_buf got;
    uint64_t n_attempts, n_failed;
    uint8_t *cache; /* owned: the encoding served, at cache_at */
    size_t cache_len;
    uint64_t cache_at, cache_used_ms;
    uint64_t cache_term; /* the node's term when the cache was encoded */
    uint64_t n_served;
    size_t chunk; /* test hook RAFTNS_TEST_FETCH_CHUNK; 0 = a frame's worth */
};

struct ns_integrity {
    uv_loop_t *loop;
    const struct ns_clock *clock; /* borrowed (the cluster's); NULL = the
                                     loop's uv_now */
    struct ns_state *state;       /* borrowed */
    struct ns_node *node;         /* borrowed */
    struct ns_cluster *cluster;   /* borrowed: proposals and leader requests */
    /* driven by an observer: between ns_integrity_start and _stop; the
     * leader answers reports and fetches only then */
    bool active;
    bool stopping; /* ns_integrity_stop ran */
    struct ns_checkpoint ckpt;
    struct ns_verdicts verdicts;
    struct ns_recovery recovery;
};

/* Milliseconds of the integrity's clock. */
static inline uint64_t ns_integrity_now(const struct ns_integrity *ig)
{
    return ig->clock != NULL ? ns_clock_now(ig->clock) : uv_now(ig->loop);
}

/* The cluster's (owned by it, borrowed by the caller). */
struct ns_integrity *ns_cluster_integrity(struct ns_cluster *cl);

/* Defaults (NS_CHECKPOINT_ENTRIES, NS_CHECKPOINT_MS, no test hooks); called
 * by ns_cluster_create. */
void ns_integrity_init(struct ns_integrity *ig, uv_loop_t *loop,
                       struct ns_state *state, struct ns_node *node,
                       struct ns_cluster *cluster);
/* The observer's settings: zero entries or ms keep the defaults; corrupt_at
 * and chunk are test hooks (0 = off). */
void ns_integrity_configure(struct ns_integrity *ig, unsigned every_entries,
                            unsigned every_ms, uint64_t corrupt_at,
                            size_t chunk);
/* An observer drives it from now on (its timer ticks it). */
void ns_integrity_start(struct ns_integrity *ig);
/* Replies that arrive from now on change nothing (the observer stopped). */
void ns_integrity_stop(struct ns_integrity *ig);
/* Frees the fetch buffer and the cached encoding (cluster destroy). */
void ns_integrity_close(struct ns_integrity *ig);
/* Timer tick: checkpoint, verdict and recovery work, in that order. */
void ns_integrity_tick(struct ns_integrity *ig);

/* --- checkpoint.c --- */
void ns_checkpoint_init(struct ns_checkpoint *c, unsigned every_entries,
                        unsigned every_ms, uint64_t corrupt_at);
/* ns_node_apply_hook (arg = the integrity): counts what a checkpoint must
 * cover and runs the corruption test hook; always false (the node judges
 * verdicts itself). */
bool ns_checkpoint_on_apply(void *arg, uint64_t index, const uint8_t *cmd,
                            size_t len, const struct ns_apply_result *res);
/* The leader proposes a CHECKPOINT when one is due. */
void ns_checkpoint_tick(struct ns_integrity *ig);

/* --- verdict.c --- */
/* A follower reports its unjudged digests to the leader; the leader tallies
 * its own, proposes a VERDICT when a majority agrees, and hands leadership
 * over while it is itself diverged. */
void ns_verdict_tick(struct ns_integrity *ig);
/* The leader takes a DIGEST_REPORT body (borrowed) from node from (0 =
 * absent). 0, or NS_EINVAL / NS_ENOTLEADER / NS_EPROTO with *refusal (static
 * storage) the remark to answer. */
int ns_verdict_take_report(struct ns_integrity *ig, uint64_t from,
                           const uint8_t *body, size_t len,
                           const char **refusal);

/* --- recovery.c --- */
/* Frees the fetch buffer and the cached encoding. */
void ns_recovery_close(struct ns_recovery *r);
/* A diverged follower copies the leader's state; the leader drops an encoding
 * nobody fetched for a while. */
void ns_recovery_tick(struct ns_integrity *ig);
/* One chunk of the leader's state copy (STATE_FETCH). */
struct ns_recovery_chunk {
    uint64_t at;          /* applied index of the copy */
    uint64_t total;       /* bytes of the whole copy */
    uint64_t offset;      /* of this chunk */
    uint64_t term;        /* the node's term when it encoded the copy */
    const uint8_t *bytes; /* borrowed until the next call or tick */
    size_t len;
};
/* The leader serves the chunk at offset of the copy at index (0 = a new copy
 * at the applied index, offset 0). With backup (an operator's snapshot save,
 * docs/backup-and-replicas.md) any ready, healthy node serves its own state
 * the same way; a new backup shares a copy still being transferred. 0 with
 * *out; NS_ENOMEM; or another NS_E* with the remark to answer written to remark
 * (NUL-terminated, cap bytes). */
int ns_recovery_serve(struct ns_integrity *ig, bool backup, uint64_t index,
                      uint64_t offset, struct ns_recovery_chunk *out,
                      char *remark, size_t cap);

#endif
