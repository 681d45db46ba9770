/* The data dir versus the command line (main_datadir.h). */
#include "main_datadir.h"

#include <stdio.h>
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/log.h"

/* "1@127.0.0.1:9886 2@..." of the voters of m, and their count. */
static size_t voters_text(const struct ns_node_member *m, size_t n, char *out,
                          size_t cap)
{
    size_t used = 0, n_voters = 0;
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (m[i].role != NS_MEMBER_VOTER) {
            continue;
        }
        n_voters++;
        int w = snprintf(out + used, cap - used, "%s%llu@%s", used ? " " : "",
                         (unsigned long long)m[i].id, m[i].raft_addr);
        used = w < 0 || (size_t)w >= cap - used ? cap - 1 : used + (size_t)w;
    }
    return n_voters;
}

/* What the command line says the voters are. */
static size_t expected_text(const struct options *o, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    if (o->cluster.n_nodes == 0) {
        snprintf(out, cap, "%llu@%s", o->id, o->raft_addr);
        return 1;
    }
    for (size_t i = 0; i < o->cluster.n_nodes; i++) {
        const struct ns_cluster_node *nd = &o->cluster.nodes[i];
        int w = snprintf(out + used, cap - used, "%s%llu@%s", used ? " " : "",
                         (unsigned long long)nd->id,
                         nd->id == o->id ? o->raft_addr : nd->raft_addr);
        used = w < 0 || (size_t)w >= cap - used ? cap - 1 : used + (size_t)w;
    }
    return o->cluster.n_nodes;
}

static bool in_file(const struct options *o, uint64_t id)
{
    if (o->cluster.n_nodes == 0) {
        return id == o->id;
    }
    return ns_cluster_config_find(&o->cluster, id) != NULL;
}

void ns_main_explain_data_dir(const struct options *o, const char *dir,
                              const struct ns_node *node)
{
    struct ns_node_member *m = NULL;
    size_t n = 0;
    if (ns_node_members(node, &m, &n) != 0) {
        return;
    }
    char have[1024], want[1024];
    size_t n_voters = voters_text(m, n, have, sizeof have);
    size_t n_want = expected_text(o, want, sizeof want);
    const struct ns_node_member *me = NULL;
    bool differ = false;
    for (size_t i = 0; i < n; i++) {
        me = m[i].id == o->id ? &m[i] : me;
        differ =
            differ || (m[i].role == NS_MEMBER_VOTER && !in_file(o, m[i].id));
    }
    const char *source = o->config_path != NULL ? o->config_path
                                                : "the one-node default (no "
                                                  "--config)";
    if (n == 0) {
        NS_LOG(NS_LOG_INFO,
               "data dir %s has no configuration yet: this node waits to be "
               "added (raftnsctl member add)",
               dir);
    } else if (me == NULL) {
        NS_LOG(NS_LOG_WARN,
               "data dir %s holds a configuration without this node (id %llu): "
               "voters %s; it will not take part in elections. Was this data "
               "dir made for another node id?",
               dir, o->id, have);
    } else if (differ || (o->cluster.n_nodes == 0 && n_voters > 1)) {
        NS_LOG(NS_LOG_WARN,
               "data dir %s belongs to a %zu-voter cluster (%s), but %s "
               "describes %zu node%s (%s): the data dir wins, and a leader "
               "needs %zu of those %zu voters. Start the cluster this data dir "
               "was made for, point --data-dir at this command line's own dir, "
               "or update the cluster file if members changed at run time",
               dir, n_voters, have, source, n_want, n_want == 1 ? "" : "s",
               want, n_voters / 2 + 1, n_voters);
    }
    if (me != NULL && strcmp(me->raft_addr, o->raft_addr) != 0) {
        NS_LOG(NS_LOG_WARN,
               "data dir %s records this node's raft address as %s, but it "
               "listens on %s: peers keep dialling %s until the membership "
               "is changed",
               dir, me->raft_addr, o->raft_addr, me->raft_addr);
    }
    ns_free(m);
}
