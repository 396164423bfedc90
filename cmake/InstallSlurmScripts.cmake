# Runs at install time (cmake --install, cpack): installs slurm/* into
# PREFIX/share/tracelane/slurm with `installed_tracelane=` set to PREFIX/bin/tracelane,
# single-quoted for bash. The variables come from Install.cmake (install(CODE)).
cmake_minimum_required(VERSION 3.20)  # install scripts run with the oldest policies otherwise
foreach(var TRACELANE_SOURCE_DIR TRACELANE_STAGING_DIR TRACELANE_SLURM_SCRIPTS TRACELANE_BINDIR TRACELANE_SLURM_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "InstallSlurmScripts.cmake: ${var} is not set (run through cmake --install)")
  endif()
endforeach()

# The path the installed scripts run: without DESTDIR, which only stages the tree.
if(IS_ABSOLUTE "${TRACELANE_BINDIR}")
  set(binary "${TRACELANE_BINDIR}/tracelane")
else()
  set(binary "${CMAKE_INSTALL_PREFIX}/${TRACELANE_BINDIR}/tracelane")
endif()
# A relative --prefix is relative to the working directory, as file(INSTALL) takes it.
if(NOT IS_ABSOLUTE "${binary}")
  get_filename_component(binary "${binary}" ABSOLUTE)  # cmake --install: against the cwd
endif()
string(REPLACE "'" "'\\''" quoted "${binary}")

# One staging directory per destination, so installs into two prefixes at once do not mix.
string(MD5 key "$ENV{DESTDIR}|${CMAKE_INSTALL_PREFIX}")
set(staging "${TRACELANE_STAGING_DIR}/${key}")
file(REMOVE_RECURSE "${staging}")
file(MAKE_DIRECTORY "${staging}")
set(staged)
foreach(script IN LISTS TRACELANE_SLURM_SCRIPTS)
  file(READ "${TRACELANE_SOURCE_DIR}/slurm/${script}" text)
  string(REPLACE "\ninstalled_tracelane=\n" "\ninstalled_tracelane='${quoted}'\n" installed "${text}")
  if(installed STREQUAL text)
    message(FATAL_ERROR "slurm/${script}: no line `installed_tracelane=` to set to the installed binary")
  endif()
  file(WRITE "${staging}/${script}" "${installed}")
  list(APPEND staged "${staging}/${script}")
endforeach()
if(IS_ABSOLUTE "${TRACELANE_SLURM_DIR}")
  set(destination "${TRACELANE_SLURM_DIR}")
else()
  set(destination "${CMAKE_INSTALL_PREFIX}/${TRACELANE_SLURM_DIR}")
endif()
file(INSTALL DESTINATION "${destination}" TYPE PROGRAM FILES ${staged})
file(REMOVE_RECURSE "${staging}")
