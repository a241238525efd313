# Run after a test executable links (cmake/gtest_suites.cmake): lists its
# GoogleTest suites and writes to OUT one add_test per suite, or per shard of
# a suite of more than 200 tests. Takes EXE, PREFIX, LABEL, FILTER, OUT.
set(args --gtest_list_tests)
if(FILTER)
  list(APPEND args "--gtest_filter=${FILTER}")
endif()
execute_process(COMMAND "${EXE}" ${args} OUTPUT_VARIABLE listing
                ERROR_VARIABLE errors RESULT_VARIABLE rc TIMEOUT 60)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR
          "${EXE} --gtest_list_tests failed (${rc}):\n${listing}${errors}")
endif()
# The negative part of the filter, kept when each suite runs.
set(negative "")
if(FILTER MATCHES "-(.*)$")
  set(negative "-${CMAKE_MATCH_1}")
endif()
# Parameter values in the listing's comments may hold ';' or brackets,
# which CMake's lists would take apart: only the lines' first words matter.
string(REPLACE ";" "," listing "${listing}")
string(REPLACE "[" "(" listing "${listing}")
string(REPLACE "]" ")" listing "${listing}")
string(REPLACE "\n" ";" lines "${listing}")
set(suites "")
foreach(line IN LISTS lines)
  if(line MATCHES "^([^ #]+)\\.( +#.*)?$")  # "Suite." [# TypeParam = ...]
    set(suite "${CMAKE_MATCH_1}")
    list(APPEND suites "${suite}")
    set(count_${suite} 0)
  elseif(line MATCHES "^  [^ ]" AND suite)  # "  Test" [# GetParam() = ...]
    math(EXPR count_${suite} "${count_${suite}} + 1")
  endif()
endforeach()
if(NOT suites)
  message(FATAL_ERROR "${EXE} --gtest_list_tests listed no suite:\n${listing}")
endif()
set(text "# Written by cmake/gtest_suites_list.cmake after ${EXE} was built.\n")
foreach(suite IN LISTS suites)
  set(name "${PREFIX}${suite}")
  set(run "\"${EXE}\" [==[--gtest_filter=${suite}.*${negative}]==]")
  math(EXPR shards "(${count_${suite}} + 199) / 200")
  if(shards LESS_EQUAL 1)
    string(APPEND text "add_test([==[${name}]==] ${run})\n"
           "set_tests_properties([==[${name}]==] PROPERTIES LABELS ${LABEL})\n")
  else()
    math(EXPR last "${shards} - 1")
    foreach(i RANGE ${last})
      string(APPEND text "add_test([==[${name}.shard${i}]==] ${run})\n"
             "set_tests_properties([==[${name}.shard${i}]==] PROPERTIES "
             "LABELS ${LABEL} ENVIRONMENT "
             "[==[GTEST_TOTAL_SHARDS=${shards};GTEST_SHARD_INDEX=${i}]==])\n")
    endforeach()
  endif()
endforeach()
file(WRITE "${OUT}" "${text}")
