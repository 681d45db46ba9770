/* `raftns restore --from FILE --config C --id N --data-dir D`: checks a backup
 * file (include/raftns/backup.h), gives its state the members of the new
 * cluster file C, and writes it as the first snapshot of node N's data dir
 * (ns_node_restore_dir), like etcd's `etcdutl snapshot restore`. Run it for
 * every bootstrap member of C, then start the nodes as usual. It starts no
 * node and opens no socket. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "raftns/alloc.h"
#include "raftns/backup.h"
#include "raftns/cluster_config_load.h"
#include "raftns/err.h"
#include "raftns/fsm.h"
#include "raftns/node.h"
#include "main_restore.h"

static const char usage[] =
    "usage: raftns restore --from FILE --config CLUSTER_FILE --id N "
    "--data-dir DIR\n"
    "  Builds DIR as node N of a new cluster (the members of CLUSTER_FILE)\n"
    "  whose state is the backup FILE (raftnsctl snapshot save). Run it for\n"
    "  every bootstrap member, each with its own empty DIR, then start them.\n";

struct restore_args {
    const char *from, *config, *data_dir;
    uint64_t id;
};

static int parse_args(int argc, char **argv, struct restore_args *a)
{
    for (int i = 1; i < argc; i += 2) { /* options and their values */
        const char *k = argv[i];
        if (strcmp(k, "-h") == 0 || strcmp(k, "--help") == 0) {
            fputs(usage, stdout);
            return 1;
        }
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        const char **dst = strcmp(k, "--from") == 0       ? &a->from
                           : strcmp(k, "--config") == 0   ? &a->config
                           : strcmp(k, "--data-dir") == 0 ? &a->data_dir
                                                          : NULL;
        if (dst == NULL && strcmp(k, "--id") != 0) {
            fprintf(stderr, "raftns restore: unknown option %s\n%s", k, usage);
            return 2;
        }
        if (v == NULL) {
            fprintf(stderr, "raftns restore: %s needs a value\n", k);
            return 2;
        }
        if (dst != NULL) {
            *dst = v;
        } else {
            char *end;
            errno = 0;
            unsigned long long id = strtoull(v, &end, 10);
            if (errno != 0 || *end != '\0' || id == 0 || v[0] == '-') {
                fprintf(stderr, "raftns restore: bad --id %s (an id >= 1)\n",
                        v);
                return 2;
            }
            a->id = id;
        }
    }
    if (a->from == NULL || a->config == NULL || a->data_dir == NULL ||
        a->id == 0) {
        fprintf(stderr,
                "raftns restore: --from, --config, --id and --data-dir are "
                "all required\n%s",
                usage);
        return 2;
    }
    return 0;
}

/* The whole file; caller frees. 0 or 2 (printed). */
static int read_file(const char *path, uint8_t **out, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (fp == NULL) {
        fprintf(stderr, "raftns restore: cannot open %s: %s\n", path,
                strerror(errno));
        return 2;
    }
    struct ns_buf b;
    ns_buf_init(&b);
    uint8_t chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0 &&
           b.len <= NS_BACKUP_BODY_MAX + NS_BACKUP_HEADER_LEN) {
        ns_buf_append(&b, chunk, n);
    }
    bool bad = ferror(fp) != 0;
    fclose(fp);
    if (bad || b.err != 0) {
        fprintf(stderr, "raftns restore: cannot read %s: %s\n", path,
                bad ? "read error" : "out of memory");
        ns_buf_close(&b);
        return 2;
    }
    *out = ns_buf_take(&b, len);
    ns_buf_close(&b);
    return 0;
}

/* The backup's state with the new members, encoded. 0 or 2 (printed). */
static int rebase(const char *path, const uint8_t *body, size_t len,
                  const struct ns_cluster_config *c, struct ns_buf *out)
{
    struct ns_state s;
    int rv = ns_state_init(&s);
    if (rv == 0) {
        rv = ns_snapshot_decode(&s, body, len);
    }
    if (rv == 0) {
        rv = ns_backup_rebase_members(&s, c);
    }
    if (rv == 0) {
        rv = ns_snapshot_encode(&s, out);
    }
    ns_state_close(&s);
    if (rv != 0) {
        fprintf(stderr, "raftns restore: %s: %s\n", path, ns_strerror(rv));
        return 2;
    }
    return 0;
}

static int restore(const struct restore_args *a, struct ns_cluster_config *c)
{
    char err[512];
    const struct ns_cluster_node *me = ns_cluster_config_find(c, a->id);
    if (me == NULL || !me->bootstrap) {
        fprintf(stderr,
                "raftns restore: %s: node %" PRIu64
                " is %s; restore every bootstrap member, then add others "
                "with raftnsctl member add\n",
                a->config, a->id,
                me == NULL ? "not in the file" : "not a bootstrap member");
        return 2;
    }
    uint8_t *file = NULL;
    size_t len = 0;
    int rv = read_file(a->from, &file, &len);
    if (rv != 0) {
        return rv;
    }
    struct ns_backup_header h;
    const uint8_t *body = NULL;
    size_t body_len = 0;
    if (ns_backup_file_check(file, len, &h, &body, &body_len, err,
                             sizeof err) != 0) {
        fprintf(stderr, "raftns restore: %s: refused: %s\n", a->from, err);
        ns_free(file);
        return 2;
    }
    struct ns_buf state;
    ns_buf_init(&state);
    struct ns_node_member *voters = ns_calloc(c->n_nodes, sizeof *voters);
    size_t n_voters = 0;
    rv = voters == NULL ? 1 : rebase(a->from, body, body_len, c, &state);
    for (size_t i = 0; rv == 0 && i < c->n_nodes; i++) {
        if (c->nodes[i].bootstrap) {
            voters[n_voters].id = c->nodes[i].id;
            voters[n_voters].raft_addr = c->nodes[i].raft_addr;
            n_voters++;
        }
    }
    if (rv == 0) {
        int nrv = ns_node_restore_dir(a->data_dir, a->id, me->raft_addr, voters,
                                      n_voters, state.data, state.len, h.index,
                                      err, sizeof err);
        if (nrv != 0) {
            fprintf(stderr, "raftns restore: %s\n", err);
            rv = nrv == NS_EINVAL ? 2 : 1;
        }
    }
    if (rv == 0) {
        printf("restored %s (index %" PRIu64 ", term %" PRIu64
               ", %zu bytes) into %s: node %" PRIu64
               " of a new cluster of %zu voters from %s\n",
               a->from, h.index, h.term, body_len, a->data_dir, a->id, n_voters,
               a->config);
    }
    ns_free(voters);
    ns_buf_close(&state);
    ns_free(file);
    return rv;
}

int ns_restore_main(int argc, char **argv)
{
    struct restore_args a = {0};
    int rv = parse_args(argc, argv, &a);
    if (rv != 0) {
        return rv == 1 ? 0 : rv;
    }
    struct ns_cluster_config c;
    char err[512];
    ns_cluster_config_init(&c);
    if (ns_cluster_config_load(a.config, &c, err, sizeof err) != 0) {
        fprintf(stderr, "raftns restore: %s: %s\n", a.config, err);
        ns_cluster_config_close(&c);
        return 2;
    }
    rv = restore(&a, &c);
    ns_cluster_config_close(&c);
    return rv;
}
