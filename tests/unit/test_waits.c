/* Unit tests of the named waits (src/base/waits.c): the defaults, every name
 * settable, every malformed assignment refused with a reason; and the wait
 * list: oldest first, a request added again waits for the next run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "raftns/err.h"
#include "raftns/waits.h"

static void test_defaults(void **state)
{
    (void)state;
    struct ns_waits w;
    ns_waits_init(&w);
    assert_int_equal(w.write_ms, 3000);
    assert_int_equal(w.apply_min_ms, 1000);
    assert_int_equal(w.consistent_read_ms, 3000);
    assert_int_equal(w.read_forward_ms, 2000);
    assert_int_equal(w.peer_request_ms, 3000);
    assert_int_equal(w.admin_relay_ms, 10000);
    assert_int_equal(w.admin_leader_ms, 5000);
    struct ns_waits z;
    memset(&z, 0, sizeof z);
    z.read_forward_ms = 7;
    ns_waits_fill_defaults(&z);
    assert_int_equal(z.read_forward_ms, 7);
    z.read_forward_ms = w.read_forward_ms;
    assert_memory_equal(&z, &w, sizeof w);
}

static void test_set(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        size_t offset;
        uint32_t value;
    } ok[] = {
        {"write=1", offsetof(struct ns_waits, write_ms), 1},
        {"apply-min=250", offsetof(struct ns_waits, apply_min_ms), 250},
        {"consistent-read=600000",
         offsetof(struct ns_waits, consistent_read_ms), 600000},
        {"read-forward=1500", offsetof(struct ns_waits, read_forward_ms), 1500},
        {"peer-request=42", offsetof(struct ns_waits, peer_request_ms), 42},
        {"admin-relay=9", offsetof(struct ns_waits, admin_relay_ms), 9},
        {"admin-leader=8", offsetof(struct ns_waits, admin_leader_ms), 8},
    };
    char err[160];
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        struct ns_waits w, want;
        ns_waits_init(&w);
        ns_waits_init(&want);
        memcpy((char *)&want + ok[i].offset, &ok[i].value, sizeof(uint32_t));
        assert_int_equal(ns_waits_set(&w, ok[i].text, err, sizeof err), 0);
        assert_memory_equal(&w, &want, sizeof w);
    }
}

static void test_refused(void **state)
{
    (void)state;
    static const char *const bad[][2] = {
        {"write", "want NAME=MS"},
        {"writ=100", "unknown wait writ"},
        {"write2=100", "unknown wait"},
        {"=100", "unknown wait"},
        {"write=", "whole milliseconds"},
        {"write=0", "whole milliseconds"},
        {"write=600001", "whole milliseconds"},
        {"write=-5", "whole milliseconds"},
        {"write=+5", "whole milliseconds"},
        {"write=1.5", "whole milliseconds"},
        {"write=99999999999999999999", "whole milliseconds"},
    };
    char err[160];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct ns_waits w, before;
        ns_waits_init(&w);
        before = w;
        assert_int_equal(ns_waits_set(&w, bad[i][0], err, sizeof err),
                         NS_EINVAL);
        assert_non_null(strstr(err, bad[i][1]));
        assert_memory_equal(&w, &before, sizeof w);
    }
}

/* A waiting request of the list tests: it records its turn and waits again
 * while it has rounds left. */
struct waiter {
    struct ns_wait wait;
    struct ns_wait_list *list;
    int id;
    int rounds;
    int *order;
    size_t *n_order;
};

static void waiter_retry(void *data)
{
    struct waiter *w = data;
    w->order[(*w->n_order)++] = w->id;
    if (--w->rounds > 0) {
        ns_wait_list_add(w->list, &w->wait);
    }
}

static void test_list_order(void **state)
{
    (void)state;
    struct ns_wait_list l;
    ns_wait_list_init(&l);
    assert_true(ns_wait_list_is_empty(&l));
    ns_wait_list_run(&l); /* nothing to run */
    int order[16];
    size_t n = 0;
    struct waiter w[3];
    for (int i = 0; i < 3; i++) {
        w[i] = (struct waiter){.wait = {.retry = waiter_retry, .data = &w[i]},
                               .list = &l,
                               .id = i,
                               .rounds = i + 1,
                               .order = order,
                               .n_order = &n};
        ns_wait_list_add(&l, &w[i].wait);
    }
    assert_false(ns_wait_list_is_empty(&l));
    ns_wait_list_run(&l); /* each once, oldest first; 1 and 2 wait again */
    assert_int_equal(n, 3);
    assert_int_equal(order[0], 0);
    assert_int_equal(order[1], 1);
    assert_int_equal(order[2], 2);
    ns_wait_list_run(&l);
    assert_int_equal(n, 5);
    assert_int_equal(order[3], 1);
    assert_int_equal(order[4], 2);
    ns_wait_list_run(&l);
    assert_int_equal(n, 6);
    assert_int_equal(order[5], 2);
    assert_true(ns_wait_list_is_empty(&l));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_set),
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_list_order),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
