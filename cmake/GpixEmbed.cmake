# gpix_embed(TARGET <name> NAMESPACE <c++ namespace> FILES <file>...)
# Turns each file into a {name, data, sha256} entry compiled into an object library <name>.
# The generated files are rewritten only when their content changes, so editing one kernel
# does not rebuild the rest.
set(_GPIX_EMBED_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/GpixEmbedScript.cmake)

function(gpix_embed)
  cmake_parse_arguments(E "" "TARGET;NAMESPACE" "FILES" ${ARGN})
  set(out_dir ${CMAKE_CURRENT_BINARY_DIR}/${E_TARGET}_embed)
  set(out_cpp ${out_dir}/${E_TARGET}.cpp)
  set(out_h ${out_dir}/${E_TARGET}.h)
  set(abs_files)
  foreach(f ${E_FILES})
    get_filename_component(af ${f} ABSOLUTE)
    list(APPEND abs_files ${af})
  endforeach()
  string(REPLACE ";" "|" files_arg "${abs_files}")
  add_custom_command(
    OUTPUT ${out_cpp} ${out_h}
    COMMAND ${CMAKE_COMMAND} -DOUT_CPP=${out_cpp} -DOUT_H=${out_h} -DNS=${E_NAMESPACE}
            "-DFILES=${files_arg}" -P ${_GPIX_EMBED_SCRIPT}
    DEPENDS ${abs_files} ${_GPIX_EMBED_SCRIPT}
    COMMENT "Embedding ${E_TARGET}"
    VERBATIM)
  add_library(${E_TARGET} OBJECT ${out_cpp} ${out_h})
  target_include_directories(${E_TARGET} PUBLIC $<BUILD_INTERFACE:${out_dir}>)
  set_target_properties(${E_TARGET} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_compile_features(${E_TARGET} PUBLIC cxx_std_20)
endfunction()
