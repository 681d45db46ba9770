/* Cluster test: the two messages a node keeps from libraft 0.15, decided
 * deterministically on a raft whose log and snapshot state is set by hand
 * (raft/node/node_append_guard.c, raft/node/node_install_hold.c;
 * docs/raft-0.15.md §18, §19). test_transport.c shows the late-follower path
 * end to end; here every condition is flipped alone.
 *
 * The append guard cuts an AppendEntries from index 1 (previous index 0) to
 * start after the follower's snapshot, or drops it, only when the follower's
 * log no longer holds index 1 because a snapshot replaced it; the install
 * hold keeps an InstallSnapshot while raft is taking or storing a snapshot,
 * keeps only the newest, and hands it over once raft is free. */
#include "fixture_util.h"

#include "../../raft/node/node_int.h"

static struct ns_node node;
static struct raft raft;
static struct raft_entry log_slots[4];

/* A follower that snapshotted up to last_index and holds entries
 * first..last_index+n_after in memory (first 0: none). */
static void set_log(raft_index snapshot_index, raft_index first, unsigned n)
{
    memset(&raft, 0, sizeof raft);
    memset(&node, 0, sizeof node);
    node.raft = &raft;
    raft.log.entries = log_slots;
    raft.log.size = sizeof log_slots / sizeof log_slots[0];
    raft.log.front = 0;
    raft.log.back = n;
    raft.log.offset = first > 0 ? first - 1 : snapshot_index;
    for (unsigned i = 0; i < n; i++) {
        log_slots[i].term = 2;
    }
    raft.log.snapshot.last_index = snapshot_index;
    raft.log.snapshot.last_term = snapshot_index > 0 ? 2 : 0;
}

/* An AppendEntries of n entries after prev, in one batch as raft receives
 * them. */
static struct raft_message append(raft_index prev, unsigned n)
{
    struct raft_message m;
    memset(&m, 0, sizeof m);
    m.type = RAFT_IO_APPEND_ENTRIES;
    m.append_entries.term = 2;
    m.append_entries.prev_log_index = prev;
    m.append_entries.prev_log_term = prev > 0 ? 2 : 0;
    m.append_entries.n_entries = n;
    if (n > 0) {
        m.append_entries.entries = raft_calloc(n, sizeof(struct raft_entry));
        void *batch = raft_malloc(64 * n);
        assert_non_null(m.append_entries.entries);
        assert_non_null(batch);
        for (unsigned i = 0; i < n; i++) {
            m.append_entries.entries[i].term = 2;
            m.append_entries.entries[i].type = RAFT_COMMAND;
            m.append_entries.entries[i].buf.base = (char *)batch + 64 * i;
            m.append_entries.entries[i].buf.len = 64;
            m.append_entries.entries[i].batch = batch;
        }
    }
    return m;
}

/* What raft would do with a message the guard let through: free it. */
static void release_append(struct raft_message *m)
{
    if (m->append_entries.n_entries > 0) {
        raft_free(m->append_entries.entries[0].batch);
    }
    raft_free(m->append_entries.entries);
}

static bool guarded(raft_index snapshot_index, raft_index first, unsigned n,
                    raft_index prev, unsigned n_entries)
{
    set_log(snapshot_index, first, n);
    struct raft_message m = append(prev, n_entries);
    bool dropped = node_append_guard(&node, &m);
    if (dropped) {
        /* freed and emptied, as raft must not see entries any more */
        assert_null(m.append_entries.entries);
        assert_int_equal(m.append_entries.n_entries, 0);
        assert_int_equal(ns_node_appends_dropped(&node), 1);
    } else {
        assert_int_equal(ns_node_appends_dropped(&node), 0);
        release_append(&m);
    }
    return dropped;
}

static void test_append_from_index_1_after_a_snapshot_is_dropped(void **st)
{
    (void)st;
    /* snapshot up to 10, entries 9..12 kept as trailing: index 1 is gone */
    assert_true(guarded(10, 9, 4, 0, 3));
    /* snapshot up to 10 and nothing in memory */
    assert_true(guarded(10, 0, 0, 0, 1));
}

/* A message from index 1 that holds the snapshot's last entry with its term
 * is cut to start after it (raft then checks it against the snapshot and
 * answers): the deadlock of a follower that could never answer a leader
 * probing it from index 1. Holding exactly the snapshot's entries makes it a
 * heartbeat; another term at the snapshot's index is dropped. */
static void test_append_from_index_1_is_cut_at_the_snapshot(void **st)
{
    (void)st;
    set_log(10, 9, 4);
    struct raft_message m = append(0, 14);
    const char *eleventh = m.append_entries.entries[10].buf.base;
    assert_false(node_append_guard(&node, &m));
    assert_int_equal(m.append_entries.prev_log_index, 10);
    assert_int_equal(m.append_entries.prev_log_term, 2);
    assert_int_equal(m.append_entries.n_entries, 4);
    assert_ptr_equal(m.append_entries.entries[0].buf.base, eleventh);
    assert_int_equal(ns_node_appends_cut(&node), 1);
    assert_int_equal(ns_node_appends_dropped(&node), 0);
    release_append(&m);

    set_log(10, 0, 0);
    m = append(0, 10);
    assert_false(node_append_guard(&node, &m));
    assert_int_equal(m.append_entries.prev_log_index, 10);
    assert_int_equal(m.append_entries.n_entries, 0);
    assert_null(m.append_entries.entries);
    assert_int_equal(ns_node_appends_cut(&node), 1);

    set_log(10, 9, 4);
    m = append(0, 14);
    m.append_entries.entries[9].term = 1; /* not the snapshot's entry */
    assert_true(node_append_guard(&node, &m));
    assert_null(m.append_entries.entries);
    assert_int_equal(ns_node_appends_dropped(&node), 1);
    assert_int_equal(ns_node_appends_cut(&node), 0);
}

static void test_append_guard_lets_everything_else_through(void **st)
{
    (void)st;
    assert_false(guarded(0, 0, 0, 0, 3));   /* a new follower: no snapshot */
    assert_false(guarded(0, 1, 3, 0, 3));   /* index 1 still in the log */
    assert_false(guarded(3, 1, 4, 0, 3));   /* snapshot, index 1 still held */
    assert_false(guarded(10, 9, 4, 12, 3)); /* not from index 1 */
    assert_false(guarded(10, 9, 4, 0, 0));  /* a heartbeat */
    set_log(10, 9, 4);
    struct raft_message vote;
    memset(&vote, 0, sizeof vote);
    vote.type = RAFT_IO_REQUEST_VOTE;
    assert_false(node_append_guard(&node, &vote));
}

/* --- the install hold --- */

static struct raft_message delivered[4];
static unsigned n_delivered;

static void recv_cb(struct raft_io *io, struct raft_message *m)
{
    (void)io;
    assert_true(n_delivered < 4);
    delivered[n_delivered++] = *m;
}

static struct raft_message install(raft_term term, size_t bytes)
{
    struct raft_message m;
    memset(&m, 0, sizeof m);
    m.type = RAFT_IO_INSTALL_SNAPSHOT;
    m.install_snapshot.term = term;
    m.install_snapshot.last_index = 100 * term;
    m.install_snapshot.last_term = term;
    m.install_snapshot.data.base = raft_malloc(bytes);
    m.install_snapshot.data.len = bytes;
    assert_non_null(m.install_snapshot.data.base);
    raft_configuration_init(&m.install_snapshot.conf);
    assert_int_equal(
        raft_configuration_add(&m.install_snapshot.conf, 1, "n1", RAFT_VOTER),
        0);
    return m;
}

static void free_install(struct raft_message *m)
{
    raft_free(m->install_snapshot.data.base);
    raft_configuration_close(&m->install_snapshot.conf);
}

static void setup_hold(void)
{
    set_log(10, 9, 4);
    node.raft_recv = recv_cb;
    n_delivered = 0;
}

static void test_install_is_held_while_raft_snapshots(void **st)
{
    (void)st;
    setup_hold();
    /* raft free: not held, raft takes it */
    struct raft_message m = install(2, 16);
    assert_false(node_install_hold(&node, &m));
    free_install(&m);

    /* raft taking a snapshot of its own: held, the newest one only */
    raft.snapshot.pending.term = 2;
    struct raft_message older = install(2, 32);
    struct raft_message newer = install(3, 48);
    assert_true(node_install_hold(&node, &older));
    assert_true(node_install_hold(&node, &newer)); /* frees the older */
    assert_int_equal(ns_node_installs_held(&node), 2);
    node_install_flush(&node); /* still busy */
    assert_int_equal(n_delivered, 0);

    /* storing the taken snapshot: still busy */
    raft.snapshot.pending.term = 0;
    char stored[8];
    raft.snapshot.put.data = stored;
    node_install_flush(&node);
    assert_int_equal(n_delivered, 0);

    /* done: the newest is handed over once */
    raft.snapshot.put.data = NULL;
    node_install_flush(&node);
    assert_int_equal(n_delivered, 1);
    assert_int_equal(delivered[0].install_snapshot.term, 3);
    assert_int_equal(delivered[0].install_snapshot.data.len, 48);
    node_install_flush(&node);
    assert_int_equal(n_delivered, 1);
    free_install(&delivered[0]);
}

static void test_held_install_freed_on_close(void **st)
{
    (void)st;
    setup_hold();
    raft.snapshot.pending.term = 2;
    struct raft_message m = install(2, 64);
    assert_true(node_install_hold(&node, &m));
    node.raft_closed = true; /* closing: never handed to a closed raft */
    raft.snapshot.pending.term = 0;
    node_install_flush(&node);
    assert_int_equal(n_delivered, 0);
    node_install_drop(&node); /* LeakSanitizer: nothing left */
    node_install_drop(&node);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append_from_index_1_after_a_snapshot_is_dropped),
        cmocka_unit_test(test_append_from_index_1_is_cut_at_the_snapshot),
        cmocka_unit_test(test_append_guard_lets_everything_else_through),
        cmocka_unit_test(test_install_is_held_while_raft_snapshots),
        cmocka_unit_test(test_held_install_freed_on_close),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
