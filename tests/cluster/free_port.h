/* A free TCP port on 127.0.0.1 for the in-process tests of tests/cluster/
 * (header-only: each test is its own executable; include after cmocka.h). */
#ifndef RAFTNS_TEST_FREE_PORT_H
#define RAFTNS_TEST_FREE_PORT_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <uv.h>

/* Claims port among all test processes on the machine (the Python and Node
 * tiers claim the same way, tests/process/harness.py claim_port): an abstract
 * Unix socket named after the port, which only one process can bind and which
 * the kernel closes with its process; the name fills the whole sun_path,
 * NUL-padded, as Node (libuv) binds it. Tests running in parallel picked the
 * same port between one's check and its node's bind (seen in CI). */
static inline bool free_port_claim(int port)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path + 1, sizeof sa.sun_path - 1, "raftns-test-port-%d",
             port);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return false;
    }
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return false;
    }
    return true; /* fd stays open: the claim lasts as long as the process */
}

/* A port below the kernel's ephemeral range (32768 and up by default), so
 * that no outgoing connection of another test takes it between this choice and
 * the bind of the node: random in [20000, 32000), claimed, checked free by
 * binding. */
static inline int free_port(void)
{
    static unsigned seed;
    if (seed == 0) {
        seed = (unsigned)getpid() ^ (unsigned)uv_hrtime();
    }
    for (int attempt = 0; attempt < 1000; attempt++) {
        int port = 20000 + (int)(rand_r(&seed) % 12000);
        /* A claim also keeps this process from handing a port out twice: a
         * node binds its port only when it starts, so two members of one
         * cluster got one address (raft_bootstrap: "server address already in
         * use", seen once in CI). */
        if (!free_port_claim(port)) {
            continue;
        }
        uv_loop_t loop;
        uv_tcp_t t;
        struct sockaddr_in sa;
        uv_loop_init(&loop);
        uv_tcp_init(&loop, &t);
        uv_ip4_addr("127.0.0.1", port, &sa);
        int rv = uv_tcp_bind(&t, (struct sockaddr *)&sa, 0);
        if (rv == 0) {
            rv = uv_listen((uv_stream_t *)&t, 1, NULL);
        }
        uv_close((uv_handle_t *)&t, NULL);
        uv_run(&loop, UV_RUN_DEFAULT);
        assert_int_equal(uv_loop_close(&loop), 0);
        if (rv == 0) {
            return port;
        }
    }
    fail_msg("no free port in [20000, 32000)");
    return 0;
}

#endif
