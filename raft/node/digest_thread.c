/* The digest thread (include/raftns/digest_thread.h). One job slot: the loop
 * fills the buffer only while the thread is not hashing it, and reads the
 * digest under the lock. */
#include "raftns/digest_thread.h"

#include <pthread.h>

#include "raftns/alloc.h"
#include "raftns/buf.h"
#include "raftns/err.h"

enum job {
    JOB_IDLE,   /* the buffer is the loop's */
    JOB_QUEUED, /* the buffer is the thread's until it is hashed */
    JOB_DONE,   /* digest holds the result */
};

struct ns_digest_thread {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    enum job job;
    bool abandoned; /* drop the queued job's result */
    bool stop;
    uint64_t digest;
    struct ns_buf buf;
    size_t keep_bytes;
};

static void *digest_main(void *arg)
{
    struct ns_digest_thread *t = arg;
    pthread_mutex_lock(&t->lock);
    for (;;) {
        while (!t->stop && t->job != JOB_QUEUED) {
            pthread_cond_wait(&t->changed, &t->lock);
        }
        if (t->job != JOB_QUEUED) { /* stopping with nothing to hash */
            break;
        }
        pthread_mutex_unlock(&t->lock);
        uint64_t h = ns_snapshot_digest_bytes(t->buf.data, t->buf.len);
        pthread_mutex_lock(&t->lock);
        if (t->abandoned && t->buf.cap > t->keep_bytes) {
            ns_buf_close(&t->buf); /* as collect would have */
            ns_buf_init(&t->buf);
        }
        t->digest = h;
        t->job = t->abandoned ? JOB_IDLE : JOB_DONE;
        t->abandoned = false;
        pthread_cond_broadcast(&t->changed);
    }
    pthread_mutex_unlock(&t->lock);
    return NULL;
}

int ns_digest_thread_create(size_t keep_bytes, struct ns_digest_thread **out)
{
    struct ns_digest_thread *t = ns_calloc(1, sizeof *t);
    if (t == NULL) {
        return NS_ENOMEM;
    }
    ns_buf_init(&t->buf);
    t->keep_bytes = keep_bytes;
    t->job = JOB_IDLE;
    if (pthread_mutex_init(&t->lock, NULL) != 0) {
        ns_free(t);
        return NS_EIO;
    }
    if (pthread_cond_init(&t->changed, NULL) != 0) {
        pthread_mutex_destroy(&t->lock);
        ns_free(t);
        return NS_EIO;
    }
    if (pthread_create(&t->thread, NULL, digest_main, t) != 0) {
        pthread_cond_destroy(&t->changed);
        pthread_mutex_destroy(&t->lock);
        ns_free(t);
        return NS_EIO;
    }
    *out = t;
    return 0;
}

/* With the lock held: waits until the thread no longer owns the buffer. */
static void wait_not_queued(struct ns_digest_thread *t)
{
    while (t->job == JOB_QUEUED) {
        pthread_cond_wait(&t->changed, &t->lock);
    }
}

int ns_digest_thread_start(struct ns_digest_thread *t, const struct ns_state *s)
{
    pthread_mutex_lock(&t->lock);
    wait_not_queued(t);
    t->job = JOB_IDLE; /* an uncollected result is superseded */
    pthread_mutex_unlock(&t->lock);
    ns_buf_reset(&t->buf);
    int rv = ns_snapshot_encode(s, &t->buf);
    if (rv == 0 && t->buf.err != 0) {
        rv = t->buf.err;
    }
    if (rv != 0) {
        ns_buf_close(&t->buf);
        ns_buf_init(&t->buf);
        return rv;
    }
    pthread_mutex_lock(&t->lock);
    t->job = JOB_QUEUED;
    t->abandoned = false;
    pthread_cond_broadcast(&t->changed);
    pthread_mutex_unlock(&t->lock);
    return 0;
}

bool ns_digest_thread_is_done(struct ns_digest_thread *t)
{
    pthread_mutex_lock(&t->lock);
    bool done = t->job == JOB_DONE;
    pthread_mutex_unlock(&t->lock);
    return done;
}

int ns_digest_thread_collect(struct ns_digest_thread *t, bool wait,
                             uint64_t *out)
{
    pthread_mutex_lock(&t->lock);
    if (t->job == JOB_QUEUED && !wait) {
        pthread_mutex_unlock(&t->lock);
        return NS_EAGAIN;
    }
    wait_not_queued(t);
    int rv = NS_EINVAL;
    if (t->job == JOB_DONE) {
        *out = t->digest;
        t->job = JOB_IDLE;
        rv = 0;
    }
    pthread_mutex_unlock(&t->lock);
    /* The buffer is the loop's again. A state that outgrew keep_bytes is
     * digested in a fork from now on (node_fsm.c): do not hold its size. */
    if (t->buf.cap > t->keep_bytes) {
        ns_buf_close(&t->buf);
        ns_buf_init(&t->buf);
    }
    return rv;
}

void ns_digest_thread_abandon(struct ns_digest_thread *t)
{
    pthread_mutex_lock(&t->lock);
    if (t->job == JOB_QUEUED) {
        t->abandoned = true;
    } else {
        t->job = JOB_IDLE;
    }
    pthread_mutex_unlock(&t->lock);
}

void ns_digest_thread_release(struct ns_digest_thread *t)
{
    pthread_mutex_lock(&t->lock);
    wait_not_queued(t);
    pthread_mutex_unlock(&t->lock);
    ns_buf_close(&t->buf);
    ns_buf_init(&t->buf);
}

void ns_digest_thread_destroy(struct ns_digest_thread *t)
{
    if (t == NULL) {
        return;
    }
    pthread_mutex_lock(&t->lock);
    t->stop = true;
    t->abandoned = true;
    pthread_cond_broadcast(&t->changed);
    pthread_mutex_unlock(&t->lock);
    pthread_join(t->thread, NULL);
    pthread_cond_destroy(&t->changed);
    pthread_mutex_destroy(&t->lock);
    ns_buf_close(&t->buf);
    ns_free(t);
}
