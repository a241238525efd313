// Tile, Shift and Trilu: harness cases against double references (Tile
// and Shift also move int32 data exactly), and argument errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::tile_shift_trilu_tests {
namespace {

harness::Case tile_case(Shape xs, std::vector<int> reps) {
  const size_t nd = std::max(xs.size(), reps.size());
  Shape xv(nd - xs.size(), 1);
  xv.insert(xv.end(), xs.begin(), xs.end());
  Shape ys(nd);
  for (size_t a = 0; a < nd; ++a) {
    const size_t lead = nd - reps.size();
    ys[a] = xv[a] * (a >= lead ? reps[a - lead] : 1);
  }
  std::string label = "x " + shape_str(xs) + " reps";
  for (int r : reps) label += " " + std::to_string(r);
  return {label,
          [=] {
            FunctionCheck c;
            c.inputs = {{xs}};
            c.build = [reps](const std::vector<VariablePtr>& in) {
              return F::tile(in[0], reps);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              return gather_ref(in[0], xv, ys,
                                [&](int a, int64_t j) { return j % xv[a]; });
            };
            return c;
          },
          false,
          true,
          {},
          "reps fix y's shape: a new batch gives another y"};
}

harness::Case shift_case(std::vector<int> shifts, const std::string& mode) {
  const Shape xs{2, 4, 5};
  std::string label = mode + " shifts";
  for (int s : shifts) label += " " + std::to_string(s);
  return {label, [=] {
            FunctionCheck c;
            c.inputs = {{xs}};
            c.build = [=](const std::vector<VariablePtr>& in) {
              return F::shift(in[0], shifts, mode);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              const int nd = 3, ns = static_cast<int>(shifts.size());
              return gather_ref(in[0], xs, xs, [&](int a, int64_t j) {
                const int64_t n = xs[a];
                const int64_t s = a >= nd - ns ? shifts[a - (nd - ns)] : 0;
                int64_t i = j - s;
                if (mode == "reflect") {  // the edge repeated (NumPy's
                                          // 'symmetric'), as NNabla's
                  while (i < 0 || i >= n) i = i < 0 ? -i - 1 : 2 * n - 1 - i;
                }
                return std::clamp<int64_t>(i, 0, n - 1);
              });
            };
            return c;
          }};
}

harness::Case trilu_case(int k, bool upper) {
  const Shape xs{2, 4, 5};
  return {std::string(upper ? "upper" : "lower") + " k " + std::to_string(k),
          [=] {
            FunctionCheck c;
            c.inputs = {{xs}};
            c.build = [=](const std::vector<VariablePtr>& in) {
              return F::trilu(in[0], k, upper);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              Doubles y = in[0];
              for (size_t e = 0; e < y.size(); ++e) {
                const int64_t j = e % 5, i = (e / 5) % 4;
                const bool keep = upper ? j - i >= k : j - i <= k;
                if (!keep) y[e] = 0;
              }
              return y;
            };
            return c;
          }};
}

const bool kTileShiftTrilu =
    harness::add(decl::Tile, {tile_case({2, 3}, {2, 1}), tile_case({2, 3}, {3}),
                              tile_case({3}, {2, 2})}) &&
    harness::add(decl::Shift,
                 {shift_case({1, -2}, "nearest"), shift_case({-3}, "reflect"),
                  shift_case({2, 7}, "reflect")}) &&
    harness::add(decl::Trilu, {trilu_case(0, true), trilu_case(1, true),
                               trilu_case(-1, false)});

// The gathers' values and grads at team size (over 1M elements, so over
// parallel_min() under either wait policy), bit for bit against the rule
// written out element by element: y[j] = x[source(j)] (or the fill), and
// dx[i] the sum of dy over the j that read i, added in y's order in fp32.
TEST(AxisGather, BigArraysGiveTheBitsOfTheElementRule) {
  struct Gather {
    std::string name;
    Shape x;
    std::function<VariablePtr(const VariablePtr&)> build;
  };
  const std::vector<Gather> gathers{
      {"unpooling",
       {16, 32, 32, 32},
       [](const VariablePtr& x) {
         return F::unpooling(x, {2, 2});
       }},
      {"tile",
       {4, 16, 64, 33},
       [](const VariablePtr& x) {
         return F::tile(x, {1, 2, 2, 2});
       }},
      {"pad constant",
       {16, 16, 60, 61},
       [](const VariablePtr& x) {
         return F::pad(x, {2, 2, 1, 2}, "constant", 0.5f);
       }},
      {"pad reflect",
       {16, 16, 60, 61},
       [](const VariablePtr& x) {
         return F::pad(x, {3, 1, 2, 2}, "reflect");
       }},
      {"shift", {16, 16, 64, 64}, [](const VariablePtr& x) {
         return F::shift(x, {3, -2}, "reflect");
       }}};
  for (const std::string type : {"float", "half"}) {
    for (const Gather& c : gathers) {
      ContextGuard guard(context("cpu", type));
      std::vector<float> xv(shape_size(c.x));
      for (size_t i = 0; i < xv.size(); ++i) xv[i] = 0.125f * (i % 29) - 1.0f;
      auto x = variable_from(c.x, xv, true);
      auto y = c.build(x);
      y->forward();
      auto seed = make_ndarray(y->shape());
      float* dy = seed->cast<float>(true);
      for (int64_t j = 0; j < y->size(); ++j) {
        dy[j] = 0.0625f * (j % 37) - 0.5f + 1e-3f * (j % 7);
      }
      // The seed as the function reads it: rounded to the type.
      std::vector<float> g(dy, dy + y->size());
      if (type == "half") {
        for (float& e : g) e = static_cast<float>(Half(e));
      }
      y->backward(seed);
      const auto& f = dynamic_cast<const AxisGather&>(y->parent()->function());
      const Shape& ys = y->shape();
      const auto xstride = shape_strides(f.x_view());
      const int nd = static_cast<int>(ys.size());
      Doubles y_ref(y->size());
      std::vector<float> dx_ref(xv.size(), 0.0f);
      std::vector<int64_t> idx(nd, 0);
      for (int64_t j = 0; j < y->size(); ++j) {
        int64_t off = 0;
        for (int d = 0; d < nd && off >= 0; ++d) {
          const int64_t s = f.source()[d][idx[d]];
          off = s < 0 ? -1 : off + s * xstride[d];
        }
        y_ref[j] = off < 0 ? f.fill_value() : xv[off];
        if (off >= 0) dx_ref[off] += g[j];
        for (int d = nd - 1; d >= 0 && ++idx[d] == ys[d]; --d) idx[d] = 0;
      }
      if (type == "half") {
        for (float& e : dx_ref) e = static_cast<float>(Half(e));
      }
      EXPECT_EQ(to_doubles(y), y_ref) << c.name << " in " << type;
      EXPECT_EQ(grad_doubles(x), Doubles(dx_ref.begin(), dx_ref.end()))
          << c.name << " in " << type;
    }
  }
}

TEST(Tile, RepeatsAndSumsTheGrads) {
  auto x = variable_from({2}, {1, 2}, true);
  auto y = F::tile(x, {2, 3});
  y->forward();
  EXPECT_EQ(y->shape(), (Shape{2, 6}));
  EXPECT_EQ(to_doubles(y), (Doubles{1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2}));
  y->backward();
  EXPECT_EQ(grad_doubles(x), (Doubles{6, 6}));
}

// NNabla's reflect repeats the edge: index -1 reads 0, -2 reads 1 (NumPy's
// 'symmetric'), and n reads n - 1. Built from NNabla's argument list.
TEST(Shift, NNablasReflectRepeatsTheEdge) {
  auto x = variable_from({5}, {10, 11, 12, 13, 14});
  auto right = apply_from_args("Shift",
                               {{"shifts", std::vector<int64_t>{2}},
                                {"border_mode", std::string("reflect")}},
                               {x});
  EXPECT_EQ(to_doubles(right[0]), (Doubles{11, 10, 10, 11, 12}));
  auto left = apply_from_args("Shift",
                              {{"shifts", std::vector<int64_t>{-3}},
                               {"border_mode", std::string("reflect")}},
                              {x});
  EXPECT_EQ(to_doubles(left[0]), (Doubles{13, 14, 14, 13, 12}));
  // NNabla's defaults: shifts None (no shift) and border_mode 'nearest'.
  auto same = apply_from_args("Shift", {}, {x});
  EXPECT_EQ(to_doubles(same[0]), to_doubles(x));
}

TEST(Shift, BadArguments) {
  expect_error(
      [] {
        F::shift(make_variable({3}), {1, 1});
      },
      {"[shift] shifts (1, 1) has more entries than x with shape "
       "(3,) has axes"});
  expect_error([] { F::shift(make_variable({3}), {1}, "wrap"); },
               {"[shift] border_mode 'wrap' is not one of nearest, reflect"});
  expect_error([] { F::tile(make_variable({3}), {-1}); },
               {"[tile] reps (-1,) has a negative entry"});
  expect_error([] { F::trilu(make_variable({3})); },
               {"[trilu] x with shape (3,) needs at least 2 axes"});
}

}  // namespace
}  // namespace mg::test::tile_shift_trilu_tests
