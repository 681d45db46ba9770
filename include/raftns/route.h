/* The RouteInfoManager (docs/protocol.md §5, 5.x behaviour): topic routes,
 * broker groups, clusters, per-broker DataVersion/haServerAddr/timeout,
 * static-topic mappings; the reply bodies built from them and a per-topic cache
 * of encoded route replies. Pure: no clock (callers pass values), no I/O, no
 * logging. Liveness timestamps and connections are NOT here: they are local to
 * each node (src/liveness/liveness.c). Iteration and encodings are
 * deterministic (sorted), so every replica encodes byte-identical state. */
#ifndef RAFTNS_ROUTE_H
#define RAFTNS_ROUTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "raftns/buf.h"
#include "raftns/json.h"
#include "raftns/rcbuf.h"

#define NS_DEFAULT_HEARTBEAT_TIMEOUT_MS 120000
#define NS_PERM_PRIORITY 8
#define NS_PERM_READ 4
#define NS_PERM_WRITE 2
#define NS_PERM_INHERIT 1
#define NS_SYSFLAG_UNIT 1
#define NS_SYSFLAG_UNIT_SUB 2
/* Inflated size allowed for a compressed REGISTER_BROKER body (zlib-bomb
 * bound). */
#define NS_REGISTER_MAX_INFLATED (64u * 1024u * 1024u)
/* Topics one registration may carry (a stock broker with 10,000 topics sends
 * about 1.5 MB; duplicates count). */
#define NS_REGISTER_MAX_TOPICS 100000u

struct ns_data_version {
    int64_t counter;
    int64_t state_version;
    int64_t timestamp;
};

struct ns_topic_config {
    char *name; /* owned: the TopicConfig's topicName */
    int32_t read_queues;
    int32_t write_queues;
    int32_t perm;
    int32_t sys_flag;
};

struct ns_queue_data {
    char *broker_name; /* owned */
    int32_t read_queues;
    int32_t write_queues;
    int32_t perm;
    int32_t sys_flag;
};

struct ns_id_pair {
    int32_t key;
    int32_t value;
};

/* TopicQueueMappingInfo (5.x static topics). */
struct ns_mapping_info {
    char *topic; /* owned */
    char *bname; /* owned */
    char *scope; /* owned, may be NULL */
    int64_t epoch;
    int32_t total_queues;
    bool dirty;
    struct ns_id_pair *curr_ids; /* owned, currIdMap */
    size_t n_curr_ids;
};

/* A decoded, validated REGISTER_BROKER request: header fields plus body. */
struct ns_register {
    char *cluster; /* owned, never NULL after decode ("" when the header lacked
                      it) */
    char *broker_name; /* owned, never NULL */
    char *broker_addr; /* owned, never NULL */
    char *ha_addr;     /* owned, may be NULL */
    char *zone;        /* owned, may be NULL (__ZONE_NAME) */
    int64_t broker_id;
    int64_t
        heartbeat_timeout_ms; /* NS_DEFAULT_HEARTBEAT_TIMEOUT_MS when absent */
    int8_t
        acting_master; /* -1: header field absent (an "old" broker); 0 or 1 */
    struct ns_data_version dv;
    struct ns_topic_config *topics; /* owned array */
    size_t n_topics;
    /* When set (a decoded command, or a body the fast JSON path read), every
     * topic name points into this owned block and none is freed alone; else
     * each name is owned. */
    char *topic_names;
    struct ns_mapping_info *mappings; /* owned array */
    size_t n_mappings;
    bool has_filter_servers; /* the body carried filterServerList */
    char **filter_servers;   /* owned array of owned strings */
    size_t n_filter_servers;
};

void ns_register_init(struct ns_register *r);
void ns_register_close(struct ns_register *r);

/* Decodes a REGISTER_BROKER body into r's dv/topics/mappings/filter servers
 * (header fields are filled by the caller). req_version < 37: a bare
 * TopicConfigSerializeWrapper; compressed: the zlib record layout of
 * docs/protocol.md §4.4, inflated size bounded by NS_REGISTER_MAX_INFLATED
 * (mappings only when req_version >= 413). An empty body gives no topics and a
 * zero DataVersion. A DataVersion without timestamp gets now_ms (Java's
 * constructor default). Returns 0, NS_EPROTO (with a Java-like exception text
 * in errmsg), NS_ETOOBIG (more than NS_REGISTER_MAX_TOPICS topics; errmsg says
 * so) or NS_ENOMEM. */
int ns_register_decode_body(struct ns_register *r, int32_t req_version,
                            bool compressed, const uint8_t *body, size_t len,
                            int64_t now_ms, char *errmsg, size_t errmsg_size);

/* DataVersion JSON (QUERY_DATA_VERSION body), 64-bit exact, with fastjson's
 * rules (docs/compat.md); a missing timestamp is now_ms, as Java's
 * constructor. Returns 0; NS_ENOTFOUND when the body is JSON null or [] (Java
 * reads a null object); NS_EPROTO where Java throws (not JSON, not an object,
 * a counter or timestamp that is no long, then *bad_field names it when
 * bad_field is not NULL: a borrowed literal); NS_ENOMEM. */
int ns_data_version_decode(const uint8_t *body, size_t len, int64_t now_ms,
                           struct ns_data_version *out, const char **bad_field);
void ns_data_version_encode(const struct ns_data_version *dv,
                            struct ns_buf *out);
bool ns_data_version_equal(const struct ns_data_version *a,
                           const struct ns_data_version *b);

/* Identifies a broker for unregister (all fields) or expiry (cluster and addr;
 * name and id are looked up in the state). */
struct ns_broker_ref {
    char *cluster;     /* owned */
    char *broker_addr; /* owned */
    char *broker_name; /* owned, NULL for expiry */
    int64_t broker_id;
};

enum ns_register_status {
    NS_REGISTER_OK,
    NS_REGISTER_CONFLICT, /* stateVersion conflict: SUCCESS with extFields {}
                             (5.2 step 6) */
    NS_REGISTER_FAILED,   /* single-topic guard: SYSTEM_ERROR "register broker
                             failed" */
};

struct ns_register_result {
    enum ns_register_status status;
    char *master_addr; /* owned or NULL */
    char *ha_addr;     /* owned or NULL: the master's haServerAddr */
};

void ns_register_result_close(struct ns_register_result *res);

struct ns_route;

struct ns_route *ns_route_create(void); /* NULL when out of memory */
void ns_route_destroy(struct ns_route *route);

/* This route's count of changes: every mutation below and every decode moves
 * it, reads never do. Equal values at two times mean the route did not change
 * in between (callers use it to reuse a read result). Not part of the state:
 * two routes with the same content may have different epochs, and a new route
 * starts at 1. */
uint64_t ns_route_epoch(const struct ns_route *route);
/* A route replacing `before` (borrowed; a snapshot restore) continues its
 * count: route's epoch becomes greater than both routes' epochs, so an epoch
 * remembered against `before` never matches route. It also takes over
 * before's cache budget and counters (this node's settings, not state). */
void ns_route_continue_epoch(struct ns_route *route,
                             const struct ns_route *before);

/* --- mutations (called only by the FSM) --- 0 or NS_ENOMEM. */

/* 5.2 table update. delete_missing_topics = deleteTopicWithBrokerRegistration.
 * res is filled (caller closes it). */
int ns_route_register_broker(struct ns_route *route,
                             const struct ns_register *req,
                             bool delete_missing_topics,
                             struct ns_register_result *res);
/* 5.3 batch unregister, by (cluster, addr, name); addresses removed by value.
 */
int ns_route_unregister_brokers(struct ns_route *route,
                                const struct ns_broker_ref *refs, size_t n);
/* Expiry / connection close (5.5, 5.6): refs carry cluster and addr only; the
 * group holding that address in that cluster gives name and id; unknown ones
 * are skipped. */
int ns_route_expire_brokers(struct ns_route *route,
                            const struct ns_broker_ref *refs, size_t n);
/* The same, except that a broker registered again after its leader decided
 * (its count is not regs_seen[i]) is kept: the decision was about the
 * registration the leader saw, not a newer one (as Java, which removes a broker
 * on a channel close only while that channel is still its current one). */
int ns_route_expire_brokers_seen(struct ns_route *route,
                                 const struct ns_broker_ref *refs,
                                 const uint64_t *regs_seen, size_t n);
int ns_route_wipe_write_perm(struct ns_route *route, const char *broker_name,
                             int32_t *count);
int ns_route_add_write_perm(struct ns_route *route, const char *broker_name,
                            int32_t *count);
/* cluster NULL or "": delete the topic everywhere. */
int ns_route_delete_topic(struct ns_route *route, const char *topic,
                          const char *cluster);
/* 5.8 REGISTER_TOPIC_IN_NAMESRV semantics. */
int ns_route_register_topic(struct ns_route *route, const char *topic,
                            const struct ns_queue_data *qds, size_t n);

/* --- reads --- */

/* True when registering req would change nothing in the route state (same
 * DataVersion, haServerAddr, timeout, addresses, group flags and zone, topic
 * queue data, no mappings, no filter-server change;
 * deleteTopicWithBrokerRegistration would remove nothing): the heartbeat
 * short-cut that writes no log entry. */
bool ns_route_is_unchanged_registration(const struct ns_route *route,
                                        const struct ns_register *req,
                                        bool delete_missing_topics);
/* Fills res with the masterAddr/haServerAddr that registering req would answer
 * (5.2 step 13) without changing anything: the heartbeat short-cut of a slave.
 * res->status is NS_REGISTER_OK. 0 or NS_ENOMEM (caller closes res). */
int ns_route_find_master(const struct ns_route *route,
                         const struct ns_register *req,
                         struct ns_register_result *res);
/* The count ns_route_wipe_write_perm / ns_route_add_write_perm report (topics
 * holding queue data of broker_name), without changing anything. */
int32_t ns_route_count_broker_topics(const struct ns_route *route,
                                     const char *broker_name);
/* Borrowed stored DataVersion of (cluster, addr), or NULL when unknown. */
const struct ns_data_version *
ns_route_find_data_version(const struct ns_route *route, const char *cluster,
                           const char *addr);
/* heartbeatTimeoutMillis of (cluster, addr), or -1 when the broker is unknown.
 */
int64_t ns_route_broker_timeout(const struct ns_route *route,
                                const char *cluster, const char *addr);
/* Whether (cluster, addr) is registered; if so *regs is how often it was
 * registered again since its entry was created (what EXPIRE_BROKERS_SEEN
 * compares). */
bool ns_route_broker_regs(const struct ns_route *route, const char *cluster,
                          const char *addr, uint64_t *regs);

typedef void (*ns_route_broker_cb)(void *arg, const char *cluster,
                                   const char *addr, int64_t timeout_ms);
/* Calls cb for every registered broker (cluster, addr), in sorted order. */
void ns_route_foreach_broker(const struct ns_route *route,
                             ns_route_broker_cb cb, void *arg);
size_t ns_route_n_brokers(const struct ns_route *route);
size_t ns_route_n_topics(const struct ns_route *route);

/* --- reply bodies (appended to out; errors sticky in out) --- */

struct ns_route_query {
    const char *topic;
    enum ns_json_flavour flavour;
    bool support_acting_master;   /* supportActingMaster */
    const char *order_topic_conf; /* orderTopicConf to include, or NULL */
    const char
        *zone_name; /* non-NULL: zone filter (5.7 step 8), forces legacy JSON */
    /* A client older than 5.0 (request version < 413, docs/protocol.md §4.6,
     * §4.7): BrokerData without enableActingMaster and zoneName, no
     * topicQueueMappingByBroker, as a Java 4.9.8 name server writes them. */
    bool omit_5x;
};

/* TopicRouteData of 5.7. Returns 0, NS_ENOTFOUND (reply 17) or NS_ENOMEM. */
int ns_route_encode_topic_route(const struct ns_route *route,
                                const struct ns_route_query *q,
                                struct ns_buf *out);
/* The same through the reply cache: one entry per (topic, shape), shape =
 * JSON flavour x omit_5x, valid until a mutation touches the topic or a broker
 * group it uses, or context_gen changes (the caller's generation of
 * settings/KV that the reply depends on). Entries with byte-identical bodies
 * share one body; bodies are evicted least recently used first so that the
 * cache stays within its byte budget (ns_route_set_cache_budget); a body over
 * the budget, and a zone query, is encoded for this call only. *body is
 * borrowed until the next call or mutation (take a reference with
 * ns_rcbuf_ref to keep it). Returns 0, NS_ENOTFOUND or NS_ENOMEM. */
int ns_route_cached_topic_route(struct ns_route *route,
                                const struct ns_route_query *q,
                                uint64_t context_gen, struct ns_rcbuf **body);
/* How many times a TopicRouteData was JSON-encoded (cache misses included). */
uint64_t ns_route_n_route_encodes(const struct ns_route *route);

/* The reply cache's byte budget; 0 (the default) is automatic: an eighth of
 * ns_route_state_bytes, at least NS_ROUTE_CACHE_MIN_BYTES. Takes effect at the
 * next insertion. */
#define NS_ROUTE_CACHE_MIN_BYTES (4u * 1024u * 1024u)
void ns_route_set_cache_budget(struct ns_route *route, size_t bytes);

struct ns_route_cache_stats {
    uint64_t hits;     /* reads answered from an entry */
    uint64_t misses;   /* reads that encoded (shared + stored + uncached) */
    uint64_t shared;   /* misses whose body was already cached (deduplicated) */
    uint64_t uncached; /* misses served without caching (over budget, zone) */
    uint64_t evictions; /* bodies dropped to stay within the budget */
    size_t bytes;       /* bodies and bookkeeping held now */
    size_t budget;      /* the budget in force (automatic resolved) */
    size_t n_bodies;    /* distinct bodies held */
};
void ns_route_cache_stats(const struct ns_route *route,
                          struct ns_route_cache_stats *out);
/* An estimate of the heap bytes of the route tables (queue data, topics,
 * groups; not the cache): what the automatic cache budget is a fraction of. */
size_t ns_route_state_bytes(const struct ns_route *route);

int ns_route_encode_cluster_info(const struct ns_route *route,
                                 struct ns_buf *out);
/* The same for a client older than 5.0 when omit_5x (BrokerData as in
 * ns_route_query.omit_5x). */
int ns_route_encode_cluster_info_shaped(const struct ns_route *route,
                                        bool omit_5x, struct ns_buf *out);
int ns_route_encode_all_topics(const struct ns_route *route,
                               struct ns_buf *out);
int ns_route_encode_topics_by_cluster(const struct ns_route *route,
                                      const char *cluster, struct ns_buf *out);
int ns_route_encode_system_topics(const struct ns_route *route,
                                  struct ns_buf *out);

enum ns_unit_list {
    NS_UNIT_TOPICS,
    NS_UNIT_SUB_TOPICS,
    NS_UNIT_SUB_UNUNIT_TOPICS
};
int ns_route_encode_unit_topics(const struct ns_route *route,
                                enum ns_unit_list which, struct ns_buf *out);
int ns_route_encode_member_group(const struct ns_route *route,
                                 const char *cluster, const char *broker_name,
                                 struct ns_buf *out);

/* --- whole state, for snapshots (WARNING: part of the versioned snapshot
 * format) --- */
int ns_route_encode_state(const struct ns_route *route, struct ns_buf *out);
/* The state as version 1 writes it, without the registration counts: what a
 * registration's content changes (ns_route_is_unchanged_registration). */
int ns_route_encode_state_data(const struct ns_route *route,
                               struct ns_buf *out);
/* Decodes into an empty route. 0, NS_EPROTO or NS_ENOMEM. */
int ns_route_decode_state(struct ns_route *route, struct ns_rd *in);

/* A capture: ns_route_encode_state's bytes of the route as it is when the
 * capture begins, produced in steps while the route goes on changing (a
 * change to a topic the steps have not reached saves its entry first), so
 * that no single step holds the caller for long. Two at a time per route.
 * Begins one: appends to head the bytes before the topic table and to tail
 * those after it. 0 with *out, NS_EBUSY (two are under way) or NS_ENOMEM. */
struct ns_route_capture;
int ns_route_capture_begin(struct ns_route *route, struct ns_buf *head,
                           struct ns_buf *tail, struct ns_route_capture **out);
/* Appends the next at most max_topics entries of c's topic table to out (its
 * count first); *done once every one is out. 0, or NS_ENOMEM (the capture is
 * lost: end it). */
int ns_route_capture_step(struct ns_route *route, struct ns_route_capture *c,
                          size_t max_topics, struct ns_buf *out, bool *done);
/* Ends c, done or not, and frees it; NULL: no-op. */
void ns_route_capture_end(struct ns_route *route, struct ns_route_capture *c);

#endif
