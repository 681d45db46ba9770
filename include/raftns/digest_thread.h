/* Checkpoint digests hashed off the event loop by a thread of their own
 * (raft/node/digest_thread.c), for states too small to be worth a fork
 * (include/raftns/snapshot_fork.h). The loop still encodes the state (it
 * changes as soon as the loop applies the next entry) but into a buffer kept
 * between digests, so the encoding touches no fresh pages; the thread runs
 * the byte-serial hash over it. With topics scattered over a server's heap
 * the encoding, which stays, costs several times the hash (BENCHMARKS.md,
 * "Checkpoint digests hashed off the loop"). The digest is
 * ns_snapshot_digest's, bit for bit: nodes that hash on the loop, in a fork or
 * here agree. One digest at a time. */
#ifndef RAFTNS_DIGEST_THREAD_H
#define RAFTNS_DIGEST_THREAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raftns/fsm.h"

struct ns_digest_thread;

/* A thread waiting for digests, keeping an encoding buffer of at most
 * keep_bytes between them. 0 with *out (returns-owned: destroy it), or
 * NS_ENOMEM / NS_EIO (no thread). */
int ns_digest_thread_create(size_t keep_bytes, struct ns_digest_thread **out);
/* Encodes s (borrowed, read only during the call) and hands it to the thread.
 * A digest abandoned and still being hashed is waited for first. 0, or the
 * encoder's error (nothing in flight then). */
int ns_digest_thread_start(struct ns_digest_thread *t,
                           const struct ns_state *s);
/* True once the digest started last can be collected without waiting. */
bool ns_digest_thread_is_done(struct ns_digest_thread *t);
/* The digest started last: 0 with *out; NS_EAGAIN while it is being hashed
 * and !wait; NS_EINVAL when none is in flight. */
int ns_digest_thread_collect(struct ns_digest_thread *t, bool wait,
                             uint64_t *out);
/* Forgets the digest in flight (the thread finishes hashing it and drops the
 * result). No-op when none is. */
void ns_digest_thread_abandon(struct ns_digest_thread *t);
/* Frees the kept buffer (waiting for a hash in progress): for a node whose
 * state grew big enough to be digested in a fork, so it does not hold the
 * last encoding for good. */
void ns_digest_thread_release(struct ns_digest_thread *t);
/* Stops and joins the thread (waiting for a hash in progress). NULL: no-op. */
void ns_digest_thread_destroy(struct ns_digest_thread *t);

#endif
