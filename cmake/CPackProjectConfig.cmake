# Read by cpack for each generator (CPACK_PROJECT_CONFIG_FILE).
if(CPACK_GENERATOR STREQUAL "DEB")
  # CPack falls back to "no dependencies" when these are missing; a package that installs
  # and then fails to start on a clean machine is worse than no package.
  find_program(TRACELANE_DPKG_SHLIBDEPS dpkg-shlibdeps)
  find_program(TRACELANE_FILE file)
  if(NOT TRACELANE_DPKG_SHLIBDEPS OR NOT TRACELANE_FILE)
    message(FATAL_ERROR "cpack -G DEB needs dpkg-shlibdeps and file to find the runtime dependencies: "
                        "apt-get install dpkg-dev file")
  endif()
endif()
