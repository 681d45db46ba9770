# Runs at `cmake --install` time (install(SCRIPT)): writes raftns@.service with the path the
# binary is installed at, so `--prefix` and DESTDIR are honoured without re-running cmake.
set(bin "${CMAKE_INSTALL_PREFIX}/@CMAKE_INSTALL_SBINDIR@/raftns")
set(unit_dir "@RAFTNS_SYSTEMD_UNIT_DIR@")
if(NOT IS_ABSOLUTE "${unit_dir}")
  set(unit_dir "${CMAKE_INSTALL_PREFIX}/${unit_dir}")
endif()
file(READ "@CMAKE_SOURCE_DIR@/packaging/raftns@.service.in" text)
string(REPLACE "{{RAFTNS_BINARY}}" "${bin}" text "${text}")
file(WRITE "@CMAKE_BINARY_DIR@/raftns@.service" "${text}")
file(INSTALL "@CMAKE_BINARY_DIR@/raftns@.service" DESTINATION "${unit_dir}")
