// Bulk element type conversions on the host.
#pragma once

#include <cstddef>

#include <mixgraph/contexts/dtype.hpp>

namespace mg {

/// Converts n elements from src (of src_dtype) to dst (of dst_dtype).
/// float <-> half and float <-> bfloat16 use F16C / AVX-512 where the CPU has
/// them (detected at run time); everything else goes element by element.
/// Floating to integer truncates toward zero, as static_cast does.
void convert(const void* src, Dtype src_dtype, void* dst, Dtype dst_dtype,
             size_t n);

/// The scalar-only path, for tests that compare it with the vector path.
void convert_scalar(const void* src, Dtype src_dtype, void* dst,
                    Dtype dst_dtype, size_t n);

/// Fills n elements of dst with value converted to dtype.
void fill(void* dst, Dtype dtype, double value, size_t n);

}  // namespace mg
