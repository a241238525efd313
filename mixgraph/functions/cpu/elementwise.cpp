// Registers the CPU elementwise functions: every op of ops/op_list.hpp.
#include <mixgraph/functions/cpu/elementwise.hpp>

#include <algorithm>
#include <limits>

#include <mixgraph/functions/cpu/axis_tile.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/lanes.hpp>
#include <mixgraph/functions/ops/op_list.hpp>
#include <mixgraph/functions/ops/vector_math.hpp>

namespace mg::cpu {

namespace row_loops {
// A row's max and sum in lanes.hpp's 16 lanes and fixed tree, compiled
// per vector ISA below: the same bits on each.
template <class Op>
__attribute__((always_inline)) inline float lanes_reduce(const float* x,
                                                         int64_t n, float init,
                                                         Op op) {
  return cpu::lanes_reduce(
      n, init, [x](int64_t i) __attribute__((always_inline)) { return x[i]; },
      op);
}
// std::max's rule (a NaN in x never wins), which vectorizes as maxps; on
// floats, and lane by lane on lanes.hpp's LaneQuads.
template <class V>
__attribute__((always_inline)) inline V max_op(V m, V v) {
  return m < v ? v : m;
}
template <class V>
__attribute__((always_inline)) inline V add_op(V s, V v) {
  return s + v;
}

// clang-format off
#define MG_ROW_LOOPS(NS, TARGET)                                           \
  namespace NS {                                                           \
  TARGET void exp_of_difference(const float* x, float shift, float* y,     \
                                int64_t n) {                               \
    for (int64_t i = 0; i < n; ++i) y[i] = vmath::exp(x[i] - shift);       \
  }                                                                        \
  TARGET float max_of(const float* x, int64_t n) {                         \
    return lanes_reduce(x, n, -std::numeric_limits<float>::infinity(),     \
                        [](auto m, auto v) { return max_op(m, v); });      \
  }                                                                        \
  TARGET float sum_of(const float* x, int64_t n) {                         \
    return lanes_reduce(x, n, 0.0f,                                        \
                        [](auto s, auto v) { return add_op(s, v); });      \
  }                                                                        \
  TARGET void exp_and_sum_columns(const float* x, int64_t ld, int64_t size, \
                                  int64_t w, float* e, float* mx,          \
                                  float* sum) {                            \
    std::fill(mx, mx + w, -std::numeric_limits<float>::infinity());        \
    for (int64_t a = 0; a < size; ++a) {                                   \
      for (int64_t j = 0; j < w; ++j) mx[j] = max_op(mx[j], x[a * ld + j]); \
    }                                                                      \
    std::fill(sum, sum + w, 0.0f);                                         \
    for (int64_t a = 0; a < size; ++a) {                                   \
      for (int64_t j = 0; j < w; ++j) {                                    \
        e[a * w + j] = vmath::exp(x[a * ld + j] - mx[j]);                  \
        sum[j] += e[a * w + j];                                            \
      }                                                                    \
    }                                                                      \
  }                                                                        \
  }
MG_FOR_EACH_VECTOR_ISA(MG_ROW_LOOPS)
#undef MG_ROW_LOOPS
// clang-format on
}  // namespace row_loops

float max_of(const float* x, int64_t stride, int64_t n) {
  if (stride != 1) {
    float m = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < n; ++i) m = row_loops::max_op(m, x[i * stride]);
    return m;
  }
  using namespace row_loops;
  MG_CALL_VECTOR_ISA(max_of(x, n));
}

float exp_sum_of_difference(const float* x, int64_t stride, float shift,
                            float* y, int64_t n) {
  using namespace row_loops;
  if (stride != 1) {
    for (int64_t i = 0; i < n; ++i) y[i] = vmath::exp(x[i * stride] - shift);
  } else {
    [&] { MG_CALL_VECTOR_ISA(exp_of_difference(x, shift, y, n)); }();
  }
  MG_CALL_VECTOR_ISA(sum_of(y, n));
}

void exp_and_sum_columns(const float* x, int64_t ld, int64_t size, int64_t w,
                         float* e, float* mx, float* sum) {
  using namespace row_loops;
  MG_CALL_VECTOR_ISA(exp_and_sum_columns(x, ld, size, w, e, mx, sum));
}

void register_elementwise(FunctionRegistry& r) {
  ops::for_each_unary_op(
      [&](auto tag) { register_unary<typename decltype(tag)::type>(r); });
  ops::for_each_binary_op(
      [&](auto tag) { register_binary<typename decltype(tag)::type>(r); });
}

}  // namespace mg::cpu
