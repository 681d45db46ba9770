/* The version of this build: the project version of CMakeLists.txt and the
 * git revision the build was made from ("unknown" outside a git checkout).
 * Shown by --version of both binaries, /status and raftns_build_info. */
#ifndef RAFTNS_VERSION_H
#define RAFTNS_VERSION_H

/* Static strings, never NULL. */
const char *ns_version(void);
const char *ns_version_git(void);

#endif
