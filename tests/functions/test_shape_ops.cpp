// Reshape, Transpose, Concatenate and Slice: the shared checker and every
// validation branch.
//
// Tolerances: the checker's defaults (half 1e-2, bfloat16 5e-2). These
// functions only move elements, so a reduced run differs from float by the
// rounding of its inputs and output grad alone: 2^-12 (half) and 2^-9
// (bfloat16) relative, for values in [-1, 1].
#include <gtest/gtest.h>

#include <algorithm>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::shape_ops_tests {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected std::invalid_argument";
  return "";
}

// The multi-index of flat index i in shape.
std::vector<int64_t> unravel(int64_t i, const Shape& shape) {
  std::vector<int64_t> idx(shape.size());
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t i = 0;
  for (size_t d = 0; d < shape.size(); ++d) i = i * shape[d] + idx[d];
  return i;
}

// ---- Reshape ----

const bool kReshapeAll = harness::add(
    decl::Reshape, {{"default", [] {
                       FunctionCheck c;
                       c.inputs = {{{2, 3, 4}}};
                       c.build = [](const std::vector<VariablePtr>& in) {
                         return F::reshape(in[0], {4, -1});
                       };
                       c.reference = [](const std::vector<Doubles>& in) {
                         return in[0];
                       };
                       return c;
                     }}});

TEST(Reshape, InfersMinusOneAndCopies) {
  auto x = variable_from({2, 3}, {1, 2, 3, 4, 5, 6}, true);
  auto y = F::reshape(x, {-1});
  EXPECT_EQ(y->shape(), (Shape{6}));
  EXPECT_EQ(F::reshape(x, {3, 1, -1})->shape(), (Shape{3, 1, 2}));
  EXPECT_EQ(F::reshape(make_variable({}), {1, 1})->shape(), (Shape{1, 1}));
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{1, 2, 3, 4, 5, 6}));
  // A copy, not a shared buffer: clear_buffer on x cannot free y's data.
  EXPECT_NE(y->data()->array_ptr(), x->data()->array_ptr());
}

TEST(Reshape, SizeMismatchNamesBothShapes) {
  EXPECT_EQ(error_of([] {
              F::reshape(make_variable({2, 3}), {4, 2});
            }),
            "[reshape] x with shape (2, 3) has 6 elements, but shape (4, 2) "
            "has 8");
}

TEST(Reshape, MinusOneThatDoesNotDivide) {
  EXPECT_EQ(error_of([] {
              F::reshape(make_variable({2, 3}), {4, -1});
            }),
            "[reshape] x with shape (2, 3) has 6 elements, which is not a "
            "multiple of 4, the size of shape (4, -1) without its -1");
}

TEST(Reshape, BadShapes) {
  EXPECT_EQ(error_of([] {
              F::reshape(make_variable({2, 3}), {-1, -1});
            }),
            "[reshape] shape (-1, -1) has more than one -1");
  EXPECT_EQ(error_of([] {
              F::reshape(make_variable({2, 3}), {-2, -3});
            }),
            "[reshape] shape (-2, -3) has a negative dimension -2; only -1 "
            "(inferred) is allowed");
  EXPECT_EQ(error_of([] {
              F::reshape(make_variable({0, 3}), {0, -1});
            }),
            "[reshape] x with shape (0, 3) has 0 elements, but the -1 in shape "
            "(0, -1) cannot be inferred next to a 0 dimension");
}

// ---- Transpose ----

FunctionCheck transpose_check(const Shape& shape, std::vector<int> axes) {
  FunctionCheck c;
  c.inputs = {{shape}};
  c.build = [=](const std::vector<VariablePtr>& in) {
    return F::transpose(in[0], axes);
  };
  c.reference = [=](const std::vector<Doubles>& in) {
    const int nd = static_cast<int>(shape.size());
    Shape ys(nd);
    for (int i = 0; i < nd; ++i) ys[i] = shape[(axes[i] + nd) % nd];
    Doubles y(in[0].size());
    for (int64_t o = 0; o < static_cast<int64_t>(y.size()); ++o) {
      const auto yi = unravel(o, ys);
      std::vector<int64_t> xi(nd);
      for (int i = 0; i < nd; ++i) xi[(axes[i] + nd) % nd] = yi[i];
      y[o] = in[0][ravel(xi, shape)];
    }
    return y;
  };
  return c;
}

const bool kTransposeMatrix =
    harness::add(decl::Transpose, {{"matrix", [] {
                                      return transpose_check({3, 5}, {1, 0});
                                    }}});
const bool kTransposeRotate3D = harness::add(
    decl::Transpose, {{"rotate3 d", [] {
                         return transpose_check({2, 3, 4}, {2, 0, 1});
                       }}});
const bool kTransposeInner4DWithNegativeAxes = harness::add(
    decl::Transpose, {{"inner4 d with negative axes", [] {
                         return transpose_check({2, 3, 4, 5}, {0, -2, 1, -1});
                       }}});
const bool kTransposeSizeOneAxesAndIdentity = harness::add(
    decl::Transpose, {{"size-one axes",
                       [] {
                         return transpose_check({1, 3, 1, 4}, {3, 2, 1, 0});
                       }},
                      {"identity", [] {
                         return transpose_check({2, 3}, {0, 1});
                       }}});

TEST(Transpose, Large) {
  // Enough elements for the parallel path; checked against the reference.
  auto c = transpose_check({64, 33, 20}, {2, 0, 1});
  check_forward(c);
}

TEST(Transpose, BadAxes) {
  EXPECT_EQ(error_of([] {
              F::transpose(make_variable({2, 3, 4}), {1, 0});
            }),
            "[transpose] axes (1, 0) has 2 entries, but x with shape (2, 3, 4) "
            "has 3 dimensions");
  EXPECT_EQ(
      error_of([] {
        F::transpose(make_variable({2, 3, 4}), {0, 0, 1});
      }),
      "[transpose] axes (0, 0, 1) names axis 0 twice for x with shape (2, 3, "
      "4)");
  EXPECT_EQ(error_of([] {
              F::transpose(make_variable({2, 3}), {0, 2});
            }),
            "[transpose] axes (0, 2) has axis 2, out of range for x with shape "
            "(2, 3)");
}

// ---- Concatenate ----

FunctionCheck concat_check(const std::vector<Shape>& shapes, int axis) {
  FunctionCheck c;
  for (const Shape& s : shapes) c.inputs.push_back({s});
  c.build = [=](const std::vector<VariablePtr>& in) {
    return F::concatenate(in, axis);
  };
  c.reference = [=](const std::vector<Doubles>& in) {
    const int nd = static_cast<int>(shapes[0].size());
    const int a = axis < 0 ? axis + nd : axis;
    Doubles y;
    const int64_t outer = shape_size(shapes[0], 0, a);
    for (int64_t o = 0; o < outer; ++o) {
      for (size_t k = 0; k < shapes.size(); ++k) {
        const int64_t chunk = shape_size(shapes[k], a, nd);
        y.insert(y.end(), in[k].begin() + o * chunk,
                 in[k].begin() + (o + 1) * chunk);
      }
    }
    return y;
  };
  return c;
}

const bool kConcatenateMiddleAxis =
    harness::add(decl::Concatenate,
                 {{"middle axis", [] {
                     return concat_check({{2, 1, 3}, {2, 4, 3}, {2, 2, 3}}, 1);
                   }}});
const bool kConcatenateMore = harness::add(
    decl::Concatenate, {{"last axis",
                         [] {
                           return concat_check({{3, 2}, {3, 5}}, -1);
                         }},
                        {"first axis",
                         [] {
                           return concat_check({{1, 4}, {3, 4}}, 0);
                         }},
                        {"one input", [] {
                           return concat_check({{2, 3}}, 0);
                         }}});

TEST(Concatenate, DefaultAxisIsTheLast) {
  auto y = F::concatenate({make_variable({3, 2}), make_variable({3, 5})});
  EXPECT_EQ(y->shape(), (Shape{3, 7}));
}

TEST(Concatenate, Large) {
  check_forward(concat_check({{300, 60}, {300, 50}}, 1));
}

TEST(Concatenate, SameVariableTwiceGetsBothGrads) {
  auto x = variable_from({2}, {1, 2}, true);
  auto y = F::concatenate({x, x}, 0);
  y->forward();
  EXPECT_EQ(to_doubles(y), (Doubles{1, 2, 1, 2}));
  auto g = make_ndarray({4});
  float* gp = g->cast<float>(true);
  gp[0] = 1, gp[1] = 2, gp[2] = 10, gp[3] = 20;
  y->backward(g);
  EXPECT_EQ(grad_doubles(x), (Doubles{11, 22}));
}

TEST(Concatenate, BadInputs) {
  EXPECT_EQ(error_of([] {
              F::concatenate({make_variable({2, 3}), make_variable({3, 4})}, 1);
            }),
            "[concatenate] x1 with shape (3, 4) must match x0 with shape "
            "(2, 3) on every axis but the concatenation axis 1; axis 0 is 3 "
            "against 2");
  EXPECT_EQ(error_of([] {
              F::concatenate({make_variable({2, 3}), make_variable({2, 3, 1})});
            }),
            "[concatenate] x1 with shape (2, 3, 1) has 3 dimensions, but x0 "
            "with shape (2, 3) has 2");
  EXPECT_EQ(error_of([] {
              F::concatenate({make_variable({2, 3})}, 2);
            }),
            "[concatenate] axis 2 is out of range for x0 with shape (2, 3) (2 "
            "dimensions)");
  EXPECT_EQ(error_of([] { F::concatenate({make_variable({})}, 0); }),
            "[concatenate] axis 0 is out of range for x0 with shape () (0 "
            "dimensions)");
  EXPECT_EQ(error_of([] { F::concatenate({}); }),
            "[concatenate] needs at least one input");
}

// ---- Slice ----

// NNabla's rule, written independently: per axis, Python slicing of the
// resolved (non-negative) start and stop.
FunctionCheck slice_check(const Shape& shape, std::vector<int64_t> start,
                          std::vector<int64_t> stop, std::vector<int64_t> step,
                          const Shape& expected_shape) {
  FunctionCheck c;
  c.inputs = {{shape}};
  c.build = [=](const std::vector<VariablePtr>& in) {
    auto y = F::slice(in[0], start, stop, step);
    // At the case's shape (the harness also builds at other batch sizes).
    if (in[0]->shape() == shape) {
      EXPECT_EQ(y->shape(), expected_shape);
    }
    return y;
  };
  c.reference = [=](const std::vector<Doubles>& in) {
    const int nd = static_cast<int>(shape.size());
    const int first = nd - static_cast<int>(start.size());
    Doubles y(shape_size(expected_shape));
    for (int64_t o = 0; o < static_cast<int64_t>(y.size()); ++o) {
      auto idx = unravel(o, expected_shape);
      for (int a = first; a < nd; ++a) {
        int64_t s = start[a - first];
        if (s < 0) s += shape[a];
        idx[a] = s + idx[a] * (step.empty() ? 1 : step[a - first]);
      }
      y[o] = in[0][ravel(idx, shape)];
    }
    return y;
  };
  return c;
}

const bool kSlicePositiveSteps = harness::add(
    decl::Slice, {{"positive steps", [] {
                     return slice_check({4, 5, 6}, {1, 0, 1}, {3, 5, 6},
                                        {1, 2, 3}, {2, 3, 2});
                   }}});
const bool kSliceNegativeStep = harness::add(
    decl::Slice,
    {{"negative step", [] {
        return slice_check({4, 6}, {3, 5}, {-5, 0}, {-1, -2}, {4, 3});
      }}});
const bool kSliceNegativeIndicesAndClippedStop = harness::add(
    decl::Slice,
    {{"negative indices and clipped stop", [] {
        return slice_check({3, 7}, {-2, -6}, {100, -1}, {}, {2, 5});
      }}});
const bool kSliceShortVectorsApplyToTheLastAxes = harness::add(
    decl::Slice, {{"short vectors apply to the last axes", [] {
                     return slice_check({2, 3, 8}, {2}, {7}, {2}, {2, 3, 3});
                   }}});
TEST(Slice, Large) {
  // Enough elements for the parallel path, with a reversed last axis.
  check_forward(slice_check({64, 40, 30}, {1, 0, 29}, {64, 40, -31}, {2, 1, -1},
                            {32, 40, 30}));
}

TEST(Slice, EmptyResult) {
  auto y = F::slice(make_variable({3, 4}), {2, 0}, {1, 4});
  EXPECT_EQ(y->shape(), (Shape{0, 4}));
  y->forward();
}

TEST(Slice, BadInputs) {
  auto x = [] { return make_variable({3, 4}); };
  EXPECT_EQ(error_of([&] {
              F::slice(x(), {0, 0}, {1}, {});
            }),
            "[slice] start, stop and step must have the same length, but "
            "have 2, 1 and 0");
  EXPECT_EQ(error_of([&] {
              F::slice(x(), {0, 0, 0}, {1, 1, 1});
            }),
            "[slice] start, stop and step have 3 entries, but x with shape "
            "(3, 4) has only 2 dimensions");
  EXPECT_EQ(error_of([&] {
              F::slice(x(), {0, 0}, {1, 1}, {1, 0});
            }),
            "[slice] step is 0 on axis 1 of x with shape (3, 4)");
  EXPECT_EQ(error_of([&] {
              F::slice(x(), {4, 0}, {4, 1});
            }),
            "[slice] start 4 is out of range on axis 0 of x with shape (3, 4); "
            "expected [-3, 3] with step 1");
  EXPECT_EQ(error_of([&] {
              F::slice(x(), {0, 4}, {1, 0}, {1, -1});
            }),
            "[slice] start 4 is out of range on axis 1 of x with shape (3, 4); "
            "expected [-4, 3] with step -1");
  EXPECT_EQ(error_of([&] {
              F::slice(x(), {0, 0}, {-4, 1});
            }),
            "[slice] stop -4 is out of range on axis 0 of x with shape (3, 4); "
            "expected at least -3 with step 1");
}

// ---- all four in the reduced types ----

// On the CPU in float, half and bfloat16 (a CUDA build adds its own).
TEST(ShapeOps, RegisteredForEveryFloatType) {
  for (const char* name : {"Reshape", "Transpose", "Concatenate", "Slice"}) {
    std::vector<Dtype> cpu;
    for (const Backend& b : FunctionRegistry::instance().backends(name)) {
      if (b.name == "cpu") cpu.push_back(b.type);
    }
    std::sort(cpu.begin(), cpu.end());
    EXPECT_EQ(cpu, (std::vector<Dtype>{Dtype::f32, Dtype::f16, Dtype::bf16}))
        << name;
  }
}

}  // namespace
}  // namespace mg::test::shape_ops_tests
