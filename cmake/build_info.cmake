# Writes OUT (a C header with the git revision of SRC) at build time, and
# touches it only when the revision changed, so a commit is picked up by the
# next build without re-running cmake and an unchanged tree rebuilds nothing.
execute_process(COMMAND git -C "${SRC}" describe --always --dirty --abbrev=12
                OUTPUT_VARIABLE rev ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR rev STREQUAL "")
  set(rev "unknown")
endif()
file(WRITE "${OUT}.tmp" "#define NS_BUILD_GIT_REV \"${rev}\"\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
file(REMOVE "${OUT}.tmp")
