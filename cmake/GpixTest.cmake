# gpix_add_test(name LABELS l... SOURCES s...): a QtTest executable registered with ctest.
# Tests link core's internals too (src/ on the include path) so that they can check
# internal pieces such as the RAII handles.
function(gpix_add_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "LABELS;SOURCES" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE gpix::core gpix::samples Qt6::Test)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/core/src ${PROJECT_SOURCE_DIR}/tests)
  gpix_warnings(${name})
  add_test(NAME ${name} COMMAND ${name})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 600)
  endif()
  # QtTest's own watchdog (300 s per test function) would abort a data-driven suite whose
  # first run compiles every kernel variant on a slow CPU compiler (PoCL, cold caches); ctest's
  # TIMEOUT is the one limit.
  math(EXPR _ms "${T_TIMEOUT} * 1000")
  set_tests_properties(${name} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
                       ENVIRONMENT "QT_QPA_PLATFORM=offscreen;QTEST_FUNCTION_TIMEOUT=${_ms}")
endfunction()
