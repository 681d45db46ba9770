/* The allocation hook with failure injection for tests. Not thread-safe: raftns
 * allocates on one loop thread (raft_uv's pool threads use raft's own heap). */
#include "raftns/alloc.h"

#include <stdlib.h>
#include <string.h>

static long n_allocs;
static long fail_at = -1;
static int fail_sticky;

void ns_alloc_fail_at(long k, int sticky)
{
    fail_at = k < 0 ? -1 : n_allocs + k;
    fail_sticky = sticky;
}

long ns_alloc_count(void)
{
    return n_allocs;
}

static int should_fail(void)
{
    long this_one = n_allocs++;
    if (fail_at < 0) {
        return 0;
    }
    return fail_sticky ? this_one >= fail_at : this_one == fail_at;
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
