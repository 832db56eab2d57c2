# Debian packages through CPack (`cd build && cpack -G DEB`):
#   gpix      the "runtime" component: gpix, gpix-viewer, the shared libraries and the gpix
#             plugin. dpkg-shlibdeps declares the Debian packages of every library they link;
#             an OpenCL driver is added by hand (gpix opens it through the ICD loader, so no
#             library names it), PoCL by default so that a machine without a GPU has a device.
#   gpix-dev  the "development" component: headers, the libraries' unversioned names and the
#             CMake package, with the -dev packages gpixConfig.cmake looks for.
# Built from an install of /usr, so the programs find the plugin in /usr/lib/gpix/plugins.
set(CPACK_PACKAGE_NAME gpix)
set(CPACK_PACKAGE_VENDOR "gpix")
set(CPACK_PACKAGE_CONTACT "gpix maintainers <gpix@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_COMPONENTS_ALL runtime development)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME gpix)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "pocl-opencl-icd | opencl-icd")
# The first line of each package's description is the project's DESCRIPTION (CPack prepends it).
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION "The gpix command line tool, the gpix-viewer application, the gpix Qt plugin
and the shared libraries they use (OpenCL; CUDA is loaded at run time where a driver is).")

set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME gpix-dev)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_DEPENDS "libdlpack-dev, qt6-base-dev, libinsighttoolkit5-dev")
set(CPACK_DEBIAN_DEVELOPMENT_DESCRIPTION "Development files: the headers and the CMake package
(find_package(gpix COMPONENTS core io qt host ui)).")
set(CPACK_COMPONENT_DEVELOPMENT_DEPENDS runtime)

include(CPack)
