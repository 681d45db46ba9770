/* The allocation hook with failure injection for tests. The counters are
 * atomic because big REGISTER_BROKER bodies are decoded on a libuv pool thread
 * (register_async.c); failure injection itself is for single-threaded tests
 * (raft_uv's pool threads use raft's own heap). */
#include "raftns/alloc.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_long n_allocs;
static atomic_long fail_at = -1;
static atomic_int fail_sticky;

void ns_alloc_fail_at(long k, int sticky)
{
    atomic_store(&fail_at, k < 0 ? -1 : atomic_load(&n_allocs) + k);
    atomic_store(&fail_sticky, sticky);
}

long ns_alloc_count(void)
{
    return atomic_load(&n_allocs);
}

static int should_fail(void)
{
    long this_one =
        atomic_fetch_add_explicit(&n_allocs, 1, memory_order_relaxed);
    long at = atomic_load_explicit(&fail_at, memory_order_relaxed);
    if (at < 0) {
        return 0;
    }
    return atomic_load(&fail_sticky) ? this_one >= at : this_one == at;
}

void *ns_malloc(size_t size)
{
    return should_fail() ? NULL : malloc(size ? size : 1);
}

void *ns_calloc(size_t n, size_t size)
{
    return should_fail() ? NULL : calloc(n ? n : 1, size ? size : 1);
}

void *ns_realloc(void *p, size_t size)
{
    return should_fail() ? NULL : realloc(p, size ? size : 1);
}

void ns_free(void *p)
{
    free(p);
}

char *ns_strndup(const char *s, size_t n)
{
    if (s == NULL) {
        return NULL;
    }
    char *copy = ns_malloc(n + 1);
    if (copy == NULL) {
        return NULL;
    }
    memcpy(copy, s, n);
    copy[n] = '\0';
    return copy;
}

char *ns_strdup(const char *s)
{
    return s == NULL ? NULL : ns_strndup(s, strlen(s));
}
