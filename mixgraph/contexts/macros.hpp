// Portability macros shared by host and device code.
#pragma once

#if defined(__CUDACC__)
#define MG_HD __host__ __device__
#else
#define MG_HD
#endif
