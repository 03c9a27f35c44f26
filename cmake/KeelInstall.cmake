# What `cmake --install` adds beyond the targets: the CMake package
# (keelConfig.cmake, its version file, the exported targets, keel_add_plugin
# and its version script) and the pkg-config files. Every path in them is
# relative to where they are installed, so a moved prefix keeps working.
include(CMakePackageConfigHelpers)
set(KEEL_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/keel)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/keelConfig.cmake.in
  ${CMAKE_BINARY_DIR}/keelConfig.cmake INSTALL_DESTINATION ${KEEL_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/keelConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(EXPORT keelTargets NAMESPACE keel:: DESTINATION ${KEEL_CMAKE_DIR})
install(FILES
  ${CMAKE_BINARY_DIR}/keelConfig.cmake
  ${CMAKE_BINARY_DIR}/keelConfigVersion.cmake
  ${CMAKE_CURRENT_LIST_DIR}/KeelPlugin.cmake
  ${CMAKE_CURRENT_LIST_DIR}/keel_plugin_exports.map
  DESTINATION ${KEEL_CMAKE_DIR})
file(RELATIVE_PATH _keel_pc_up /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
set(KEEL_PC_PREFIX "\${pcfiledir}/${_keel_pc_up}")
foreach(pc keel keel-plugin-sdk)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/${pc}.pc.in ${CMAKE_BINARY_DIR}/pkgconfig/${pc}.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/pkgconfig/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/docs/kernels.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
