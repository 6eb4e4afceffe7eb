# tests/torch/build_ext.cmake - configure and build bindings/torch for the tests (cmake -P).
# In: SRC (bindings/torch), BIN (build folder), LIB (libtether.so), PY (Python with torch).
foreach(step configure build)
  if(step STREQUAL configure)
    set(cmd ${CMAKE_COMMAND} -S ${SRC} -B ${BIN} -DTETHER_LIBRARY=${LIB} -DTETHER_PYTHON=${PY})
  else()
    set(cmd ${CMAKE_COMMAND} --build ${BIN} -j2)
  endif()
  execute_process(COMMAND ${cmd} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "tests/torch: ${step} of the torch extension failed (${rc}): ${cmd}")
  endif()
endforeach()
