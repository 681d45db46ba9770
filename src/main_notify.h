/* The systemd notify protocol (sd_notify(3)) without libsystemd: one datagram
 * per state change on the AF_UNIX socket named by $NOTIFY_SOCKET (a path, or
 * "@name" for the abstract namespace). Without $NOTIFY_SOCKET it does nothing:
 * raftns run by hand or by Type=simple units is unaffected. */
#ifndef RAFTNS_MAIN_NOTIFY_H
#define RAFTNS_MAIN_NOTIFY_H

/* Sends text ("READY=1\nSTATUS=...") to $NOTIFY_SOCKET. 0 when sent or when
 * there is no socket to send to; NS_EIO (logged) when the send failed. */
int ns_main_notify(const char *text);

#endif
