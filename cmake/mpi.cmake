# Data-parallel communicators: MIXGRAPH_MPI = AUTO | ON | OFF.
#
# AUTO and ON look for MPI's C library (Debian: libopenmpi-dev, and
# openmpi-bin for mpirun). AUTO builds the MPI communicator when it is found
# and says what is missing otherwise; ON stops with that message (also when
# mpirun, which runs the mpi tests, is missing); without it
# mg::mpi_communicator() throws, saying how to get it, and the rest of the
# library is the same. NCCL (the CUDA buffers' communicator) is built when
# the CUDA backend and MPI are both on and nccl.h and libnccl are found.
# Sets MIXGRAPH_WITH_MPI and MIXGRAPH_WITH_NCCL and defines
# mixgraph_add_mpi(target).

string(TOUPPER "${MIXGRAPH_MPI}" _mg_mpi)
if(_mg_mpi MATCHES "^(ON|TRUE|YES|Y|1)$")
  set(_mg_mpi ON)
elseif(_mg_mpi MATCHES "^(OFF|FALSE|NO|N|0)$")
  set(_mg_mpi OFF)
elseif(NOT _mg_mpi STREQUAL "AUTO")
  message(FATAL_ERROR "MIXGRAPH_MPI is '${MIXGRAPH_MPI}'; expected AUTO, ON or OFF")
endif()

set(MIXGRAPH_WITH_MPI OFF)
set(MIXGRAPH_WITH_NCCL OFF)
if(_mg_mpi STREQUAL "OFF")
  message(STATUS "mixgraph: MPI communicator off (MIXGRAPH_MPI=OFF)")
else()
  find_package(MPI QUIET COMPONENTS C)
  if(MPI_C_FOUND)
    set(MIXGRAPH_WITH_MPI ON)
    find_program(MIXGRAPH_MPIEXEC NAMES mpirun mpiexec HINTS ${MPIEXEC_EXECUTABLE})
    if(_mg_mpi STREQUAL "ON" AND NOT MIXGRAPH_MPIEXEC)
      message(FATAL_ERROR "MIXGRAPH_MPI=ON, but no MPI launcher (mpirun or "
                          "mpiexec) was found to run the data-parallel "
                          "tests (apt-get install openmpi-bin)")
    endif()
    message(STATUS "mixgraph: MPI communicator on (MPI ${MPI_C_VERSION}, "
                   "launcher ${MIXGRAPH_MPIEXEC})")
  elseif(_mg_mpi STREQUAL "ON")
    message(FATAL_ERROR "MIXGRAPH_MPI=ON, but MPI's C library was not found "
                        "(apt-get install libopenmpi-dev openmpi-bin)")
  else()
    message(STATUS "mixgraph: MPI communicator off (MPI not found: "
                   "apt-get install libopenmpi-dev openmpi-bin)")
  endif()
endif()

if(MIXGRAPH_WITH_MPI AND MIXGRAPH_WITH_CUDA)
  find_path(MIXGRAPH_NCCL_INCLUDE_DIR nccl.h
    HINTS ${NCCL_ROOT} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
  find_library(MIXGRAPH_NCCL_LIBRARY nccl
    HINTS ${NCCL_ROOT} ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib64 lib)
  if(MIXGRAPH_NCCL_INCLUDE_DIR AND MIXGRAPH_NCCL_LIBRARY)
    set(MIXGRAPH_WITH_NCCL ON)
    message(STATUS "mixgraph: NCCL communicator on (${MIXGRAPH_NCCL_LIBRARY})")
  else()
    message(STATUS "mixgraph: NCCL communicator off (nccl.h or libnccl not "
                   "found: set NCCL_ROOT)")
  endif()
endif()

# Adds MPI (and NCCL) to `target` (the library), privately: no public header
# includes mpi.h or nccl.h.
function(mixgraph_add_mpi target)
  if(MIXGRAPH_WITH_MPI)
    target_compile_definitions(${target} PRIVATE MIXGRAPH_WITH_MPI)
    target_link_libraries(${target} PRIVATE MPI::MPI_C)
  endif()
  if(MIXGRAPH_WITH_NCCL)
    target_compile_definitions(${target} PRIVATE MIXGRAPH_WITH_NCCL)
    target_include_directories(${target} PRIVATE ${MIXGRAPH_NCCL_INCLUDE_DIR})
    target_link_libraries(${target} PRIVATE ${MIXGRAPH_NCCL_LIBRARY})
  endif()
endfunction()
