/* The one allocation hook of raftns. Every module allocates through it so tests
 * can make the k-th allocation fail (the allocation-failure sweep); cJSON is
 * wired to it too (cJSON_InitHooks in src/json/json_read.c). libraft is not:
 * nothing calls raft_heap_set, so raft's own allocations and the raft_malloc
 * buffers handed to it bypass the hook and never fail on purpose. */
#ifndef RAFTNS_ALLOC_H
#define RAFTNS_ALLOC_H

#include <stddef.h>

void *ns_malloc(size_t size);
void *ns_calloc(size_t n, size_t size);
void *ns_realloc(void *p, size_t size);
void ns_free(void *p);
/* Copies s (NULL gives NULL). Returns owned memory or NULL when out of memory.
 */
char *ns_strdup(const char *s);
/* Copies n bytes of s and terminates them. Returns owned memory or NULL. */
char *ns_strndup(const char *s, size_t n);

/* Test hook: allocation number k (0 = the next one) from now fails, and every
 * one after it fails too while sticky is non-zero. k < 0 turns injection off.
 */
void ns_alloc_fail_at(long k, int sticky);
/* Allocations made since the process started (successful or not). */
long ns_alloc_count(void);

#endif
