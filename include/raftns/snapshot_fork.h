/* Snapshots encoded off the event loop (raft/node/snapshot_fork.c): the loop
 * forks, the child encodes the state it inherited (exactly the state at the
 * moment of the fork, whatever the parent applies afterwards) and writes the
 * bytes into a pipe, and a libuv pool thread reads them. The loop's share is
 * the fork (page tables, a few milliseconds for hundreds of MiB) instead of the
 * encoding. It does not talk to raft; the FSM adapter's snapshotter hooks
 * (include/raftns/fsm_adapter.h) do. Linux/POSIX only. */
#ifndef RAFTNS_SNAPSHOT_FORK_H
#define RAFTNS_SNAPSHOT_FORK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "raftns/fsm.h"

/* One child at a time: caller-allocated; set pid and zombie to 0 and fd to
 * -1 before the first use. */
struct ns_snapshot_fork {
    pid_t pid; /* the child, or 0 */
    int fd;    /* read end of its pipe, or -1 */
    /* a digest child that delivered but had not exited yet, reaped at the
     * next start or by _abandon; 0 = none */
    pid_t zombie;
};

/* Forks a child that encodes s (borrowed; the child sees it as it is now)
 * with ns_snapshot_encode. On the loop thread. 0, or NS_EIO (pipe or fork
 * failed; *f holds nothing). */
int ns_snapshot_fork_freeze(struct ns_snapshot_fork *f,
                            const struct ns_state *s);
/* The same for the checkpoint digest (ns_snapshot_digest) of s: a child that
 * computes it; _is_done and _collect_digest take the result. */
int ns_snapshot_fork_digest(struct ns_snapshot_fork *f,
                            const struct ns_state *s);
/* True once the child's result can be read without waiting (non-blocking;
 * false when nothing is in flight). */
bool ns_snapshot_fork_is_done(const struct ns_snapshot_fork *f);
/* Reads a digest child's result (blocks until it is written) and reaps the
 * child, or leaves it to the next start or _abandon if it has not exited. 0
 * with *out, or NS_EIO / NS_ENOMEM. */
int ns_snapshot_fork_collect_digest(struct ns_snapshot_fork *f, uint64_t *out);
/* Reads the child's encoding into *data (from alloc_fn, returns-owned: the
 * caller frees it with free_fn; *len bytes) and reaps the child. Blocks: run it
 * on a pool thread, at most once per freeze. 0; NS_ENOMEM; NS_EIO (the child
 * failed, died, or wrote a truncated encoding). The child is reaped whatever
 * the result. */
int ns_snapshot_fork_collect(struct ns_snapshot_fork *f,
                             void *(*alloc_fn)(size_t), void (*free_fn)(void *),
                             uint8_t **data, size_t *len);
/* A frozen encoding nobody will collect: kills and reaps the child. No-op
 * after _collect. */
void ns_snapshot_fork_abandon(struct ns_snapshot_fork *f);

#endif
