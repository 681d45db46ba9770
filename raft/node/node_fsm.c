/* The node's side of the raft FSM: the hooks it gives the FSM adapter
 * (raft/fsm_adapter.c) over its struct ns_state (the in-flight proposal's
 * result, the apply hook, the test-only mutants of the fault suite), and the
 * installed-state entry points. The callbacks and the entry framing are the
 * adapter's; nothing here proposes. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(RAFTNS_BREAK_CRASH_ONCE)
#include <signal.h>
#include <unistd.h>
#endif

#include <raft.h>
#include <uv.h>

#include "raftns/alloc.h"
#include "raftns/buf.h"
#include "raftns/err.h"
#include "raftns/log.h"

#include "node_int.h"

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
        ns_fsm_result_close(&dup);
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

static struct ns_fsm_adapter_result *find_result(void *arg, uint64_t index)
{
    return node_find_result(arg, index);
}

/* After an entry applied cleanly: the test mutants, then the checkpoint
 * digests (the node's apply hook). True marks the node diverged. */
static bool on_applied(void *arg, uint64_t index, const uint8_t *cmd,
                       size_t len, const struct ns_apply_result *res)
{
    struct ns_node *n = arg;
    node_log_applied(&n->logmem, n->raft, index, len);
#ifdef RAFTNS_BREAK_APPLY_TWICE
    break_apply_twice(n, index, cmd, len);
#endif
#ifdef RAFTNS_BREAK_CRASH_ONCE
    break_crash_once(n, index);
#endif
    return n->apply_hook != NULL &&
           n->apply_hook(n->apply_hook_arg, index, cmd, len, res);
}

int ns_node_install_state(struct ns_node *n, const uint8_t *p, size_t len,
                          uint64_t at)
{
    uint64_t applied = raft_last_applied(n->raft);
    ns_fsm_adapter_drop_digest(&n->fsm);
    node_snapcap_end(n); /* its route is about to go */
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

uint64_t ns_node_digest_loop_ns(const struct ns_node *n)
{
    return n->fsm.digest_loop_ns;
}

/* Whether encoding or hashing s is worth a fork. A fork write-protects the
 * whole heap: every page the loop writes afterwards costs a fault (a copy
 * while the child lives), and the loop rewrites the heap fast under writes (a
 * buffer per entry, freed after the next snapshot), so for a small state the
 * fork costs more than the encoding it saves (docs/raft-0.15.md §5). */
static bool worth_a_fork(const struct ns_node *n, const struct ns_state *s)
{
    return ns_state_bytes(s) >= n->fork_state_bytes;
}

/* The snapshotter hooks (include/raftns/fsm_adapter.h). A small state, or a
 * failed fork, is encoded on the loop, as FSM version 1 did, rather than
 * postponing snapshots (the log would grow without bound). */
static int snap_freeze(void *arg, const struct ns_state *s)
{
    struct ns_node *n = arg;
    ns_buf_reset(&n->snapbuf); /* pages already faulted in: see snap_release */
    int rv = 0;
    if (worth_a_fork(n, s)) {
        ns_buf_close(&n->snapbuf); /* the loop's encodings are over */
        ns_buf_init(&n->snapbuf);
        rv = ns_snapshot_fork_freeze(&n->snapfork, s);
        if (rv == 0) {
            n->forks++;
            return 0;
        }
        NS_LOG(NS_LOG_WARN,
               "fsm: cannot fork the snapshot encoder (%s); encoding on the "
               "loop",
               ns_strerror(rv));
    }
    /* A stopping node steps no more captures (ns_node_stop). */
    if (!n->stopping && (rv = node_snapcap_begin(n)) == 0) {
        return 0;
    }
    uint64_t t0 = uv_hrtime();
    ns_buf_reset(&n->snapbuf);
    rv = ns_snapshot_encode(s, &n->snapbuf);
    if (rv == 0 && n->snapbuf.err != 0) {
        rv = n->snapbuf.err;
    }
    NS_LOG(NS_LOG_INFO,
           "fsm: snapshot encoded on the loop: %zu bytes in %.1f ms (tables "
           "of about %zu bytes)",
           n->snapbuf.len, (double)(uv_hrtime() - t0) / 1e6, ns_state_bytes(s));
    if (rv != 0) {
        ns_buf_close(&n->snapbuf);
        ns_buf_init(&n->snapbuf);
    }
    return rv;
}

static int snap_collect(void *arg, uint8_t **data, size_t *len)
{
    struct ns_node *n = arg;
    if (n->snapfork.pid > 0) {
        return ns_snapshot_fork_collect(&n->snapfork, raft_malloc, raft_free,
                                        data, len);
    }
    int rv = node_snapcap_wait(n);
    if (rv != 0) {
        return rv;
    }
    *data = raft_malloc(n->snapbuf.len > 0 ? n->snapbuf.len : 1);
    if (*data == NULL) {
        return NS_ENOMEM;
    }
    memcpy(*data, n->snapbuf.data, n->snapbuf.len);
    *len = n->snapbuf.len;
    return 0;
}

/* The buffer of a state encoded on the loop is kept for the next snapshot: a
 * fresh one costs the loop a page fault per 4 KiB it fills, and faults are
 * dear on this project's virtual machines (docs/raft-0.15.md §5). A state big
 * enough to fork keeps none (snap_freeze, digest_start). */
static void snap_release(void *arg)
{
    struct ns_node *n = arg;
    node_snapcap_end(n);
    ns_snapshot_fork_abandon(&n->snapfork);
    if (n->snapbuf.cap > n->fork_state_bytes) {
        ns_buf_close(&n->snapbuf);
        ns_buf_init(&n->snapbuf);
    }
    ns_buf_reset(&n->snapbuf);
}

static void snap_replaced(void *arg)
{
    node_snapcap_end(arg);
}

static void capture_end(struct ns_node *n)
{
    ns_route_capture_end(n->state->route, n->capture.cap);
    n->capture.cap = NULL;
}

/* A state worth a fork is digested in one; a smaller one is captured
 * (ns_snapshot_capture_begin) and its topic table encoded and hashed in
 * steps of the loop's turns (digest_finish), so no turn holds the loop for
 * the whole encoding (BENCHMARKS.md, "Snapshots and checkpoint digests in
 * steps"). */
static int digest_start(void *arg, const struct ns_state *s)
{
    struct ns_node *n = arg;
    struct node_capture *c = &n->capture;
    n->digest_in_fork = worth_a_fork(n, s);
    if (n->digest_in_fork) {
        node_capture_release(n);
        int rv = ns_snapshot_fork_digest(&n->digestfork, s);
        n->forks += rv == 0 ? 1 : 0;
        return rv;
    }
    ns_buf_reset(&c->head);
    ns_buf_reset(&c->tail);
    /* s is n->state: the capture records in the route what the changes
     * after it must save. */
    int rv = ns_snapshot_capture_begin(n->state, &c->head, &c->tail, &c->cap);
    if (rv != 0) {
        return rv;
    }
    c->turns = 0;
    c->applies_at_begin = n->fsm.n_applies;
    c->hash = ns_snapshot_digest_more(NS_SNAPSHOT_DIGEST_START, c->head.data,
                                      c->head.len);
    if (c->check && ns_snapshot_digest(n->state, &c->expect) != 0) {
        c->expect = 0;
    }
    return 0;
}

void node_capture_report(const char *what, unsigned turns, uint64_t applied,
                         uint64_t got, uint64_t expect)
{
    NS_LOG(got == expect ? NS_LOG_INFO : NS_LOG_ERROR,
           "fsm: TEST HOOK (RAFTNS_TEST_CHECK_CAPTURES): the %s captured in "
           "%u loop turns while %" PRIu64 " entries applied, %016" PRIx64
           ", %s the state's at its beginning, %016" PRIx64,
           what, turns, applied, got,
           got == expect ? "matches" : "DIFFERS FROM", expect);
}

/* A capture's digest, done: logged, and against the test hook's. */
static void capture_done(struct ns_node *n, uint64_t digest)
{
    struct node_capture *c = &n->capture;
    uint64_t applied = n->fsm.n_applies - c->applies_at_begin;
    NS_LOG(NS_LOG_DEBUG,
           "fsm: digest captured in %u loop turns while %" PRIu64
           " entries applied",
           c->turns, applied);
    if (c->check) {
        node_capture_report("digest", c->turns, applied, digest, c->expect);
    }
}

/* One step of the capture (all of the rest when wait): 0 with *digest once
 * done, NS_EAGAIN before. */
static int capture_step(struct ns_node *n, bool wait, uint64_t *digest)
{
    struct node_capture *c = &n->capture;
    bool done = false;
    c->turns++;
    ns_buf_reset(&c->step);
    int rv = ns_route_capture_step(n->state->route, c->cap,
                                   wait ? SIZE_MAX : c->step_topics, &c->step,
                                   &done);
    if (rv == 0) {
        c->hash = ns_snapshot_digest_more(c->hash, c->step.data, c->step.len);
    }
    if (rv == 0 && !done) {
        return NS_EAGAIN;
    }
    capture_end(n);
    if (rv == 0) {
        *digest = ns_snapshot_digest_more(c->hash, c->tail.data, c->tail.len);
        capture_done(n, *digest);
    }
    return rv;
}

static int digest_finish(void *arg, bool wait, uint64_t *digest)
{
    struct ns_node *n = arg;
    if (!n->digest_in_fork) {
        return n->capture.cap != NULL ? capture_step(n, wait, digest)
                                      : NS_EINVAL;
    }
    if (!wait && !ns_snapshot_fork_is_done(&n->digestfork)) {
        return NS_EAGAIN;
    }
    return ns_snapshot_fork_collect_digest(&n->digestfork, digest);
}

static void digest_abandon(void *arg)
{
    struct ns_node *n = arg;
    ns_snapshot_fork_abandon(&n->digestfork);
    capture_end(n);
}

void node_fsm_snapshot_off_loop(struct ns_node *n)
{
    const char *check = getenv("RAFTNS_TEST_CHECK_CAPTURES");
    long step = check != NULL ? strtol(check, NULL, 10) : 0;
    n->capture.check = check != NULL;
    n->capture.step_topics = step > 0 ? (size_t)step : NODE_CAPTURE_STEP_TOPICS;
    const struct ns_fsm_adapter_digester dg = {
        .start = digest_start,
        .finish = digest_finish,
        .abandon = digest_abandon,
        .arg = n,
    };
    ns_fsm_adapter_set_digester(&n->fsm, &dg);
    const struct ns_fsm_adapter_snapshotter snap = {
        .freeze = snap_freeze,
        .collect = snap_collect,
        .release = snap_release,
        .replaced = snap_replaced,
        .arg = n,
    };
    ns_fsm_adapter_set_snapshotter(&n->fsm, &snap);
}

void node_fsm_close(struct ns_node *n)
{
    ns_fsm_adapter_drop_digest(&n->fsm);
    node_capture_release(n);
    snap_release(n);
    node_snapcap_close(n);
    ns_buf_close(&n->snapbuf);
}

void node_capture_release(struct ns_node *n)
{
    struct node_capture *c = &n->capture;
    capture_end(n);
    ns_buf_close(&c->head);
    ns_buf_close(&c->tail);
    ns_buf_close(&c->step);
    ns_buf_init(&c->head);
    ns_buf_init(&c->tail);
    ns_buf_init(&c->step);
}

void node_fsm_init(struct ns_node *n)
{
    n->snapfork.pid = 0;
    n->snapfork.fd = -1;
    n->snapfork.zombie = 0;
    n->digestfork.pid = 0;
    n->digestfork.fd = -1;
    n->digestfork.zombie = 0;
    ns_buf_init(&n->snapbuf);
    n->capture.cap = NULL;
    n->capture.step_topics = NODE_CAPTURE_STEP_TOPICS;
    node_snapcap_init(n);
    ns_buf_init(&n->capture.head);
    ns_buf_init(&n->capture.tail);
    ns_buf_init(&n->capture.step);
    const struct ns_fsm_adapter_hooks hooks = {
        .find_result = find_result,
        .on_applied = on_applied,
        .arg = n,
    };
    ns_fsm_adapter_init(&n->fsm, n->state, &n->dv, &hooks);
    ns_fsm_adapter_bind(&n->fsm, n->raft);
}

uint64_t ns_node_forks(const struct ns_node *n)
{
    return n->forks;
}
