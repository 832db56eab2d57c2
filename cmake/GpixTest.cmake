# gpix_add_test(name [USES_CLI] LABELS l... SOURCES s...): a QtTest executable registered with
# ctest, linked with the shared test helpers (gpix_test_support, tests/support). Tests link
# core's internals too (src/ on the include path) so that they can check internal pieces such
# as the RAII handles. USES_CLI: the test runs the gpix CLI (GPIX_CLI_PATH, built first).
# The suites of one folder share one precompiled header: QtCore and the standard headers they
# use. QtTest pulls in about 240,000 preprocessed lines of QtCore, 7 of the 11 s a 200-line
# suite took to compile (tests/core/test_table.cpp at -O2 -g1; 6 s with the header), and CI
# compiles about 100 suites twice (the release and the ASan build). One header per folder
# because Qt defines QT_TESTCASE_BUILDDIR per folder and GCC refuses a header built under
# another definition (-Winvalid-pch, an error under GPIX_WERROR). QtTest itself stays out: its
# qtest.h reads QT_GUI_LIB and QT_WIDGETS_LIB, which the widget suites define and the others
# do not.
# The suites' own code compiles at GPIX_TEST_OPT (default -O1) in optimised builds: it is
# references and checks, not the product, and -O2 took 30-40% longer to compile (measured on
# test_arithmetic.cpp: 73 s at -O2 -g1, 49 s at -O1) while their run time is mostly the device
# compilers'. The libraries under test keep the build type's flags. Sanitizer builds set their
# own level for everything (scripts/sanitizer-build.sh).
if(GPIX_SANITIZE OR GPIX_SANITIZE_THREAD OR GPIX_FUZZ)
  set(_gpix_test_opt_default "")
else()
  set(_gpix_test_opt_default "-O1")
endif()
set(GPIX_TEST_OPT "${_gpix_test_opt_default}" CACHE STRING
    "Optimisation of the test suites' own code in Release/RelWithDebInfo builds (empty: the build type's)")
function(_gpix_test_opt target)
  if(GPIX_TEST_OPT)
    target_compile_options(${target} PRIVATE $<$<CONFIG:Release,RelWithDebInfo>:${GPIX_TEST_OPT}>)
  endif()
endfunction()

function(_gpix_test_pch_host out)
  file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  string(MAKE_C_IDENTIFIER "${rel}" id)
  set(host gpix_test_pch_${id})
  if(NOT TARGET ${host})
    add_library(${host} OBJECT ${PROJECT_SOURCE_DIR}/tests/support/pch_host.cpp)
    set_target_properties(${host} PROPERTIES AUTOMOC OFF)
    target_link_libraries(${host} PRIVATE gpix::core gpix::samples gpix_test_support Qt6::Test)
    target_include_directories(${host} PRIVATE ${PROJECT_SOURCE_DIR}/core/src ${PROJECT_SOURCE_DIR}/tests)
    target_precompile_headers(${host} PRIVATE <QtCore> <algorithm> <array> <atomic> <chrono> <cmath>
                              <cstdint> <cstring> <functional> <limits> <map> <memory> <random> <set>
                              <string> <thread> <vector>)
    gpix_warnings(${host})
    _gpix_test_opt(${host})
  endif()
  set(${out} ${host} PARENT_SCOPE)
endfunction()

function(gpix_add_test name)
  # FUNCTIONS: the test functions the ctest entry runs (default: all of them).
  cmake_parse_arguments(T "USES_CLI" "TIMEOUT" "LABELS;SOURCES;FUNCTIONS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE gpix::core gpix::samples gpix_test_support Qt6::Test)
  if(T_USES_CLI)
    target_compile_definitions(${name} PRIVATE GPIX_CLI_PATH="$<TARGET_FILE:gpix_cli>")
    add_dependencies(${name} gpix_cli)
  endif()
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/core/src ${PROJECT_SOURCE_DIR}/tests)
  gpix_warnings(${name})
  _gpix_test_opt(${name})
  _gpix_test_pch_host(host)
  target_precompile_headers(${name} REUSE_FROM ${host})
  # AUTOMOC's mocs_compilation.cpp is all but empty for suites that include their own .moc:
  # loading the 230 MB header took each from 0.02 s to 0.7 s (72 of them, a fresh clone).
  set_source_files_properties(${CMAKE_CURRENT_BINARY_DIR}/${name}_autogen/mocs_compilation.cpp
                              TARGET_DIRECTORY ${name} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
  add_test(NAME ${name} COMMAND ${name} ${T_FUNCTIONS})
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
