# Runs cmake/check_layers.cmake over tests/data/layers_bad, a tree that breaks each rule once,
# and checks that it fails naming every break (and nothing in the good file).
# cmake -DSOURCE_DIR=<repo> -DWORK_DIR=<scratch> -P layer_check_test.cmake
execute_process(
  COMMAND "${CMAKE_COMMAND}" -DSOURCE_DIR=${SOURCE_DIR}/tests/data/layers_bad
          -DSTAMP=${WORK_DIR}/layers_bad.stamp -P ${SOURCE_DIR}/cmake/check_layers.cmake
  RESULT_VARIABLE result ERROR_VARIABLE output OUTPUT_VARIABLE output)
if(result EQUAL 0 OR EXISTS "${WORK_DIR}/layers_bad.stamp")
  message(FATAL_ERROR "the layer check passed a tree that breaks the layers:\n${output}")
endif()
set(expected
    "src/stray.cpp: not in a layer folder"
    "include/onnxzip/orphan.h: a public header with no layer"
    "src/zip/bad_public.cpp (layer zip) includes \"onnxzip/tensor.h\" (layer onnx); the zip layer may include only: base, io, zip"
    "src/onnx/bad_private.cpp (layer onnx) includes \"zip_records.h\" (layer zip); the onnx layer may include only: base, io, onnx"
    "src/base/bad_up.cpp (layer base) includes \"posix_file.h\" (layer io); the base layer may include only: base")
foreach(line IN LISTS expected)
  string(FIND "${output}" "${line}" found)
  if(found EQUAL -1)
    message(FATAL_ERROR "the layer check did not say:\n  ${line}\nIt said:\n${output}")
  endif()
endforeach()
string(FIND "${output}" "good.cpp" found)
if(NOT found EQUAL -1)
  message(FATAL_ERROR "the layer check blamed a file that keeps the rule:\n${output}")
endif()
