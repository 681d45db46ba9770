/* Snapshots of a state too small to fork, captured (ns_snapshot_capture_begin)
 * into the node's snapshot buffer in steps of the loop's turns, so that no
 * turn holds the loop for the whole encoding (BENCHMARKS.md, "Snapshots and
 * checkpoint digests in steps"). raft 0.15 freezes on the loop and then
 * collects on a pool thread; the collect waits here until the loop's last
 * step completed the bytes. The loop never waits for the pool thread. */
#include <inttypes.h>

#include "raftns/err.h"
#include "raftns/log.h"

#include "node_int.h"

void node_snapcap_init(struct ns_node *n)
{
    struct node_snapcap *sc = &n->snapcap;
    sc->cap = NULL;
    ns_buf_init(&sc->tail);
    sc->pending = false;
    sc->err = 0;
    sc->sync_ok = pthread_mutex_init(&sc->lock, NULL) == 0;
    if (sc->sync_ok && pthread_cond_init(&sc->changed, NULL) != 0) {
        pthread_mutex_destroy(&sc->lock);
        sc->sync_ok = false;
    }
}

int node_snapcap_begin(struct ns_node *n)
{
    struct node_snapcap *sc = &n->snapcap;
    if (!sc->sync_ok) {
        return NS_EIO;
    }
    ns_buf_reset(&n->snapbuf);
    ns_buf_reset(&sc->tail);
    int rv =
        ns_snapshot_capture_begin(n->state, &n->snapbuf, &sc->tail, &sc->cap);
    if (rv != 0) {
        return rv;
    }
    sc->turns = 0;
    sc->applies_at_begin = n->fsm.n_applies;
    if (n->capture.check && ns_snapshot_digest(n->state, &sc->expect) != 0) {
        sc->expect = 0;
    }
    pthread_mutex_lock(&sc->lock);
    sc->pending = true;
    sc->err = 0;
    pthread_mutex_unlock(&sc->lock);
    return 0;
}

static void log_done(struct ns_node *n, int rv)
{
    struct node_snapcap *sc = &n->snapcap;
    uint64_t applied = n->fsm.n_applies - sc->applies_at_begin;
    if (rv != 0) {
        NS_LOG(NS_LOG_WARN, "fsm: snapshot capture failed: %s",
               ns_strerror(rv));
        return;
    }
    NS_LOG(NS_LOG_INFO,
           "fsm: snapshot of %zu bytes captured in %u loop turns while %" PRIu64
           " entries applied",
           n->snapbuf.len, sc->turns, applied);
    if (n->capture.check) {
        node_capture_report(
            "snapshot", sc->turns, applied,
            ns_snapshot_digest_bytes(n->snapbuf.data, n->snapbuf.len),
            sc->expect);
    }
}

/* Hands the result to the collect waiting on the pool thread. */
static void complete(struct node_snapcap *sc, int rv)
{
    pthread_mutex_lock(&sc->lock);
    sc->pending = false;
    sc->err = rv;
    pthread_cond_broadcast(&sc->changed);
    pthread_mutex_unlock(&sc->lock);
}

void node_snapcap_step(struct ns_node *n, bool all)
{
    struct node_snapcap *sc = &n->snapcap;
    if (sc->cap == NULL) {
        return;
    }
    sc->turns++;
    bool done = false;
    int rv = ns_route_capture_step(n->state->route, sc->cap,
                                   all ? SIZE_MAX : n->capture.step_topics,
                                   &n->snapbuf, &done);
    if (rv == 0 && !done) {
        return;
    }
    ns_route_capture_end(n->state->route, sc->cap);
    sc->cap = NULL;
    if (rv == 0) {
        ns_buf_append(&n->snapbuf, sc->tail.data, sc->tail.len);
        rv = n->snapbuf.err;
    }
    log_done(n, rv);
    complete(sc, rv);
}

int node_snapcap_wait(struct ns_node *n)
{
    struct node_snapcap *sc = &n->snapcap;
    if (!sc->sync_ok) {
        return 0; /* nothing was captured: the loop encoded it whole */
    }
    pthread_mutex_lock(&sc->lock);
    while (sc->pending) {
        pthread_cond_wait(&sc->changed, &sc->lock);
    }
    int rv = sc->err;
    pthread_mutex_unlock(&sc->lock);
    return rv;
}

void node_snapcap_end(struct ns_node *n)
{
    struct node_snapcap *sc = &n->snapcap;
    if (sc->cap != NULL) {
        ns_route_capture_end(n->state->route, sc->cap);
        sc->cap = NULL;
        complete(sc, NS_ESHUTDOWN);
    }
}

void node_snapcap_close(struct ns_node *n)
{
    struct node_snapcap *sc = &n->snapcap;
    node_snapcap_end(n);
    ns_buf_close(&sc->tail);
    ns_buf_init(&sc->tail);
    if (sc->sync_ok) {
        pthread_cond_destroy(&sc->changed);
        pthread_mutex_destroy(&sc->lock);
        sc->sync_ok = false;
    }
}
