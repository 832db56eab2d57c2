# gpix_add_test(name [USES_CLI] LABELS l... SOURCES s...): a QtTest executable registered with
# ctest, linked with the shared test helpers (gpix_test_support, tests/support). Tests link
# core's internals too (src/ on the include path) so that they can check internal pieces such
# as the RAII handles. USES_CLI: the test runs the gpix CLI (GPIX_CLI_PATH, built first).
function(gpix_add_test name)
  cmake_parse_arguments(T "USES_CLI" "TIMEOUT" "LABELS;SOURCES" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE gpix::core gpix::samples gpix_test_support Qt6::Test)
  if(T_USES_CLI)
    target_compile_definitions(${name} PRIVATE GPIX_CLI_PATH="$<TARGET_FILE:gpix_cli>")
    add_dependencies(${name} gpix_cli)
  endif()
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
