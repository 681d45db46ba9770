/* Open-addressing table of nonces (replay.h). Expired slots are skipped by
 * lookups and reused by inserts; a rehash, when the table is three quarters
 * used, drops them and doubles the table only if live nonces need it. */
#include "raftns/replay.h"

#include <string.h>

#include "raftns/alloc.h"
#include "raftns/err.h"

#define FIRST_SLOTS 1024u

void ns_replay_init(struct ns_replay *r, size_t max_entries, int64_t window_ms)
{
    memset(r, 0, sizeof *r);
    r->max_entries = max_entries != 0 ? max_entries : NS_REPLAY_MAX_ENTRIES;
    r->window_ms = window_ms;
}

void ns_replay_close(struct ns_replay *r)
{
    ns_free(r->slots);
    memset(r, 0, sizeof *r);
}

static size_t slot_of(const uint8_t nonce[NS_SIGN_NONCE_LEN], size_t n_slots)
{
    /* A nonce is 16 fresh bytes (raftnsctl), or a per-process prefix and a
     * counter (a node): each byte reaches the low bits, so FNV-1a is plenty. */
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < NS_SIGN_NONCE_LEN; i++) {
        h = (h ^ nonce[i]) * 1099511628211ull;
    }
    return (size_t)h & (n_slots - 1);
}

static void put(struct ns_replay_entry *slots, size_t n_slots,
                const struct ns_replay_entry *e, int64_t now_ms)
{
    for (size_t i = slot_of(e->nonce, n_slots);; i = (i + 1) & (n_slots - 1)) {
        if (slots[i].expires_ms <= now_ms) {
            slots[i] = *e;
            return;
        }
    }
}

static int rehash(struct ns_replay *r, int64_t now_ms)
{
    size_t live = 0;
    for (size_t i = 0; i < r->n_slots; i++) {
        live += r->slots[i].expires_ms > now_ms;
    }
    if (live >= r->max_entries) {
        return NS_EBUSY;
    }
    size_t n = FIRST_SLOTS;
    while (n < 2 * (live + 1)) {
        n *= 2;
    }
    struct ns_replay_entry *slots = ns_calloc(n, sizeof *slots);
    if (slots == NULL) {
        return NS_ENOMEM;
    }
    for (size_t i = 0; i < r->n_slots; i++) {
        if (r->slots[i].expires_ms > now_ms) {
            put(slots, n, &r->slots[i], now_ms);
        }
    }
    ns_free(r->slots);
    r->slots = slots;
    r->n_slots = n;
    r->n_used = live;
    return 0;
}

int ns_replay_check(struct ns_replay *r, const uint8_t nonce[NS_SIGN_NONCE_LEN],
                    int64_t ts_ms, int64_t now_ms)
{
    if (r->n_slots == 0 || 4 * (r->n_used + 1) > 3 * r->n_slots) {
        int rv = rehash(r, now_ms);
        if (rv != 0) {
            return rv;
        }
    }
    size_t mask = r->n_slots - 1;
    size_t reuse = r->n_slots; /* first expired slot on the probe path */
    for (size_t i = slot_of(nonce, r->n_slots);; i = (i + 1) & mask) {
        struct ns_replay_entry *e = &r->slots[i];
        if (e->expires_ms == 0) {
            if (reuse == r->n_slots) {
                reuse = i;
                r->n_used++;
            }
            break;
        }
        if (e->expires_ms > now_ms &&
            memcmp(e->nonce, nonce, NS_SIGN_NONCE_LEN) == 0) {
            return NS_EPERM;
        }
        if (e->expires_ms <= now_ms && reuse == r->n_slots) {
            reuse = i;
        }
    }
    memcpy(r->slots[reuse].nonce, nonce, NS_SIGN_NONCE_LEN);
    /* kept until the request's own timestamp leaves the window */
    int64_t expires = ts_ms + r->window_ms;
    r->slots[reuse].expires_ms = expires > now_ms ? expires : now_ms + 1;
    return 0;
}
