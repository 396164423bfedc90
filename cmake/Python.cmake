# The Python package `tracelane` (src/python/): the module tracelane._core
# (src/python/module.cpp, pybind11) linked with the libraries the command line is built
# from, and the package's Python files around it, laid out in BUILD/python/tracelane/ so
# that PYTHONPATH=BUILD/python imports it (the ctests do). Optional: without Python's
# headers or pybind11 (Debian 12: python3-dev, pybind11-dev) it is left out, saying so,
# and the rest builds and tests as before.
#
#   pip install --no-build-isolation .             # setup.py runs this file's build
#   cmake --install build --component python       # into the interpreter's site-packages
#   cmake -DTRACELANE_INSTALL_PYTHON=ON ...         # ... with every `cmake --install`
#
# The interpreter is Python3_EXECUTABLE when given (pip passes the one it runs under),
# else Debian's /usr/bin/python3 (the one python3-pybind11 and python3-torch serve; a
# pyenv or conda python3 first on PATH would otherwise be taken), else python3 on PATH.
if(NOT Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
  set(Python3_EXECUTABLE /usr/bin/python3)
endif()
find_package(Python3 3.9 COMPONENTS Interpreter Development.Module)
if(Python3_FOUND)
  find_package(pybind11 2.10 CONFIG QUIET)
endif()
if(NOT Python3_FOUND OR NOT pybind11_FOUND)
  message(STATUS "tracelane: the Python module and its tests are left out: they need Python's headers and "
                 "pybind11 (apt-get install python3-dev pybind11-dev)")
  return()
endif()
message(STATUS "tracelane: the Python module is built for ${Python3_EXECUTABLE} (${Python3_VERSION}), "
               "pybind11 ${pybind11_VERSION}")

# The libraries go into a shared object: position-independent code. -fno-semantic-interposition
# keeps the code the executable gets as it was with -fPIE (Debian's default): calls between
# our own functions stay direct and inlinable, since nothing interposes them.
set_target_properties(tracelane_core tracelane_check tracelane_cli PROPERTIES POSITION_INDEPENDENT_CODE ON)
foreach(library tracelane_core tracelane_check tracelane_cli)
  target_compile_options(${library} PRIVATE -fno-semantic-interposition)
endforeach()

# NO_EXTRAS: no link-time optimisation or stripping of the module (the libraries are
# built as they are for the executable); its own symbols are hidden all the same.
pybind11_add_module(tracelane_python MODULE NO_EXTRAS src/python/module.cpp)
set_target_properties(tracelane_python PROPERTIES
  OUTPUT_NAME _core
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/python/tracelane
  CXX_VISIBILITY_PRESET hidden
  VISIBILITY_INLINES_HIDDEN ON)
target_link_libraries(tracelane_python PRIVATE tracelane_cli)

# The package's Python files beside the module, copied whenever they change.
file(GLOB TRACELANE_PYTHON_FILES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/python/tracelane/*.py)
set(python_copies)
foreach(source ${TRACELANE_PYTHON_FILES})
  get_filename_component(name ${source} NAME)
  set(copy ${CMAKE_BINARY_DIR}/python/tracelane/${name})
  add_custom_command(OUTPUT ${copy} COMMAND ${CMAKE_COMMAND} -E copy_if_different ${source} ${copy}
                     DEPENDS ${source} COMMENT "tracelane package: ${name}")
  list(APPEND python_copies ${copy})
endforeach()
add_custom_target(tracelane_python_files ALL DEPENDS ${python_copies})
add_dependencies(tracelane_python tracelane_python_files)

# cmake --install: the package into the interpreter's own site-packages (an absolute
# path: --prefix does not move it, DESTDIR does), as the component `python`, which a plain
# `cmake --install` and the Debian package leave out unless TRACELANE_INSTALL_PYTHON is ON.
execute_process(COMMAND ${Python3_EXECUTABLE} -c "import sysconfig; print(sysconfig.get_path('platlib'))"
                OUTPUT_VARIABLE python_platlib OUTPUT_STRIP_TRAILING_WHITESPACE)
set(TRACELANE_PYTHON_INSTALL_DIR "${python_platlib}" CACHE PATH
    "where cmake --install puts the tracelane package (default: the interpreter's site-packages)")
option(TRACELANE_INSTALL_PYTHON "cmake --install also installs the Python package (component python)" OFF)
set(python_exclude EXCLUDE_FROM_ALL)
if(TRACELANE_INSTALL_PYTHON)
  set(python_exclude)
endif()
install(TARGETS tracelane_python LIBRARY DESTINATION ${TRACELANE_PYTHON_INSTALL_DIR}/tracelane
        COMPONENT python ${python_exclude})
install(FILES ${TRACELANE_PYTHON_FILES} DESTINATION ${TRACELANE_PYTHON_INSTALL_DIR}/tracelane
        COMPONENT python ${python_exclude})
