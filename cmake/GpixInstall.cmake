# How gpix installs: one install component for what programs need at run time ("runtime": the
# shared libraries, the programs, the plugin) and one for building against gpix ("development":
# headers, the libraries' unversioned names, the CMake package). CPack turns them into the
# gpix and gpix-dev Debian packages (GpixPackage.cmake).
include(GNUInstallDirs)
set(GPIX_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/gpix)
# Fixed, not under CMAKE_INSTALL_LIBDIR: PluginLoader::default_search_paths looks in
# <bin>/../lib/gpix/plugins whatever the platform's library folder is.
set(GPIX_INSTALL_PLUGINDIR lib/gpix/plugins)

# gpix_install_library(TARGET NAME name [HEADERS dir...]): installs a shared (or interface)
# library as the package component gpix::<name> with its SOVERSION, an export set of its own (so
# that a user of gpix::core never needs ITK or Qt) and the public headers below each dir (as they
# are laid out there, *.h only).
function(gpix_install_library target)
  cmake_parse_arguments(L "" "NAME" "HEADERS" ${ARGN})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${L_NAME})
  get_target_property(_type ${target} TYPE)
  if(NOT _type STREQUAL "INTERFACE_LIBRARY")
    set_target_properties(${target} PROPERTIES VERSION ${PROJECT_VERSION}
                          SOVERSION ${PROJECT_VERSION_MAJOR})
  endif()
  install(TARGETS ${target} EXPORT gpix_${L_NAME}
          LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime
                  NAMELINK_COMPONENT development
          INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT gpix_${L_NAME} NAMESPACE gpix:: FILE gpix_${L_NAME}Targets.cmake
          DESTINATION ${GPIX_INSTALL_CMAKEDIR} COMPONENT development)
  foreach(_dir ${L_HEADERS})
    install(DIRECTORY ${_dir}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT development
            FILES_MATCHING PATTERN "*.h")
  endforeach()
  set_property(GLOBAL APPEND PROPERTY GPIX_EXPORTED_COMPONENTS ${L_NAME})
endfunction()

# gpix_install_package(): gpixConfig.cmake over the components installed above; called last.
function(gpix_install_package)
  include(CMakePackageConfigHelpers)
  get_property(GPIX_EXPORTED_COMPONENTS GLOBAL PROPERTY GPIX_EXPORTED_COMPONENTS)
  if(TARGET gpix_plugin)
    set(GPIX_HAVE_PLUGIN 1)
  else()
    set(GPIX_HAVE_PLUGIN 0)
  endif()
  configure_package_config_file(cmake/gpixConfig.cmake.in ${PROJECT_BINARY_DIR}/gpixConfig.cmake
                                INSTALL_DESTINATION ${GPIX_INSTALL_CMAKEDIR}
                                PATH_VARS GPIX_INSTALL_PLUGINDIR)
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/gpixConfigVersion.cmake
                                   COMPATIBILITY SameMinorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/gpixConfig.cmake ${PROJECT_BINARY_DIR}/gpixConfigVersion.cmake
          DESTINATION ${GPIX_INSTALL_CMAKEDIR} COMPONENT development)
endfunction()
