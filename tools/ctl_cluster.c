/* raftnsctl cluster commands: `status` (asks every member for its status
 * document and prints one table), `member list|add|remove` and `leader
 * transfer` over the private request codes of codes.h. It changes nothing on
 * its own: the nodes validate and apply. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "raftns/alloc.h"
#include "raftns/codes.h"
#include "raftns/json.h"

#include "ctl.h"

#define N_COLS 11
/* A member add waits for the new member to catch up, which libraft gives up
 * on after 5 s without an answer; a follower relays for up to 10 s
 * (docs/waits.md admin-relay). The answer must arrive before raftnsctl stops
 * waiting, or a failed add looks like an unreachable server. */
#define CHANGE_TIMEOUT_MS 15000

static void change_timeout(struct ctl *ctl)
{
    if (!ctl->timeout_given) {
        ctl->timeout_ms = CHANGE_TIMEOUT_MS;
    }
}

struct node_status {
    char *addr;  /* owned: the client address asked */
    cJSON *doc;  /* owned, NULL when the node did not answer */
    uint64_t id; /* sort key (doc's id, or UINT64_MAX) */
};

struct status_run {
    struct node_status nodes[MAX_ADDRS];
    size_t n;
};

static bool has_addr(const struct status_run *r, const char *addr)
{
    for (size_t i = 0; i < r->n; i++) {
        if (strcmp(r->nodes[i].addr, addr) == 0) {
            return true;
        }
    }
    return false;
}

static void add_addr(struct status_run *r, const char *addr)
{
    if (addr == NULL || addr[0] == '\0' || has_addr(r, addr) ||
        r->n == MAX_ADDRS) {
        return;
    }
    char *copy = ns_strdup(addr);
    if (copy != NULL) {
        r->nodes[r->n].addr = copy;
        r->nodes[r->n].doc = NULL;
        r->nodes[r->n].id = UINT64_MAX;
        r->n++;
    }
}

/* Asks one address; the document's members add further addresses. */
static void ask(const struct ctl *ctl, struct status_run *r, size_t i)
{
    struct ctl one = *ctl;
    struct reply rep;
    one.addrs[0] = r->nodes[i].addr;
    one.n_addrs = 1;
    if (ns_ctl_call(&one, NS_CODE_STATUS, NULL, NULL, 0, &rep) != 0) {
        return;
    }
    cJSON *doc =
        cJSON_ParseWithLength((const char *)rep.cmd.body, rep.cmd.body_len);
    ns_ctl_reply_close(&rep);
    if (doc == NULL) {
        fprintf(stderr, "raftnsctl: %s: unreadable status\n", r->nodes[i].addr);
        return;
    }
    r->nodes[i].doc = doc;
    r->nodes[i].id = (uint64_t)ns_json_get_int64(doc, "id", 0);
    const cJSON *members = cJSON_GetObjectItemCaseSensitive(doc, "members");
    const cJSON *m;
    cJSON_ArrayForEach(m, members)
    {
        add_addr(r, ns_json_get_string(m, "client"));
    }
}

static int compare_nodes(const void *a, const void *b)
{
    const struct node_status *x = a, *y = b;
    if (x->id != y->id) {
        return x->id < y->id ? -1 : 1;
    }
    return strcmp(x->addr, y->addr);
}

static void num_text(char *out, size_t len, const cJSON *doc, const char *key)
{
    snprintf(out, len, "%" PRId64, ns_json_get_int64(doc, key, 0));
}

static void row_of(const struct node_status *ns, char cells[N_COLS][64])
{
    const cJSON *d = ns->doc;
    if (d == NULL) {
        snprintf(cells[0], 64, "?");
        snprintf(cells[1], 64, "unreachable (%s)", ns->addr);
        for (int c = 2; c < N_COLS; c++) {
            snprintf(cells[c], 64, "-");
        }
        return;
    }
    const cJSON *leader = cJSON_GetObjectItemCaseSensitive(d, "leader");
    const char *digest = ns_json_get_string(d, "digest");
    num_text(cells[0], 64, d, "id");
    /* a standby is a follower that does not vote: say so */
    const char *member_role = NULL;
    const cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(d, "members"))
    {
        if (ns_json_get_int64(m, "id", 0) == ns_json_get_int64(d, "id", -1)) {
            member_role = ns_json_get_string(m, "role");
        }
    }
    snprintf(cells[1], 64, "%s%s%s", ns_json_get_string(d, "role") ?: "?",
             member_role && strcmp(member_role, "voter") != 0 ? "/" : "",
             member_role && strcmp(member_role, "voter") != 0 ? member_role
                                                              : "");
    num_text(cells[2], 64, d, "term");
    num_text(cells[3], 64, leader, "id");
    num_text(cells[4], 64, d, "commit_index");
    num_text(cells[5], 64, d, "applied_index");
    snprintf(cells[6], 64, "%s@%" PRId64, digest ? digest : "?",
             ns_json_get_int64(d, "digest_index", 0));
    snprintf(cells[7], 64, "%s",
             ns_json_get_bool(d, "ready", false) ? "yes" : "no");
    snprintf(cells[8], 64, "%s",
             ns_json_get_bool(d, "diverged", false) ? "YES" : "no");
    num_text(cells[9], 64, d, "brokers");
    num_text(cells[10], 64, d, "topics");
}

static void print_table(const struct status_run *r)
{
    static const char *const head[N_COLS] = {
        "ID",     "ROLE",  "TERM",     "LEADER",  "COMMIT", "APPLIED",
        "DIGEST", "READY", "DIVERGED", "BROKERS", "TOPICS"};
    char(*cells)[N_COLS][64] = ns_calloc(r->n + 1, sizeof *cells);
    size_t width[N_COLS];
    if (cells == NULL) {
        fprintf(stderr, "raftnsctl: out of memory\n");
        return;
    }
    for (int c = 0; c < N_COLS; c++) {
        snprintf(cells[0][c], 64, "%s", head[c]);
    }
    for (size_t i = 0; i < r->n; i++) {
        row_of(&r->nodes[i], cells[i + 1]);
    }
    for (int c = 0; c < N_COLS; c++) {
        width[c] = 0;
        for (size_t i = 0; i <= r->n; i++) {
            size_t l = strlen(cells[i][c]);
            width[c] = l > width[c] ? l : width[c];
        }
    }
    for (size_t i = 0; i <= r->n; i++) {
        for (int c = 0; c < N_COLS; c++) {
            printf(c + 1 < N_COLS ? "%-*s  " : "%-*s\n", (int)width[c],
                   cells[i][c]);
        }
    }
    ns_free(cells);
}

/* The nodes' status documents use snake_case keys (the HTTP /status API keeps
 * them for its scrapers); every other --json output of raftnsctl is
 * RocketMQ's camelCase (brokerDatas, appliedIndex). Renamed in place: the
 * camelCase name is never longer. */
static void camel_keys(cJSON *item)
{
    for (cJSON *c = item != NULL ? item->child : NULL; c != NULL; c = c->next) {
        if (c->string != NULL && (c->type & cJSON_StringIsConst) == 0) {
            char *out = c->string;
            bool up = false;
            for (const char *in = c->string; *in != '\0'; in++) {
                if (*in == '_' && out != c->string) {
                    up = true;
                    continue;
                }
                *out++ =
                    up && *in >= 'a' && *in <= 'z' ? (char)(*in - 32) : *in;
                up = false;
            }
            *out = '\0';
        }
        camel_keys(c);
    }
}

/* "1 3" of a JSON array of ids (at most len bytes). */
static void ids_text(const cJSON *arr, char *out, size_t len)
{
    size_t used = 0;
    const cJSON *id;
    out[0] = '\0';
    cJSON_ArrayForEach(id, arr)
    {
        if (cJSON_IsNumber(id) && used + 24 < len) {
            used += (size_t)snprintf(out + used, len - used, "%s%.0f",
                                     used ? " " : "", id->valuedouble);
        }
    }
}

/* Under the table: each node that knows no leader, with the voters it heard
 * (its /status quorum), so a stuck candidate says why. */
static void print_quorum_notes(const struct status_run *r)
{
    for (size_t i = 0; i < r->n; i++) {
        const cJSON *d = r->nodes[i].doc;
        const cJSON *q = cJSON_GetObjectItemCaseSensitive(d, "quorum");
        const cJSON *leader = cJSON_GetObjectItemCaseSensitive(d, "leader");
        if (q == NULL || ns_json_get_int64(leader, "id", 0) != 0) {
            continue;
        }
        char heard[256], missing[256];
        ids_text(cJSON_GetObjectItemCaseSensitive(q, "heard"), heard,
                 sizeof heard);
        ids_text(cJSON_GetObjectItemCaseSensitive(q, "not_heard"), missing,
                 sizeof missing);
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(q, "heard");
        printf("node %" PRId64 ": no leader for %" PRId64
               " ms; heard from %d of %" PRId64 " voters (%s)%s%s; a leader "
               "needs %" PRId64 "\n",
               ns_json_get_int64(d, "id", 0),
               ns_json_get_int64(q, "leaderless_ms", 0), cJSON_GetArraySize(h),
               ns_json_get_int64(q, "voters", 0), heard,
               missing[0] ? ", not from " : "", missing,
               ns_json_get_int64(q, "needed", 0));
    }
}

static int print_json_array(const struct status_run *r)
{
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; arr != NULL && i < r->n; i++) {
        cJSON *item = r->nodes[i].doc ? cJSON_Duplicate(r->nodes[i].doc, true)
                                      : cJSON_CreateObject();
        if (item == NULL) {
            break;
        }
        if (r->nodes[i].doc == NULL) {
            cJSON_AddStringToObject(item, "address", r->nodes[i].addr);
            cJSON_AddStringToObject(item, "error", "unreachable");
        }
        camel_keys(item);
        cJSON_AddItemToArray(arr, item);
    }
    char *text = arr ? cJSON_Print(arr) : NULL;
    if (text == NULL) {
        cJSON_Delete(arr);
        fprintf(stderr, "raftnsctl: out of memory\n");
        return 1;
    }
    printf("%s\n", text);
    cJSON_free(text);
    cJSON_Delete(arr);
    return 0;
}

int ns_ctl_cmd_status(struct ctl *ctl)
{
    struct status_run *r = ns_calloc(1, sizeof *r);
    size_t n_ok = 0;
    int rv = 0;
    if (r == NULL) {
        fprintf(stderr, "raftnsctl: out of memory\n");
        return 1;
    }
    if (ctl->n_args != 1) {
        ns_free(r);
        return ns_ctl_usage_error("usage: status", NULL);
    }
    for (size_t i = 0; i < ctl->n_addrs; i++) {
        add_addr(r, ctl->addrs[i]);
    }
    for (size_t i = 0; i < r->n; i++) { /* r->n grows with member lists */
        ask(ctl, r, i);
        n_ok += r->nodes[i].doc != NULL;
    }
    qsort(r->nodes, r->n, sizeof r->nodes[0], compare_nodes);
    if (ctl->json) {
        rv = print_json_array(r);
    } else {
        print_table(r);
        print_quorum_notes(r);
    }
    if (rv == 0 && n_ok < r->n) {
        rv = n_ok == 0 ? 3 : 1;
    }
    for (size_t i = 0; i < r->n; i++) {
        ns_free(r->nodes[i].addr);
        cJSON_Delete(r->nodes[i].doc);
    }
    ns_free(r);
    return rv;
}

/* A private request (signed with the secret by ns_ctl_call) with ext pairs;
 * prints "ok" or the JSON body. */
static int private_call(struct ctl *ctl, int32_t code, const char *k1,
                        const char *v1, const char *k2, const char *v2,
                        const char *k3, const char *v3, const char *k4,
                        const char *v4, struct reply *out)
{
    const char *ext[] = {k1, v1, k2, v2, k3, v3, k4, v4, NULL};
    /* cut the list at the first absent key */
    for (size_t i = 0; i + 1 < sizeof ext / sizeof ext[0]; i += 2) {
        if (ext[i] == NULL || ext[i + 1] == NULL) {
            ext[i] = NULL;
            break;
        }
    }
    return ns_ctl_call(ctl, code, ext, NULL, 0, out);
}

static int print_members(const struct ctl *ctl, const struct reply *rep)
{
    cJSON *doc =
        cJSON_ParseWithLength((const char *)rep->cmd.body, rep->cmd.body_len);
    if (doc == NULL) {
        fprintf(stderr, "raftnsctl: the reply has no readable JSON body\n");
        return 1;
    }
    if (ctl->json) {
        char *text = cJSON_Print(doc);
        if (text != NULL) {
            printf("%s\n", text);
            cJSON_free(text);
        }
    } else {
        int64_t leader = ns_json_get_int64(doc, "leader", 0);
        printf("%-6s %-8s %-7s %-21s %-21s %s\n", "ID", "ROLE", "LEADER",
               "RAFT", "CLIENT", "HTTP");
        const cJSON *m;
        cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(doc, "members"))
        {
            int64_t id = ns_json_get_int64(m, "id", 0);
            const char *role = ns_json_get_string(m, "role");
            const char *raft = ns_json_get_string(m, "raft");
            const char *client = ns_json_get_string(m, "client");
            const char *http = ns_json_get_string(m, "http");
            printf("%-6" PRId64 " %-8s %-7s %-21s %-21s %s\n", id,
                   role ? role : "?", id == leader ? "*" : "", raft ? raft : "",
                   client ? client : "", http ? http : "");
        }
    }
    cJSON_Delete(doc);
    return 0;
}

int ns_ctl_cmd_member(struct ctl *ctl)
{
    struct reply rep;
    const char *sub = ctl->n_args >= 2 ? ctl->args[1] : "";
    int rv;
    if (strcmp(sub, "list") == 0 && ctl->n_args == 2) {
        rv = private_call(ctl, NS_CODE_MEMBER_LIST, NULL, NULL, NULL, NULL,
                          NULL, NULL, NULL, NULL, &rep);
        if (rv == 0) {
            rv = print_members(ctl, &rep);
            ns_ctl_reply_close(&rep);
        }
        return rv;
    }
    /* a trailing --role ROLE on add */
    const char *role = NULL;
    size_t n_args = ctl->n_args;
    if (strcmp(sub, "add") == 0 && n_args >= 7 &&
        strcmp(ctl->args[n_args - 2], "--role") == 0) {
        role = ctl->args[n_args - 1];
        n_args -= 2;
        if (strcmp(role, "voter") != 0 && strcmp(role, "standby") != 0) {
            return ns_ctl_usage_error("--role must be voter or standby", role);
        }
    }
    if (strcmp(sub, "add") == 0 || strcmp(sub, "remove") == 0 ||
        strcmp(sub, "promote") == 0 || strcmp(sub, "demote") == 0) {
        change_timeout(ctl);
    }
    if (strcmp(sub, "add") == 0 && (n_args == 5 || n_args == 6)) {
        const char *ext[12] = {NS_EXT_ID,          ctl->args[2],
                               NS_EXT_RAFT_ADDR,   ctl->args[3],
                               NS_EXT_CLIENT_ADDR, ctl->args[4]};
        size_t k = 6;
        if (n_args == 6) {
            ext[k++] = NS_EXT_HTTP_ADDR;
            ext[k++] = ctl->args[5];
        }
        if (role != NULL) {
            ext[k++] = NS_EXT_ROLE;
            ext[k++] = role;
        }
        ext[k] = NULL;
        rv = ns_ctl_call(ctl, NS_CODE_MEMBER_ADD, ext, NULL, 0, &rep);
    } else if (strcmp(sub, "remove") == 0 && ctl->n_args == 3) {
        rv = private_call(ctl, NS_CODE_MEMBER_REMOVE, NS_EXT_ID, ctl->args[2],
                          NULL, NULL, NULL, NULL, NULL, NULL, &rep);
    } else if ((strcmp(sub, "promote") == 0 || strcmp(sub, "demote") == 0) &&
               ctl->n_args == 3) {
        rv = private_call(ctl, NS_CODE_MEMBER_ASSIGN, NS_EXT_ID, ctl->args[2],
                          NS_EXT_ROLE,
                          strcmp(sub, "promote") == 0 ? "voter" : "standby",
                          NULL, NULL, NULL, NULL, &rep);
    } else {
        return ns_ctl_usage_error(
            "usage: member list | member add ID RAFT CLIENT [HTTP] [--role "
            "voter|standby] | member remove ID | member promote ID | member "
            "demote ID",
            NULL);
    }
    if (rv == 0) {
        printf("ok\n");
        ns_ctl_reply_close(&rep);
    }
    return rv;
}

int ns_ctl_cmd_leader(struct ctl *ctl)
{
    struct reply rep;
    if (ctl->n_args < 2 || strcmp(ctl->args[1], "transfer") != 0 ||
        ctl->n_args > 3) {
        return ns_ctl_usage_error("usage: leader transfer [ID]", NULL);
    }
    change_timeout(ctl);
    int rv = private_call(ctl, NS_CODE_LEADER_TRANSFER, NS_EXT_ID,
                          ctl->n_args == 3 ? ctl->args[2] : NULL, NULL, NULL,
                          NULL, NULL, NULL, NULL, &rep);
    if (rv == 0) {
        const char *leader = ns_cmd_ext_find(&rep.cmd, NS_EXT_LEADER);
        printf("leader %s\n", leader ? leader : "?");
        ns_ctl_reply_close(&rep);
    }
    return rv;
}
