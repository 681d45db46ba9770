/* Private structures of the route module: the sorted-vector container and the
 * tables of docs/protocol.md §5.1 as kept here. Not a public interface: only
 * src/route/route*.c include it. */
#ifndef RAFTNS_ROUTE_INTERNAL_H
#define RAFTNS_ROUTE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raftns/buf.h"
#include "raftns/rcbuf.h"
#include "raftns/route.h"

/* A vector of item pointers kept sorted by a key: O(log n) lookups,
 * deterministic order. */
struct svec {
    void *
        *items; /* owned array; the items are owned by whoever holds the svec */
    size_t n;
    size_t cap;
};

/* <0, 0, >0 as item's key compares to key. */
typedef int (*svec_cmp_fn)(const void *item, const void *key);

/* Position of key (found) or where it would be inserted. */
size_t svec_search(const struct svec *v, const void *key, svec_cmp_fn cmp,
                   bool *found);
/* As svec_search, searching outward from *hint (ns_sorted_search_near_by) and
 * leaving the answer in *hint for the next, larger key. */
size_t svec_search_near(const struct svec *v, const void *key, svec_cmp_fn cmp,
                        size_t *hint, bool *found);
/* Borrowed item or NULL. */
void *svec_find(const struct svec *v, const void *key, svec_cmp_fn cmp);
/* Inserts item (taken on success) at pos. 0 or NS_ENOMEM. */
int svec_insert(struct svec *v, size_t pos, void *item);
/* Removes and returns the item at pos (the caller owns it again). */
/* Merges add[0..k) (named items sorted by name, none in v) into v in one
 * pass. 0, or NS_ENOMEM (v unchanged). */
int svec_merge_named(struct svec *v, void *const *add, size_t k);
void *svec_remove_at(struct svec *v, size_t pos);
/* Frees the array (not the items). */
void svec_close(struct svec *v);
/* Items whose first member is a char * (name) compared to a const char * key.
 */
int svec_cmp_named(const void *item, const void *key);
/* Items that are char * strings compared to a const char * key. */
int svec_cmp_str(const void *item, const void *key);
/* Inserts an owned copy of s into a sorted string set; no-op when present.
 * *added (may be NULL) tells whether it was new. 0 or NS_ENOMEM. */
int svec_add_str(struct svec *v, const char *s, bool *added);
/* Removes s from a string set (freeing it); true when it was there. */
bool svec_remove_str(struct svec *v, const char *s);
/* Frees every string of a string set and the array. */
void svec_close_strs(struct svec *v);

struct addr_entry {
    int64_t id;
    char *addr; /* owned */
};

/* BrokerData: a broker group (master + slaves). */
struct group {
    char *name;    /* owned, first member (svec_cmp_named) */
    char *cluster; /* owned, fixed at creation */
    char *zone;    /* owned or NULL */
    bool acting_master;
    struct addr_entry *addrs; /* owned, sorted by id ascending */
    size_t n_addrs;
    struct route_memo *memo; /* owned or NULL (route_memo.c) */
};

/* A named set of strings: a clusterAddrTable entry (cluster -> broker names,
 * owned copies) or a reverse-index entry (broker name -> topics that have queue
 * data for it: borrowed topic names, which live as long as the entry). */
struct named_set {
    char *name;
    struct svec items; /* owned strings */
};

/* One encoded TopicRouteData body in the reply cache (route_cache.c), shared
 * by every (topic, shape) entry whose reply has exactly these bytes: a
 * TopicRouteData does not name its topic, so topics served by the same brokers
 * with the same queue settings share one body. */
struct route_blob {
    struct ns_rcbuf *body; /* one reference owned */
    uint64_t hash;
    uint64_t gen;               /* context generation it was encoded for */
    struct route_blob *hnext;   /* hash bucket chain */
    struct route_blob *newer;   /* LRU list, towards the most recent */
    struct route_blob *older;   /* LRU list, towards the eviction end */
    struct cached_route *users; /* entries pointing here */
};

/* Captures under way at once (ns_route_capture_begin): a checkpoint digest's
 * and a snapshot's. */
#define ROUTE_CAPTURES 2

/* Reply shapes kept apart: JSON flavour x 5.x fields (route_cache.c). */
#define ROUTE_CACHE_SHAPES 4

/* A topic's cache entry of one shape: a blob or nothing. */
struct cached_route {
    struct route_blob *blob;          /* borrowed from the cache, or NULL */
    struct cached_route *prev, *next; /* in blob->users */
};

/* The reply cache: blobs by content hash, in LRU order, within a byte budget.
 * Local to this node (never encoded, digested or replicated). */
struct route_cache {
    struct route_blob **buckets; /* owned array of n_buckets chains */
    size_t n_buckets;
    size_t n_blobs;
    struct route_blob *newest, *oldest;
    size_t bytes;  /* bodies plus bookkeeping of every blob */
    size_t budget; /* 0: automatic (ns_route_set_cache_budget) */
    uint64_t hits, misses, evictions, shared, uncached;
    struct ns_rcbuf *last_uncached; /* one reference: the last reply served
                                       outside the cache */
};

/* topicQueueTable entry. Never empty: a topic without queue data is removed.
 * One allocation holds the entry, its first queue data and its name
 * (route_topic_new): a pass over the table (a snapshot, a digest, a lookup)
 * waits on memory once per topic instead of once per pointer (BENCHMARKS.md,
 * "Topics in one block"). */
struct topic {
    char *name; /* first member (svec_cmp_named); points at name_bytes */
    /* struct ns_queue_data *, by broker_name: &qd0 or owned
     * (route_topic_qd_new); each broker_name borrows the reverse index's name
     * of that broker (no copy per topic) */
    struct svec qds;
    void *qds_inline[1];      /* qds.items while it holds at most one */
    struct ns_queue_data qd0; /* free while its broker_name is NULL */
    /* route_capture.c: the id of the last capture begun when the topic was
     * created, and per capture slot the id of the capture that saved its
     * entry before a change */
    uint32_t born, saved[ROUTE_CAPTURES];
    /* owned array of ROUTE_CACHE_SHAPES, or NULL until the topic is first
     * read: outside the block, which a pass over the table reads whole */
    struct cached_route *cache;
    char name_bytes[];
};

/* Key of brokerLiveTable and filterServerTable. */
struct pair_key {
    char *cluster;
    char *addr;
};

/* brokerLiveTable entry: replicated data only (no timestamps, no connections).
 */
struct live {
    struct pair_key key; /* owned strings; first member (cmp_pair) */
    struct ns_data_version dv;
    char *ha_addr; /* owned or NULL */
    int64_t timeout_ms;
    /* Registrations applied since this entry was created, less one: what an
     * expiry compares with what its leader saw
     * (ns_route_expire_brokers_seen). */
    uint64_t regs;
};

struct filter {
    struct pair_key key;
    char **servers; /* owned array of owned strings, n >= 1 */
    size_t n;
};

/* topicQueueMappingInfoTable entry. */
struct tmap {
    char *name;        /* topic */
    struct svec infos; /* owned struct ns_mapping_info *, by bname */
};

struct route_stats {
    uint64_t n_encodes;
    struct route_cache cache;
};

struct ns_route {
    struct svec topics;        /* struct topic *, by name */
    struct svec groups;        /* struct group *, by name */
    struct svec clusters;      /* struct named_set *, by name */
    struct svec lives;         /* struct live *, by (cluster, addr) */
    struct svec filters;       /* struct filter *, by (cluster, addr) */
    struct svec tmaps;         /* struct tmap *, by topic */
    struct svec bidx;          /* struct named_set *, by broker name */
    struct route_stats *stats; /* owned; mutable even through a const route */
    uint64_t epoch;            /* ns_route_epoch: moved by every mutation */
    /* route_capture.c: the captures under way, owned, or NULL */
    struct ns_route_capture *captures[ROUTE_CAPTURES];
    uint32_t capture_seq; /* id of the last capture begun */
    size_t n_qds;         /* queue data entries of all topics */
    size_t memo_bytes;    /* of every group's memo */
};

/* Called first by every function that mutates or decodes the route
 * (ns_route_epoch). */
void route_bump_epoch(struct ns_route *r);

int route_cmp_pair(const void *item, const void *key);
int route_cmp_mapping(const void *item, const void *key);

struct group *route_find_group(const struct ns_route *r, const char *name);
struct topic *route_find_topic(const struct ns_route *r, const char *name);
struct live *route_find_live(const struct ns_route *r, const char *cluster,
                             const char *addr);
struct filter *route_find_filter(const struct ns_route *r, const char *cluster,
                                 const char *addr);
struct named_set *route_find_bidx(const struct ns_route *r, const char *bname);
struct tmap *route_find_tmap(const struct ns_route *r, const char *topic);

/* Address of id in g (borrowed) or NULL. */
const char *group_find_addr(const struct group *g, int64_t id);
/* Puts id -> addr (copied). *changed (may be NULL) set when the map changed. */
int group_put_addr(struct group *g, int64_t id, const char *addr,
                   bool *changed);
void group_remove_addr_at(struct group *g, size_t i);

/* Creates group name in cluster (copied). Borrowed result or NULL (out of
 * memory). */
struct group *route_create_group(struct ns_route *r, const char *name,
                                 const char *cluster);
void route_remove_group(struct ns_route *r, const char *name);
int route_add_cluster_name(struct ns_route *r, const char *cluster,
                           const char *bname);
void route_remove_cluster_name(struct ns_route *r, const char *cluster,
                               const char *bname);

/* Puts qd (copied) for topic, creating the topic; replaces only when different.
 * *changed (may be NULL) tells whether anything changed. 0 or NS_ENOMEM. */
int route_put_qd(struct ns_route *r, const char *topic,
                 const struct ns_queue_data *qd, bool *changed);
/* Puts qd into t, a topic in the table, as route_put_qd does; t leaves the
 * table when the put fails and t is left empty. */
int route_put_qd_in(struct ns_route *r, struct topic *t,
                    const struct ns_queue_data *qd, bool *changed);
struct route_new_topic {
    const char *name; /* borrowed */
    struct ns_queue_data qd;
    size_t seq; /* order of arrival, for sorting */
};
/* Creates the k topics add[0..k) (sorted by name, distinct, none in the
 * table) with their queue data, in one merge of the topic table
 * (src/route/route_merge.c). 0 or NS_ENOMEM (then none of them is in the
 * table). */
int route_put_qds_new(struct ns_route *r, const struct route_new_topic *add,
                      size_t k);
/* Removes bname's queue data from t, and t itself when left empty (t is then
 * freed). */
void route_remove_qd(struct ns_route *r, struct topic *t, const char *bname);
/* The same, but t stays in the table when left empty and is added to
 * emptied; the caller ends with route_drop_topics(r, emptied), before anything
 * else reads the table. */
void route_remove_qd_later(struct ns_route *r, struct topic *t,
                           const char *bname, struct svec *emptied);
/* Frees the topics in emptied that are still empty and in the table, and
 * closes emptied (src/route/route_drop.c). */
void route_drop_topics(struct ns_route *r, struct svec *emptied);
/* Removes t from the table and frees it when it holds no queue data. */
void route_drop_topic_if_empty(struct ns_route *r, struct topic *t);
/* Frees t and its queue data; taking it out of the table is the caller's. */
void route_free_topic(struct ns_route *r, struct topic *t);
/* A topic named name (copied) without queue data, or NULL (out of memory). */
struct topic *route_topic_new(const struct ns_route *r, const char *name);
/* Room for one more queue data of t (its own slot while free), or NULL. */
struct ns_queue_data *route_topic_qd_new(struct topic *t);
/* Lists qd at pos of t->qds. 0 or NS_ENOMEM. */
int route_topic_qds_insert(struct topic *t, size_t pos,
                           struct ns_queue_data *qd);
/* Gives back what route_topic_qd_new gave (t no longer lists it). */
void route_topic_qd_free(struct topic *t, struct ns_queue_data *qd);
/* Sets the perm of an existing queue data, invalidating the topic's cache when
 * it changes. */
void route_set_perm(struct ns_route *r, struct topic *t,
                    struct ns_queue_data *qd, int32_t perm);

int route_put_live(struct ns_route *r, const char *cluster, const char *addr,
                   const struct ns_data_version *dv, const char *ha_addr,
                   int64_t timeout);
void route_remove_live(struct ns_route *r, const char *cluster,
                       const char *addr);
/* Stores a copy of servers (n >= 1) for (cluster, addr). */
int route_put_filter(struct ns_route *r, const char *cluster, const char *addr,
                     char *const *servers, size_t n);
void route_remove_filter(struct ns_route *r, const char *cluster,
                         const char *addr);
/* Merges a copy of info into
 * topicQueueMappingInfoTable[info->topic][info->bname]. */
int route_merge_mapping(struct ns_route *r, const struct ns_mapping_info *info);

/* Cache invalidation. */
void route_touch_topic(struct ns_route *r, struct topic *t);
void route_touch_group(struct ns_route *r, const char *bname);
void route_touch_all(struct ns_route *r);

/* route_state.c: t's entry in the encoded topic table. */
void route_encode_topic(const struct topic *t, struct ns_buf *out);
/* route_state.c: what ns_route_encode_state writes before the topic table
 * (appended to head) and after it (to tail). 0 or the buffers' error. */
int route_encode_state_around_topics(const struct ns_route *r,
                                     struct ns_buf *head, struct ns_buf *tail);
/* route_capture.c: called before t's entry in the encoded topic table
 * changes: each capture under way that has not reached t keeps t's entry as
 * it was. (A topic is freed only once empty, after the change that emptied it.)
 */
void route_capture_save(struct ns_route *r, struct topic *t);

/* route_cache.c: drops t's entries (freeing blobs nobody else uses); frees
 * every blob and the table (the route is being destroyed, no entry is left). */
void route_cache_drop_topic(struct ns_route *r, struct topic *t);
void route_cache_close(struct ns_route *r);

/* route_memo.c: a group's queue-data memo. A group's memo is left out (not
 * recorded) beyond ROUTE_MEMO_MAX_TOPICS topics, or when every memo together
 * would pass ROUTE_MEMO_BUDGET bytes. */
#define ROUTE_MEMO_MAX_TOPICS 4096
#define ROUTE_MEMO_BUDGET ((size_t)16 << 20)
struct route_memo;
void route_memo_free(struct ns_route *r, struct route_memo *m);
/* Forgets bname's memo: called on every change of a queue data of bname. */
void route_memo_forget(struct ns_route *r, const char *bname);
/* Detaches g's memo (the caller owns it: route_memo_put_back or _free). While
 * it is detached, changes of g's queue data do not forget it: the caller
 * knows which topics it changed. */
struct route_memo *route_memo_take(struct group *g);
void route_memo_put_back(struct ns_route *r, struct group *g,
                         struct route_memo *m);
/* True when m (may be NULL) shows topic with exactly qd's numbers. The topics
 * must be asked in ascending order, *cursor starting at 0. */
bool route_memo_holds(const struct route_memo *m, size_t *cursor,
                      const char *topic, const struct ns_queue_data *qd);
/* Replaces g's memo by req's topics, each perm ANDed with perm_mask: what a
 * full registration left in the table. */
void route_memo_record(struct ns_route *r, struct group *g,
                       const struct ns_register *req, int32_t perm_mask);

void route_free_mapping(struct ns_mapping_info *m);
int route_copy_mapping(const struct ns_mapping_info *src,
                       struct ns_mapping_info **out);
bool route_equal_str(const char *a, const char *b); /* NULL-aware */

#endif
