// Tile, Shift and Trilu: harness cases against double references (Tile
// and Shift also move int32 data exactly), and argument errors.
#include <gtest/gtest.h>

#include <algorithm>

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
