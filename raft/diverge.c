/* Divergence by majority, the pure half (include/raftns/diverge.h): own marks,
 * verdict judgement, the majority rule and tally, and the skip bookkeeping of
 * an installed state. It never sends, proposes or logs; docs/divergence.md
 * explains the whole protocol. */
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/diverge.h"
#include "raftns/err.h"

void ns_diverge_init(struct ns_diverge *d)
{
    memset(d, 0, sizeof *d);
}

bool ns_diverge_is_diverged(const struct ns_diverge *d)
{
    return d->health == NS_DIVERGE_DIVERGED ||
           d->health == NS_DIVERGE_RECOVERING;
}

const struct ns_diverge_mark *ns_diverge_find(const struct ns_diverge *d,
                                              uint64_t index)
{
    if (index == 0) {
        return NULL;
    }
    for (size_t i = 0; i < NS_DIVERGE_RING; i++) {
        if (d->ring[i].index == index) {
            return &d->ring[i];
        }
    }
    return NULL;
}

size_t ns_diverge_unjudged(const struct ns_diverge *d,
                           struct ns_diverge_mark *out, size_t cap)
{
    size_t n = 0;
    /* The ring is written in index order: walking from the oldest slot yields
     * ascending indexes. */
    for (size_t k = 0; k < NS_DIVERGE_RING && n < cap; k++) {
        const struct ns_diverge_mark *m =
            &d->ring[(d->ring_next + k) % NS_DIVERGE_RING];
        if (m->index != 0 && m->index > d->verdict.index) {
            out[n++] = *m;
        }
    }
    return n;
}

void ns_diverge_add_mark(struct ns_diverge *d, uint64_t index, uint64_t digest)
{
    d->last.index = index;
    d->last.digest = digest;
    d->ring[d->ring_next] = d->last;
    d->ring_next = (d->ring_next + 1) % NS_DIVERGE_RING;
}

static int take_mark(struct ns_diverge *d, const struct ns_state *s,
                     uint64_t index)
{
    uint64_t digest = 0;
    int rv = ns_snapshot_digest(s, &digest);
    if (rv != 0) {
        return rv;
    }
    ns_diverge_add_mark(d, index, digest);
    return 0;
}

static enum ns_diverge_event judge(struct ns_diverge *d,
                                   const struct ns_command *c)
{
    const uint64_t index = c->u.verdict.index;
    if (index <= d->verdict.index) {
        return NS_DIVERGE_EV_UNJUDGED; /* superseded by a newer verdict */
    }
    d->verdict.index = index;
    d->verdict.digest = c->u.verdict.digest;
    d->n_healthy = c->u.verdict.n_agree;
    memcpy(d->healthy, c->u.verdict.agree, d->n_healthy * sizeof d->healthy[0]);
    d->n_verdicts++;
    const struct ns_diverge_mark *mine = ns_diverge_find(d, index);
    if (mine == NULL) {
        /* Joined, restored or installed a state after that checkpoint: this
         * verdict says nothing about our state. */
        return NS_DIVERGE_EV_UNJUDGED;
    }
    if (mine->digest != c->u.verdict.digest) {
        bool was = ns_diverge_is_diverged(d);
        d->health = NS_DIVERGE_DIVERGED;
        d->judged = d->verdict;
        d->judged_local = mine->digest;
        d->n_diverged += was ? 0 : 1;
        return NS_DIVERGE_EV_DIVERGED;
    }
    /* Equal digests mean equal states at that index, whatever happened
     * before: an installed state, or a corruption since overwritten. */
    bool was = ns_diverge_is_diverged(d);
    d->health = NS_DIVERGE_HEALTHY;
    if (was) {
        d->n_recovered++;
        return NS_DIVERGE_EV_RECOVERED;
    }
    return NS_DIVERGE_EV_AGREE;
}

int ns_diverge_on_apply(struct ns_diverge *d, const struct ns_state *s,
                        uint64_t index, const uint8_t *cmd, size_t len,
                        enum ns_diverge_event *ev)
{
    *ev = NS_DIVERGE_EV_NONE;
    int type = ns_command_peek_type(cmd, len);
    if (type == NS_CMD_CHECKPOINT) {
        int rv = take_mark(d, s, index);
        if (rv == 0) {
            *ev = NS_DIVERGE_EV_MARK;
        }
        return rv;
    }
    if (type != NS_CMD_VERDICT) {
        return 0;
    }
    struct ns_command c;
    int rv = ns_command_decode(cmd, len, &c);
    if (rv != 0) {
        return rv;
    }
    *ev = judge(d, &c);
    ns_command_close(&c);
    return 0;
}

/* --- recovery --- */

static void drop_marks_through(struct ns_diverge *d, uint64_t index)
{
    for (size_t i = 0; i < NS_DIVERGE_RING; i++) {
        if (d->ring[i].index <= index) {
            memset(&d->ring[i], 0, sizeof d->ring[i]);
        }
    }
    if (d->last.index <= index) {
        memset(&d->last, 0, sizeof d->last);
    }
}

int ns_diverge_install(struct ns_diverge *d, struct ns_state *s,
                       const uint8_t *p, size_t len, uint64_t at,
                       uint64_t applied)
{
    if (applied > at) {
        return NS_EAGAIN;
    }
    int rv = ns_snapshot_decode(s, p, len);
    if (rv != 0) {
        return rv;
    }
    /* Our digests up to at describe the state just thrown away: a verdict
     * about one of them must not judge the installed one. */
    drop_marks_through(d, at);
    d->skip_through = at;
    d->installed_at = at;
    d->health = NS_DIVERGE_RECOVERING;
    d->n_installs++;
    return 0;
}

bool ns_diverge_skips(const struct ns_diverge *d, uint64_t index)
{
    return index <= d->skip_through;
}

void ns_diverge_restored(struct ns_diverge *d)
{
    d->skip_through = 0;
    memset(d->ring, 0, sizeof d->ring);
    memset(&d->last, 0, sizeof d->last);
}

bool ns_diverge_may_snapshot(const struct ns_diverge *d, uint64_t applied)
{
    return applied >= d->skip_through && d->health != NS_DIVERGE_DIVERGED;
}

static bool has_id(const uint64_t *ids, size_t n, uint64_t id)
{
    for (size_t i = 0; i < n; i++) {
        if (ids[i] == id) {
            return true;
        }
    }
    return false;
}

uint64_t ns_diverge_transfer_target(const struct ns_diverge *d, uint64_t self,
                                    const uint64_t *voters, size_t n)
{
    for (size_t i = 0; i < d->n_healthy; i++) {
        uint64_t id = d->healthy[i];
        if (id != self && has_id(voters, n, id)) {
            return id;
        }
    }
    return 0;
}

/* --- the majority rule --- */

enum ns_diverge_decision
ns_diverge_majority(const struct ns_diverge_vote *votes, size_t n_votes,
                    const uint64_t *voters, size_t n_voters, uint64_t *digest)
{
    /* One vote per voter (its first); votes of non-voters do not count. */
    uint64_t ids[NS_DIVERGE_MAX_VOTES], digests[NS_DIVERGE_MAX_VOTES];
    size_t counted = 0;
    for (size_t i = 0; i < n_votes && counted < NS_DIVERGE_MAX_VOTES; i++) {
        if (has_id(voters, n_voters, votes[i].id) &&
            !has_id(ids, counted, votes[i].id)) {
            ids[counted] = votes[i].id;
            digests[counted++] = votes[i].digest;
        }
    }
    size_t best = 0;
    uint64_t best_digest = 0;
    for (size_t i = 0; i < counted; i++) {
        size_t same = 0;
        for (size_t j = 0; j < counted; j++) {
            same += digests[j] == digests[i];
        }
        if (same > best) {
            best = same;
            best_digest = digests[i];
        }
    }
    if (best * 2 > n_voters) {
        *digest = best_digest;
        return NS_DIVERGE_MAJORITY;
    }
    /* Could the voters not heard from yet still make one? */
    size_t missing = n_voters > counted ? n_voters - counted : 0;
    if ((best + missing) * 2 > n_voters) {
        return NS_DIVERGE_PENDING;
    }
    return NS_DIVERGE_NO_MAJORITY;
}

/* --- the tally --- */

void ns_diverge_tally_init(struct ns_diverge_tally *t)
{
    memset(t, 0, sizeof *t);
}

void ns_diverge_tally_close(struct ns_diverge_tally *t, uint64_t index)
{
    if (index <= t->closed_through) {
        return;
    }
    t->closed_through = index;
    size_t k = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (t->votes[i].index > index) {
            t->votes[k++] = t->votes[i];
        }
    }
    t->n = k;
}

static uint64_t oldest_open(const struct ns_diverge_tally *t, uint64_t above)
{
    uint64_t best = 0;
    for (size_t i = 0; i < t->n; i++) {
        uint64_t x = t->votes[i].index;
        if (x > above && (best == 0 || x < best)) {
            best = x;
        }
    }
    return best;
}

static void drop_index(struct ns_diverge_tally *t, uint64_t index)
{
    size_t k = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (t->votes[i].index != index) {
            t->votes[k++] = t->votes[i];
        }
    }
    t->n = k;
}

void ns_diverge_tally_add(struct ns_diverge_tally *t, uint64_t index,
                          uint64_t id, uint64_t digest)
{
    if (index == 0 || index <= t->closed_through) {
        return;
    }
    for (size_t i = 0; i < t->n; i++) {
        if (t->votes[i].index == index && t->votes[i].id == id) {
            t->votes[i].digest = digest;
            return;
        }
    }
    if (t->n == NS_DIVERGE_MAX_VOTES) {
        uint64_t old = oldest_open(t, 0);
        if (old >= index) {
            return; /* everything held is newer: this vote is the oldest */
        }
        drop_index(t, old);
    }
    t->votes[t->n++] = (struct ns_diverge_vote){index, id, digest};
}

static int fill_verdict(const struct ns_diverge_vote *votes, size_t n,
                        const uint64_t *voters, size_t n_voters, uint64_t index,
                        uint64_t digest, struct ns_command *c)
{
    ns_command_init(c, NS_CMD_VERDICT);
    c->u.verdict.index = index;
    c->u.verdict.digest = digest;
    c->u.verdict.agree = ns_calloc(n ? n : 1, sizeof *c->u.verdict.agree);
    c->u.verdict.dissent = ns_calloc(n ? n : 1, sizeof *c->u.verdict.dissent);
    if (c->u.verdict.agree == NULL || c->u.verdict.dissent == NULL) {
        ns_command_close(c);
        return NS_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const struct ns_diverge_vote *v = &votes[i];
        if (!has_id(voters, n_voters, v->id) ||
            has_id(c->u.verdict.agree, c->u.verdict.n_agree, v->id) ||
            has_id(c->u.verdict.dissent, c->u.verdict.n_dissent, v->id)) {
            continue;
        }
        if (v->digest == digest && c->u.verdict.n_agree < NS_VERDICT_MAX_IDS) {
            c->u.verdict.agree[c->u.verdict.n_agree++] = v->id;
        } else if (v->digest != digest &&
                   c->u.verdict.n_dissent < NS_VERDICT_MAX_IDS) {
            c->u.verdict.dissent[c->u.verdict.n_dissent++] = v->id;
        }
    }
    return 0;
}

int ns_diverge_tally_decide(struct ns_diverge_tally *t, const uint64_t *voters,
                            size_t n_voters, struct ns_command *verdict)
{
    uint64_t index = oldest_open(t, t->closed_through);
    while (index != 0) {
        struct ns_diverge_vote one[NS_DIVERGE_MAX_VOTES];
        size_t n = 0;
        for (size_t i = 0; i < t->n; i++) {
            if (t->votes[i].index == index) {
                one[n++] = t->votes[i];
            }
        }
        uint64_t digest = 0;
        enum ns_diverge_decision d =
            ns_diverge_majority(one, n, voters, n_voters, &digest);
        if (d == NS_DIVERGE_MAJORITY) {
            int rv =
                fill_verdict(one, n, voters, n_voters, index, digest, verdict);
            if (rv != 0) {
                return rv;
            }
            ns_diverge_tally_close(t, index);
            return NS_DIVERGE_MAJORITY;
        }
        if (d == NS_DIVERGE_NO_MAJORITY) {
            /* Closed for good: resent votes must not reopen it. */
            ns_diverge_tally_close(t, index);
            t->no_majority_index = index;
            t->n_no_majority++;
        }
        index = oldest_open(t, index);
    }
    return NS_DIVERGE_PENDING;
}
