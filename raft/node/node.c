/* The raft node: raft_uv wiring, the leader barrier (docs/raft-0.15.md §1),
 * readiness, the role watcher and the life cycle (proposals are in
 * node_propose.c, the FSM callbacks in node_fsm.c). It does not know the client
 * protocol and never changes the state except through ns_fsm_apply_bytes. */
#include "raftns/node.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <raft.h>
#include <raft/uv.h>

#include "raftns/alloc.h"
#include "raftns/buf.h"
#include "raftns/err.h"
#include "raftns/log.h"
#include "raftns/waits.h"

#include "node_int.h"
#include "node_transport.h"

static const char *role_name(int role)
{
    switch (role) {
    case RAFT_FOLLOWER:
        return "follower";
    case RAFT_CANDIDATE:
        return "candidate";
    case RAFT_LEADER:
        return "leader";
    default:
        return "unavailable";
    }
}

/* --- role watcher (0.15 has no state callback: docs/raft-0.15.md §10) --- */

/* Whether a node that knows a leader may serve reads. raft 0.15 does not
 * persist the commit index: after a restart it starts at the snapshot index,
 * so "applied >= commit index" says nothing about the log having been
 * replayed. A leader is ready once its leader barrier applied (everything in
 * its log, hence every entry committed before the restart, is applied then).
 * A follower in a cluster is ready once it applied the leader's read index
 * (ns_node_set_ready_index), which the leader answers only after its own
 * barrier. A lone node (no remote leader) is always the leader. */
static bool ready_now(struct ns_node *n, int role)
{
    uint64_t applied = raft_last_applied(n->raft);
    if (role == RAFT_LEADER) {
        return ns_node_is_leader(n);
    }
    if (n->remote_ready) {
        return n->ready_index_set && applied >= n->ready_index;
    }
    if (!n->ready_target_set) {
        n->ready_target = n->raft->commit_index;
        n->ready_target_set = true;
    }
    return applied >= n->ready_target;
}

/* What the check handle runs after every loop turn: the role watcher, the
 * leader barrier, readiness, the turn's proposals (handed to raft as one
 * batch) and waiters. */
static void check(struct ns_node *n)
{
    bool changed = false;
    if (!n->started || n->stopping) {
        return;
    }
    int role = raft_state(n->raft);
    raft_id leader_id = 0;
    const char *leader_addr = NULL;
    raft_leader(n->raft, &leader_id, &leader_addr);
    if (role != n->role || leader_id != n->leader_id) {
        NS_LOG(NS_LOG_INFO, "node: role %s, leader %llu (%s), term %llu",
               role_name(role), (unsigned long long)leader_id,
               leader_addr != NULL ? leader_addr : "none",
               (unsigned long long)n->raft->current_term);
        n->role = role;
        n->leader_id = leader_id;
        changed = true;
    }
    if (role == RAFT_LEADER && n->barrier_term != n->raft->current_term) {
        node_issue_leader_barrier(n);
    }
    if (!n->ready && leader_id != 0 && ready_now(n, role)) {
        n->ready = true;
        NS_LOG(NS_LOG_INFO, "node: ready (applied %llu, commit %llu)",
               (unsigned long long)raft_last_applied(n->raft),
               (unsigned long long)n->raft->commit_index);
        changed = true;
    }
    ns_fsm_adapter_poll(&n->fsm); /* a digest computed off the loop */
    node_snapcap_step(n, false);
    node_flush_queue(n);
    node_notice_flush(n);
    node_install_flush(n);
    if (n->waiters != NULL) {
        node_run_waiters(n, false, 0);
    }
    if (changed && n->watch_cb != NULL) {
        n->watch_cb(n->watch_arg);
    }
}

static void check_cb(uv_check_t *h)
{
    check(h->data);
}

static void timer_cb(uv_timer_t *t)
{
    struct ns_node *n = t->data;
    ns_wait_list_run(&n->proposals); /* those past their deadline fail */
    node_run_waiters(n, false, 0);
    node_quorum_tick(n);
}

void ns_node_tick(struct ns_node *n)
{
    assert(n->driven);
    if (!n->started || n->stopping) {
        return;
    }
    check(n);
    ns_wait_list_run(&n->proposals); /* those past their deadline fail */
    node_run_waiters(n, false, 0);
    node_quorum_tick(n);
}

/* --- life cycle --- */

static int make_dirs(const char *path)
{
    char *tmp = ns_strdup(path);
    int rv = 0;
    if (tmp == NULL) {
        return NS_ENOMEM;
    }
    for (char *p = tmp + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char c = *p;
            *p = '\0';
            if (mkdir(tmp, 0700) != 0 && errno != EEXIST) {
                NS_LOG(NS_LOG_ERROR, "node: cannot create data dir %s: %s", tmp,
                       strerror(errno));
                rv = NS_EIO;
                break;
            }
            *p = c;
            if (c == '\0') {
                break;
            }
        }
    }
    ns_free(tmp);
    return rv;
}

/* Takes an exclusive flock on <dir>/LOCK for the life of the process, so a
 * second raftns on the same data dir refuses to start instead of sharing a raft
 * log with this one. The lock dies with the process, so a crash leaves none. */
static int lock_data_dir(struct ns_node *n)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/LOCK", n->dir) >= (int)sizeof path) {
        NS_LOG(NS_LOG_ERROR, "node: data dir path too long: %s", n->dir);
        return NS_EINVAL;
    }
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) {
        NS_LOG(NS_LOG_ERROR, "node: cannot open %s: %s", path, strerror(errno));
        return NS_EIO;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        char holder[32] = "";
        ssize_t got = pread(fd, holder, sizeof holder - 1, 0);
        holder[got > 0 ? got : 0] = '\0';
        holder[strcspn(holder, "\n")] = '\0';
        NS_LOG(NS_LOG_ERROR,
               "node: data dir %s is in use by another raftns process "
               "(pid %s): %s",
               n->dir, holder[0] != '\0' ? holder : "unknown",
               e == EWOULDBLOCK ? "locked" : strerror(e));
        close(fd);
        return e == EWOULDBLOCK ? NS_EBUSY : NS_EIO;
    }
    char pid[32];
    int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len) {
        NS_LOG(NS_LOG_WARN, "node: cannot write the pid to %s: %s", path,
               strerror(errno));
    }
    n->lock_fd = fd;
    return 0;
}

static int bootstrap(struct ns_node *n, const struct ns_node_config *cfg)
{
    struct raft_configuration conf;
    raft_configuration_init(&conf);
    int rv = 0;
    bool listed = cfg->n_bootstrap == 0;
    if (cfg->n_bootstrap == 0) {
        rv = raft_configuration_add(&conf, n->id, n->addr, RAFT_VOTER);
    }
    for (size_t i = 0; rv == 0 && i < cfg->n_bootstrap; i++) {
        listed = listed || cfg->bootstrap[i].id == n->id;
        rv = raft_configuration_add(&conf, cfg->bootstrap[i].id,
                                    cfg->bootstrap[i].raft_addr, RAFT_VOTER);
    }
    if (rv == 0 && !listed) {
        NS_LOG(NS_LOG_INFO, "node: not a bootstrap member; waiting to be "
                            "added by the leader");
        raft_configuration_close(&conf);
        return 0;
    }
    if (rv == 0) {
        rv = raft_bootstrap(n->raft, &conf);
        if (rv == RAFT_CANTBOOTSTRAP) {
            rv = 0; /* not pristine: a restart */
        } else if (rv == 0) {
            NS_LOG(NS_LOG_INFO, "node: bootstrapped with %u voter(s)", conf.n);
        }
    }
    raft_configuration_close(&conf);
    if (rv != 0) {
        NS_LOG(NS_LOG_ERROR, "node: bootstrap failed: %s (%s)",
               raft_strerror(rv), raft_errmsg(n->raft));
        return NS_EIO;
    }
    return 0;
}

/* The transport's membership lookup (node_transport.h): a member of the current
 * configuration, with its address, or anyone while the configuration is empty
 * (a new member waiting to be added). */
static bool find_member(void *arg, uint64_t id, char *addr, size_t cap)
{
    const struct ns_node *n = arg;
    const struct raft_configuration *conf = &n->raft->configuration;
    addr[0] = '\0';
    if (conf->n == 0) {
        return true;
    }
    for (unsigned i = 0; i < conf->n; i++) {
        if (conf->servers[i].id == id) {
            snprintf(addr, cap, "%s", conf->servers[i].address);
            return true;
        }
    }
    return false;
}

/* raft's entry counts (docs/raft-0.15.md §5) and the byte bound over them
 * (node_log.c). */
#define DEFAULT_SNAPSHOT_THRESHOLD 16384u
#define DEFAULT_SNAPSHOT_TRAILING 1024u
#define DEFAULT_SNAPSHOT_BYTES (64u * 1024u * 1024u)

static uint64_t loop_now(void *arg)
{
    return uv_now(arg);
}

/* The fields every node sets the same way, whoever runs its raft. */
static void node_init(struct ns_node *n, const struct ns_node_config *cfg,
                      struct ns_state *state)
{
    ns_wait_list_init(&n->proposals);
    n->state = state;
    n->id = cfg->id;
    struct ns_waits waits;
    ns_waits_init(&waits);
    n->write_wait_ms =
        cfg->write_wait_ms != 0 ? cfg->write_wait_ms : waits.write_ms;
    n->role = RAFT_UNAVAILABLE;
    n->lock_fd = -1;
    n->remote_ready = cfg->remote_ready;
    n->fork_state_bytes =
        cfg->fork_state_bytes ? cfg->fork_state_bytes : NODE_FORK_STATE_BYTES;
}

/* The raft settings of every node, whoever runs its raft. */
static void configure_raft(struct ns_node *n, const struct ns_node_config *cfg)
{
    raft_set_election_timeout(
        n->raft, cfg->election_timeout_ms ? cfg->election_timeout_ms : 1000);
    raft_set_heartbeat_timeout(n->raft,
                               cfg->heartbeat_ms ? cfg->heartbeat_ms : 50);
    raft_set_snapshot_threshold(n->raft, n->logmem.threshold);
    raft_set_snapshot_trailing(n->raft, n->logmem.trailing);
    raft_set_pre_vote(n->raft, true);
}

int ns_node_create_over(struct raft *r, const struct ns_node_config *cfg,
                        const struct ns_clock *clock, struct ns_state *state,
                        struct ns_node **out)
{
    struct ns_node *n = ns_calloc(1, sizeof *n);
    if (n == NULL) {
        return NS_ENOMEM;
    }
    node_init(n, cfg, state);
    n->id = r->id;
    if (node_log_init(
            &n->logmem, n->id,
            cfg->snapshot_bytes ? cfg->snapshot_bytes : DEFAULT_SNAPSHOT_BYTES,
            cfg->snapshot_threshold ? cfg->snapshot_threshold
                                    : DEFAULT_SNAPSHOT_THRESHOLD,
            cfg->snapshot_trailing ? cfg->snapshot_trailing
                                   : DEFAULT_SNAPSHOT_TRAILING) != 0) {
        ns_free(n);
        return NS_ENOMEM;
    }
    n->clock = *clock;
    n->driven = true;
    n->raft = r;
    node_fsm_init(n);
    /* raft_init kept the owner's FSM pointer; nothing was applied through it
     * yet (the contract), so the node's adapter takes its place. */
    r->fsm = &n->fsm.fsm;
    n->raft_inited = true;
    node_commit_wrap(n);
    node_fence_wrap(n);
    configure_raft(n, cfg);
    *out = n;
    return 0;
}

int ns_node_create(uv_loop_t *loop, const struct ns_node_config *cfg,
                   struct ns_state *state, struct ns_node **out)
{
    int rv = NS_ENOMEM;
    struct ns_node *n = ns_calloc(1, sizeof *n);
    if (n == NULL) {
        return NS_ENOMEM;
    }
    n->loop = loop;
    n->clock.now_ms = loop_now;
    n->clock.arg = loop;
    n->raft = &n->own_raft;
    node_init(n, cfg, state);
    n->dir = ns_strdup(cfg->data_dir);
    n->addr = ns_strdup(cfg->raft_addr);
    if (n->dir == NULL || n->addr == NULL ||
        node_log_init(
            &n->logmem, cfg->id,
            cfg->snapshot_bytes ? cfg->snapshot_bytes : DEFAULT_SNAPSHOT_BYTES,
            cfg->snapshot_threshold ? cfg->snapshot_threshold
                                    : DEFAULT_SNAPSHOT_THRESHOLD,
            cfg->snapshot_trailing ? cfg->snapshot_trailing
                                   : DEFAULT_SNAPSHOT_TRAILING) != 0) {
        goto err_after_node;
    }
    rv = make_dirs(n->dir);
    if (rv == 0) {
        rv = lock_data_dir(n);
    }
    if (rv != 0) {
        goto err_after_node;
    }
    struct node_transport_config tcfg = {
        .secret = cfg->secret,
        .max_message = cfg->max_message,
        .find_member = find_member,
        .member_arg = n,
        .tls_cert = cfg->tls_cert_path,
        .tls_key = cfg->tls_key_path,
        .tls_ca = cfg->tls_ca_path,
    };
    rv = node_transport_init(&n->transport, loop, &tcfg);
    if (rv != 0) {
        NS_LOG(NS_LOG_ERROR, "node: transport init failed: %s",
               ns_strerror(rv));
        goto err_after_node;
    }
    rv = NS_EIO;
    int rrv = raft_uv_init(&n->io, loop, n->dir, &n->transport);
    if (rrv != 0) {
        NS_LOG(NS_LOG_ERROR, "node: raft_uv_init(%s) failed: %s", n->dir,
               raft_strerror(rrv));
        goto err_after_transport;
    }
    raft_uv_set_segment_size(&n->io, SEGMENT_SIZE);
    raft_uv_set_connect_retry_delay(&n->io, CONNECT_RETRY_MS);
    node_fsm_init(n);
    /* raft_uv 0.15 implements async_work but says io version 1, which makes
     * raft_init refuse FSM version 3 (docs/raft-0.15.md §5). */
    n->io.version = 2;
    node_fsm_snapshot_off_loop(n);
    rrv = raft_init(n->raft, &n->io, &n->fsm.fsm, n->id, n->addr);
    if (rrv != 0) {
        NS_LOG(NS_LOG_ERROR, "node: raft_init failed: %s (%s)",
               raft_strerror(rrv), raft_errmsg(n->raft));
        goto err_after_io;
    }
    n->raft_inited = true;
    node_commit_wrap(n);
    node_fence_wrap(n);
    configure_raft(n, cfg);
    rv = bootstrap(n, cfg);
    if (rv != 0) {
        goto err_after_io; /* raft_close is asynchronous; the caller stops the
                              node */
    }
    uv_check_init(loop, &n->check);
    n->check.data = n;
    uv_timer_init(loop, &n->timer);
    n->timer.data = n;
    uv_idle_init(loop, &n->kick);
    n->kick.data = n;
    n->n_open_handles = 3;
    *out = n;
    return 0;

err_after_io:
    if (n->raft_inited) {
        /* raft_init succeeded: the node must be stopped asynchronously. */
        *out = n;
        n->started = false;
        uv_check_init(loop, &n->check);
        n->check.data = n;
        uv_timer_init(loop, &n->timer);
        n->timer.data = n;
        uv_idle_init(loop, &n->kick);
        n->kick.data = n;
        n->n_open_handles = 3;
        return rv;
    }
    raft_uv_close(&n->io);
err_after_transport:
    node_transport_free(&n->transport);
err_after_node:
    if (n->lock_fd >= 0) {
        close(n->lock_fd);
    }
    node_log_close(&n->logmem);
    ns_free(n->dir);
    ns_free(n->addr);
    ns_free(n);
    *out = NULL;
    return rv;
}

int ns_node_start(struct ns_node *n)
{
    if (n->driven) {
        n->started = true; /* its owner started the raft */
        return 0;
    }
    int rv = raft_start(n->raft);
    if (rv != 0) {
        /* the transport's message names the address (listen on IP:PORT:
         * address already in use); raft's own is often empty */
        const char *why = n->transport.errmsg[0] != '\0' ? n->transport.errmsg
                                                         : raft_errmsg(n->raft);
        NS_LOG(NS_LOG_ERROR,
               "node: cannot start raft on %s (data dir %s): %s%s%s", n->addr,
               n->dir, raft_strerror(rv), why[0] != '\0' ? ": " : "", why);
        return NS_EIO;
    }
    n->started = true;
    uv_check_start(&n->check, check_cb);
    uv_timer_start(&n->timer, timer_cb, QUEUE_TIMER_MS, QUEUE_TIMER_MS);
    NS_LOG(NS_LOG_INFO, "node: raft started on %s, data dir %s", n->addr,
           n->dir);
    return 0;
}

void ns_node_set_watch(struct ns_node *n, ns_node_watch_cb cb, void *arg)
{
    n->watch_cb = cb;
    n->watch_arg = arg;
}

void ns_node_set_apply_hook(struct ns_node *n, ns_node_apply_hook fn, void *arg)
{
    n->apply_hook = fn;
    n->apply_hook_arg = arg;
}

bool ns_node_is_leader(const struct ns_node *n)
{
    struct raft *r = (struct raft *)n->raft;
    return n->started && !n->stopping && raft_state(r) == RAFT_LEADER &&
           n->leader_term == r->current_term;
}

bool ns_node_is_ready(const struct ns_node *n)
{
    return n->ready && !n->stopping;
}

bool ns_node_is_diverged(const struct ns_node *n)
{
    return n->fsm.diverged || ns_diverge_is_diverged(&n->dv);
}

uint64_t ns_node_leader_id(const struct ns_node *n)
{
    return n->leader_id;
}

bool ns_node_has_leader_contact(const struct ns_node *n)
{
    struct raft *r = (struct raft *)n->raft;
    if (!n->started || n->stopping) {
        return false;
    }
    if (ns_node_is_leader(n)) {
        return true;
    }
    if (raft_state(r) != RAFT_FOLLOWER || n->leader_id == 0) {
        return false;
    }
    /* A follower's election timer restarts on every AppendEntries of its
     * leader (raft.h: "without leader contact"); a non-voter never leaves the
     * follower role, so the leader id alone would stay set forever. */
    raft_time now = r->io->time(r->io);
    return now - r->election_timer_start <= r->election_timeout;
}

uint64_t ns_node_last_applied(const struct ns_node *n)
{
    return raft_last_applied((struct raft *)n->raft);
}

static void handle_closed_cb(uv_handle_t *h)
{
    struct ns_node *n = h->data;
    if (--n->n_open_handles == 0 && n->stop_cb != NULL) {
        n->stop_cb(n->stop_arg);
    }
}

/* raft 0.15's raft_io close callback (ioCloseCb) can fire more than once:
 * uvMaybeFireCloseCb never clears it, and callbacks that outlive the first
 * firing (an open segment's writer closing after its cancelled writes, a
 * peer stream closing) call it again. The repeat frees the raft's address and
 * log a second time. So the first firing points the io at a zeroed raft whose
 * close callback only counts, and the io and transport memory stay allocated
 * until ns_node_destroy, which runs once uv_run has returned, i.e. after every
 * such callback. */
static void late_close_cb(struct raft *tombstone)
{
    struct ns_node *n = tombstone->data;
    n->late_close_callbacks++;
}

static void raft_closed_cb(struct raft *r)
{
    struct ns_node *n = r->data;
    memset(&n->tombstone, 0, sizeof n->tombstone);
    n->tombstone.data = n;
    n->tombstone.close_cb = late_close_cb;
    n->io.data = &n->tombstone;
    n->raft_closed = true;
    node_install_drop(n);
    NS_LOG(NS_LOG_INFO, "node: raft closed");
    uv_close((uv_handle_t *)&n->check, handle_closed_cb);
    uv_close((uv_handle_t *)&n->timer, handle_closed_cb);
    uv_close((uv_handle_t *)&n->kick, handle_closed_cb);
}

static void close_raft(struct ns_node *n)
{
    n->raft->data = n;
    raft_close(n->raft, raft_closed_cb);
}

static void transfer_cb(struct raft_transfer *req)
{
    struct ns_node *n = req->data;
    close_raft(n);
}

/* Transfers leadership when leader (the callback then closes), else closes. */
static void finish_stop(struct ns_node *n)
{
    if (n->started && raft_state(n->raft) == RAFT_LEADER) {
        n->transfer.data = n;
        if (raft_transfer(n->raft, &n->transfer, 0, transfer_cb) == 0) {
            return; /* single voter: usually RAFT_NOTFOUND, closing at once */
        }
    }
    close_raft(n);
}

/* raft 0.15 can crash in raft_close while entries are still being written
 * (it walks its entry reference table for writes that were cancelled), so a
 * stop first lets proposals already handed to raft finish, for a bound. */
static void drain_cb(uv_timer_t *t)
{
    struct ns_node *n = t->data;
    if (n->inflight == NULL || node_now(n) >= n->drain_deadline) {
        uv_timer_stop(t);
        finish_stop(n);
    }
}

void ns_node_stop(struct ns_node *n, ns_node_stop_cb cb, void *arg)
{
    if (n->stopping) {
        return;
    }
    n->stopping = true;
    n->stop_cb = cb;
    n->stop_arg = arg;
    ns_wait_list_run(&n->proposals); /* each fails with NS_ESHUTDOWN */
    node_fail_turn(n, NS_ESHUTDOWN);
    node_run_waiters(n, true, NS_ESHUTDOWN);
    if (n->driven) {
        /* The raft is its owner's to close; entries in flight call back
         * when it does. */
        if (cb != NULL) {
            cb(arg);
        }
        return;
    }
    node_snapcap_step(n, true); /* its collect must not wait for turns */
    uv_check_stop(&n->check);
    uv_timer_stop(&n->timer);
    uv_idle_stop(&n->kick);
    if (n->started && n->inflight != NULL) {
        n->drain_deadline = node_now(n) + STOP_DRAIN_MS;
        uv_timer_start(&n->timer, drain_cb, STOP_DRAIN_POLL_MS,
                       STOP_DRAIN_POLL_MS);
        return;
    }
    finish_stop(n);
}

void ns_node_destroy(struct ns_node *n)
{
    if (n == NULL) {
        return;
    }
    node_fsm_close(n);
    if (n->driven) {
        node_log_close(&n->logmem);
        ns_free(n);
        return;
    }
    if (n->raft_closed) {
        if (n->late_close_callbacks > 0) {
            NS_LOG(NS_LOG_DEBUG,
                   "node: raft_io closed %u more time(s) after raft_close",
                   n->late_close_callbacks);
        }
        raft_uv_close(&n->io);
        node_transport_free(&n->transport);
    }
    if (n->lock_fd >= 0) {
        close(n->lock_fd); /* releases the flock */
    }
    node_log_close(&n->logmem);
    ns_free(n->dir);
    ns_free(n->addr);
    ns_free(n);
}

int ns_node_reload_tls(struct ns_node *n)
{
    return node_transport_reload_tls(&n->transport);
}

void ns_node_peer_stats(const struct ns_node *n, struct ns_node_peer_stats *out)
{
    node_transport_stats(&n->transport, out);
}

uint64_t ns_node_id(const struct ns_node *n)
{
    return n->id;
}

int ns_node_role(const struct ns_node *n)
{
    if (!n->started || n->stopping) {
        return NS_ROLE_UNAVAILABLE;
    }
    switch (raft_state((struct raft *)n->raft)) {
    case RAFT_FOLLOWER:
        return NS_ROLE_FOLLOWER;
    case RAFT_CANDIDATE:
        return NS_ROLE_CANDIDATE;
    case RAFT_LEADER:
        return NS_ROLE_LEADER;
    default:
        return NS_ROLE_UNAVAILABLE;
    }
}

uint64_t ns_node_term(const struct ns_node *n)
{
    return n->raft->current_term;
}

uint64_t ns_node_commit_index(const struct ns_node *n)
{
    return n->raft->commit_index;
}
