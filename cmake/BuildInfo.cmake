# `tracelane --version` names the commit the binary was built from.
#
# The commit is read at build time, not only at configure time, so a rebuild after
# `git commit` or `git checkout` reports the new one. The generated header is rewritten
# only when its text changes (file(CONFIGURE)), so only main.cpp recompiles, and only then.
# The commit is `git rev-parse --short HEAD` of the source tree, with "-dirty" when tracked
# files differ from it; "unknown" when the source is not a git checkout of its own (a
# release tarball, or a tarball unpacked inside some other repository, whose commit would
# be a lie), or when git is absent. Packagers building from a tarball pass
# -DTRACELANE_GIT_COMMIT=<commit>.
#
# Only the executable gets the commit: outputs and reports name "tracelane <version>"
# (TRACELANE_VERSION), so that they stay byte-identical from one commit to the next.
set(TRACELANE_GIT_COMMIT "" CACHE STRING
    "commit for --version (default: git rev-parse --short HEAD of the source tree, else 'unknown')")
find_package(Git QUIET)

set(TRACELANE_BUILD_INFO_DIR ${CMAKE_BINARY_DIR}/generated)
add_custom_target(tracelane_build_info
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${CMAKE_SOURCE_DIR}
          -DOUTPUT=${TRACELANE_BUILD_INFO_DIR}/tracelane_build_info.hpp
          "-DGIT_EXECUTABLE=${GIT_EXECUTABLE}" "-DCOMMIT_OVERRIDE=${TRACELANE_GIT_COMMIT}"
          -P ${CMAKE_CURRENT_LIST_DIR}/WriteBuildInfo.cmake
  BYPRODUCTS ${TRACELANE_BUILD_INFO_DIR}/tracelane_build_info.hpp
  VERBATIM)

# The target includes "tracelane_build_info.hpp" (TRACELANE_GIT_COMMIT, a string literal).
function(tracelane_use_build_info target)
  add_dependencies(${target} tracelane_build_info)
  target_include_directories(${target} PRIVATE ${TRACELANE_BUILD_INFO_DIR})
endfunction()
