/* raft_uv 0.15 gives every open segment its own kernel AIO context and, when
 * the segment is closed, destroys it with io_destroy on the loop thread. The
 * kernel's io_destroy waits for an RCU grace period: 29-50 ms of a blocked
 * loop per closed segment, twice a second at 6,000 registrations/s on one
 * node (docs/raft-0.15.md §15). libraft reaches io_destroy through libc's
 * syscall(); this executable defines syscall() itself, so those calls arrive
 * here. io_destroy is handed to one reaper thread and answers 0 at once (the
 * context is never used again by its caller; its only errors are for a bad
 * context, which libraft ignores); every other number goes to libc's
 * syscall() unchanged, but for the io_submit and io_getevents of segment
 * writes tried without blocking, which node_aio_nowait.c watches and may send
 * to the thread pool at once (§21 of the same doc). */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/syscall.h>

#include "node_int.h"

/* Contexts waiting to be destroyed. A full queue destroys on the caller's
 * thread, as libraft would have: the queue bounds what is deferred. */
#define AIO_QUEUE 64

typedef long (*aio_syscall_fn)(long number, ...);

static struct {
    pthread_mutex_t mu;
    pthread_cond_t more;
    bool started;
    bool failed; /* the thread could not be started: destroy in place */
    size_t head, n;
    unsigned long ctx[AIO_QUEUE];
} aio = {.mu = PTHREAD_MUTEX_INITIALIZER, .more = PTHREAD_COND_INITIALIZER};

static _Atomic uint64_t aio_deferred;
static _Atomic(aio_syscall_fn) aio_libc;

static aio_syscall_fn aio_libc_syscall(void)
{
    aio_syscall_fn fn = atomic_load_explicit(&aio_libc, memory_order_acquire);
    if (fn == NULL) {
        fn = (aio_syscall_fn)dlsym(RTLD_NEXT, "syscall");
        atomic_store_explicit(&aio_libc, fn, memory_order_release);
    }
    return fn;
}

static void *aio_reaper(void *arg)
{
    (void)arg;
    aio_syscall_fn libc = aio_libc_syscall();
    pthread_mutex_lock(&aio.mu);
    for (;;) {
        while (aio.n == 0) {
            pthread_cond_wait(&aio.more, &aio.mu);
        }
        unsigned long ctx = aio.ctx[aio.head];
        aio.head = (aio.head + 1) % AIO_QUEUE;
        aio.n--;
        pthread_mutex_unlock(&aio.mu);
        libc(SYS_io_destroy, ctx);
        pthread_mutex_lock(&aio.mu);
    }
    return NULL;
}

/* True when ctx was queued for the reaper. */
static bool aio_defer(unsigned long ctx)
{
    bool queued = false;
    pthread_mutex_lock(&aio.mu);
    if (!aio.started && !aio.failed) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        aio.failed = pthread_create(&t, &attr, aio_reaper, NULL) != 0;
        aio.started = !aio.failed;
        pthread_attr_destroy(&attr);
    }
    if (aio.started && aio.n < AIO_QUEUE) {
        aio.ctx[(aio.head + aio.n) % AIO_QUEUE] = ctx;
        aio.n++;
        queued = true;
        pthread_cond_signal(&aio.more);
    }
    pthread_mutex_unlock(&aio.mu);
    if (queued) {
        atomic_fetch_add_explicit(&aio_deferred, 1, memory_order_relaxed);
    }
    return queued;
}

/* The name and signature are libc's: this definition interposes it for the
 * shared libraries this executable loads (libraft among them). */
long syscall(long number, ...)
{
    /* Six arguments whatever the caller passed, as libc's syscall() reads
     * six registers: the kernel ignores those a call does not take. */
    va_list ap;
    va_start(ap, number);
    long a[6];
    for (int i = 0; i < 6; i++) {
        a[i] = va_arg(ap, long);
    }
    va_end(ap);
    if (number == SYS_io_destroy && aio_defer((unsigned long)a[0])) {
        return 0;
    }
    if (number == SYS_io_submit && node_aio_nowait_pool(a[1], a[2])) {
        errno = EAGAIN;
        return -1;
    }
    aio_syscall_fn libc = aio_libc_syscall();
    if (libc == NULL) {
        errno = ENOSYS;
        return -1;
    }
    long rv = libc(number, a[0], a[1], a[2], a[3], a[4], a[5]);
    if (number == SYS_io_getevents && rv > 0) {
        node_aio_nowait_seen((const void *)a[3], rv);
    }
    return rv;
}

uint64_t ns_node_aio_deferred(void)
{
    return atomic_load_explicit(&aio_deferred, memory_order_relaxed);
}
