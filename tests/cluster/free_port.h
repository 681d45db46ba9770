/* A free TCP port on 127.0.0.1 for the in-process tests of tests/cluster/
 * (header-only: each test is its own executable; include after cmocka.h). */
#ifndef RAFTNS_TEST_FREE_PORT_H
#define RAFTNS_TEST_FREE_PORT_H

#include <stdlib.h>
#include <unistd.h>

#include <uv.h>

/* A port below the kernel's ephemeral range (32768 and up by default), so
 * that no outgoing connection of another test takes it between this choice and
 * the bind of the node: random in [20000, 32000), checked free by binding. */
static inline int free_port(void)
{
    static unsigned seed;
    /* Ports this process was given: a node binds its port only when it starts,
     * so a port handed out twice was still free at the second check, and two
     * members of one cluster got one address (raft_bootstrap: "server address
     * already in use", seen once in CI). */
    static unsigned char given[12000];
    if (seed == 0) {
        seed = (unsigned)getpid() ^ (unsigned)uv_hrtime();
    }
    for (int attempt = 0; attempt < 1000; attempt++) {
        int port = 20000 + (int)(rand_r(&seed) % 12000);
        if (given[port - 20000]) {
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
            given[port - 20000] = 1;
            return port;
        }
    }
    fail_msg("no free port in [20000, 32000)");
    return 0;
}

#endif
