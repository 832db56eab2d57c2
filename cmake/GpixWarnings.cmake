# gpix_warnings(target): the project's warning set; errors when GPIX_WERROR is on (CI turns it on).
function(gpix_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                         -Wno-sign-conversion -Wnon-virtual-dtor -Woverloaded-virtual)
  if(GPIX_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()

# gpix_precompile(target [WIDGETS]): a precompiled header of the standard library headers the
# target's sources share (and with WIDGETS, <QtWidgets>), built once per target. Parsing those
# headers was a quarter to a third of a core source's compile (core/src/array.cpp: 5.8 s, 3.7 s
# with such a header), and CI compiles core three times (release, ASan, TSan) on 2 cores.
# Sources still include what they use: the header only makes it cheaper.
function(gpix_precompile target)
  cmake_parse_arguments(P "WIDGETS" "" "" ${ARGN})
  set(headers <algorithm> <array> <atomic> <chrono> <cmath> <cstddef> <cstdint> <cstring>
              <functional> <limits> <map> <memory> <mutex> <optional> <span> <string>
              <string_view> <utility> <vector>)
  if(P_WIDGETS)
    list(APPEND headers <QtWidgets>)
  endif()
  target_precompile_headers(${target} PRIVATE ${headers})
endfunction()
