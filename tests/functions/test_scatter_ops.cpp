// GatherNd, ScatterNd and ScatterAdd: harness cases against double
// references (repeated indices so that grads and data add up), NNabla's
// examples, fp32 sums under half, errors.
#include <gtest/gtest.h>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::scatter_ops_tests {
namespace {

// The offset in `shape` of column c of indices (M, count), wrapping
// negative ones.
int64_t column_offset(const Doubles& idx, int64_t m, int64_t count, int64_t c,
                      const Shape& shape) {
  const auto stride = shape_strides(shape);
  int64_t off = 0;
  for (int64_t r = 0; r < m; ++r) {
    int64_t i = static_cast<int64_t>(idx[r * count + c]);
    if (i < 0) i += shape[r];
    off += i * stride[r];
  }
  return off;
}

// Indices address x's leading axes, the batch among them: a new batch size
// leaves them out of range, a data error rather than a shape one.
const char* const kIndexedBatch =
    "the indices address axis 0, the batch: a smaller batch leaves them out "
    "of range";

harness::Case gather_nd_case(Shape xs, Shape is, std::vector<float> ids) {
  harness::Case k{"x " + shape_str(xs) + " indices " + shape_str(is), [=] {
                    FunctionCheck c;
                    c.inputs = {{xs}, InputSpec::fixed(is, ids)};
                    c.build = [](const std::vector<VariablePtr>& in) {
                      return F::gather_nd(in[0], in[1]);
                    };
                    c.reference = [=](const std::vector<Doubles>& in) {
                      const int64_t m = is[0], count = shape_size(is) / m;
                      const int64_t slice = shape_size(
                          xs, static_cast<int>(m), static_cast<int>(xs.size()));
                      Doubles y;
                      for (int64_t k = 0; k < count; ++k) {
                        const int64_t off =
                            column_offset(in[1], m, count, k, xs);
                        for (int64_t j = 0; j < slice; ++j)
                          y.push_back(in[0][off + j]);
                      }
                      return y;
                    };
                    return c;
                  }};
  k.no_batch_change = kIndexedBatch;
  return k;
}

// scatter_nd(data, indices, shape, add), or into input 2 (`out`).
harness::Case scatter_nd_case(Shape ds, Shape is, std::vector<float> ids,
                              Shape shape, bool add, bool with_out) {
  return {"data " + shape_str(ds) + " indices " + shape_str(is) +
              (with_out ? " into out " : " shape ") + shape_str(shape) +
              (add ? " add" : ""),
          [=] {
            FunctionCheck c;
            c.inputs = {{ds}, InputSpec::fixed(is, ids)};
            if (with_out) c.inputs.push_back({shape});
            c.build = [=](const std::vector<VariablePtr>& in) {
              return with_out ? F::scatter_nd(in[0], in[1], in[2], {}, add)
                              : F::scatter_nd(in[0], in[1], shape, add);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              Doubles y = with_out ? in[2] : Doubles(shape_size(shape), 0.0);
              const int64_t m = is[0], count = shape_size(is) / m;
              const int64_t slice = shape_size(ds) / count;
              for (int64_t k = 0; k < count; ++k) {
                const int64_t off = column_offset(in[1], m, count, k, shape);
                for (int64_t j = 0; j < slice; ++j) {
                  const double v = in[0][k * slice + j];
                  y[off + j] = add ? y[off + j] + v : v;
                }
              }
              return y;
            };
            return c;
          }};
}

harness::Case scatter_add_case(Shape x0s, Shape is, std::vector<float> ids,
                               Shape x1s, int axis) {
  harness::Case k{
      "x0 " + shape_str(x0s) + " indices " + shape_str(is) + " x1 " +
          shape_str(x1s) + " axis " + std::to_string(axis),
      [=] {
        FunctionCheck c;
        c.inputs = {{x0s}, InputSpec::fixed(is, ids), {x1s}};
        c.build = [axis](const std::vector<VariablePtr>& in) {
          return F::scatter_add(in[0], in[1], in[2], axis);
        };
        c.reference = [=](const std::vector<Doubles>& in) {
          Doubles y = in[0];
          const int nd = static_cast<int>(is.size());
          const auto s0 = shape_strides(x0s), s1 = shape_strides(x1s);
          for (int64_t e = 0; e < shape_size(is); ++e) {
            int64_t rem = e, dst = 0, src = 0;
            for (int d = nd - 1; d >= 0; --d) {
              const int64_t j = rem % is[d];
              rem /= is[d];
              src += j * s1[d];
              dst += (d == axis ? static_cast<int64_t>(in[1][e]) : j) * s0[d];
            }
            y[dst] += in[2][src];
          }
          return y;
        };
        return c;
      }};
  if (axis == 0) k.no_batch_change = kIndexedBatch;
  return k;
}

const bool kScatterOps =
    harness::add(decl::GatherNd,
                 {gather_nd_case({2, 5}, {2, 3}, {1, 1, 0, 0, 1, 0}),
                  // Rows repeat (1, 1): x's grad adds them.
                  gather_nd_case({2, 5}, {1, 3}, {1, 1, 0}),
                  gather_nd_case({3, 4, 2}, {2, 2}, {-1, 0, 2, -4})}) &&
    harness::add(
        decl::ScatterNd,
        {scatter_nd_case({4}, {1, 4}, {4, 3, 1, 7}, {8}, false, false),
         scatter_nd_case({2, 4}, {1, 2}, {2, 0}, {3, 4}, false, false),
         scatter_nd_case({4}, {1, 4}, {1, 3, 1, 0}, {5}, true, false),
         scatter_nd_case({2}, {2, 2}, {0, 2, 1, 0}, {3, 2}, false, true),
         scatter_nd_case({3}, {2, 3}, {0, 2, 0, 1, 0, 1}, {3, 2}, true,
                         true)}) &&
    harness::add(
        decl::ScatterAdd,
        {scatter_add_case({3, 4}, {2, 4}, {0, 2, 1, 2, 2, 2, 0, 1}, {2, 5}, 0),
         scatter_add_case({2, 5}, {2, 3}, {4, 0, 4, 1, 1, 3}, {3, 4}, 1)});

TEST(GatherNd, NNablasExamples) {
  std::vector<float> v(10);
  for (int i = 0; i < 10; ++i) v[i] = static_cast<float>(i + 1);
  auto data = variable_from({2, 5}, v);
  auto a = F::gather_nd(data, variable_from({2, 3}, {1, 1, 0, 0, 1, 0}));
  auto b = F::gather_nd(data, variable_from({1, 3}, {1, 1, 0}));
  a->forward();
  b->forward();
  EXPECT_EQ(to_doubles(a), (Doubles{6, 7, 1}));
  EXPECT_EQ(b->shape(), (Shape{3, 5}));
  EXPECT_EQ(to_doubles(b)[0], 6);
  EXPECT_EQ(to_doubles(b)[14], 5);
}

TEST(ScatterNd, NNablasExampleAndTheInverseOfGatherNd) {
  auto data = variable_from({4}, {9, 10, 11, 12});
  auto idx = variable_from({1, 4}, {4, 3, 1, 7});
  auto s = F::scatter_nd(data, idx, {8});
  auto g = F::gather_nd(s, idx);
  g->forward();
  EXPECT_EQ(to_doubles(s), (Doubles{0, 11, 0, 10, 9, 0, 0, 12}));
  EXPECT_EQ(to_doubles(g), (Doubles{9, 10, 11, 12}));
}

TEST(ScatterNd, HalfAddsInFloat) {
  // 4096 ones added into one element: 4096 only with fp32 sums (half's
  // running sum stops at 2048).
  ContextGuard guard(context("cpu", "half"));
  auto data = variable_from({4096}, std::vector<float>(4096, 1.0f));
  auto idx = variable_from({1, 4096}, std::vector<float>(4096, 0.0f));
  auto y = F::scatter_nd(data, idx, {2}, /*add=*/true);
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{4096, 0}));
}

TEST(ScatterAdd, HalfGradOfGatheredRowsSumsInFloat) {
  ContextGuard guard(context("cpu", "half"));
  auto x0 = variable_from({1, 1}, {0.0f});
  auto x1 = variable_from({4096, 1}, std::vector<float>(4096, 1.0f));
  auto idx = variable_from({4096, 1}, std::vector<float>(4096, 0.0f));
  auto y = F::scatter_add(x0, idx, x1, 0);
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{4096}));
}

TEST(ScatterOps, BadShapesAndIndices) {
  expect_error(
      [] {
        F::gather_nd(make_variable({2, 5}), make_variable({3}));
      },
      {"[gather_nd] indices with shape (3,) must have 2 axes or more"});
  expect_error(
      [] {
        F::gather_nd(make_variable({2, 5}), make_variable({3, 1}));
      },
      {"[gather_nd] indices with shape (3, 1) has 3 rows, more than x with "
       "shape (2, 5) has axes"});
  auto y = F::gather_nd(make_variable({2, 5}), variable_from({2, 1}, {1, 5}));
  expect_error([&] { y->forward(); },
               {"[gather_nd] indices holds 5 at row 1, column 0, but axis 1 of "
                "x with shape (2, 5) has size 5; indices must be in [-5, 5)"});
  expect_error(
      [] {
        F::scatter_nd(make_variable({3}), make_variable({1, 4}), {8});
      },
      {"[scatter_nd] data with shape (3,) must have shape (4,) (indices with "
       "shape (1, 4) without its first axis, then shape (8,) from axis 1)"});
  expect_error(
      [] {
        F::scatter_nd(make_variable({4}), make_variable({1, 4}), Shape{});
      },
      {"[scatter_nd] shape is empty"});
  expect_error(
      [] {
        F::scatter_nd(make_variable({4}), make_variable({1, 4}),
                      make_variable({8}), {9});
      },
      {"[scatter_nd] out with shape (8,) differs from shape (9,)"});
  expect_error(
      [] {
        F::scatter_add(make_variable({3, 4}), make_variable({2, 4}),
                       make_variable({2, 3}), 0);
      },
      {"[scatter_add] indices with shape (2, 4) is larger on axis 1 than x1"});
  expect_error(
      [] {
        F::scatter_add(make_variable({3, 4}), make_variable({2}),
                       make_variable({2, 3}), 0);
      },
      {"[scatter_add] x0, indices and x1 must have one rank, but have shapes "
       "(3, 4), (2,), (2, 3)"});
  auto z = F::scatter_add(make_variable({3, 4}), variable_from({1, 1}, {3}),
                          make_variable({1, 1}), 0);
  expect_error([&] { z->forward(); },
               {"[scatter_add] indices holds 3 at flat index 0, but axis 0 of "
                "x0 with shape (3, 4) has size 3; indices must be in [0, 3)"});
}

}  // namespace
}  // namespace mg::test::scatter_ops_tests
