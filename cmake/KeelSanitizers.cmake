# KEEL_SANITIZE=address -> ASan + UBSan; thread -> TSan. Applied to every target.
if(KEEL_SANITIZE STREQUAL "address")
  set(_keel_san -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
elseif(KEEL_SANITIZE STREQUAL "thread")
  set(_keel_san -fsanitize=thread -fno-omit-frame-pointer)
elseif(NOT KEEL_SANITIZE STREQUAL "")
  message(FATAL_ERROR "KEEL_SANITIZE must be '', 'address' or 'thread', not '${KEEL_SANITIZE}'")
endif()
if(_keel_san)
  message(STATUS "keel: sanitizers on (${KEEL_SANITIZE})")
  # Quoted: the list must stay inside the generator expression.
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${_keel_san}>")
  add_link_options(${_keel_san})
endif()
