# KissFFT (BSD-3-Clause; Debian libkissfft-dev): the FFTs of FFT, IFFT,
# STFT and ISTFT (functions/cpu/fft.cpp, functions/cpu/stft.cpp), in its
# float build. Found by pkg-config (kissfft-float) or by its header and
# library; required, as oneDNN is. Defines mixgraph_add_kissfft(target).

find_package(PkgConfig QUIET)
if(PkgConfig_FOUND)
  pkg_check_modules(KISSFFT QUIET kissfft-float)
endif()
find_path(MIXGRAPH_KISSFFT_INCLUDE_DIR kiss_fftnd.h
          HINTS ${KISSFFT_INCLUDE_DIRS} PATH_SUFFIXES kissfft)
find_library(MIXGRAPH_KISSFFT_LIBRARY NAMES kissfft-float kissfft
             HINTS ${KISSFFT_LIBRARY_DIRS})
if(NOT MIXGRAPH_KISSFFT_INCLUDE_DIR OR NOT MIXGRAPH_KISSFFT_LIBRARY)
  message(FATAL_ERROR "KissFFT (float) was not found: apt-get install "
                      "libkissfft-dev (FFT, IFFT, STFT and ISTFT use it)")
endif()
message(STATUS "mixgraph: KissFFT ${MIXGRAPH_KISSFFT_LIBRARY}")

# Links KissFFT to `target` privately; its include directory and float
# scalar are given to the two sources that use it alone, so that no other
# file's flags change.
function(mixgraph_add_kissfft target)
  target_link_libraries(${target} PRIVATE ${MIXGRAPH_KISSFFT_LIBRARY})
  set_source_files_properties(
    ${CMAKE_SOURCE_DIR}/mixgraph/functions/cpu/fft.cpp
    ${CMAKE_SOURCE_DIR}/mixgraph/functions/cpu/stft.cpp
    PROPERTIES INCLUDE_DIRECTORIES "${MIXGRAPH_KISSFFT_INCLUDE_DIR}"
               COMPILE_DEFINITIONS "kiss_fft_scalar=float")
endfunction()
