/* What operators' tools read beside the raft and route gauges: the build,
 * the process (CPU, memory, descriptors, start time: the names Prometheus
 * client libraries use), the quorum report and the leader's replication lag,
 * as /metrics families and /status fields. It reads /proc; it changes
 * nothing. */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "observe/observe_int.h"
#include "raftns/version.h"

/* Seconds since the epoch at which this process started: /proc/self/stat
 * field 22 counts clock ticks from boot to the start, and the boot-time clock
 * says how long ago that was (no /proc/stat, which a unit's ProcSubset=pid
 * hides). 0 when /proc cannot tell. */
static double process_start_time(void)
{
    char buf[1024];
    unsigned long long start_ticks = 0;
    FILE *f = fopen("/proc/self/stat", "re");
    if (f == NULL) {
        return 0;
    }
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* the command name may hold spaces: count fields after its ')' */
    const char *p = strrchr(buf, ')');
    for (int field = 2; p != NULL && field < 22; field++) {
        p = strchr(p + 1, ' ');
    }
    struct timespec real, boot;
    long hz = sysconf(_SC_CLK_TCK);
    if (p == NULL || sscanf(p + 1, "%llu", &start_ticks) != 1 || hz <= 0 ||
        clock_gettime(CLOCK_REALTIME, &real) != 0 ||
        clock_gettime(CLOCK_BOOTTIME, &boot) != 0) {
        return 0;
    }
    double up = (double)boot.tv_sec + (double)boot.tv_nsec / 1e9;
    double now = (double)real.tv_sec + (double)real.tv_nsec / 1e9;
    return now - (up - (double)start_ticks / (double)hz);
}

static long long resident_bytes(void)
{
    long long pages_total = 0, pages_resident = 0;
    FILE *f = fopen("/proc/self/statm", "re");
    if (f == NULL) {
        return -1;
    }
    int got = fscanf(f, "%lld %lld", &pages_total, &pages_resident);
    fclose(f);
    return got == 2 ? pages_resident * sysconf(_SC_PAGESIZE) : -1;
}

static long long open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    long long n = 0;
    if (d == NULL) {
        return -1;
    }
    for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
        n += e->d_name[0] != '.';
    }
    closedir(d);
    return n - 1; /* the descriptor of d itself */
}

static void process_metrics(struct ns_buf *out)
{
    struct rusage ru;
    struct rlimit rl;
    double cpu = 0;
    if (getrusage(RUSAGE_SELF, &ru) == 0) {
        cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
              ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) / 1e6;
    }
    ns_buf_printf(out,
                  "# HELP process_cpu_seconds_total User and system CPU time "
                  "spent in seconds.\n"
                  "# TYPE process_cpu_seconds_total counter\n"
                  "process_cpu_seconds_total %.6f\n"
                  "# HELP process_resident_memory_bytes Resident memory size "
                  "in bytes.\n"
                  "# TYPE process_resident_memory_bytes gauge\n"
                  "process_resident_memory_bytes %lld\n"
                  "# HELP process_open_fds Number of open file descriptors.\n"
                  "# TYPE process_open_fds gauge\n"
                  "process_open_fds %lld\n",
                  cpu, resident_bytes(), open_fds());
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        ns_buf_printf(out,
                      "# HELP process_max_fds Maximum number of open file "
                      "descriptors.\n"
                      "# TYPE process_max_fds gauge\n"
                      "process_max_fds %llu\n",
                      (unsigned long long)rl.rlim_cur);
    }
    ns_buf_printf(out,
                  "# HELP process_start_time_seconds Start time of the "
                  "process since unix epoch in seconds.\n"
                  "# TYPE process_start_time_seconds gauge\n"
                  "process_start_time_seconds %.2f\n",
                  process_start_time());
}

void ns_observe_ops_metrics(const struct ns_observe *o, struct ns_buf *out)
{
    struct ns_node_quorum q;
    struct ns_node_lag lag[NS_NODE_QUORUM_MAX];
    uint64_t commit = ns_node_commit_index(o->node);
    uint64_t applied = ns_node_last_applied(o->node);
    ns_buf_printf(out,
                  "# HELP raftns_build_info Always 1; the labels name the "
                  "build.\n"
                  "# TYPE raftns_build_info gauge\n"
                  "raftns_build_info{version=\"%s\",revision=\"%s\"} 1\n",
                  ns_version(), ns_version_git());
    process_metrics(out);
    ns_buf_printf(out,
                  "# HELP raftns_raft_aio_destroys_deferred_total Kernel AIO "
                  "contexts of closed raft segments destroyed by the reaper "
                  "thread instead of on the event loop.\n"
                  "# TYPE raftns_raft_aio_destroys_deferred_total counter\n"
                  "raftns_raft_aio_destroys_deferred_total %" PRIu64 "\n",
                  ns_node_aio_deferred());
    ns_buf_printf(out,
                  "# HELP raftns_raft_aio_writes_pooled_total Raft segment "
                  "writes sent to the thread pool without a non-blocking try "
                  "on the event loop, while most tries were refused.\n"
                  "# TYPE raftns_raft_aio_writes_pooled_total counter\n"
                  "raftns_raft_aio_writes_pooled_total %" PRIu64 "\n",
                  ns_node_aio_pooled());
    ns_buf_printf(out,
                  "# HELP raftns_raft_aio_tries_refused_total Raft segment "
                  "writes tried without blocking on the event loop that the "
                  "kernel refused as would-block.\n"
                  "# TYPE raftns_raft_aio_tries_refused_total counter\n"
                  "raftns_raft_aio_tries_refused_total %" PRIu64 "\n",
                  ns_node_aio_refused());
    ns_buf_printf(out,
                  "# HELP raftns_raft_commits_caught_up_total Times this "
                  "leader advanced the commit index to an index a majority "
                  "held that raft 0.15 did not count.\n"
                  "# TYPE raftns_raft_commits_caught_up_total counter\n"
                  "raftns_raft_commits_caught_up_total %" PRIu64 "\n",
                  ns_node_commits_caught_up(o->node));
    ns_buf_printf(out,
                  "# HELP raftns_raft_installs_held_total InstallSnapshot "
                  "messages held while this node took or stored a snapshot "
                  "of its own, which raft 0.15 would have dropped.\n"
                  "# TYPE raftns_raft_installs_held_total counter\n"
                  "raftns_raft_installs_held_total %" PRIu64 "\n",
                  ns_node_installs_held(o->node));
    ns_buf_printf(out,
                  "# HELP raftns_raft_appends_dropped_total AppendEntries "
                  "from index 1 dropped because this node's log no longer "
                  "holds index 1 (raft 0.15 would turn unavailable).\n"
                  "# TYPE raftns_raft_appends_dropped_total counter\n"
                  "raftns_raft_appends_dropped_total %" PRIu64 "\n",
                  ns_node_appends_dropped(o->node));
    ns_buf_printf(out,
                  "# HELP raftns_raft_leader_fences_total Terms this node "
                  "stopped leading because its own disk write failed.\n"
                  "# TYPE raftns_raft_leader_fences_total counter\n"
                  "raftns_raft_leader_fences_total %" PRIu64 "\n",
                  ns_node_fences(o->node));
    ns_buf_printf(out,
                  "# HELP raftns_checkpoint_digest_loop_seconds How long "
                  "the last checkpoint digest (its encoding, or the fork "
                  "computing it) held the event loop.\n"
                  "# TYPE raftns_checkpoint_digest_loop_seconds gauge\n"
                  "raftns_checkpoint_digest_loop_seconds %.6f\n",
                  (double)ns_node_digest_loop_ns(o->node) / 1e9);
    ns_buf_printf(out,
                  "# HELP raftns_fsm_forks_total Children forked to encode a "
                  "snapshot or a checkpoint digest (a state of "
                  "forkStateBytes or more).\n"
                  "# TYPE raftns_fsm_forks_total counter\n"
                  "raftns_fsm_forks_total %" PRIu64 "\n",
                  ns_node_forks(o->node));
    uint64_t batches, batched;
    ns_node_batch_stats(o->node, &batches, &batched);
    ns_buf_printf(out,
                  "# HELP raftns_raft_batches_total Batches of writes this "
                  "node handed to raft as leader (one disk write and one "
                  "AppendEntries per follower each).\n"
                  "# TYPE raftns_raft_batches_total counter\n"
                  "raftns_raft_batches_total %" PRIu64 "\n"
                  "# HELP raftns_raft_batched_entries_total Entries in "
                  "those batches.\n"
                  "# TYPE raftns_raft_batched_entries_total counter\n"
                  "raftns_raft_batched_entries_total %" PRIu64 "\n",
                  batches, batched);
    ns_node_quorum(o->node, &q);
    ns_buf_printf(out,
                  "# HELP raftns_raft_apply_lag_entries Committed entries "
                  "this node has not applied yet.\n"
                  "# TYPE raftns_raft_apply_lag_entries gauge\n"
                  "raftns_raft_apply_lag_entries %" PRIu64 "\n"
                  "# HELP raftns_quorum_voters Voters in this node's raft "
                  "configuration.\n"
                  "# TYPE raftns_quorum_voters gauge\n"
                  "raftns_quorum_voters %zu\n"
                  "# HELP raftns_quorum_heard Voters (this node included) "
                  "heard from within the quorum window (/status quorum).\n"
                  "# TYPE raftns_quorum_heard gauge\n"
                  "raftns_quorum_heard %zu\n"
                  "# HELP raftns_leaderless_seconds How long this node has "
                  "known no leader (0 while one is known).\n"
                  "# TYPE raftns_leaderless_seconds gauge\n"
                  "raftns_leaderless_seconds %.3f\n",
                  commit > applied ? commit - applied : 0, q.n_voters,
                  q.n_heard, (double)q.leaderless_ms / 1000.0);
    size_t n = ns_node_replication_lag(o->node, lag, NS_NODE_QUORUM_MAX);
    ns_buf_printf(out, "# HELP raftns_raft_follower_lag_entries Entries of the "
                       "leader's log a member has not confirmed (exported by "
                       "the leader, one series per member).\n"
                       "# TYPE raftns_raft_follower_lag_entries gauge\n");
    for (size_t i = 0; i < n; i++) {
        ns_buf_printf(out,
                      "raftns_raft_follower_lag_entries{peer=\"%" PRIu64
                      "\"} %" PRIu64 "\n",
                      lag[i].id, lag[i].lag);
    }
}

static void put_ids(struct ns_json_writer *w, const char *key,
                    const uint64_t *ids, size_t n)
{
    ns_json_write_key(w, key);
    ns_json_write_arr_begin(w);
    for (size_t i = 0; i < n; i++) {
        ns_json_write_int(w, (int64_t)ids[i]);
    }
    ns_json_write_arr_end(w);
}

void ns_observe_put_ops(struct ns_json_writer *w, const struct ns_observe *o)
{
    struct ns_node_quorum q;
    ns_node_quorum(o->node, &q);
    ns_json_write_key(w, "version");
    ns_json_write_str(w, ns_version());
    ns_json_write_key(w, "git_revision");
    ns_json_write_str(w, ns_version_git());
    ns_json_write_key(w, "quorum");
    ns_json_write_obj_begin(w);
    ns_json_write_key(w, "voters");
    ns_json_write_int(w, (int64_t)q.n_voters);
    ns_json_write_key(w, "needed");
    ns_json_write_int(w, (int64_t)q.needed);
    put_ids(w, "heard", q.heard, q.n_heard);
    put_ids(w, "not_heard", q.not_heard, q.n_not_heard);
    ns_json_write_key(w, "has_quorum");
    ns_json_write_bool(w, q.has_quorum);
    ns_json_write_key(w, "in_configuration");
    ns_json_write_bool(w, q.in_configuration);
    ns_json_write_key(w, "window_ms");
    ns_json_write_int(w, (int64_t)q.window_ms);
    ns_json_write_key(w, "leaderless_ms");
    ns_json_write_int(w, (int64_t)q.leaderless_ms);
    ns_json_write_obj_end(w);
}
