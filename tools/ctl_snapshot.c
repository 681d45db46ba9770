/* raftnsctl backup commands: `snapshot save FILE` copies one ready node's
 * state in chunks over STATE_FETCH (include/raftns/codes.h) into a backup file
 * (include/raftns/backup.h), and `snapshot inspect FILE [--dump DIR]` checks a
 * file and shows what it holds, table by table. Restoring a file into a new
 * cluster is `raftns restore`, not this tool. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cJSON.h>

#include "raftns/alloc.h"
#include "raftns/backup.h"
#include "raftns/codes.h"
#include "raftns/err.h"
#include "raftns/fsm.h"

#include "ctl.h"

/* Prints and frees doc (NULL: out of memory). 0 or EXIT_SERVER. */
static int print_doc(cJSON *doc)
{
    char *text = doc != NULL ? cJSON_Print(doc) : NULL;
    cJSON_Delete(doc);
    if (text == NULL) {
        fprintf(stderr, "raftnsctl: out of memory\n");
        return EXIT_SERVER;
    }
    printf("%s\n", text);
    cJSON_free(text);
    return 0;
}

static bool ext_u64(const struct ns_cmd *c, const char *key, uint64_t *out)
{
    int64_t v = 0;
    if (!ns_cmd_ext_int64(c, key, &v) || v < 0) {
        return false;
    }
    *out = (uint64_t)v;
    return true;
}

struct fetch {
    struct ns_buf got;
    uint64_t index, term, total;
    unsigned n_chunks;
};

/* One chunk at got.len. 0, or an exit status (the reason printed). */
static int fetch_chunk(const struct ctl *one, struct fetch *f)
{
    char index[24], offset[24];
    snprintf(index, sizeof index, "%" PRIu64, f->index);
    snprintf(offset, sizeof offset, "%zu", f->got.len);
    const char *ext[] = {NS_EXT_INDEX, index, NS_EXT_OFFSET, offset, NULL};
    struct reply rep;
    int rv = ns_ctl_call(one, NS_CODE_STATE_FETCH, ext, NULL, 0, &rep);
    if (rv != 0) {
        return rv;
    }
    uint64_t at = 0, total = 0, off = 0, term = 0;
    const struct ns_cmd *c = &rep.cmd;
    if (!ext_u64(c, NS_EXT_INDEX, &at) || !ext_u64(c, NS_EXT_TOTAL, &total) ||
        !ext_u64(c, NS_EXT_OFFSET, &off) || !ext_u64(c, NS_EXT_TERM, &term) ||
        at == 0 || total > NS_BACKUP_BODY_MAX || off != f->got.len ||
        (f->index != 0 && (at != f->index || total != f->total)) ||
        c->body_len > total - off || (c->body_len == 0 && off < total)) {
        fprintf(stderr,
                "raftnsctl: %s: inconsistent snapshot chunk at offset "
                "%zu\n",
                one->addrs[0], f->got.len);
        ns_ctl_reply_close(&rep);
        return EXIT_SERVER;
    }
    if (f->index == 0) {
        f->index = at;
        f->total = total;
        f->term = term;
    }
    f->n_chunks++;
    rv = ns_buf_append(&f->got, c->body, c->body_len);
    ns_ctl_reply_close(&rep);
    if (rv != 0) {
        fprintf(stderr, "raftnsctl: out of memory\n");
        return EXIT_SERVER;
    }
    return 0;
}

/* The whole state from the first address that serves it. A node holds one
 * encoding at a time: when another copy replaced it mid-transfer (a second
 * save, a diverged node's fetch), the save starts again from offset 0. */
static int fetch_state(const struct ctl *ctl, struct fetch *f,
                       const char **from)
{
    int rv = EXIT_UNREACHABLE;
    for (size_t i = 0; i < ctl->n_addrs; i++) {
        struct ctl one = *ctl;
        one.addrs[0] = ctl->addrs[i];
        one.n_addrs = 1;
        for (int attempt = 0; attempt < 5; attempt++) {
            memset(f, 0, sizeof *f);
            ns_buf_init(&f->got);
            rv = fetch_chunk(&one, f);
            while (rv == 0 && f->got.len < f->total) {
                rv = fetch_chunk(&one, f);
            }
            if (rv == 0) {
                *from = ctl->addrs[i];
                return 0;
            }
            bool started = f->n_chunks > 0;
            ns_buf_close(&f->got);
            if (!started) {
                break; /* this node does not serve it: the next address */
            }
            fprintf(stderr, "raftnsctl: %s: starting the copy again\n",
                    ctl->addrs[i]);
        }
    }
    return rv;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Writes header + body to path.tmp, syncs and renames it: a crash or an
 * error never leaves a partial file under path. */
static int write_file(const char *path, const uint8_t *head, const uint8_t *b,
                      size_t n)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp) {
        fprintf(stderr, "raftnsctl: %s: path too long\n", path);
        return EXIT_USAGE;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "raftnsctl: cannot create %s: %s\n", tmp,
                strerror(errno));
        return EXIT_SERVER;
    }
    bool ok = write_all(fd, head, NS_BACKUP_HEADER_LEN) == 0 &&
              write_all(fd, b, n) == 0 && fsync(fd) == 0;
    int saved = errno;
    ok = close(fd) == 0 && ok;
    if (ok && rename(tmp, path) != 0) {
        saved = errno;
        ok = false;
    }
    if (!ok) {
        fprintf(stderr, "raftnsctl: cannot write %s: %s\n", path,
                strerror(saved));
        unlink(tmp);
        return EXIT_SERVER;
    }
    return 0;
}

static int cmd_save(const struct ctl *ctl, const char *path)
{
    struct fetch f;
    const char *from = NULL;
    int rv = fetch_state(ctl, &f, &from);
    if (rv != 0) {
        return rv;
    }
    /* refuse to write what could not be restored */
    struct ns_state s;
    rv = ns_state_init(&s);
    if (rv == 0) {
        rv = ns_snapshot_decode(&s, f.got.data, f.got.len);
        ns_state_close(&s);
    }
    if (rv != 0) {
        fprintf(stderr, "raftnsctl: %s sent a state that does not decode: %s\n",
                from, ns_strerror(rv));
        ns_buf_close(&f.got);
        return EXIT_SERVER;
    }
    uint8_t head[NS_BACKUP_HEADER_LEN];
    ns_backup_header_encode(f.index, f.term, f.got.data, f.got.len, head);
    rv = write_file(path, head, f.got.data, f.got.len);
    if (rv == 0) {
        uint32_t crc = ns_backup_crc32c(0, f.got.data, f.got.len);
        if (ctl->json) {
            char crc_hex[16];
            snprintf(crc_hex, sizeof crc_hex, "%08" PRIx32, crc);
            cJSON *doc = cJSON_CreateObject();
            cJSON_AddStringToObject(doc, "file", path);
            cJSON_AddStringToObject(doc, "from", from);
            cJSON_AddNumberToObject(doc, "index", (double)f.index);
            cJSON_AddNumberToObject(doc, "term", (double)f.term);
            cJSON_AddNumberToObject(doc, "bytes", (double)f.got.len);
            cJSON_AddStringToObject(doc, "crc32c", crc_hex);
            cJSON_AddNumberToObject(doc, "chunks", f.n_chunks);
            rv = print_doc(doc);
        } else {
            printf("saved %s: index %" PRIu64 ", term %" PRIu64
                   ", %zu bytes, crc32c %08" PRIx32 " (from %s, %u chunks)\n",
                   path, f.index, f.term, f.got.len, crc, from, f.n_chunks);
        }
    }
    ns_buf_close(&f.got);
    return rv;
}

/* Reads a whole file; caller frees *out. 0 or an exit status (printed). */
static int read_file(const char *path, uint8_t **out, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (fp == NULL) {
        fprintf(stderr, "raftnsctl: cannot open %s: %s\n", path,
                strerror(errno));
        return EXIT_USAGE;
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
        fprintf(stderr, "raftnsctl: cannot read %s\n", path);
        ns_buf_close(&b);
        return EXIT_SERVER;
    }
    *out = ns_buf_take(&b, len);
    ns_buf_close(&b);
    return 0;
}

static int dump_table(const char *dir, enum ns_backup_table t,
                      const struct ns_buf *b)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.bin", dir, ns_backup_table_name(t));
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || write_all(fd, b->data, b->len) != 0) {
        fprintf(stderr, "raftnsctl: cannot write %s: %s\n", path,
                strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return EXIT_SERVER;
    }
    close(fd);
    return 0;
}

static int cmd_inspect(const struct ctl *ctl, const char *path,
                       const char *dump)
{
    uint8_t *file = NULL;
    size_t len = 0;
    int rv = read_file(path, &file, &len);
    if (rv != 0) {
        return rv;
    }
    struct ns_backup_header h;
    const uint8_t *body;
    size_t body_len;
    char err[256];
    if (ns_backup_file_check(file, len, &h, &body, &body_len, err,
                             sizeof err) != 0) {
        fprintf(stderr, "raftnsctl: %s: %s\n", path, err);
        ns_free(file);
        return EXIT_SERVER;
    }
    struct ns_state s;
    uint64_t digest = 0;
    rv = ns_state_init(&s);
    if (rv == 0) {
        rv = ns_snapshot_decode(&s, body, body_len);
    }
    if (rv == 0) {
        rv = ns_snapshot_digest(&s, &digest);
    }
    cJSON *doc = NULL, *tables = NULL;
    char hex[24];
    if (rv == 0 && ctl->json) {
        doc = cJSON_CreateObject();
        cJSON_AddStringToObject(doc, "file", path);
        cJSON_AddNumberToObject(doc, "version", h.version);
        cJSON_AddNumberToObject(doc, "index", (double)h.index);
        cJSON_AddNumberToObject(doc, "term", (double)h.term);
        cJSON_AddNumberToObject(doc, "bytes", (double)body_len);
        snprintf(hex, sizeof hex, "%08" PRIx32, h.body_crc);
        cJSON_AddStringToObject(doc, "crc32c", hex);
        snprintf(hex, sizeof hex, "%016" PRIx64, digest);
        cJSON_AddStringToObject(doc, "digest", hex);
        tables = cJSON_AddObjectToObject(doc, "tables");
    } else if (rv == 0) {
        printf("%s: format %u, index %" PRIu64 ", term %" PRIu64
               ", %zu bytes, crc32c %08" PRIx32 ", digest %016" PRIx64 "\n",
               path, (unsigned)h.version, h.index, h.term, body_len, h.body_crc,
               digest);
        printf("%-12s %10s %s\n", "TABLE", "BYTES", "CRC32C");
    }
    for (int t = 0; rv == 0 && t < NS_BACKUP_N_TABLES; t++) {
        struct ns_buf b;
        ns_buf_init(&b);
        rv = ns_backup_table_encode(&s, (enum ns_backup_table)t, &b);
        uint32_t crc = ns_backup_crc32c(0, b.data, b.len);
        if (rv == 0 && ctl->json) {
            cJSON *one = cJSON_AddObjectToObject(
                tables, ns_backup_table_name((enum ns_backup_table)t));
            snprintf(hex, sizeof hex, "%08" PRIx32, crc);
            cJSON_AddNumberToObject(one, "bytes", (double)b.len);
            cJSON_AddStringToObject(one, "crc32c", hex);
        } else if (rv == 0) {
            printf("%-12s %10zu %08" PRIx32 "\n", ns_backup_table_name(t),
                   b.len, crc);
        }
        if (rv == 0 && dump != NULL) {
            rv = dump_table(dump, (enum ns_backup_table)t, &b) ? NS_EIO : 0;
        }
        ns_buf_close(&b);
    }
    if (rv == 0 && ctl->json) {
        rv = print_doc(doc) != 0 ? NS_ENOMEM : 0;
        doc = NULL;
    }
    cJSON_Delete(doc);
    ns_state_close(&s);
    ns_free(file);
    if (rv != 0) {
        fprintf(stderr, "raftnsctl: %s: %s\n", path, ns_strerror(rv));
        return EXIT_SERVER;
    }
    return 0;
}

int ns_ctl_cmd_snapshot(struct ctl *ctl)
{
    const char *sub = ctl->n_args >= 2 ? ctl->args[1] : "";
    if (strcmp(sub, "save") == 0 && ctl->n_args == 3) {
        return cmd_save(ctl, ctl->args[2]);
    }
    if (strcmp(sub, "inspect") == 0 && ctl->n_args == 3) {
        return cmd_inspect(ctl, ctl->args[2], NULL);
    }
    if (strcmp(sub, "inspect") == 0 && ctl->n_args == 5 &&
        strcmp(ctl->args[3], "--dump") == 0) {
        return cmd_inspect(ctl, ctl->args[2], ctl->args[4]);
    }
    return ns_ctl_usage_error(
        "usage: snapshot save FILE | snapshot inspect FILE [--dump DIR]", NULL);
}
