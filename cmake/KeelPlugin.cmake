# keel_add_plugin(<type> SOURCES ...): a plugin library libkeel_<type>.so that
# exports only the entry symbol (a version script), installed into
# <libdir>/keel/plugins, where the runtime beside it looks.
#
# Used inside keel's tree and, installed with keelConfig.cmake, by vendors
# out of tree (find_package(keel) then keel_add_plugin). A project with C++
# enabled also links keel::plugin_support (the C-error boundary, host
# logging, kernel-argument validation); a C-only project gets keel.h alone.
#
# A plugin builds from keel.h (keel::api), keel::base and keel::plugin_support
# only: the runtime's headers are never on its include path, so a stray
# #include of one fails to compile, and linking the runtime fails the
# configuration (checked once every directory has been processed).
set(KEEL_PLUGIN_EXPORTS_MAP ${CMAKE_CURRENT_LIST_DIR}/keel_plugin_exports.map)
include(GNUInstallDirs)
if(NOT DEFINED KEEL_INSTALL_PLUGIN_DIR)
  set(KEEL_INSTALL_PLUGIN_DIR ${CMAKE_INSTALL_LIBDIR}/keel/plugins)
endif()

function(_keel_check_plugin_layering target)
  get_target_property(libs ${target} LINK_LIBRARIES)
  get_target_property(dirs ${target} INCLUDE_DIRECTORIES)
  foreach(item IN LISTS libs dirs)
    if(item MATCHES "keel(::|_)runtime" OR item MATCHES "/runtime/(include|src)")
      message(FATAL_ERROR "${target} uses ${item}: a plugin builds from keel.h, keel::base and "
                          "keel::plugin_support only, never from the runtime")
    endif()
  endforeach()
endfunction()

function(keel_add_plugin type)
  cmake_parse_arguments(ARG "" "" "SOURCES" ${ARGN})
  if(NOT type MATCHES "^[a-z0-9_]+$")
    message(FATAL_ERROR "keel_add_plugin: device type '${type}' is not [a-z0-9_]+")
  endif()
  set(target keel_plugin_${type})
  add_library(${target} MODULE ${ARG_SOURCES})
  add_library(keel::plugin_${type} ALIAS ${target})
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME keel_${type}
    PREFIX lib
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    CUDA_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  if(DEFINED KEEL_BUILD_PLUGIN_DIR)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${KEEL_BUILD_PLUGIN_DIR})
  endif()
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  if("CXX" IN_LIST languages)
    target_link_libraries(${target} PRIVATE keel::plugin_support)
  else()
    target_link_libraries(${target} PRIVATE keel::api)
  endif()
  # Static helpers linked in must not leak their symbols either, nor the
  # std:: template instantiations that hidden visibility leaves visible.
  target_link_options(${target} PRIVATE -Wl,--exclude-libs,ALL
    -Wl,--version-script=${KEEL_PLUGIN_EXPORTS_MAP})
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${KEEL_PLUGIN_EXPORTS_MAP})
  if(NOT KEEL_SANITIZE)
    target_link_options(${target} PRIVATE -Wl,--no-undefined)
  endif()
  install(TARGETS ${target} LIBRARY DESTINATION ${KEEL_INSTALL_PLUGIN_DIR})
  # (Arguments of a deferred call are expanded when it runs: pass the name literally.)
  cmake_language(EVAL CODE
    "cmake_language(DEFER DIRECTORY [[${CMAKE_SOURCE_DIR}]] CALL _keel_check_plugin_layering [[${target}]])")
endfunction()
