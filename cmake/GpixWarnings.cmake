# gpix_warnings(target): the project's warning set; errors when GPIX_WERROR is on (CI turns it on).
function(gpix_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wconversion
                         -Wno-sign-conversion -Wnon-virtual-dtor -Woverloaded-virtual)
  if(GPIX_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
