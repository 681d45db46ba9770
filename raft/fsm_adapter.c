/* The raft FSM callbacks over a struct ns_state and the entry framing
 * (include/raftns/fsm_adapter.h), shared by the node and the raft_fixture
 * tests. The state changes only through ns_fsm_apply_bytes,
 * ns_snapshot_decode and raft/diverge.c; nothing here proposes or knows the
 * node. */
#include "raftns/fsm_adapter.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <raft.h>
#include <uv.h>

#include "raftns/buf.h"
#include "raftns/err.h"
#include "raftns/log.h"

int ns_fsm_adapter_entry_encode(const uint8_t *cmd, size_t len,
                                struct raft_buffer *out)
{
    if (len > UINT32_MAX - 16) {
        return NS_ENOMEM;
    }
    size_t total = (NS_FSM_ADAPTER_ENTRY_PREFIX + len + 7) & ~(size_t)7;
    uint8_t *e = raft_malloc(total);
    if (e == NULL) {
        return NS_ENOMEM;
    }
    memset(e, 0, total);
    e[0] = (uint8_t)(len >> 24);
    e[1] = (uint8_t)(len >> 16);
    e[2] = (uint8_t)(len >> 8);
    e[3] = (uint8_t)len;
    if (len > 0) {
        memcpy(e + NS_FSM_ADAPTER_ENTRY_PREFIX, cmd, len);
    }
    out->base = e;
    out->len = total;
    return 0;
}

int ns_fsm_adapter_entry_decode(const struct raft_buffer *buf,
                                const uint8_t **cmd, size_t *len)
{
    const uint8_t *p = buf->base;
    if (buf->len < NS_FSM_ADAPTER_ENTRY_PREFIX ||
        ns_load_u32(p) > buf->len - NS_FSM_ADAPTER_ENTRY_PREFIX) {
        return NS_EPROTO;
    }
    *cmd = p + NS_FSM_ADAPTER_ENTRY_PREFIX;
    *len = ns_load_u32(p);
    return 0;
}

static const char *format_hex(uint64_t v, char *out, size_t size)
{
    snprintf(out, size, "%016" PRIx64, v);
    return out;
}

/* Logs what a CHECKPOINT or VERDICT meant for this node (raft/diverge.c). */
static void log_divergence(const struct ns_diverge *d, uint64_t index,
                           enum ns_diverge_event ev)
{
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

static void note_error(struct ns_fsm_adapter *a, int rv)
{
    if (rv != 0 && a->first_error == 0) {
        a->first_error = rv;
    }
}

/* Takes the mark of the digest under way: now if wait, else only if it is
 * ready. */
static void finish_digest(struct ns_fsm_adapter *a, bool wait)
{
    if (a->digest_at == 0) {
        return;
    }
    uint64_t digest = 0;
    uint64_t t0 = uv_hrtime();
    int rv = a->digest.finish(a->digest.arg, wait, &digest);
    a->digest_loop_ns += uv_hrtime() - t0; /* the steps of a capture */
    if (rv == NS_EAGAIN) {
        return;
    }
    uint64_t index = a->digest_at;
    a->digest_at = 0;
    if (rv != 0) {
        NS_LOG(NS_LOG_ERROR, "diverge: digest at index %" PRIu64 ": %s", index,
               ns_strerror(rv));
        note_error(a, rv);
        return;
    }
    ns_diverge_add_mark(a->dv, index, digest);
    NS_LOG(NS_LOG_INFO,
           "diverge: digest at index %" PRIu64 " computed off the loop%s "
           "(%.1f ms waited)",
           index, wait ? ", needed now" : "", (double)(uv_hrtime() - t0) / 1e6);
    log_divergence(a->dv, index, NS_DIVERGE_EV_MARK);
}

void ns_fsm_adapter_poll(struct ns_fsm_adapter *a)
{
    finish_digest(a, false);
}

void ns_fsm_adapter_drop_digest(struct ns_fsm_adapter *a)
{
    if (a->digest_at != 0) {
        a->digest.abandon(a->digest.arg);
        a->digest_at = 0;
    }
}

void ns_fsm_adapter_set_digester(struct ns_fsm_adapter *a,
                                 const struct ns_fsm_adapter_digester *dg)
{
    a->digest = *dg;
}

/* A CHECKPOINT whose digest the digester computes (true), or one the adapter
 * computes on the loop as before (false). A VERDICT or CHECKPOINT first
 * takes the mark of the digest under way. */
static bool digest_off_loop(struct ns_fsm_adapter *a, uint64_t index,
                            const uint8_t *cmd, size_t len)
{
    if (a->digest.start == NULL) {
        return false;
    }
    int type = ns_command_peek_type(cmd, len);
    if (type != NS_CMD_CHECKPOINT && type != NS_CMD_VERDICT) {
        return false;
    }
    finish_digest(a, true);
    if (type != NS_CMD_CHECKPOINT) {
        return false;
    }
    uint64_t t0 = uv_hrtime();
    int rv = a->digest.start(a->digest.arg, a->state);
    if (rv == NS_EAGAIN) {
        return false;
    }
    if (rv != 0) {
        NS_LOG(NS_LOG_WARN,
               "diverge: cannot compute the digest off the loop (%s); "
               "computing it here",
               ns_strerror(rv));
        return false;
    }
    a->digest_at = index;
    NS_LOG(NS_LOG_DEBUG,
           "diverge: digest at index %" PRIu64 " started in %.1f ms", index,
           (double)(uv_hrtime() - t0) / 1e6);
    return true;
}

/* Never returns non-zero: raft 0.15 would retry the same entry forever and
 * stall the node (docs/divergence.md). A refused entry marks it diverged. */
static int adapter_apply(struct raft_fsm *fsm, const struct raft_buffer *buf,
                         void **result)
{
    struct ns_fsm_adapter *a = fsm->data;
    /* raft 0.15 sets last_applied after apply returns: this entry is +1
     * (replicationApply in its src/replication.c). */
    uint64_t index = raft_last_applied(a->raft) + 1;
    *result = NULL; /* the result goes to find_result's slot, not to raft */
    a->n_out_of_order += index <= a->last_index ? 1 : 0;
    a->last_index = index;
    if (ns_diverge_skips(a->dv, index)) {
        /* Inside the state installed from a healthy node: applying it again
         * would apply it twice. A slot for this index stays unfilled, so the
         * node answers its proposal as not applied here (NS_EPROTO). */
        a->n_skipped++;
        return 0;
    }
    struct ns_fsm_adapter_result *slot =
        a->hooks.find_result != NULL ? a->hooks.find_result(a->hooks.arg, index)
                                     : NULL;
    struct ns_apply_result local;
    struct ns_apply_result *res = slot != NULL ? &slot->res : &local;
    memset(&local, 0, sizeof local);
    const uint8_t *cmd = NULL;
    size_t len = 0;
    a->n_applies++;
    int rv = ns_fsm_adapter_entry_decode(buf, &cmd, &len);
    if (rv == 0) {
        rv = ns_fsm_apply_bytes(a->state, cmd, len, res);
    }
    if (rv == NS_ENOMEM) {
        NS_LOG(NS_LOG_ERROR, "fsm: out of memory applying an entry; aborting");
        abort();
    }
    if (rv != 0) {
        NS_LOG(NS_LOG_ERROR,
               "fsm: undecodable entry (%zu bytes): %s; node diverged",
               buf->len, ns_strerror(rv));
        note_error(a, rv);
        a->diverged = true;
        ns_fsm_result_close(res);
        return 0;
    }
    if (a->hooks.on_applied != NULL &&
        a->hooks.on_applied(a->hooks.arg, index, cmd, len, res)) {
        a->diverged = true;
    }
    enum ns_diverge_event ev = NS_DIVERGE_EV_NONE;
    uint64_t t_dg = uv_hrtime();
    bool forked = digest_off_loop(a, index, cmd, len);
    rv =
        forked ? 0 : ns_diverge_on_apply(a->dv, a->state, index, cmd, len, &ev);
    if (forked || ev == NS_DIVERGE_EV_MARK) {
        a->digest_loop_ns = uv_hrtime() - t_dg;
    }
    if (ev == NS_DIVERGE_EV_MARK) {
        /* On the loop, O(state) (docs/divergence.md): at scale the biggest
         * stall left (BENCHMARKS.md, fair scheduling). */
        NS_LOG(NS_LOG_DEBUG,
               "diverge: digest at index %" PRIu64 " took %.1f ms", index,
               (double)a->digest_loop_ns / 1e6);
    }
    if (rv != 0) {
        NS_LOG(NS_LOG_ERROR, "diverge: entry %" PRIu64 ": %s", index,
               ns_strerror(rv));
        note_error(a, rv);
    }
    log_divergence(a->dv, index, ev);
    if (slot != NULL) {
        slot->filled = true; /* its owner reads and closes it */
    } else {
        ns_fsm_result_close(&local);
    }
    return 0;
}

/* raft would label an installed state with an older index, or keep a
 * diverged one; the caller's RAFT_BUSY makes raft retry later. */
static bool adapter_may_snapshot(struct ns_fsm_adapter *a)
{
    if (!ns_diverge_may_snapshot(a->dv, raft_last_applied(a->raft))) {
        if (!a->snapshot_postponed) {
            NS_LOG(NS_LOG_INFO,
                   "fsm: snapshots postponed while this node is diverged or "
                   "ahead of raft's applied index");
        }
        a->snapshot_postponed = true;
        return false;
    }
    a->snapshot_postponed = false;
    return true;
}

/* Buffers from raft_malloc: raft frees them (FSM version 1). */
static int adapter_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[],
                            unsigned *n_bufs)
{
    struct ns_fsm_adapter *a = fsm->data;
    struct ns_buf b;
    int rv = RAFT_NOMEM;
    uint64_t t0 = uv_hrtime();
    if (!adapter_may_snapshot(a)) {
        return RAFT_BUSY;
    }
    ns_buf_init(&b);
    if (ns_snapshot_encode(a->state, &b) != 0 || b.err != 0) {
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
    a->n_snapshots++;
    rv = 0;
    NS_LOG(NS_LOG_INFO, "fsm: took a snapshot of %zu bytes in %.1f ms", b.len,
           (double)(uv_hrtime() - t0) / 1e6);
err_after_buf:
    ns_buf_close(&b);
    return rv;
}

/* Version 3, on the loop: freezes the state at raft's applied index; raft
 * then runs adapter_snapshot_async on a pool thread. No buffers yet. */
static int adapter_snapshot_freeze(struct raft_fsm *fsm,
                                   struct raft_buffer *bufs[], unsigned *n_bufs)
{
    struct ns_fsm_adapter *a = fsm->data;
    uint64_t t0 = uv_hrtime();
    if (!adapter_may_snapshot(a)) {
        return RAFT_BUSY;
    }
    int rv = a->snap.freeze(a->snap.arg, a->state);
    if (rv != 0) {
        NS_LOG(NS_LOG_WARN, "fsm: cannot freeze a snapshot: %s; retrying later",
               ns_strerror(rv));
        return RAFT_BUSY; /* raft retries at a later apply */
    }
    *bufs = NULL;
    *n_bufs = 0;
    a->snap_t0 = t0;
    NS_LOG(NS_LOG_INFO, "fsm: froze a snapshot at index %" PRIu64 " in %.1f ms",
           (uint64_t)raft_last_applied(a->raft),
           (double)(uv_hrtime() - t0) / 1e6);
    return 0;
}

/* Version 3, on a pool thread: only a->snap and the buffers it fills; the
 * loop applies entries meanwhile. Logs nothing (the log is the loop's). */
static int adapter_snapshot_async(struct raft_fsm *fsm,
                                  struct raft_buffer *bufs[], unsigned *n_bufs)
{
    struct ns_fsm_adapter *a = fsm->data;
    uint8_t *data = NULL;
    size_t len = 0;
    struct raft_buffer *b = raft_malloc(sizeof *b);
    if (b == NULL) {
        a->snap_error = NS_ENOMEM; /* finalize releases the frozen view */
        return RAFT_NOMEM;
    }
    a->snap_error = a->snap.collect(a->snap.arg, &data, &len);
    if (a->snap_error != 0) {
        raft_free(b);
        return a->snap_error == NS_ENOMEM ? RAFT_NOMEM : RAFT_IOERR;
    }
    b->base = data;
    b->len = len;
    *bufs = b;
    *n_bufs = 1;
    return 0;
}

/* Version 3, on the loop, once per successful freeze: raft wrote the
 * snapshot or gave up on it; the buffers are ours to free (version > 1 with
 * a finalize). */
static int adapter_snapshot_finalize(struct raft_fsm *fsm,
                                     struct raft_buffer *bufs[],
                                     unsigned *n_bufs)
{
    struct ns_fsm_adapter *a = fsm->data;
    a->snap.release(a->snap.arg);
    size_t len = 0;
    if (*bufs != NULL) {
        for (unsigned i = 0; i < *n_bufs; i++) {
            len += (*bufs)[i].len;
            raft_free((*bufs)[i].base);
        }
        raft_free(*bufs);
        a->n_snapshots++;
        NS_LOG(NS_LOG_INFO,
               "fsm: snapshot of %zu bytes encoded and written %.1f ms after "
               "its freeze",
               len, (double)(uv_hrtime() - a->snap_t0) / 1e6);
    } else {
        NS_LOG(NS_LOG_WARN, "fsm: a snapshot was not taken: %s",
               ns_strerror(a->snap_error != 0 ? a->snap_error : NS_EIO));
    }
    *bufs = NULL;
    *n_bufs = 0;
    a->snap_error = 0;
    return 0;
}

void ns_fsm_adapter_set_snapshotter(
    struct ns_fsm_adapter *a, const struct ns_fsm_adapter_snapshotter *snap)
{
    a->snap = *snap;
    a->fsm.version = 3;
    a->fsm.snapshot = adapter_snapshot_freeze;
    a->fsm.snapshot_async = adapter_snapshot_async;
    a->fsm.snapshot_finalize = adapter_snapshot_finalize;
}

/* Frees buf->base only on success: raft 0.15 hands the buffer over to a
 * restore that succeeds. */
static int adapter_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
    struct ns_fsm_adapter *a = fsm->data;
    uint64_t t0 = uv_hrtime();
    ns_fsm_adapter_drop_digest(a);
    if (a->snap.replaced != NULL) {
        a->snap.replaced(a->snap.arg);
    }
    int rv = ns_snapshot_decode(a->state, buf->base, buf->len);
    if (rv != 0) {
        NS_LOG(NS_LOG_ERROR, "fsm: snapshot restore failed: %s",
               ns_strerror(rv));
        return rv == NS_ENOMEM ? RAFT_NOMEM : RAFT_CORRUPT;
    }
    raft_free(buf->base);
    ns_diverge_restored(a->dv);
    a->n_restores++;
    NS_LOG(NS_LOG_INFO, "fsm: restored a snapshot of %zu bytes in %.1f ms",
           buf->len, (double)(uv_hrtime() - t0) / 1e6);
    return 0;
}

void ns_fsm_adapter_init(struct ns_fsm_adapter *a, struct ns_state *state,
                         struct ns_diverge *dv,
                         const struct ns_fsm_adapter_hooks *hooks)
{
    memset(a, 0, sizeof *a);
    a->state = state;
    a->dv = dv;
    if (hooks != NULL) {
        a->hooks = *hooks;
    }
    a->fsm.version = 1;
    a->fsm.data = a;
    a->fsm.apply = adapter_apply;
    a->fsm.snapshot = adapter_snapshot;
    a->fsm.restore = adapter_restore;
}

void ns_fsm_adapter_bind(struct ns_fsm_adapter *a, struct raft *r)
{
    a->raft = r;
}
