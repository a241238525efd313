# Fails when a C++ or CUDA source of the tree is not formatted as
# .clang-format says, naming each file and the first place it differs.
# Run by the test format.clang_format: cmake -DCLANG_FORMAT=... 
# -DSOURCE_DIR=... -P check_format.cmake. Fix with:
#   git ls-files '*.cpp' '*.hpp' '*.cu' | xargs clang-format -i
cmake_minimum_required(VERSION 3.22)
set(files)
foreach(dir mixgraph tests tutorials examples benchmarks)
  file(GLOB_RECURSE found ${SOURCE_DIR}/${dir}/*.cpp ${SOURCE_DIR}/${dir}/*.hpp
       ${SOURCE_DIR}/${dir}/*.cu ${SOURCE_DIR}/${dir}/*.cuh)
  list(APPEND files ${found})
endforeach()
list(LENGTH files n)
execute_process(COMMAND ${CLANG_FORMAT} --dry-run -Werror ${files}
  WORKING_DIRECTORY ${SOURCE_DIR}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  string(REGEX MATCHALL "[^\n]*error: code should be clang-formatted[^\n]*"
         bad "${err}")
  list(LENGTH bad nbad)
  string(REPLACE ";" "\n" bad "${bad}")
  message(FATAL_ERROR "${nbad} places of ${n} files are not formatted "
          "(git ls-files '*.cpp' '*.hpp' '*.cu' | xargs clang-format -i):\n"
          "${bad}")
endif()
message("${n} files formatted as .clang-format says")
