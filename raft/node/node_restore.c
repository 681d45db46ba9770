/* Building the data dir of a new cluster's node from a backup (raftns
 * restore): the state becomes the dir's first raft snapshot, with the new
 * cluster's voters as its configuration, so raft_start installs it through the
 * FSM's restore as after any snapshot, and members that join later receive it
 * as an InstallSnapshot. It runs raft_uv's disk I/O on a private loop before
 * any node starts; it never opens a socket and is not the node (node.c). */
#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <raft.h>
#include <raft/uv.h>

#include "raftns/alloc.h"
#include "raftns/err.h"
#include "raftns/node.h"

struct restore {
    uv_loop_t loop;
    struct raft_uv_transport transport;
    struct raft_io io;
    struct raft_io_snapshot_put put;
    bool put_done, closed;
    int put_status;
};

/* 0 when dir does not exist or is empty (created), otherwise an error. */
static int prepare_dir(const char *dir, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    if (d == NULL && errno != ENOENT) {
        ns_errf(err, errlen, "cannot open data dir %s: %s", dir,
                strerror(errno));
        return NS_EIO;
    }
    if (d != NULL) {
        struct dirent *e;
        bool empty = true;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
                empty = false;
                break;
            }
        }
        closedir(d);
        if (!empty) {
            ns_errf(err, errlen,
                    "data dir %s is not empty: a restore builds a new node; "
                    "give it an empty or missing dir",
                    dir);
            return NS_EINVAL;
        }
        return 0;
    }
    char *tmp = ns_strdup(dir);
    if (tmp == NULL) {
        return NS_ENOMEM;
    }
    int rv = 0;
    for (char *p = tmp + 1; rv == 0; p++) {
        if (*p != '/' && *p != '\0') {
            continue;
        }
        char c = *p;
        *p = '\0';
        if (mkdir(tmp, 0700) != 0 && errno != EEXIST) {
            ns_errf(err, errlen, "cannot create data dir %s: %s", tmp,
                    strerror(errno));
            rv = NS_EIO;
        }
        *p = c;
        if (c == '\0') {
            break;
        }
    }
    ns_free(tmp);
    return rv;
}

/* After a failed restore: removes the files written into dir, which
 * prepare_dir found empty, so a retry finds it empty again. */
static void remove_written(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        return;
    }
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name) <
                (int)sizeof path) {
            unlink(path);
        }
    }
    closedir(d);
}

static void put_cb(struct raft_io_snapshot_put *req, int status)
{
    struct restore *r = req->data;
    r->put_done = true;
    r->put_status = status;
}

static void io_closed(struct raft_io *io)
{
    struct restore *r = io->data;
    r->closed = true;
}

/* Writes the snapshot and the term; the io is initialised and empty. */
static int write_snapshot(struct restore *r, const struct ns_node_member *v,
                          size_t n_voters, const uint8_t *state, size_t len,
                          uint64_t index, char *err, size_t errlen)
{
    struct raft_snapshot snap;
    memset(&snap, 0, sizeof snap);
    raft_configuration_init(&snap.configuration);
    int rrv = 0;
    for (size_t i = 0; rrv == 0 && i < n_voters; i++) {
        rrv = raft_configuration_add(&snap.configuration, v[i].id,
                                     v[i].raft_addr, RAFT_VOTER);
    }
    struct raft_buffer buf = {.base = (void *)state, .len = len};
    snap.index = index;
    snap.term = 1; /* a new cluster: its first term */
    snap.configuration_index = index;
    snap.bufs = &buf;
    snap.n_bufs = 1;
    r->put.data = r;
    if (rrv == 0) {
        /* trailing 0: an install, the log starts after the snapshot */
        rrv = r->io.snapshot_put(&r->io, 0, &r->put, &snap, put_cb);
    }
    if (rrv == 0) {
        while (!r->put_done && uv_run(&r->loop, UV_RUN_ONCE) != 0) {
        }
        rrv = r->put_done ? r->put_status : RAFT_IOERR;
    }
    if (rrv == 0) {
        rrv = r->io.set_term(&r->io, 1);
    }
    raft_configuration_close(&snap.configuration);
    if (rrv != 0) {
        ns_errf(err, errlen, "writing the snapshot failed: %s (%s)",
                raft_strerror(rrv), r->io.errmsg);
        return NS_EIO;
    }
    return 0;
}

int ns_node_restore_dir(const char *dir, uint64_t id, const char *raft_addr,
                        const struct ns_node_member *voters, size_t n_voters,
                        const uint8_t *state, size_t len, uint64_t index,
                        char *err, size_t errlen)
{
    struct restore *r = ns_calloc(1, sizeof *r);
    if (r == NULL) {
        return NS_ENOMEM;
    }
    int rv = prepare_dir(dir, err, errlen);
    if (rv != 0) {
        ns_free(r);
        return rv;
    }
    rv = NS_EIO;
    if (uv_loop_init(&r->loop) != 0) {
        ns_errf(err, errlen, "cannot create a loop");
        ns_free(r);
        return rv;
    }
    int rrv = raft_uv_tcp_init(&r->transport, &r->loop);
    if (rrv == 0) {
        rrv = raft_uv_init(&r->io, &r->loop, dir, &r->transport);
        if (rrv != 0) {
            raft_uv_tcp_close(&r->transport);
        }
    }
    if (rrv != 0) {
        ns_errf(err, errlen, "raft_uv_init(%s) failed: %s", dir,
                raft_strerror(rrv));
        goto err_after_loop;
    }
    r->io.data = r;
    rrv = r->io.init(&r->io, id, raft_addr);
    if (rrv != 0) {
        ns_errf(err, errlen, "cannot use data dir %s: %s (%s)", dir,
                raft_strerror(rrv), r->io.errmsg);
        raft_uv_close(&r->io);
        raft_uv_tcp_close(&r->transport);
        goto err_after_loop;
    }
    raft_term term = 0;
    raft_id vote = 0;
    struct raft_snapshot *loaded = NULL;
    raft_index start = 0;
    struct raft_entry *entries = NULL;
    size_t n_entries = 0;
    rrv =
        r->io.load(&r->io, &term, &vote, &loaded, &start, &entries, &n_entries);
    if (rrv != 0 || term != 0 || loaded != NULL || n_entries != 0) {
        /* prepare_dir saw it empty: only a concurrent writer gets here */
        ns_errf(err, errlen, "data dir %s is not pristine", dir);
        if (rrv == 0 && loaded != NULL) {
            raft_configuration_close(&loaded->configuration);
            for (unsigned i = 0; i < loaded->n_bufs; i++) {
                raft_free(loaded->bufs[i].base);
            }
            raft_free(loaded->bufs);
            raft_free(loaded);
        }
        if (rrv == 0 && n_entries > 0) {
            raft_free(entries[0].batch);
            raft_free(entries);
        }
    } else {
        rv =
            write_snapshot(r, voters, n_voters, state, len, index, err, errlen);
    }
    r->io.close(&r->io, io_closed);
    while (!r->closed && uv_run(&r->loop, UV_RUN_ONCE) != 0) {
    }
    raft_uv_close(&r->io);
    raft_uv_tcp_close(&r->transport);
err_after_loop:
    uv_run(&r->loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&r->loop) != 0 && rv == 0) {
        ns_errf(err, errlen, "the restore loop did not close cleanly");
        rv = NS_EIO;
    }
    if (rv != 0) {
        remove_written(dir);
    }
    ns_free(r);
    return rv;
}
