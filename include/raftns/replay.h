/* Replay memory for signed private requests: the nonces seen within the
 * signature window, each forgotten once its timestamp left the window (a
 * request that old fails the timestamp check anyway). A pure structure: time
 * comes in as now_ms. Cost: O(1) expected per check; memory grows with the
 * number of requests signed within one window, up to a fixed bound. */
#ifndef RAFTNS_REPLAY_H
#define RAFTNS_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "raftns/sign.h"

/* Enough for ~2,000 signed requests a second over a 2-minute window. */
#define NS_REPLAY_MAX_ENTRIES (1u << 18)

struct ns_replay_entry {
    uint8_t nonce[NS_SIGN_NONCE_LEN];
    int64_t expires_ms; /* 0 = never used */
};

struct ns_replay {
    struct ns_replay_entry *slots; /* owned, n_slots (a power of two) */
    size_t n_slots;
    size_t n_used; /* slots ever used since the last rehash (live or not) */
    size_t max_entries;
    int64_t window_ms;
};

/* max_entries 0 = NS_REPLAY_MAX_ENTRIES. */
void ns_replay_init(struct ns_replay *r, size_t max_entries, int64_t window_ms);
void ns_replay_close(struct ns_replay *r);
/* Remembers nonce (signed at ts_ms) unless it was seen: 0 (fresh), NS_EPERM
 * (seen: a replay), NS_EBUSY (the bound is full of live nonces: refuse, the
 * signer retries later) or NS_ENOMEM. */
int ns_replay_check(struct ns_replay *r, const uint8_t nonce[NS_SIGN_NONCE_LEN],
                    int64_t ts_ms, int64_t now_ms);

#endif
