/* The version strings of include/raftns/version.h, from the definitions CMake
 * passes (NS_BUILD_VERSION) and the header it regenerates on every build
 * (raftns_build_rev.h, cmake/build_info.cmake). Nothing else. */
#include "raftns/version.h"

#include "raftns_build_rev.h"

#ifndef NS_BUILD_VERSION
#define NS_BUILD_VERSION "0.0.0"
#endif

const char *ns_version(void)
{
    return NS_BUILD_VERSION;
}

const char *ns_version_git(void)
{
    return NS_BUILD_GIT_REV;
}
