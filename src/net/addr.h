/* The one "a.b.c.d:port" parser of the rooms (net, gateway, observe):
 * libraft 0.15 and raftns take IPv4 literals only (docs/raft-0.15.md §8). */
#ifndef RAFTNS_NET_ADDR_H
#define RAFTNS_NET_ADDR_H

#include <uv.h>

/* Parses text (borrowed) into *sa. 0, or NS_EINVAL for anything but an IPv4
 * literal with a port 0-65535. */
int ns_addr_parse_ipv4(const char *text, struct sockaddr_in *sa);

#endif
