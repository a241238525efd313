# Runs doxygen on the API reference's Doxyfile (DOXYFILE, written by
# cmake/doxygen.cmake) and fails on any warning doxygen writes to its log
# (LOG): a doc comment that doxygen cannot read is a broken page.
# DOXYGEN empty (not installed) skips with a message.
if(NOT DOXYGEN)
  message("SKIPPED: doxygen is not installed (apt-get install doxygen)")
  return()
endif()
file(REMOVE "${LOG}")
execute_process(COMMAND "${DOXYGEN}" "${DOXYFILE}" RESULT_VARIABLE rc
                WORKING_DIRECTORY "${WORK_DIR}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "doxygen ${DOXYFILE} failed: ${rc}")
endif()
if(NOT EXISTS "${LOG}")
  message(FATAL_ERROR "doxygen wrote no warnings log (${LOG})")
endif()
file(READ "${LOG}" warnings)
if(NOT warnings STREQUAL "")
  message(FATAL_ERROR "doxygen warns about the headers' doc comments:\n"
                      "${warnings}")
endif()
message("the API reference has no warnings: ${WORK_DIR}/html/index.html")
