/* A broker group's queue-data memo: the queue data its last full
 * registration (changed DataVersion, or a first one) left in the topic table,
 * kept as one contiguous block. A registration then skips every topic whose
 * queue data the memo shows unchanged, without searching the topic table: the
 * put it would make changes nothing. Every node applies every registration,
 * and a steady broker re-sends the same topics with a new DataVersion.
 *
 * The memo only states facts: each entry is the queue data (topic, group)
 * holds in the table. Any other change of a queue data of the group forgets
 * the memo (route_memo_forget, called by route.c's elementary edits), so a
 * node whose route was restored from a snapshot (no memos) and one that kept
 * its memos apply every command to the same tables. Bounded per group and in
 * total: a group beyond either bound simply has no memo. */
#include <string.h>

#include "raftns/alloc.h"
#include "route_internal.h"

struct memo_entry {
    const char *name; /* in the memo's own block */
    int32_t read_queues;
    int32_t write_queues;
    int32_t perm;
    int32_t sys_flag;
};

struct route_memo {
    size_t n;
    size_t bytes; /* the whole block, as counted in ns_route.memo_bytes */
    struct memo_entry e[];
};

void route_memo_free(struct ns_route *r, struct route_memo *m)
{
    if (m != NULL) {
        r->memo_bytes -= m->bytes;
        ns_free(m);
    }
}

void route_memo_forget(struct ns_route *r, const char *bname)
{
    if (r->memo_bytes == 0) {
        return; /* no memo anywhere (a state being decoded, or at scale): no
                   group lookup per queue data */
    }
    struct group *g = route_find_group(r, bname);
    if (g != NULL && g->memo != NULL) {
        route_memo_free(r, g->memo);
        g->memo = NULL;
    }
}

struct route_memo *route_memo_take(struct group *g)
{
    struct route_memo *m = g->memo;
    g->memo = NULL;
    return m;
}

void route_memo_put_back(struct ns_route *r, struct group *g,
                         struct route_memo *m)
{
    route_memo_free(r, g->memo);
    g->memo = m;
}

bool route_memo_holds(const struct route_memo *m, size_t *cursor,
                      const char *topic, const struct ns_queue_data *qd)
{
    if (m == NULL) {
        return false;
    }
    /* The topics come sorted, as the memo's entries are. */
    while (*cursor < m->n) {
        const struct memo_entry *e = &m->e[*cursor];
        int c = strcmp(e->name, topic);
        if (c > 0) {
            return false;
        }
        ++*cursor;
        if (c == 0) {
            return e->read_queues == qd->read_queues &&
                   e->write_queues == qd->write_queues && e->perm == qd->perm &&
                   e->sys_flag == qd->sys_flag;
        }
    }
    return false;
}

void route_memo_record(struct ns_route *r, struct group *g,
                       const struct ns_register *req, int32_t perm_mask)
{
    route_memo_free(r, route_memo_take(g));
    size_t n = req->n_topics;
    if (n == 0 || n > ROUTE_MEMO_MAX_TOPICS) {
        return;
    }
    size_t bytes = sizeof(struct route_memo) + n * sizeof(struct memo_entry);
    for (size_t i = 0; i < n; i++) {
        const char *name = req->topics[i].name;
        /* strictly ascending: each entry states the one queue data its topic
         * was left with */
        if (i > 0 && strcmp(req->topics[i - 1].name, name) >= 0) {
            return;
        }
        bytes += strlen(name) + 1;
    }
    if (bytes > ROUTE_MEMO_BUDGET - r->memo_bytes) {
        return;
    }
    struct route_memo *m = ns_malloc(bytes);
    if (m == NULL) {
        return; /* only slower: the next registration searches the table */
    }
    m->n = n;
    m->bytes = bytes;
    char *names = (char *)&m->e[n];
    for (size_t i = 0; i < n; i++) {
        const struct ns_topic_config *tc = &req->topics[i];
        size_t len = strlen(tc->name) + 1;
        memcpy(names, tc->name, len);
        m->e[i] = (struct memo_entry){
            .name = names,
            .read_queues = tc->read_queues,
            .write_queues = tc->write_queues,
            .perm = tc->perm & perm_mask,
            .sys_flag = tc->sys_flag,
        };
        names += len;
    }
    r->memo_bytes += bytes;
    g->memo = m;
}
