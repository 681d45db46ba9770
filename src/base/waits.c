/* The named waits and the wait list (include/raftns/waits.h). Pure. */
#include "raftns/waits.h"

#include <string.h>

#include "raftns/decimal.h"
#include "raftns/err.h"

void ns_waits_init(struct ns_waits *w)
{
#define NS_WAITS_DEFAULT(field, name, default_ms) w->field = default_ms;
    NS_WAITS_TABLE(NS_WAITS_DEFAULT)
#undef NS_WAITS_DEFAULT
}

void ns_waits_fill_defaults(struct ns_waits *w)
{
#define NS_WAITS_FILL(field, name, default_ms)                                 \
    if (w->field == 0) {                                                       \
        w->field = default_ms;                                                 \
    }
    NS_WAITS_TABLE(NS_WAITS_FILL)
#undef NS_WAITS_FILL
}

static uint32_t *waits_field(struct ns_waits *w, const char *name, size_t n)
{
#define NS_WAITS_MATCH(field, text, default_ms)                                \
    if (n == sizeof text - 1 && memcmp(name, text, n) == 0) {                  \
        return &w->field;                                                      \
    }
    NS_WAITS_TABLE(NS_WAITS_MATCH)
#undef NS_WAITS_MATCH
    return NULL;
}

int ns_waits_set(struct ns_waits *w, const char *assignment, char *err,
                 size_t errlen)
{
    const char *eq = strchr(assignment, '=');
    if (eq == NULL) {
        ns_errf(err, errlen, "%s: want NAME=MS", assignment);
        return NS_EINVAL;
    }
    uint32_t *field = waits_field(w, assignment, (size_t)(eq - assignment));
    if (field == NULL) {
        ns_errf(err, errlen,
                "unknown wait %.*s (known: write, apply-min, "
                "consistent-read, read-forward, peer-request, admin-relay, "
                "admin-leader)",
                (int)(eq - assignment), assignment);
        return NS_EINVAL;
    }
    int64_t ms = 0;
    if (!ns_decimal_parse(eq + 1, strlen(eq + 1), 0, 1, NS_WAIT_MAX_MS, &ms)) {
        ns_errf(err, errlen, "%s: want whole milliseconds from 1 to %u",
                assignment, NS_WAIT_MAX_MS);
        return NS_EINVAL;
    }
    *field = (uint32_t)ms;
    return 0;
}

void ns_wait_list_init(struct ns_wait_list *l)
{
    l->head = l->tail = NULL;
}

void ns_wait_list_add(struct ns_wait_list *l, struct ns_wait *w)
{
    w->next = NULL;
    if (l->tail != NULL) {
        l->tail->next = w;
    } else {
        l->head = w;
    }
    l->tail = w;
}

void ns_wait_list_run(struct ns_wait_list *l)
{
    struct ns_wait *w = l->head;
    l->head = l->tail = NULL;
    while (w != NULL) {
        struct ns_wait *next = w->next;
        w->next = NULL;
        w->retry(w->data);
        w = next;
    }
}
