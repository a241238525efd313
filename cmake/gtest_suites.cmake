# mixgraph_discover_tests(target PREFIX p LABEL l [FILTER f]): registers a
# GoogleTest executable's tests with CTest, as gtest_discover_tests does:
# one CTest test per GoogleTest test, named <p><Suite>.<Test>.
#
# With MIXGRAPH_TESTS_BY_SUITE=ON, one CTest test per suite instead
# (<p><Suite>, running --gtest_filter=<Suite>.*), a suite of more than 200
# tests split into shards of at most 200 (<p><Suite>.shard<i>, through
# GoogleTest's GTEST_TOTAL_SHARDS): one process per suite, not per test.
# The sanitizer run of scripts/run_tests.sh uses it: there each process
# spends 0.26 s starting (ASan's shadow memory, relocating the instrumented
# library, LeakSanitizer's scan at exit), which was 630 of the 1035 s its
# 2420 tests took on 2 cores (AMD EPYC Zen 3, 2026-11-28). The release run
# keeps one test per process, so that each test is still seen alone, and
# each skip is reported: a suite's entry passes when its tests pass or
# skip (a skip pattern on the whole suite would hide its failures).
#
# FILTER is GoogleTest's: the suites are listed through it, and its
# negative part ("-..." ) is kept when each suite runs, so a filter must
# pick whole suites or leave out tests by a negative pattern.
option(MIXGRAPH_TESTS_BY_SUITE
       "One CTest test per GoogleTest suite (one process each), not per test"
       OFF)

function(mixgraph_discover_tests target)
  cmake_parse_arguments(arg "" "PREFIX;LABEL;FILTER" "" ${ARGN})
  if(NOT MIXGRAPH_TESTS_BY_SUITE)
    set(filter "")
    if(arg_FILTER)
      set(filter TEST_FILTER "${arg_FILTER}")
    endif()
    gtest_discover_tests(${target} TEST_PREFIX "${arg_PREFIX}" ${filter}
                         PROPERTIES LABELS "${arg_LABEL}" DISCOVERY_TIMEOUT 60)
    return()
  endif()
  # After each link the executable lists its suites into `suites`, which
  # CTest includes; until the first build, a test that says so.
  string(MAKE_C_IDENTIFIER "${target}_${arg_PREFIX}" stem)
  set(suites "${CMAKE_CURRENT_BINARY_DIR}/${stem}_suites.cmake")
  set(include_file "${CMAKE_CURRENT_BINARY_DIR}/${stem}_include.cmake")
  add_custom_command(TARGET ${target} POST_BUILD
    COMMAND "${CMAKE_COMMAND}" "-DEXE=$<TARGET_FILE:${target}>"
            "-DPREFIX=${arg_PREFIX}" "-DLABEL=${arg_LABEL}"
            "-DFILTER=${arg_FILTER}" "-DOUT=${suites}"
            -P "${PROJECT_SOURCE_DIR}/cmake/gtest_suites_list.cmake"
    BYPRODUCTS "${suites}" VERBATIM)
  file(WRITE "${include_file}"
       "if(EXISTS \"${suites}\")\n"
       "  include(\"${suites}\")\n"
       "else()\n"
       "  add_test(${stem}_NOT_BUILT ${target}_NOT_BUILT)\n"
       "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${include_file}")
endfunction()
