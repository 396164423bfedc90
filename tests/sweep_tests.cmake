# The end-to-end test of `tracelane sweep` / `tracelane report --combine` (needs the
# corpus: TRACELANE_SHARED, default <repo>/../shared; skipped with exit 77 when absent).
# Include once, after the `tracelane` target exists.
include_guard(GLOBAL)
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  add_test(NAME sweep_e2e
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/e2e/sweep_e2e.py $<TARGET_FILE:tracelane>)
  set_tests_properties(sweep_e2e PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 PROCESSORS 2 LABELS e2e)
endif()
