# Writes the first C++ block after the heading SECTION (default "## A first
# program") of the Markdown file DOC to OUT, before the next "## " heading,
# so that a program in the docs is compiled and run exactly as written (or
# with REPLACE replaced by WITH).
if(NOT DEFINED SECTION)
  set(SECTION "## A first program")
endif()
file(READ "${DOC}" text)
string(FIND "${text}" "${SECTION}\n" start)
if(start EQUAL -1)
  message(FATAL_ERROR "${DOC} has no '${SECTION}' section")
endif()
string(SUBSTRING "${text}" ${start} -1 text)
string(FIND "${text}" "```cpp\n" open)
string(LENGTH "${SECTION}" heading)
string(SUBSTRING "${text}" ${heading} -1 rest)
string(FIND "${rest}" "\n## " next)  # the next section, if any
if(NOT next EQUAL -1)
  math(EXPR next "${next} + ${heading}")
endif()
if(open EQUAL -1 OR (NOT next EQUAL -1 AND open GREATER next))
  message(FATAL_ERROR "${DOC}'s '${SECTION}' section has no C++ block")
endif()
string(SUBSTRING "${text}" ${open} -1 text)
string(LENGTH "```cpp\n" skip)
string(SUBSTRING "${text}" ${skip} -1 text)
string(FIND "${text}" "```" close)
string(SUBSTRING "${text}" 0 ${close} code)
# REPLACE -> WITH: a variant of the program (the resume test's stopped run).
if(DEFINED REPLACE)
  string(FIND "${code}" "${REPLACE}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the '${SECTION}' program has no '${REPLACE}'")
  endif()
  string(REPLACE "${REPLACE}" "${WITH}" code "${code}")
endif()
file(WRITE "${OUT}.new" "${code}")
# Rewrite only on change, so an unrelated edit of DOC rebuilds nothing.
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.new" "${OUT}")
