# Install rules and the Debian package.
#
#   cmake --install build --prefix PREFIX      # PREFIX/bin/tracelane, man page, completion,
#                                              # PREFIX/share/tracelane/slurm/
#   (cd build && cpack -G DEB)                 # tracelane_<version>_<arch>.deb, under /usr
#
# The Slurm scripts are installed with the path of the binary installed beside them
# (slurm/*: `installed_tracelane=`), because sbatch runs a spooled copy of a batch script:
# the script's own location cannot lead to PREFIX/bin. The path is written at install
# time, so `cmake --install --prefix` and DESTDIR staging (cpack) both get it right.
# tests/install/ checks the installed tree (ctest install_tree) and the package
# (ctest -L deb).
include(GNUInstallDirs)

# Directories we create are 0755 whatever the installer's umask: a group- or
# world-writable PREFIX/share/tracelane/slurm would let others swap the scripts jobs run.
set(CMAKE_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
    OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)

install(TARGETS tracelane RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES ${CMAKE_SOURCE_DIR}/docs/tracelane.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
# bash-completion loads completions/<command> on first use from
# $XDG_DATA_HOME/bash-completion/completions (default ~/.local/share/...: an install into
# ~/.local) and from <dir>/bash-completion/completions for each <dir> of XDG_DATA_DIRS
# (default /usr/local/share:/usr/share; a module for another prefix adds PREFIX/share).
install(FILES ${CMAKE_SOURCE_DIR}/completion/tracelane.bash
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME tracelane)

set(TRACELANE_SLURM_SCRIPTS submit.sh tracelane-sweep.sbatch tracelane-plan.sbatch tracelane-array.sbatch
    tracelane-combine.sbatch)
install(FILES ${CMAKE_SOURCE_DIR}/slurm/README.md DESTINATION ${CMAKE_INSTALL_DATADIR}/tracelane/slurm)
install(CODE "
  set(TRACELANE_SOURCE_DIR \"${CMAKE_SOURCE_DIR}\")
  set(TRACELANE_STAGING_DIR \"${CMAKE_BINARY_DIR}/install-slurm\")
  set(TRACELANE_SLURM_SCRIPTS \"${TRACELANE_SLURM_SCRIPTS}\")
  set(TRACELANE_BINDIR \"${CMAKE_INSTALL_BINDIR}\")
  set(TRACELANE_SLURM_DIR \"${CMAKE_INSTALL_DATADIR}/tracelane/slurm\")")
install(SCRIPT ${CMAKE_CURRENT_LIST_DIR}/InstallSlurmScripts.cmake)

# --- the Debian package (cpack -G DEB) ----------------------------------------------------
set(TRACELANE_PACKAGE_MAINTAINER "tracelane maintainers <tracelane@invalid>" CACHE STRING
    "Maintainer field of the Debian package: Name <email>")
set(CPACK_PACKAGE_NAME tracelane)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "${TRACELANE_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "compact PyTorch profiler traces of CUDA-graph runs into a few GPU lanes")
set(TRACELANE_PACKAGE_CPU_NOTE "")
if(TRACELANE_MARCH AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
  set(TRACELANE_PACKAGE_CPU_NOTE "\n .\n This build needs a CPU that runs -march=${TRACELANE_MARCH} code")
  if(TRACELANE_MARCH STREQUAL "haswell")
    string(APPEND TRACELANE_PACKAGE_CPU_NOTE " (AVX2, BMI2, PCLMUL)")
  endif()
  string(APPEND TRACELANE_PACKAGE_CPU_NOTE ".")
endif()
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "${CPACK_PACKAGE_DESCRIPTION_SUMMARY}
 tracelane repacks the measured GPU slices of PyTorch profiler (Kineto) traces of
 CUDA-graph runs into a few semantic lanes (compute, NCCL collectives, memcpy,
 memset, sync) without changing any measured value, merges the per-rank traces
 of a pipeline-parallel job into one timeline, and sweeps whole outputs trees,
 also as Slurm job arrays (scripts in /usr/share/tracelane/slurm).${TRACELANE_PACKAGE_CPU_NOTE}")
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # tracelane_<version>_<arch>.deb
# Stage with DESTDIR and CMAKE_INSTALL_PREFIX=/usr (CPACK_INSTALL_PREFIX, whatever the
# build's own CMAKE_INSTALL_PREFIX), not with a prefix inside the staging directory, so
# that the Slurm scripts name /usr/bin/tracelane.
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
# Runtime dependencies: dpkg-shlibdeps maps every library the binary links to the Debian
# package that ships it (libtbb12, libsimdjson14, libdeflate0, libboost-*1.74.0, ...).
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "slurm-client")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
set(CPACK_STRIP_FILES ON)
# Without dpkg-shlibdeps CPack would quietly build a package with no dependencies.
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_CURRENT_LIST_DIR}/CPackProjectConfig.cmake)
set(CPACK_GENERATOR DEB)
set(CPACK_SOURCE_GENERATOR "")
include(CPack)
