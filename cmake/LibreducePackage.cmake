# SPDX-License-Identifier: BSD-3-Clause
# Install rules, the CMake package (find_package(libreduce) -> libreduce::reduce) and a
# pkg-config file (pkg-config --cflags --libs libreduce).
include(CMakePackageConfigHelpers)

set(LIBREDUCE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/libreduce)

install(TARGETS reduce EXPORT libreduceTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS reduce-info reduce-probe RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/libreduce DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES LICENSE DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES ${PROJECT_BINARY_DIR}/include/libreduce/config.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/libreduce)

install(EXPORT libreduceTargets NAMESPACE libreduce:: DESTINATION ${LIBREDUCE_CMAKE_DIR})
configure_package_config_file(cmake/libreduceConfig.cmake.in
  ${PROJECT_BINARY_DIR}/libreduceConfig.cmake INSTALL_DESTINATION ${LIBREDUCE_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/libreduceConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/libreduceConfig.cmake
              ${PROJECT_BINARY_DIR}/libreduceConfigVersion.cmake
        DESTINATION ${LIBREDUCE_CMAKE_DIR})

configure_file(cmake/libreduce.pc.in ${PROJECT_BINARY_DIR}/libreduce.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/libreduce.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
