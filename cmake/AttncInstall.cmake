# Install rules: `cmake --install build --prefix P` gives a relocatable
# package that another CMake project uses with find_package(attnc):
#
#   P/bin/attnc                          the compiler (attnc::attnc)
#   P/lib/libattnrt.a, libattnrt.so*     the runtime (attnc::attnrt, attnc::attnrt_shared)
#   P/include/attnc/attnrt.h
#   P/lib/cmake/attnc/                   attncConfig.cmake, attncConfigVersion.cmake,
#                                        attncTargets*.cmake, AttncAddKernel.cmake
#
# Included by the top-level CMakeLists.txt after every target exists.
# examples/embed/ is a project that uses the installed package; the ctest
# embed.install-and-build (tests/embed/) installs the build and builds it.

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(ATTNC_INSTALL_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/attnc" CACHE STRING
    "Where the attnc CMake package goes, relative to the install prefix")
mark_as_advanced(ATTNC_INSTALL_CMAKEDIR)

# attnc links libLLVM/libMLIR from /usr/lib/llvm-19/lib, which is not on the
# loader's path: keep the directories of libraries from outside this build in
# the installed executable's RUNPATH (the build tree's own are dropped).
set_target_properties(attnc PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)

install(TARGETS attnc attnrt attnrt_shared
  EXPORT attncTargets
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT attnc
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT attnrt
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT attnrt
          NAMELINK_COMPONENT attnrt
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES ${PROJECT_SOURCE_DIR}/runtime/include/attnc/attnrt.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/attnc COMPONENT attnrt)

# The static attnrt carries $<LINK_ONLY:attnc::pthreadpool> and
# $<LINK_ONLY:Threads::Threads> in its exported link interface;
# attncConfig.cmake defines both before it loads the targets.
install(EXPORT attncTargets
  NAMESPACE attnc::
  DESTINATION ${ATTNC_INSTALL_CMAKEDIR}
  COMPONENT attnc)

configure_package_config_file(
  ${CMAKE_CURRENT_LIST_DIR}/attncConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/attncConfig.cmake
  INSTALL_DESTINATION ${ATTNC_INSTALL_CMAKEDIR})
# 0.x: a new minor version may change the kernel ABI or the command line.
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/cmake/attncConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/cmake/attncConfig.cmake
  ${PROJECT_BINARY_DIR}/cmake/attncConfigVersion.cmake
  ${CMAKE_CURRENT_LIST_DIR}/AttncAddKernel.cmake
  DESTINATION ${ATTNC_INSTALL_CMAKEDIR}
  COMPONENT attnc)
