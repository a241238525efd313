// Einsum: harness cases (matrix products, batches, diagonals, traces,
// broadcast ellipses, three inputs, the implicit output) against a double
// reference written independently of the kernel, NumPy's documented
// examples, and one test per validation branch.
#include <gtest/gtest.h>

#include <map>
#include <numeric>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::einsum_tests {
namespace {

// The double reference: "terms->out" with letters only (an ellipsis is
// written out as letters); an input axis of size 1 broadcasts.
Doubles einsum_ref(const std::string& eq, const std::vector<Shape>& shapes,
                   const std::vector<Doubles>& xs) {
  const size_t arrow = eq.find("->");
  std::vector<std::string> terms(1);
  for (char c : eq.substr(0, arrow)) {
    if (c == ',') {
      terms.emplace_back();
    } else {
      terms.back().push_back(c);
    }
  }
  const std::string out = eq.substr(arrow + 2);
  std::map<char, int64_t> size;
  for (size_t k = 0; k < terms.size(); ++k) {
    for (size_t a = 0; a < terms[k].size(); ++a) {
      size[terms[k][a]] = std::max(size[terms[k][a]], shapes[k][a]);
    }
  }
  std::string labels = out;
  for (const auto& [c, s] : size) {
    if (out.find(c) == std::string::npos) labels.push_back(c);
  }
  int64_t out_size = 1;
  for (char c : out) out_size *= size[c];
  Doubles y(static_cast<size_t>(out_size), 0.0);
  std::map<char, int64_t> at;
  std::function<void(size_t)> rec = [&](size_t d) {
    if (d == labels.size()) {
      double p = 1.0;
      for (size_t k = 0; k < terms.size(); ++k) {
        int64_t off = 0;
        for (size_t a = 0; a < terms[k].size(); ++a) {
          const int64_t i = shapes[k][a] == 1 ? 0 : at[terms[k][a]];
          off = off * shapes[k][a] + i;
        }
        p *= xs[k][off];
      }
      int64_t o = 0;
      for (char c : out) o = o * size[c] + at[c];
      y[o] += p;
      return;
    }
    for (int64_t i = 0; i < size[labels[d]]; ++i) {
      at[labels[d]] = i;
      rec(d + 1);
    }
  };
  rec(0);
  return y;
}

// `eq` run; `ref_eq` (letters only, explicit output) for the reference.
harness::Case einsum_case(std::string eq, std::vector<Shape> shapes,
                          std::string ref_eq = "", bool batch = true) {
  if (ref_eq.empty()) ref_eq = eq;
  harness::Case k{eq, [=] {
                    FunctionCheck c;
                    for (const Shape& s : shapes) c.inputs.emplace_back(s);
                    c.build = [=](const std::vector<VariablePtr>& in) {
                      return F::einsum(in, eq);
                    };
                    c.reference = [=](const std::vector<Doubles>& in) {
                      return einsum_ref(ref_eq, shapes, in);
                    };
                    return c;
                  }};
  if (!batch) k.no_batch_change = "the first axis is also a square's side";
  return k;
}

const bool kEinsum = harness::add(
    decl::Einsum,
    {einsum_case("ij,jk->ik", {{3, 4}, {4, 5}}),
     einsum_case("bij,bjk->bik", {{2, 3, 4}, {2, 4, 2}}),
     einsum_case("ij,jk", {{3, 4}, {4, 2}}, "ij,jk->ik"),
     einsum_case("ii->i", {{4, 4}}, "", false),
     einsum_case("bii", {{2, 3, 3}}, "bii->b"),
     einsum_case("...ij,...jk->...ik", {{2, 1, 3, 4}, {1, 3, 4, 2}},
                 "xyij,xyjk->xyik"),
     einsum_case("i,i,i->", {{5}, {5}, {5}}),
     einsum_case("ijk->kji", {{2, 3, 4}}),
     einsum_case("bn,nm,bm->b", {{3, 4}, {4, 5}, {3, 5}}),
     // j is summed out of x1 alone: dx1 is dy x0 summed, broadcast along j.
     einsum_case("i,j->i", {{3}, {4}}),
     einsum_case("bij,bj->", {{2, 3, 4}, {2, 4}})});

VariablePtr arange(const Shape& s) {
  std::vector<float> v(static_cast<size_t>(shape_size(s)));
  std::iota(v.begin(), v.end(), 0.0f);
  return variable_from(s, v);
}

Doubles run(const std::vector<VariablePtr>& xs, const std::string& eq,
            Shape* shape = nullptr) {
  auto y = F::einsum(xs, eq);
  y->forward();
  if (shape) *shape = y->shape();
  return to_doubles(y);
}

// numpy.einsum's documented examples on a = arange(25).reshape(5, 5),
// b = arange(5), c = arange(6).reshape(2, 3).
TEST(Einsum, NumPysExamples) {
  auto a = arange({5, 5});
  auto b = arange({5});
  auto c = arange({2, 3});
  Shape s;
  EXPECT_EQ(run({a}, "ii", &s), Doubles{60});
  EXPECT_EQ(s, Shape{});
  EXPECT_EQ(run({a}, "ii->i"), (Doubles{0, 6, 12, 18, 24}));
  EXPECT_EQ(run({a}, "ij->i"), (Doubles{10, 35, 60, 85, 110}));
  EXPECT_EQ(run({c}, "ji", &s), (Doubles{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(s, (Shape{3, 2}));
  EXPECT_EQ(run({a, b}, "ij,j"), (Doubles{30, 80, 130, 180, 230}));
  EXPECT_EQ(run({b, b}, "i,i"), Doubles{30});
  EXPECT_EQ(run({a, b}, "...j,j"), (Doubles{30, 80, 130, 180, 230}));
  // Upper case sorts before lower case in the implicit output.
  run({arange({2, 3})}, "aB", &s);
  EXPECT_EQ(s, (Shape{3, 2}));
}

TEST(Einsum, GradsOfARepeatedLabelFallOnTheDiagonal) {
  auto a = variable_from({2, 2}, {1, 2, 3, 4}, true);
  auto y = F::einsum({a}, "ii");
  y->forward();
  a->grad()->zero();
  y->backward(3.0f);
  EXPECT_EQ(grad_doubles(a), (Doubles{3, 0, 0, 3}));
}

TEST(Einsum, AnEmptyAxisSumsToZero) {
  auto a = make_variable({3, 0}, true);
  auto b = make_variable({0, 2}, true);
  auto y = F::einsum({a, b}, "ij,jk->ik");
  y->forward();
  EXPECT_EQ(y->shape(), (Shape{3, 2}));
  EXPECT_EQ(to_doubles(y), Doubles(6, 0.0));
  y->backward(1.0f);
  EXPECT_EQ(grad_doubles(a), Doubles{});
}

TEST(Einsum, Errors) {
  auto x = make_variable({2, 3});
  auto y = make_variable({3, 4});
  expect_error(
      [&] {
        F::einsum({x, y}, "ij,jk->ik->i");
      },
      {"[einsum] equation 'ij,jk->ik->i' has more than one '->'"});
  expect_error(
      [&] {
        F::einsum({x, y}, "ij,j1");
      },
      {"[einsum] equation 'ij,j1' has '1': only letters"});
  expect_error(
      [&] {
        F::einsum({x, y}, "i.j,jk");
      },
      {"has a '.' outside an ellipsis"});
  expect_error(
      [&] {
        F::einsum({x, y}, "ij");
      },
      {"[einsum] equation 'ij' has 1 input terms but 2 inputs"});
  expect_error(
      [&] {
        F::einsum({x, y}, "ij,");
      },
      {"[einsum] equation 'ij,' has an empty term for input 1"});
  expect_error(
      [&] { F::einsum({x}, "...i..."); },
      {"[einsum] the term of input 0 in '...i...' has more than one '...'"});
  expect_error(
      [&] {
        F::einsum({x, y}, "ijk,jk");
      },
      {"[einsum] input 0 with shape (2, 3) has 2 axes but its term "
       "in 'ijk,jk' names 3"});
  expect_error(
      [&] {
        F::einsum({x, y}, "ij,ik");
      },
      {"[einsum] label 'i' is 3 at axis 0 of input 1 with shape "
       "(3, 4) but 2 where it appears before"});
  expect_error(
      [&] {
        F::einsum({make_variable({2, 3}), make_variable({4, 5, 3})},
                  "...i,...i");
      },
      {"[einsum] '...' stands for 2 axes in input 1"});
  expect_error(
      [&] {
        F::einsum({make_variable({2, 3}), make_variable({4, 3})}, "...i,...i");
      },
      {"[einsum] '...' axis 0 of input 1 with shape (4, 3) is 4 against 2"});
  expect_error(
      [&] {
        F::einsum({x, y}, "ij,jk->iik");
      },
      {"[einsum] equation 'ij,jk->iik' repeats i in its output"});
  expect_error(
      [&] {
        F::einsum({x, y}, "ij,jk->iz");
      },
      {"[einsum] output label 'z' of equation 'ij,jk->iz' is in no "
       "input term"});
}

}  // namespace
}  // namespace mg::test::einsum_tests
