/* The legal changes of a connection's state (conn_state.h), as a table. */
#include "net/conn_state.h"

/* legal[from] is the set of states from may go to, one bit per state. */
#define TO(s) (1u << (s))
static const unsigned legal[NS_CONN_N_STATES] = {
    [NS_CONN_NEW] =
        TO(NS_CONN_OPEN) | TO(NS_CONN_HANDSHAKING) | TO(NS_CONN_CLOSING),
    [NS_CONN_HANDSHAKING] = TO(NS_CONN_OPEN) | TO(NS_CONN_CLOSING),
    [NS_CONN_OPEN] = TO(NS_CONN_PAUSED) | TO(NS_CONN_CLOSING),
    [NS_CONN_PAUSED] = TO(NS_CONN_RESUMING) | TO(NS_CONN_CLOSING),
    [NS_CONN_RESUMING] = TO(NS_CONN_OPEN) | TO(NS_CONN_CLOSING),
    [NS_CONN_CLOSING] = TO(NS_CONN_CLOSED),
    [NS_CONN_CLOSED] = 0,
};
#undef TO

bool ns_conn_state_is_legal(enum ns_conn_state from, enum ns_conn_state to)
{
    if ((unsigned)from >= NS_CONN_N_STATES ||
        (unsigned)to >= NS_CONN_N_STATES) {
        return false;
    }
    return (legal[from] & (1u << to)) != 0;
}

const char *ns_conn_state_name(enum ns_conn_state s)
{
    static const char *const names[NS_CONN_N_STATES] = {
        [NS_CONN_NEW] = "new",           [NS_CONN_HANDSHAKING] = "handshaking",
        [NS_CONN_OPEN] = "open",         [NS_CONN_PAUSED] = "paused",
        [NS_CONN_RESUMING] = "resuming", [NS_CONN_CLOSING] = "closing",
        [NS_CONN_CLOSED] = "closed",
    };
    return (unsigned)s < NS_CONN_N_STATES ? names[s] : "?";
}
