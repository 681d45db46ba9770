/* The forked snapshot encoder (include/raftns/snapshot_fork.h). Why fork and
 * not a thread over the live state: applies keep running on the loop while a
 * snapshot is written, and the state has no immutable or copy-on-write view of
 * its own; the kernel's copy-on-write gives one for the price of the page
 * tables, and the parent keeps no second copy of the state (a page is copied
 * only when the parent changes it during the encoding). The child touches no
 * fd but its pipe and leaves with _exit (no atexit handlers, no stdio
 * flush, no LeakSanitizer pass over the parent's heap). */
#include "raftns/snapshot_fork.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "raftns/buf.h"
#include "raftns/err.h"

/* WARNING: the pipe's framing, known only to this file: u64 little-endian
 * length, then the encoding. A child that fails writes nothing. */
static int write_all(int fd, const uint8_t *p, size_t len)
{
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return -1;
        }
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

static int read_all(int fd, uint8_t *p, size_t len)
{
    while (len > 0) {
        ssize_t r = read(fd, p, len);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            return -1;
        }
        p += r;
        len -= (size_t)r;
    }
    return 0;
}

static void run_child(int fd, const struct ns_state *s, bool digest)
{
    struct ns_buf b;
    ns_buf_init(&b);
    int rv;
    if (digest) {
        uint64_t h = 0;
        rv = ns_snapshot_digest(s, &h);
        ns_buf_put_u64(&b, h);
    } else {
        rv = ns_snapshot_encode(s, &b);
    }
    if (rv == 0 && b.err == 0) {
        uint8_t hdr[8];
        uint64_t n = b.len;
        for (int i = 0; i < 8; i++) {
            hdr[i] = (uint8_t)(n >> (8 * i));
        }
        rv = write_all(fd, hdr, sizeof hdr) == 0 &&
                     write_all(fd, b.data, b.len) == 0
                 ? 0
                 : NS_EIO;
    } else {
        rv = NS_EIO;
    }
    _exit(rv == 0 ? 0 : 1);
}

static void reap_zombie(struct ns_snapshot_fork *f, bool wait);

static int start(struct ns_snapshot_fork *f, const struct ns_state *s,
                 bool digest)
{
    int p[2];
    reap_zombie(f, false);
    f->pid = 0;
    f->fd = -1;
    if (pipe2(p, O_CLOEXEC) != 0) {
        return NS_EIO;
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return NS_EIO;
    }
    if (pid == 0) {
        /* Nothing of the parent's but the pipe: a child must not keep the
         * data dir's flock or a listening socket after the parent died (a
         * restart would find them taken), and it dies with the parent. */
        close(p[0]);
        int w = p[1];
        if (w >= 3) {
            if (w > 3) {
                close_range(3, (unsigned)w - 1, 0);
            }
            close_range((unsigned)w + 1, ~0u, 0);
        } else {
            close_range(3, ~0u, 0); /* unlikely: stdio was closed */
        }
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        /* The parent may stop without reading (killed, or closing): a write
         * then fails with EPIPE instead of killing the child by SIGPIPE, and
         * the child leaves. */
        signal(SIGPIPE, SIG_IGN);
        run_child(p[1], s, digest);
    }
    close(p[1]);
    f->pid = pid;
    f->fd = p[0];
    return 0;
}

int ns_snapshot_fork_freeze(struct ns_snapshot_fork *f,
                            const struct ns_state *s)
{
    return start(f, s, false);
}

int ns_snapshot_fork_digest(struct ns_snapshot_fork *f,
                            const struct ns_state *s)
{
    return start(f, s, true);
}

bool ns_snapshot_fork_is_done(const struct ns_snapshot_fork *f)
{
    struct pollfd pfd = {.fd = f->fd, .events = POLLIN};
    return f->fd >= 0 && poll(&pfd, 1, 0) == 1;
}

/* A child that wrote its result may take a while to exit (tearing down its
 * copy of hundreds of MiB of mappings): the loop does not wait for that, it
 * reaps the child later. */
static void reap_zombie(struct ns_snapshot_fork *f, bool wait)
{
    if (f->zombie <= 0) {
        return;
    }
    pid_t got;
    do {
        got = waitpid(f->zombie, NULL, wait ? 0 : WNOHANG);
    } while (got < 0 && errno == EINTR);
    if (got != 0) {
        f->zombie = 0; /* reaped (or not ours any more) */
    }
}

int ns_snapshot_fork_collect_digest(struct ns_snapshot_fork *f, uint64_t *out)
{
    uint8_t b[16];
    int rv = read_all(f->fd, b, sizeof b) == 0 ? 0 : NS_EIO;
    close(f->fd);
    f->fd = -1;
    struct ns_rd in;
    ns_rd_init(&in, b, sizeof b);
    /* the pipe's framing: the u64 little-endian length 8, then the digest */
    if (rv == 0 &&
        (b[0] != 8 || b[1] | b[2] | b[3] | b[4] | b[5] | b[6] | b[7])) {
        rv = NS_EIO;
    }
    if (rv == 0) {
        ns_rd_init(&in, b + 8, 8);
        *out = ns_rd_u64(&in); /* as ns_buf_put_u64 wrote it */
    }
    if (rv != 0) {
        kill(f->pid, SIGKILL);
    }
    reap_zombie(f, true); /* at most one is left behind */
    pid_t got;
    do {
        got = waitpid(f->pid, NULL, WNOHANG);
    } while (got < 0 && errno == EINTR);
    f->zombie = got == 0 ? f->pid : 0;
    f->pid = 0;
    return rv;
}

int ns_snapshot_fork_collect(struct ns_snapshot_fork *f,
                             void *(*alloc_fn)(size_t), void (*free_fn)(void *),
                             uint8_t **data, size_t *len)
{
    uint8_t hdr[8];
    uint8_t *p = NULL;
    uint64_t n = 0;
    int rv = NS_EIO;
    if (read_all(f->fd, hdr, sizeof hdr) == 0) {
        for (int i = 7; i >= 0; i--) {
            n = n << 8 | hdr[i];
        }
        p = n < SIZE_MAX ? alloc_fn(n > 0 ? (size_t)n : 1) : NULL;
        rv = p == NULL                            ? NS_ENOMEM
             : read_all(f->fd, p, (size_t)n) == 0 ? 0
                                                  : NS_EIO;
    }
    if (rv == NS_ENOMEM) {
        kill(f->pid, SIGKILL); /* it may block on the full pipe */
    }
    close(f->fd);
    f->fd = -1;
    int status = 0;
    pid_t got;
    do {
        got = waitpid(f->pid, &status, 0);
    } while (got < 0 && errno == EINTR);
    f->pid = 0;
    if (rv == 0 &&
        (got < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
        rv = NS_EIO;
    }
    if (rv != 0) {
        free_fn(p); /* NULL-safe, as free */
        return rv;
    }
    *data = p;
    *len = (size_t)n;
    return 0;
}

void ns_snapshot_fork_abandon(struct ns_snapshot_fork *f)
{
    reap_zombie(f, true);
    if (f->fd >= 0) {
        close(f->fd);
        f->fd = -1;
    }
    if (f->pid > 0) {
        kill(f->pid, SIGKILL);
        while (waitpid(f->pid, NULL, 0) < 0 && errno == EINTR) {
        }
        f->pid = 0;
    }
}
