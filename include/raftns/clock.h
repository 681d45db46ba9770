/* A monotonic millisecond clock as an input: the node and the server read
 * their time through one (a libuv loop's uv_now in production, the virtual
 * time of a simulated cluster in tests/cluster/sim.h). Not the wall clock:
 * command timestamps and signatures read ns_clock_wall_ms. */
#ifndef RAFTNS_CLOCK_H
#define RAFTNS_CLOCK_H

#include <stdint.h>

struct ns_clock {
    /* Milliseconds that never go back; arg is the clock's own. */
    uint64_t (*now_ms)(void *arg);
    void *arg; /* borrowed: must outlive every reader */
};

static inline uint64_t ns_clock_now(const struct ns_clock *c)
{
    return c->now_ms(c->arg);
}

#endif
