/* The raft FSM callbacks of a node over its struct ns_state: apply (with the
 * in-flight proposal's result), snapshot and restore. The state changes only
 * through ns_fsm_apply_bytes and ns_snapshot_decode; nothing here proposes. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(RAFTNS_BREAK_CRASH_ONCE)
#include <signal.h>
#include <unistd.h>
#endif

#include <raft.h>

#include "raftns/alloc.h"
#include "raftns/buf.h"
#include "raftns/err.h"
#include "raftns/log.h"

#include "node_int.h"

/* The in-flight proposal whose entry sits at index, or NULL (a follower, an
 * entry proposed by an earlier leader, a barrier). */
static struct proposal *find_inflight(struct ns_node *n, uint64_t index)
{
    for (struct proposal *p = n->inflight; p != NULL; p = p->in_next) {
        if (p->req.index == index) {
            return p;
        }
    }
    return NULL;
}

static const char *format_hex(uint64_t v, char *out, size_t size)
{
    snprintf(out, size, "%016" PRIx64, v);
    return out;
}

/* Logs what a CHECKPOINT or VERDICT meant for this node (raft/diverge.c). */
static void log_divergence(const struct ns_node *n, uint64_t index,
                           enum ns_diverge_event ev)
{
    const struct ns_diverge *d = &n->dv;
    char a[24], b[24];
    switch (ev) {
    case NS_DIVERGE_EV_DIVERGED:
        NS_LOG(NS_LOG_ERROR,
               "diverge: STATE DIVERGED at index %" PRIu64
               ": the majority of voters holds digest %s, ours is %s "
               "(verdict entry %" PRIu64 "); this node stops serving",
               d->judged.index, format_hex(d->judged.digest, a, sizeof a),
               format_hex(d->judged_local, b, sizeof b), index);
        break;
    case NS_DIVERGE_EV_RECOVERED:
        NS_LOG(NS_LOG_WARN,
               "diverge: digest at index %" PRIu64
               " agrees with the majority again (%s): this node serves again",
               d->verdict.index, format_hex(d->verdict.digest, a, sizeof a));
        break;
    case NS_DIVERGE_EV_AGREE:
        NS_LOG(NS_LOG_DEBUG, "diverge: digest at index %" PRIu64 " agrees",
               d->verdict.index);
        break;
    case NS_DIVERGE_EV_UNJUDGED:
        NS_LOG(NS_LOG_DEBUG,
               "diverge: no local digest to judge the verdict of entry "
               "%" PRIu64,
               index);
        break;
    case NS_DIVERGE_EV_MARK:
    case NS_DIVERGE_EV_NONE:
        break;
    }
}

#ifdef RAFTNS_BREAK_CRASH_ONCE
/* TEST-ONLY MUTANT: node 2 dies by itself at its first entry from 300 on, once
 * per data dir. */
static void break_crash_once(const struct ns_node *n, uint64_t index)
{
    char path[4096];
    if (n->id != 2 || index < 300) {
        return;
    }
    snprintf(path, sizeof path, "%s/crash-once", n->dir);
    FILE *f = access(path, F_OK) != 0 ? fopen(path, "w") : NULL;
    if (f != NULL) {
        fclose(f);
        raise(SIGSEGV);
    }
}
#endif

#ifdef RAFTNS_BREAK_APPLY_TWICE
/* TEST-ONLY MUTANT: node 2 applies every 20th entry a second time, after the
 * next one (twice, and out of order), without its request id (which would
 * make the second apply a no-op, docs/exactly-once.md). */
static void break_apply_twice(struct ns_node *n, uint64_t index,
                              const uint8_t *p, size_t len)
{
    static uint8_t saved[1 << 16];
    static size_t n_saved;
    struct ns_apply_result dup;
    struct ns_command c;
    if (n->id != 2) {
        return;
    }
    if (n_saved > 0 && ns_command_decode(saved, n_saved, &c) == 0) {
        c.reqid.origin = 0;
        memset(&dup, 0, sizeof dup);
        ns_fsm_apply(n->state, &c, &dup);
        ns_apply_result_close(&dup);
        ns_command_close(&c);
    }
    if (n_saved > 0) {
        n_saved = 0;
    }
    if (index % 20 == 0 && len <= sizeof saved) {
        memcpy(saved, p, len);
        n_saved = len;
    }
}
#endif

static int fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf,
                     void **result)
{
    struct ns_node *n = fsm->data;
    /* raft 0.15 sets last_applied after apply returns: this entry is +1
     * (replicationApply in its src/replication.c). */
    uint64_t index = raft_last_applied(&n->raft) + 1;
    *result = NULL;
    if (ns_diverge_skips(&n->dv, index)) {
        /* Inside the state installed from a healthy node: applying it again
         * would apply it twice. A proposal of ours at this index gets no
         * result, so apply_cb answers it as not applied here (NS_EPROTO). */
        return 0;
    }
    struct proposal *owner = find_inflight(n, index);
    struct ns_apply_result local;
    struct ns_apply_result *res = owner != NULL ? &owner->res : &local;
    memset(&local, 0, sizeof local);
    const uint8_t *p = buf->base;
    int rv = NS_EPROTO;
    if (buf->len >= ENTRY_PREFIX && ns_load_u32(p) <= buf->len - ENTRY_PREFIX) {
        rv =
            ns_fsm_apply_bytes(n->state, p + ENTRY_PREFIX, ns_load_u32(p), res);
    }
    if (rv == NS_ENOMEM) {
        NS_LOG(NS_LOG_ERROR, "fsm: out of memory applying an entry; aborting");
        abort();
    }
    if (rv != 0) {
        /* Returning non-zero would stall raft forever: skip the entry, stop
         * serving. */
        NS_LOG(NS_LOG_ERROR,
               "fsm: undecodable entry (%zu bytes): %s; node diverged",
               buf->len, ns_strerror(rv));
        n->diverged = true;
        ns_apply_result_close(res);
        return 0;
    }
#ifdef RAFTNS_BREAK_APPLY_TWICE
    break_apply_twice(n, index, p + ENTRY_PREFIX, ns_load_u32(p));
#endif
#ifdef RAFTNS_BREAK_CRASH_ONCE
    break_crash_once(n, index);
#endif
    if (n->apply_hook != NULL &&
        n->apply_hook(n->apply_hook_arg, index, p + ENTRY_PREFIX,
                      ns_load_u32(p), res)) {
        n->diverged = true;
    }
    enum ns_diverge_event ev;
    rv = ns_diverge_on_apply(&n->dv, n->state, index, p + ENTRY_PREFIX,
                             ns_load_u32(p), &ev);
    if (rv != 0) {
        NS_LOG(NS_LOG_ERROR, "diverge: entry %" PRIu64 ": %s", index,
               ns_strerror(rv));
    }
    log_divergence(n, index, ev);
    if (owner != NULL) {
        owner->has_res = true; /* apply_cb reads and closes it */
    } else {
        ns_apply_result_close(&local);
    }
    return 0;
}

static int fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[],
                        unsigned *n_bufs)
{
    struct ns_node *n = fsm->data;
    struct ns_buf b;
    int rv = RAFT_NOMEM;
    uint64_t t0 = uv_hrtime();
    if (!ns_diverge_may_snapshot(&n->dv, raft_last_applied(&n->raft))) {
        /* raft would label an installed state with an older index, or keep
         * a diverged one; RAFT_BUSY makes it retry later. */
        if (!n->snapshot_postponed) {
            NS_LOG(NS_LOG_INFO,
                   "fsm: snapshots postponed while this node is diverged or "
                   "ahead of raft's applied index");
        }
        n->snapshot_postponed = true;
        return RAFT_BUSY;
    }
    n->snapshot_postponed = false;
    ns_buf_init(&b);
    if (ns_snapshot_encode(n->state, &b) != 0 || b.err != 0) {
        goto err_after_buf;
    }
    *bufs = raft_malloc(sizeof **bufs);
    if (*bufs == NULL) {
        goto err_after_buf;
    }
    (*bufs)[0].base = raft_malloc(b.len > 0 ? b.len : 1);
    if ((*bufs)[0].base == NULL) {
        raft_free(*bufs);
        goto err_after_buf;
    }
    memcpy((*bufs)[0].base, b.data, b.len);
    (*bufs)[0].len = b.len;
    *n_bufs = 1;
    rv = 0;
    NS_LOG(NS_LOG_INFO, "fsm: took a snapshot of %zu bytes in %.1f ms", b.len,
           (double)(uv_hrtime() - t0) / 1e6);
err_after_buf:
    ns_buf_close(&b);
    return rv;
}

static int fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
    struct ns_node *n = fsm->data;
    uint64_t t0 = uv_hrtime();
    int rv = ns_snapshot_decode(n->state, buf->base, buf->len);
    if (rv != 0) {
        NS_LOG(NS_LOG_ERROR, "fsm: snapshot restore failed: %s",
               ns_strerror(rv));
        return rv == NS_ENOMEM ? RAFT_NOMEM : RAFT_CORRUPT;
    }
    raft_free(buf->base);
    ns_diverge_restored(&n->dv);
    NS_LOG(NS_LOG_INFO, "fsm: restored a snapshot of %zu bytes in %.1f ms",
           buf->len, (double)(uv_hrtime() - t0) / 1e6);
    return 0;
}

int ns_node_install_state(struct ns_node *n, const uint8_t *p, size_t len,
                          uint64_t at)
{
    uint64_t applied = raft_last_applied(&n->raft);
    int rv = ns_diverge_install(&n->dv, n->state, p, len, at, applied);
    if (rv == 0) {
        NS_LOG(NS_LOG_WARN,
               "diverge: installed a healthy state of %zu bytes taken at index "
               "%" PRIu64 " (applied here: %" PRIu64
               "); entries up to it are skipped",
               len, at, applied);
    }
    return rv;
}

const struct ns_diverge *ns_node_diverge(const struct ns_node *n)
{
    return &n->dv;
}

void node_fsm_init(struct ns_node *n)
{
    n->fsm.version = 1;
    n->fsm.data = n;
    n->fsm.apply = fsm_apply;
    n->fsm.snapshot = fsm_snapshot;
    n->fsm.restore = fsm_restore;
}
