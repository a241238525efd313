# The API reference: `ninja -C build docs` writes HTML to build/docs/html
# from the doc comments of the public headers (docs/Doxyfile.in leaves out
# the internal folders and headers, as install() does). Without Debian's
# doxygen the target says how to get it.
find_program(MIXGRAPH_DOXYGEN doxygen)
# Doxygen reads the umbrella header and every layer's folder.
set(MIXGRAPH_HEADER_ROOT ${MIXGRAPH_ROOT})
set(MIXGRAPH_DOXYGEN_INPUT ${MIXGRAPH_HEADER_ROOT}/mixgraph.hpp)
foreach(layer ${MIXGRAPH_LAYERS})
  string(APPEND MIXGRAPH_DOXYGEN_INPUT " ${MIXGRAPH_HEADER_ROOT}/${layer}")
endforeach()
set(MIXGRAPH_DOXYGEN_OUTPUT ${CMAKE_BINARY_DIR}/docs)
set(MIXGRAPH_DOXYGEN_STRIP ${CMAKE_SOURCE_DIR})
configure_file(${CMAKE_SOURCE_DIR}/docs/Doxyfile.in
               ${MIXGRAPH_DOXYGEN_OUTPUT}/Doxyfile @ONLY)
if(MIXGRAPH_DOXYGEN)
  add_custom_target(docs
    COMMAND ${MIXGRAPH_DOXYGEN} ${MIXGRAPH_DOXYGEN_OUTPUT}/Doxyfile
    COMMAND ${CMAKE_COMMAND} -E cat ${MIXGRAPH_DOXYGEN_OUTPUT}/warnings.log
    WORKING_DIRECTORY ${MIXGRAPH_DOXYGEN_OUTPUT}
    COMMENT "The API reference: ${MIXGRAPH_DOXYGEN_OUTPUT}/html/index.html"
    VERBATIM)
else()
  add_custom_target(docs
    COMMAND ${CMAKE_COMMAND} -E echo
            "doxygen not found (apt-get install doxygen): no API reference"
    VERBATIM)
endif()
