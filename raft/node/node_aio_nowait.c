/* raft_uv 0.15 first submits each segment write on the loop thread with
 * RWF_NOWAIT; a write the kernel cannot do without blocking completes with
 * -EAGAIN through the writer's eventfd, and libraft then runs it in its thread
 * pool, a loop turn later. On a preallocated segment a write into blocks not
 * written before nearly always comes back so (docs/raft-0.15.md §21), while a
 * small write into the block the last one wrote usually succeeds. This file
 * sees every completion of such a try (raft/node/node_aio.c hands it
 * io_getevents' results) and, while most recent tries were refused, answers
 * the loop's io_submit of a try itself with EAGAIN, which libraft takes as
 * "would block" and pools the write at once. One write in AIO_TRY_EVERY is
 * still tried, so that a load whose tries succeed again goes back to them. */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <linux/aio_abi.h>
#include <linux/fs.h>

#include "node_int.h"

#define AIO_TRY_WINDOW 8 /* tries whose outcome decides */
#define AIO_TRY_EVERY 8  /* while pooling, one write in this many is tried */

/* The outcomes of the last tries, the newest in bit 0: 1 = refused. */
static _Atomic uint32_t aio_outcomes;
static _Atomic uint32_t aio_since_try;
static _Atomic uint64_t aio_pooled;
static _Atomic uint64_t aio_refused;

/* A segment write's non-blocking try: RWF_NOWAIT, completion signalled on
 * the writer's eventfd (the start-up probe has no eventfd; the pool's submit
 * has neither). */
static bool aio_is_try(const struct iocb *cb)
{
    return (cb->aio_flags & IOCB_FLAG_RESFD) != 0 &&
           (cb->aio_rw_flags & RWF_NOWAIT) != 0;
}

static bool aio_mostly_refused(void)
{
    uint32_t recent =
        atomic_load_explicit(&aio_outcomes, memory_order_relaxed) &
        ((1u << AIO_TRY_WINDOW) - 1);
    return (unsigned)__builtin_popcount(recent) * 2 >= AIO_TRY_WINDOW;
}

bool node_aio_nowait_pool(long nr, long iocbs)
{
    if (nr != 1 || !aio_is_try(((const struct iocb *const *)iocbs)[0]) ||
        !aio_mostly_refused()) {
        return false;
    }
    uint32_t n =
        atomic_fetch_add_explicit(&aio_since_try, 1, memory_order_relaxed);
    if (n % AIO_TRY_EVERY == AIO_TRY_EVERY - 1) {
        return false;
    }
    atomic_fetch_add_explicit(&aio_pooled, 1, memory_order_relaxed);
    return true;
}

void node_aio_nowait_seen(const void *events, long n)
{
    const struct io_event *ev = events;
    for (long i = 0; i < n; i++) {
        const struct iocb *cb = (const struct iocb *)(uintptr_t)ev[i].obj;
        if (cb == NULL || !aio_is_try(cb)) {
            continue;
        }
        uint32_t refused = ev[i].res == -EAGAIN;
        uint32_t was =
            atomic_load_explicit(&aio_outcomes, memory_order_relaxed);
        atomic_store_explicit(&aio_outcomes, (was << 1) | refused,
                              memory_order_relaxed);
        if (refused) {
            atomic_fetch_add_explicit(&aio_refused, 1, memory_order_relaxed);
        }
    }
}

uint64_t ns_node_aio_pooled(void)
{
    return atomic_load_explicit(&aio_pooled, memory_order_relaxed);
}

uint64_t ns_node_aio_refused(void)
{
    return atomic_load_explicit(&aio_refused, memory_order_relaxed);
}
