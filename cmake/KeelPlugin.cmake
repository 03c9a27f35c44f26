# keel_add_plugin(<type> SOURCES ...): a plugin library libkeel_<type>.so that
# exports only the entry symbol, placed in the build tree's plugin directory
# and installed into the install's.
set(KEEL_PLUGIN_EXPORTS_MAP ${CMAKE_CURRENT_LIST_DIR}/keel_plugin_exports.map)

function(keel_add_plugin type)
  cmake_parse_arguments(ARG "" "" "SOURCES" ${ARGN})
  set(target keel_plugin_${type})
  add_library(${target} MODULE ${ARG_SOURCES})
  add_library(keel::plugin_${type} ALIAS ${target})
  set_target_properties(${target} PROPERTIES
    OUTPUT_NAME keel_${type}
    PREFIX lib
    LIBRARY_OUTPUT_DIRECTORY ${KEEL_BUILD_PLUGIN_DIR}
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    CUDA_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(${target} PRIVATE keel::plugin_support)
  # Static helpers linked in must not leak their symbols either, nor the
  # std:: template instantiations that hidden visibility leaves visible.
  target_link_options(${target} PRIVATE -Wl,--exclude-libs,ALL
    -Wl,--version-script=${KEEL_PLUGIN_EXPORTS_MAP})
  set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${KEEL_PLUGIN_EXPORTS_MAP})
  if(NOT KEEL_SANITIZE)
    target_link_options(${target} PRIVATE -Wl,--no-undefined)
  endif()
  install(TARGETS ${target} LIBRARY DESTINATION ${KEEL_INSTALL_PLUGIN_DIR})
endfunction()
