# keel_add_subdirectories([EXCEPT name...]): adds every folder of the current
# source folder that has a CMakeLists.txt, in name order, except those named.
# samples/, tools/, bench/ and tests/ each hold one program or area per folder.
function(keel_add_subdirectories)
  cmake_parse_arguments(arg "" "" "EXCEPT" ${ARGN})
  file(GLOB dirs LIST_DIRECTORIES true ${CMAKE_CURRENT_SOURCE_DIR}/*)
  foreach(dir IN LISTS dirs)
    get_filename_component(name ${dir} NAME)
    if(IS_DIRECTORY ${dir} AND EXISTS ${dir}/CMakeLists.txt AND NOT name IN_LIST arg_EXCEPT)
      add_subdirectory(${dir})
    endif()
  endforeach()
endfunction()
