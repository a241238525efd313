# The CUDA backend: MIXGRAPH_CUDA = AUTO | ON | OFF.
#
# AUTO and ON look for nvcc (CMake's CUDA language), the CUDA toolkit
# (cudart, cuBLAS) and cuDNN (cudnn.h and libcudnn, under the toolkit or
# CUDNN_ROOT). AUTO builds the backend when all are found and says what was
# missing otherwise; ON stops with that message. Sets MIXGRAPH_WITH_CUDA and
# defines mixgraph_add_cuda(target).

string(TOUPPER "${MIXGRAPH_CUDA}" _mg_cuda)
if(_mg_cuda MATCHES "^(ON|TRUE|YES|Y|1)$")
  set(_mg_cuda ON)
elseif(_mg_cuda MATCHES "^(OFF|FALSE|NO|N|0)$")
  set(_mg_cuda OFF)
elseif(NOT _mg_cuda STREQUAL "AUTO")
  message(FATAL_ERROR "MIXGRAPH_CUDA is '${MIXGRAPH_CUDA}'; expected AUTO, ON or OFF")
endif()

set(MIXGRAPH_WITH_CUDA OFF)
if(NOT _mg_cuda STREQUAL "OFF")
  set(_mg_missing "")
  # The toolkit's usual home when nvcc is not on PATH.
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    find_program(_mg_nvcc nvcc)
    if(NOT _mg_nvcc)
      set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(NOT CMAKE_CUDA_COMPILER)
    list(APPEND _mg_missing "nvcc (the CUDA compiler: set CMAKE_CUDA_COMPILER or put nvcc on PATH)")
  else()
    # The toolkit next to the nvcc CMake found.
    get_filename_component(_mg_nvcc_dir "${CMAKE_CUDA_COMPILER}" DIRECTORY)
    get_filename_component(_mg_cuda_root "${_mg_nvcc_dir}" DIRECTORY)
    if(NOT CUDAToolkit_ROOT)
      set(CUDAToolkit_ROOT "${_mg_cuda_root}")
    endif()
    find_package(CUDAToolkit QUIET)
    if(NOT CUDAToolkit_FOUND OR NOT TARGET CUDA::cublas)
      list(APPEND _mg_missing "the CUDA toolkit with cuBLAS (CUDAToolkit_ROOT)")
    else()
      find_path(MIXGRAPH_CUDNN_INCLUDE_DIR cudnn.h
        HINTS ${CUDNN_ROOT} ${CUDAToolkit_INCLUDE_DIRS} ${_mg_cuda_root}
        PATH_SUFFIXES include)
      find_library(MIXGRAPH_CUDNN_LIBRARY cudnn
        HINTS ${CUDNN_ROOT} ${CUDAToolkit_LIBRARY_DIR} ${_mg_cuda_root}
        PATH_SUFFIXES lib64 lib lib/x64)
      if(NOT MIXGRAPH_CUDNN_INCLUDE_DIR OR NOT MIXGRAPH_CUDNN_LIBRARY)
        list(APPEND _mg_missing "cuDNN (cudnn.h and libcudnn: set CUDNN_ROOT)")
      endif()
    endif()
  endif()
  if(_mg_missing)
    string(JOIN ", " _mg_missing_text ${_mg_missing})
    if(_mg_cuda STREQUAL "ON")
      message(FATAL_ERROR "MIXGRAPH_CUDA=ON, but not found: ${_mg_missing_text}")
    endif()
    message(STATUS "mixgraph: CUDA backend off (not found: ${_mg_missing_text})")
  else()
    set(MIXGRAPH_WITH_CUDA ON)
  endif()
endif()

if(MIXGRAPH_WITH_CUDA)
  # One architecture unless told otherwise: nvcc is slow, and CI compiles.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  message(STATUS "mixgraph: CUDA backend on (CUDA ${CUDAToolkit_VERSION}, "
                 "architectures ${CMAKE_CUDA_ARCHITECTURES}, cuDNN ${MIXGRAPH_CUDNN_LIBRARY})")
endif()

# Adds the CUDA libraries and flags to `target` (the library).
function(mixgraph_add_cuda target)
  target_compile_definitions(${target} PRIVATE MIXGRAPH_WITH_CUDA)
  target_include_directories(${target} PRIVATE ${MIXGRAPH_CUDNN_INCLUDE_DIR})
  # cuBLAS is not linked: contexts/cuda/cublas_utils.cpp loads it on first
  # use (its headers come with the toolkit's include directory).
  target_link_libraries(${target} PRIVATE CUDA::cudart
                        ${MIXGRAPH_CUDNN_LIBRARY} ${CMAKE_DL_LIBS})
  # No FMA contraction: the kernels then do the same fp32 operations as the
  # CPU loops over the same functors, which is what lets the CPU tests speak
  # for the device math (the kernels are memory bound; FMA buys little).
  target_compile_options(${target} PRIVATE
    "$<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr;--fmad=false;-Xcompiler=-Wall,-Wextra>")
  set_target_properties(${target} PROPERTIES CUDA_RUNTIME_LIBRARY Shared)
endfunction()
