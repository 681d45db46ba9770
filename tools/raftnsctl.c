/* raftnsctl: command-line client that speaks the RocketMQ remoting protocol to
 * a name server (routes, clusters, topics, KV, settings) over blocking sockets.
 * It is a tool, not a library: no event loop, no retries beyond trying each
 * given address once, no state kept between runs. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cJSON.h>

#include "raftns/alloc.h"
#include "raftns/buf.h"
#include "raftns/codes.h"
#include "raftns/err.h"
#include "raftns/json.h"
#include "raftns/version.h"
#include "raftns/remoting.h"
#include "raftns/tls.h"

#include "ctl.h"

#define DEFAULT_ADDR "127.0.0.1:9876"
#define DEFAULT_TIMEOUT_MS 3000

static const char usage_text[] =
    "usage: raftnsctl [-n HOST:PORT]... [--json] [--timeout-ms N] COMMAND\n"
    "\n"
    "  -n ADDR          name server to ask (repeatable; ',' or ';' separated "
    "lists\n"
    "                   accepted); tried in order until one answers.\n"
    "                   Default " DEFAULT_ADDR ".\n"
    "  --json           print the reply as standard JSON\n"
    "  --timeout-ms N   connect + reply timeout per address (default 3000;\n"
    "                   member add/remove and leader transfer: 15000)\n"
    "  --version        print the version and git revision\n"
    "  --secret S       cluster secret for member, leader and acl commands\n"
    "                   (default: environment RAFTNS_SECRET, else \"\")\n"
    "  --access-key AK  sign every request as account AK (RocketMQ ACL)\n"
    "  --secret-key SK  ... with its secret key (default: environment\n"
    "                   RAFTNS_ACCESS_KEY / RAFTNS_SECRET_KEY)\n"
    "  --tls            speak TLS (a name server with tlsMode enforcing)\n"
    "  --tls-ca FILE    CA that signed the server (default: the system's)\n"
    "  --tls-cert FILE  client certificate, when the server requires one\n"
    "  --tls-key FILE   its private key\n"
    "  --tls-insecure   do not verify the server's certificate\n"
    "\n"
    "commands:\n"
    "  route TOPIC                 route of a topic (brokers and queues)\n"
    "  clusters                    clusters, broker names, ids and addresses\n"
    "  topics [--cluster C]        all topics, or the topics of one cluster\n"
    "  kv get NS KEY               read a KV entry\n"
    "  kv put NS KEY VALUE         write a KV entry\n"
    "  kv delete NS KEY            delete a KV entry\n"
    "  kv list NS                  all entries of a namespace\n"
    "  brokers                     every broker with its cluster, address,\n"
    "                              timeout and last heartbeat on each node\n"
    "  wipe-write-perm BROKER      remove write permission of a broker's\n"
    "                              topics (mqadmin wipeWritePerm)\n"
    "  add-write-perm BROKER       give it back (mqadmin addWritePerm)\n"
    "  delete-topic TOPIC [--cluster C]  delete a topic's route from the\n"
    "                              name server (mqadmin deleteTopic)\n"
    "  config get                  the server's settings\n"
    "  config set KEY=VALUE...     change settings\n"
    "  status                      every member's state as a table (asks the\n"
    "                              -n nodes and every member they list)\n"
    "  member list                 raft members and their addresses\n"
    "  member add ID RAFT CLIENT [HTTP] [--role voter|standby]\n"
    "                              add a voter, or a standby (a read replica\n"
    "                              that does not vote; addresses IPv4 "
    "ip:port)\n"
    "  member promote ID           make a standby a voter\n"
    "  member demote ID            make a voter a standby\n"
    "  member remove ID            remove a member\n"
    "  leader transfer [ID]        hand leadership to ID (or the best voter)\n"
    "  acl add AK SK ROLE [--networks CIDR,...]  add or replace an account\n"
    "                              (ROLE admin|broker|reader)\n"
    "  acl remove AK               remove an account\n"
    "  acl list                    accounts, roles, networks (no secrets)\n"
    "  snapshot save FILE          copy a ready node's state into a backup\n"
    "                              file (index, term, CRC32C in its header)\n"
    "  snapshot inspect FILE [--dump DIR]  check a backup file, show (or\n"
    "                              write to DIR) its tables\n"
    "  controller metadata         the controller leader and peers (1005)\n"
    "  controller sync-state BROKER...  masters, epochs, in-sync replicas\n"
    "  controller elect BROKER ID [CLUSTER]  make ID the master (1002)\n"
    "  controller clean BROKER [IDS] [--living]  drop a group or its ids\n"
    "                              (IDS ';'-separated)\n"
    "  controller config get|set KEY=VALUE...  each -n node's controller\n"
    "                              settings\n"
    "\n"
    "exit status: 0 ok, 1 server error, 2 usage error, 3 no address answered\n";

static int usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "raftnsctl: %s%s%s\n", what, arg ? ": " : "",
            arg ? arg : "");
    fputs(usage_text, stderr);
    return EXIT_USAGE;
}

/* ---------------------------------------------------------------- output
 * helpers */

/* Parses the reply body as fastjson output, or prints why not. Returns an owned
 * tree or NULL. */
static cJSON *parse_body(const struct reply *r)
{
    cJSON *doc = NULL;
    if (r->cmd.body_len > 0)
        doc = ns_json_parse((const char *)r->cmd.body, r->cmd.body_len);
    if (!doc)
        fprintf(stderr, "raftnsctl: the reply has no readable JSON body\n");
    return doc;
}

/* Prints a tree as standard JSON on stdout. Returns 0 or EXIT_SERVER. */
static int print_json(const cJSON *doc)
{
    char *text = cJSON_Print(doc);
    if (!text) {
        fprintf(stderr, "raftnsctl: out of memory\n");
        return EXIT_SERVER;
    }
    printf("%s\n", text);
    cJSON_free(text);
    return 0;
}

/* --json output of a reply without body: {"code":0, ext fields as strings...}.
 */
static int print_ext_json(const struct reply *r)
{
    cJSON *obj = cJSON_CreateObject();
    int rv = EXIT_SERVER;
    if (!obj || !cJSON_AddNumberToObject(obj, "code", r->cmd.code))
        goto err_after_obj;
    for (size_t i = 0; i < r->cmd.n_ext; i++) {
        if (!cJSON_AddStringToObject(obj, r->cmd.ext[i].key,
                                     r->cmd.ext[i].value))
            goto err_after_obj;
    }
    rv = print_json(obj);
err_after_obj:
    cJSON_Delete(obj);
    return rv;
}

/* A text table whose rows are sorted before printing; the optional header row
 * stays first. Cells are owned copies. */
struct table {
    size_t n_cols; /* at most TABLE_MAX_COLS */
    size_t n_rows;
    size_t n_head; /* 1 when row 0 is a header */
    char **cells;
    bool oom;
};

#define TABLE_MAX_COLS 8

static void table_add(struct table *t, const char *const *row);

/* The header is n_cols strings after n_cols, or a single NULL for none. */
static void table_init(struct table *t, size_t n_cols, ...)
{
    const char *head[TABLE_MAX_COLS] = {NULL};
    va_list ap;

    memset(t, 0, sizeof *t);
    t->n_cols = n_cols;
    va_start(ap, n_cols);
    for (size_t c = 0; c < n_cols; c++) {
        head[c] = va_arg(ap, const char *);
        if (!head[c])
            break;
    }
    va_end(ap);
    if (head[0]) {
        table_add(t, head);
        t->n_head = 1;
    }
}

static void table_close(struct table *t)
{
    for (size_t i = 0; i < t->n_rows * t->n_cols; i++)
        ns_free(t->cells[i]);
    ns_free(t->cells);
}

/* Appends one row of n_cols strings (NULL prints as "-"); out of memory is
 * sticky. */
static void table_add(struct table *t, const char *const *row)
{
    char **cells;
    if (t->oom)
        return;
    cells = ns_realloc(t->cells, (t->n_rows + 1) * t->n_cols * sizeof *cells);
    if (!cells) {
        t->oom = true;
        return;
    }
    t->cells = cells;
    for (size_t c = 0; c < t->n_cols; c++) {
        char *copy = ns_strdup(row[c] ? row[c] : "-");
        if (!copy)
            t->oom = true;
        cells[t->n_rows * t->n_cols + c] = copy;
    }
    t->n_rows++;
}

static bool is_integer(const char *s, long long *v)
{
    char *end;
    if (!*s)
        return false;
    errno = 0;
    *v = strtoll(s, &end, 10);
    return *end == '\0' && errno == 0;
}

/* Row order: column by column, numerically when both cells are integers. */
static int compare_rows(const void *a, const void *b, void *arg)
{
    const char *const *ra = a;
    const char *const *rb = b;
    size_t n_cols = *(const size_t *)arg;
    for (size_t c = 0; c < n_cols; c++) {
        long long x, y;
        int d;
        if (is_integer(ra[c], &x) && is_integer(rb[c], &y))
            d = x < y ? -1 : x > y;
        else
            d = strcmp(ra[c], rb[c]);
        if (d)
            return d;
    }
    return 0;
}

/* Sorts the body rows (the header stays first) and prints aligned columns. */
static int table_print(struct table *t)
{
    size_t width[TABLE_MAX_COLS] = {0};
    size_t n_body = t->n_rows - t->n_head;
    if (t->oom) {
        fprintf(stderr, "raftnsctl: out of memory\n");
        return EXIT_SERVER;
    }
    if (n_body > 1) /* cells is NULL for an empty table without header */
        qsort_r(t->cells + t->n_head * t->n_cols, n_body,
                t->n_cols * sizeof(char *), compare_rows, &t->n_cols);
    for (size_t r = 0; r < t->n_rows; r++)
        for (size_t c = 0; c < t->n_cols; c++) {
            size_t l = strlen(t->cells[r * t->n_cols + c]);
            if (l > width[c])
                width[c] = l;
        }
    for (size_t r = 0; r < t->n_rows; r++) {
        for (size_t c = 0; c < t->n_cols; c++) {
            const char *cell = t->cells[r * t->n_cols + c];
            if (c + 1 == t->n_cols)
                printf("%s\n", cell);
            else
                printf("%-*s  ", (int)width[c], cell);
        }
    }
    return 0;
}

static void int_text(char *out, size_t len, const cJSON *obj, const char *key)
{
    snprintf(out, len, "%" PRId64, ns_json_get_int64(obj, key, 0));
}

/* Adds one row (cluster, name, id, address) per broker id of a BrokerData. */
static void add_broker_rows(struct table *t, const cJSON *bd)
{
    const cJSON *addrs = cJSON_GetObjectItemCaseSensitive(bd, "brokerAddrs");
    const cJSON *a;
    const char *name = ns_json_get_string(bd, "brokerName");
    const char *cluster = ns_json_get_string(bd, "cluster");
    cJSON_ArrayForEach(a, addrs)
    {
        const char *row[] = {cluster, name, a->string, cJSON_GetStringValue(a)};
        table_add(t, row);
    }
}

/* ---------------------------------------------------------------- commands */

/* Renders a parsed reply body for humans. */
typedef int (*ns_render_fn)(const struct ctl *ctl, const cJSON *doc);

/* Sends a request whose reply carries a JSON body, then prints the body as
 * standard JSON (--json) or through render. Returns an exit status. */
static int run_body(const struct ctl *ctl, int32_t code, const char *const *ext,
                    ns_render_fn render)
{
    struct reply r;
    cJSON *doc;
    int rv = ns_ctl_call(ctl, code, ext, NULL, 0, &r);
    if (rv != 0)
        return rv;
    doc = parse_body(&r);
    rv = EXIT_SERVER;
    if (doc)
        rv = ctl->json ? print_json(doc) : render(ctl, doc);
    cJSON_Delete(doc);
    ns_ctl_reply_close(&r);
    return rv;
}

static int render_route(const struct ctl *ctl, const cJSON *doc)
{
    struct table brokers, queues;
    const char *order = ns_json_get_string(doc, "orderTopicConf");
    const cJSON *item;
    int rv;

    table_init(&brokers, 4, "CLUSTER", "BROKER", "ID", "ADDRESS");
    table_init(&queues, 5, "BROKER", "READ", "WRITE", "PERM", "SYSFLAG");
    cJSON_ArrayForEach(item,
                       cJSON_GetObjectItemCaseSensitive(doc, "brokerDatas"))
        add_broker_rows(&brokers, item);
    cJSON_ArrayForEach(item,
                       cJSON_GetObjectItemCaseSensitive(doc, "queueDatas"))
    {
        char rq[24], wq[24], perm[24], sys[24];
        int_text(rq, sizeof rq, item, "readQueueNums");
        int_text(wq, sizeof wq, item, "writeQueueNums");
        int_text(perm, sizeof perm, item, "perm");
        int_text(sys, sizeof sys, item, "topicSysFlag");
        table_add(&queues,
                  (const char *const[]){ns_json_get_string(item, "brokerName"),
                                        rq, wq, perm, sys});
    }
    printf("topic %s\n", ctl->args[1]);
    rv = table_print(&brokers);
    if (rv == 0) {
        printf("\n");
        rv = table_print(&queues);
    }
    if (rv == 0 && order)
        printf("\norderTopicConf %s\n", order);
    table_close(&queues);
    table_close(&brokers);
    return rv;
}

static int cmd_route(const struct ctl *ctl)
{
    if (ctl->n_args != 2)
        return usage_error("route takes one TOPIC", NULL);
    return run_body(ctl, NS_CODE_GET_ROUTEINFO_BY_TOPIC,
                    (const char *const[]){"topic", ctl->args[1], NULL},
                    render_route);
}

/* Every group of brokerAddrTable, with the cluster its BrokerData names. */
static int render_clusters(const struct ctl *ctl, const cJSON *doc)
{
    struct table t;
    const cJSON *bd;
    int rv;

    (void)ctl;
    table_init(&t, 4, "CLUSTER", "BROKER", "ID", "ADDRESS");
    cJSON_ArrayForEach(bd,
                       cJSON_GetObjectItemCaseSensitive(doc, "brokerAddrTable"))
        add_broker_rows(&t, bd);
    rv = table_print(&t);
    table_close(&t);
    return rv;
}

static int cmd_clusters(const struct ctl *ctl)
{
    if (ctl->n_args != 1)
        return usage_error("clusters takes no operands", NULL);
    return run_body(ctl, NS_CODE_GET_BROKER_CLUSTER_INFO, NULL,
                    render_clusters);
}

static int render_topics(const struct ctl *ctl, const cJSON *doc)
{
    struct table t;
    const cJSON *item;
    int rv;

    (void)ctl;
    table_init(&t, 1, NULL);
    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(doc, "topicList"))
        table_add(&t, (const char *const[]){cJSON_GetStringValue(item)});
    rv = table_print(&t);
    table_close(&t);
    return rv;
}

static int cmd_topics(const struct ctl *ctl)
{
    const char *cluster = NULL;

    for (size_t i = 1; i < ctl->n_args; i++) {
        if (strcmp(ctl->args[i], "--cluster") == 0 && i + 1 < ctl->n_args)
            cluster = ctl->args[++i];
        else if (strncmp(ctl->args[i], "--cluster=", 10) == 0)
            cluster = ctl->args[i] + 10;
        else
            return usage_error("topics takes only --cluster CLUSTER",
                               ctl->args[i]);
    }
    if (!cluster)
        return run_body(ctl, NS_CODE_GET_ALL_TOPIC_LIST_FROM_NAMESERVER, NULL,
                        render_topics);
    return run_body(ctl, NS_CODE_GET_TOPICS_BY_CLUSTER,
                    (const char *const[]){"cluster", cluster, NULL},
                    render_topics);
}

static int render_kv_list(const struct ctl *ctl, const cJSON *doc)
{
    struct table t;
    const cJSON *kv;
    int rv;

    (void)ctl;
    table_init(&t, 2, "KEY", "VALUE");
    cJSON_ArrayForEach(kv, cJSON_GetObjectItemCaseSensitive(doc, "table"))
        table_add(&t,
                  (const char *const[]){kv->string, cJSON_GetStringValue(kv)});
    rv = table_print(&t);
    table_close(&t);
    return rv;
}

static int cmd_kv(const struct ctl *ctl)
{
    const char *verb = ctl->n_args > 1 ? ctl->args[1] : "";
    char *const *a = ctl->args;
    struct reply r;
    int32_t code;
    int rv;

    if (strcmp(verb, "list") == 0 && ctl->n_args == 3)
        return run_body(ctl, NS_CODE_GET_KVLIST_BY_NAMESPACE,
                        (const char *const[]){"namespace", a[2], NULL},
                        render_kv_list);
    if (strcmp(verb, "get") == 0 && ctl->n_args == 4)
        code = NS_CODE_GET_KV_CONFIG;
    else if (strcmp(verb, "delete") == 0 && ctl->n_args == 4)
        code = NS_CODE_DELETE_KV_CONFIG;
    else if (strcmp(verb, "put") == 0 && ctl->n_args == 5)
        code = NS_CODE_PUT_KV_CONFIG;
    else
        return usage_error("kv needs get NS KEY, put NS KEY VALUE, delete NS "
                           "KEY or list NS",
                           NULL);
    rv = ns_ctl_call(ctl, code,
                     (const char *const[]){
                         "namespace", a[2], "key", a[3],
                         code == NS_CODE_PUT_KV_CONFIG ? "value" : NULL,
                         code == NS_CODE_PUT_KV_CONFIG ? a[4] : NULL, NULL},
                     NULL, 0, &r);
    if (rv != 0)
        return rv;
    if (ctl->json) {
        rv = print_ext_json(&r);
    } else if (code == NS_CODE_GET_KV_CONFIG) {
        const char *value = ns_cmd_ext_find(&r.cmd, "value");
        printf("%s\n", value ? value : "");
    } else {
        printf("ok\n");
    }
    ns_ctl_reply_close(&r);
    return rv;
}

/* Appends s to a properties text, escaped as java.util.Properties reads it
 * back. */
static void put_escaped(struct ns_buf *b, const char *s, bool is_key)
{
    for (size_t i = 0; s[i]; i++) {
        char c = s[i];
        if (c == '\\' || ((is_key || i == 0) && c == ' ') ||
            (is_key && (c == '=' || c == ':')) ||
            (i == 0 && (c == '#' || c == '!')))
            ns_buf_put_u8(b, '\\');
        if (c == '\n')
            ns_buf_append_str(b, "\\n");
        else if (c == '\r')
            ns_buf_append_str(b, "\\r");
        else
            ns_buf_put_u8(b, (uint8_t)c);
    }
}

/* config get prints the properties text as is, or as a JSON object of strings.
 */
static int print_config(const struct reply *r, bool json)
{
    const char *p = (const char *)r->cmd.body;
    const char *end = p + r->cmd.body_len;
    cJSON *obj;
    int rv = EXIT_SERVER;

    if (!json) {
        fwrite(p, 1, r->cmd.body_len, stdout);
        if (r->cmd.body_len > 0 && end[-1] != '\n')
            printf("\n");
        return 0;
    }
    obj = cJSON_CreateObject();
    if (!obj)
        goto err_after_obj;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *line_end = nl ? nl : end;
        const char *eq = memchr(p, '=', (size_t)(line_end - p));
        if (eq && *p != '#' && *p != '!') {
            char *key = ns_strndup(p, (size_t)(eq - p));
            char *value = ns_strndup(eq + 1, (size_t)(line_end - eq - 1));
            bool ok = key && value && cJSON_AddStringToObject(obj, key, value);
            ns_free(key);
            ns_free(value);
            if (!ok)
                goto err_after_obj;
        }
        p = nl ? nl + 1 : end;
    }
    rv = print_json(obj);
err_after_obj:
    if (rv != 0)
        fprintf(stderr, "raftnsctl: out of memory\n");
    cJSON_Delete(obj);
    return rv;
}

static int cmd_config(const struct ctl *ctl)
{
    const char *verb = ctl->n_args > 1 ? ctl->args[1] : "";
    struct reply r;
    struct ns_buf body;
    int rv;

    if (strcmp(verb, "get") == 0) {
        if (ctl->n_args != 2)
            return usage_error("config get takes no operands", NULL);
        rv = ns_ctl_call(ctl, NS_CODE_GET_NAMESRV_CONFIG, NULL, NULL, 0, &r);
        if (rv != 0)
            return rv;
        rv = print_config(&r, ctl->json);
        ns_ctl_reply_close(&r);
        return rv;
    }
    if (strcmp(verb, "set") != 0)
        return usage_error("config needs get or set", verb);
    if (ctl->n_args < 3)
        return usage_error("config set needs KEY=VALUE", NULL);
    ns_buf_init(&body);
    for (size_t i = 2; i < ctl->n_args; i++) {
        const char *eq = strchr(ctl->args[i], '=');
        char *key;
        if (!eq || eq == ctl->args[i]) {
            ns_buf_close(&body);
            return usage_error("expected KEY=VALUE", ctl->args[i]);
        }
        key = ns_strndup(ctl->args[i], (size_t)(eq - ctl->args[i]));
        if (!key) {
            body.err = NS_ENOMEM;
            break;
        }
        put_escaped(&body, key, true);
        ns_buf_put_u8(&body, '=');
        put_escaped(&body, eq + 1, false);
        ns_buf_put_u8(&body, '\n');
        ns_free(key);
    }
    if (body.err != 0) {
        fprintf(stderr, "raftnsctl: out of memory\n");
        ns_buf_close(&body);
        return EXIT_SERVER;
    }
    rv = ns_ctl_call(ctl, NS_CODE_UPDATE_NAMESRV_CONFIG, NULL, body.data,
                     body.len, &r);
    ns_buf_close(&body);
    if (rv != 0)
        return rv;
    if (ctl->json)
        rv = print_ext_json(&r);
    else
        printf("ok\n");
    ns_ctl_reply_close(&r);
    return rv;
}

/* ---------------------------------------------------------------- command line
 */

/* Adds every address of a ',' / ';' separated list. Returns 0 or EXIT_USAGE. */
static int add_addrs(struct ctl *ctl, const char *list)
{
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",;");
        if (n > 0) {
            char *a;
            if (ctl->n_addrs == MAX_ADDRS)
                return usage_error("too many addresses", NULL);
            a = ns_strndup(p, n);
            if (!a)
                return usage_error("out of memory", NULL);
            ctl->addrs[ctl->n_addrs++] = a;
        }
        p += n;
        if (*p)
            p++;
    }
    return 0;
}

static int parse_timeout(struct ctl *ctl, const char *text)
{
    long long v;
    if (!is_integer(text, &v) || v <= 0 || v > 3600 * 1000)
        return usage_error("bad --timeout-ms", text);
    ctl->timeout_ms = (int)v;
    ctl->timeout_given = true;
    return 0;
}

/* Takes the global options out of argv (anywhere before "--"); the rest are the
 * command. */
static int parse_args(struct ctl *ctl, int argc, char **argv)
{
    bool opts = true;
    int rv = 0;

    ctl->args = ns_calloc((size_t)argc + 1, sizeof *ctl->args);
    if (!ctl->args)
        return usage_error("out of memory", NULL);
    ctl->timeout_ms = DEFAULT_TIMEOUT_MS;
    for (int i = 1; i < argc && rv == 0; i++) {
        const char *a = argv[i];
        if (opts && strcmp(a, "--") == 0) {
            opts = false;
        } else if (opts &&
                   (strcmp(a, "-n") == 0 || strcmp(a, "--namesrv") == 0)) {
            rv = i + 1 < argc ? add_addrs(ctl, argv[++i])
                              : usage_error("-n needs ADDR", NULL);
        } else if (opts && strncmp(a, "-n", 2) == 0 && a[2] != '\0') {
            rv = add_addrs(ctl, a + 2);
        } else if (opts && strncmp(a, "--namesrv=", 10) == 0) {
            rv = add_addrs(ctl, a + 10);
        } else if (opts && strcmp(a, "--secret") == 0) {
            rv = i + 1 < argc ? (ctl->secret = argv[++i], 0)
                              : usage_error("--secret needs S", NULL);
        } else if (opts && strcmp(a, "--access-key") == 0) {
            rv = i + 1 < argc ? (ctl->access_key = argv[++i], 0)
                              : usage_error("--access-key needs AK", NULL);
        } else if (opts && strcmp(a, "--secret-key") == 0) {
            rv = i + 1 < argc ? (ctl->secret_key = argv[++i], 0)
                              : usage_error("--secret-key needs SK", NULL);
        } else if (opts && strcmp(a, "--tls") == 0) {
            ctl->tls = true;
        } else if (opts && strcmp(a, "--tls-insecure") == 0) {
            ctl->tls = ctl->tls_insecure = true;
        } else if (opts && (strcmp(a, "--tls-ca") == 0 ||
                            strcmp(a, "--tls-cert") == 0 ||
                            strcmp(a, "--tls-key") == 0)) {
            const char **dst = strcmp(a, "--tls-ca") == 0     ? &ctl->tls_ca
                               : strcmp(a, "--tls-cert") == 0 ? &ctl->tls_cert
                                                              : &ctl->tls_key;
            ctl->tls = true;
            rv = i + 1 < argc ? (*dst = argv[++i], 0)
                              : usage_error("--tls-* needs FILE", a);
        } else if (opts && strcmp(a, "--json") == 0) {
            ctl->json = true;
        } else if (opts && strcmp(a, "--timeout-ms") == 0) {
            rv = i + 1 < argc ? parse_timeout(ctl, argv[++i])
                              : usage_error("--timeout-ms needs N", NULL);
        } else if (opts && strncmp(a, "--timeout-ms=", 13) == 0) {
            rv = parse_timeout(ctl, a + 13);
        } else if (opts && a[0] == '-' && a[1] != '\0' && ctl->n_args == 0) {
            rv = usage_error("unknown option", a);
        } else {
            ctl->args[ctl->n_args++] = argv[i];
        }
    }
    if (rv == 0 && ctl->n_addrs == 0)
        rv = add_addrs(ctl, DEFAULT_ADDR);
    if (ctl->secret == NULL)
        ctl->secret = getenv("RAFTNS_SECRET");
    if (ctl->access_key == NULL)
        ctl->access_key = getenv("RAFTNS_ACCESS_KEY");
    if (ctl->secret_key == NULL)
        ctl->secret_key = getenv("RAFTNS_SECRET_KEY");
    if (rv == 0 && (ctl->access_key == NULL) != (ctl->secret_key == NULL))
        rv = usage_error("--access-key and --secret-key go together", NULL);
    if (rv == 0 && ctl->n_args == 0)
        rv = usage_error("no command given", NULL);
    return rv;
}

int main(int argc, char **argv)
{
    struct ctl ctl;
    int rv;

    memset(&ctl, 0, sizeof ctl);
    ns_json_use_ns_alloc();
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0)
            break;
        if (strcmp(argv[i], "--version") == 0) {
            printf("raftnsctl %s (git %s)\n", ns_version(), ns_version_git());
            return 0;
        }
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            fputs(usage_text, stdout);
            return 0;
        }
    }
    rv = parse_args(&ctl, argc, argv);
    if (rv == 0 && ctl.tls) {
        char err[512];
        struct ns_tls_client_opts o = {.ca_path = ctl.tls_ca,
                                       .cert_path = ctl.tls_cert,
                                       .key_path = ctl.tls_key,
                                       .insecure = ctl.tls_insecure};
        if (ns_tls_ctx_create_client(&o, &ctl.tls_ctx, err, sizeof err) != 0) {
            fprintf(stderr, "raftnsctl: %s\n", err);
            rv = EXIT_USAGE;
        }
    }
    if (rv != 0)
        goto out;
    const char *cmd = ctl.args[0];
    if (strcmp(cmd, "route") == 0)
        rv = cmd_route(&ctl);
    else if (strcmp(cmd, "clusters") == 0)
        rv = cmd_clusters(&ctl);
    else if (strcmp(cmd, "topics") == 0)
        rv = cmd_topics(&ctl);
    else if (strcmp(cmd, "kv") == 0)
        rv = cmd_kv(&ctl);
    else if (strcmp(cmd, "config") == 0)
        rv = cmd_config(&ctl);
    else if (strcmp(cmd, "status") == 0)
        rv = ns_ctl_cmd_status(&ctl);
    else if (strcmp(cmd, "member") == 0)
        rv = ns_ctl_cmd_member(&ctl);
    else if (strcmp(cmd, "leader") == 0)
        rv = ns_ctl_cmd_leader(&ctl);
    else if (strcmp(cmd, "wipe-write-perm") == 0 ||
             strcmp(cmd, "add-write-perm") == 0)
        rv = ns_ctl_cmd_write_perm(&ctl);
    else if (strcmp(cmd, "delete-topic") == 0)
        rv = ns_ctl_cmd_delete_topic(&ctl);
    else if (strcmp(cmd, "brokers") == 0)
        rv = ns_ctl_cmd_brokers(&ctl);
    else if (strcmp(cmd, "snapshot") == 0)
        rv = ns_ctl_cmd_snapshot(&ctl);
    else if (strcmp(cmd, "acl") == 0)
        rv = ns_ctl_cmd_acl(&ctl);
    else if (strcmp(cmd, "controller") == 0)
        rv = ns_ctl_cmd_controller(&ctl);
    else
        rv = usage_error("unknown command", cmd);
    fflush(stdout);
out:
    for (size_t i = 0; i < ctl.n_addrs; i++)
        ns_free(ctl.addrs[i]);
    ns_free(ctl.args);
    ns_tls_ctx_unref(ctl.tls_ctx);
    return rv;
}

int ns_ctl_usage_error(const char *what, const char *arg)
{
    return usage_error(what, arg);
}
