# NNabla's .nnp model files (utils/nnp/): the schema utils/nnp/nnabla.proto
# compiled by protoc (Debian: protobuf-compiler, libprotobuf-dev) and the zip
# archive read and written with libzip (libzip-dev). Both are required: the
# test and main-job scripts install them (scripts/install_deps.sh). Defines
# mixgraph_add_nnp(target).

find_package(Protobuf QUIET)
find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(LIBZIP QUIET IMPORTED_TARGET libzip)
endif()
if(NOT Protobuf_FOUND OR NOT Protobuf_PROTOC_EXECUTABLE OR NOT LIBZIP_FOUND)
  message(FATAL_ERROR "mixgraph needs protobuf (with protoc) and libzip for "
                      ".nnp files: apt-get install protobuf-compiler "
                      "libprotobuf-dev libzip-dev pkg-config")
endif()
message(STATUS "mixgraph: .nnp files with protobuf ${Protobuf_VERSION}, "
               "libzip ${LIBZIP_VERSION}")

# Adds the generated schema classes and the libraries to `target`, privately:
# no public header includes protobuf's or libzip's.
function(mixgraph_add_nnp target)
  protobuf_generate_cpp(nnp_proto_srcs nnp_proto_hdrs
                        ${CMAKE_SOURCE_DIR}/mixgraph/utils/nnp/nnabla.proto)
  # protoc's code is not ours to warn about. Nor to sanitize: the parsing
  # runs in libprotobuf, which is not instrumented either, and the
  # instrumented classes took a minute of the sanitizer build on 2 cores.
  set(nnp_proto_options -w)
  if(MIXGRAPH_SANITIZE)
    list(APPEND nnp_proto_options -fno-sanitize=all)
  endif()
  set_source_files_properties(${nnp_proto_srcs} PROPERTIES
                              COMPILE_OPTIONS "${nnp_proto_options}")
  target_sources(${target} PRIVATE ${nnp_proto_srcs})
  target_include_directories(${target} PRIVATE ${CMAKE_CURRENT_BINARY_DIR})
  target_link_libraries(${target} PRIVATE protobuf::libprotobuf PkgConfig::LIBZIP)
endfunction()
