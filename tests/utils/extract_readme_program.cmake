# Writes the first C++ block after "## A first program" in README.md to OUT,
# so that the README's program is compiled and run exactly as written.
file(READ "${README}" text)
string(FIND "${text}" "## A first program" start)
if(start EQUAL -1)
  message(FATAL_ERROR "README.md has no '## A first program' section")
endif()
string(SUBSTRING "${text}" ${start} -1 text)
string(FIND "${text}" "```cpp\n" open)
string(SUBSTRING "${text}" ${open} -1 text)
string(LENGTH "```cpp\n" skip)
string(SUBSTRING "${text}" ${skip} -1 text)
string(FIND "${text}" "```" close)
string(SUBSTRING "${text}" 0 ${close} code)
file(WRITE "${OUT}.new" "${code}")
# Rewrite only on change, so an unrelated README edit rebuilds nothing.
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.new" "${OUT}")
