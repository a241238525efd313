# ONNX models (utils/onnx/): MIXGRAPH_ONNX = AUTO | ON | OFF.
#
# AUTO and ON look for the ONNX project's library (Debian: libonnx-dev, with
# libprotobuf-dev for its protobuf classes). AUTO builds save_onnx and
# load_onnx when both are found and says what is missing otherwise; ON stops
# with that message; without them the two throw, saying how to get them.
# Sets MIXGRAPH_WITH_ONNX and defines mixgraph_add_onnx(target).

string(TOUPPER "${MIXGRAPH_ONNX}" _mg_onnx)
if(_mg_onnx MATCHES "^(ON|TRUE|YES|Y|1)$")
  set(_mg_onnx ON)
elseif(_mg_onnx MATCHES "^(OFF|FALSE|NO|N|0)$")
  set(_mg_onnx OFF)
elseif(NOT _mg_onnx STREQUAL "AUTO")
  message(FATAL_ERROR "MIXGRAPH_ONNX is '${MIXGRAPH_ONNX}'; expected AUTO, ON or OFF")
endif()

set(MIXGRAPH_WITH_ONNX OFF)
if(_mg_onnx STREQUAL "OFF")
  message(STATUS "mixgraph: ONNX off (MIXGRAPH_ONNX=OFF)")
else()
  find_package(Protobuf QUIET)
  if(Protobuf_FOUND)
    find_package(ONNX QUIET CONFIG)
  endif()
  if(Protobuf_FOUND AND ONNX_FOUND AND TARGET onnx AND TARGET onnx_proto)
    set(MIXGRAPH_WITH_ONNX ON)
    message(STATUS "mixgraph: ONNX on (ONNX ${ONNX_VERSION}, opset 17)")
  elseif(_mg_onnx STREQUAL "ON")
    message(FATAL_ERROR "MIXGRAPH_ONNX=ON, but ONNX or protobuf was not "
                        "found (apt-get install libonnx-dev libprotobuf-dev)")
  else()
    message(STATUS "mixgraph: ONNX off (not found: apt-get install "
                   "libonnx-dev libprotobuf-dev)")
  endif()
endif()

# Adds ONNX to `target` (the library), privately: no public header includes
# ONNX's or protobuf's.
function(mixgraph_add_onnx target)
  if(MIXGRAPH_WITH_ONNX)
    # The version save_onnx writes as the model's producer_version.
    target_compile_definitions(${target} PRIVATE MIXGRAPH_WITH_ONNX
                               MIXGRAPH_VERSION="${PROJECT_VERSION}")
    target_link_libraries(${target} PRIVATE onnx onnx_proto protobuf::libprotobuf)
  endif()
endfunction()
