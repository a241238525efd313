// Unary and binary elementwise functions through the shared checker.
#include <gtest/gtest.h>

#include <cmath>

#include "../support/function_tester.hpp"

namespace mg::test {
namespace {

TEST(ReLU, All) {
  check_all(unary_check([](auto x) { return F::relu(x); },
                        [](double x) { return x > 0 ? x : 0; }));
}

TEST(LeakyReLU, All) {
  check_all(unary_check([](auto x) { return F::leaky_relu(x, 0.2f); },
                        [](double x) { return x > 0 ? x : 0.2 * x; }));
}

TEST(Sigmoid, All) {
  check_all(unary_check([](auto x) { return F::sigmoid(x); },
                        [](double x) { return 1 / (1 + std::exp(-x)); }));
}

TEST(Tanh, All) {
  check_all(unary_check([](auto x) { return F::tanh(x); },
                        [](double x) { return std::tanh(x); }));
}

TEST(ELU, All) {
  check_all(unary_check([](auto x) { return F::elu(x, 0.5f); }, [](double x) {
    return x >= 0 ? x : 0.5 * (std::exp(x) - 1);
  }));
}

TEST(GELU, All) {
  check_all(unary_check([](auto x) { return F::gelu(x); }, [](double x) {
    const double c = std::sqrt(2 / M_PI);
    return 0.5 * x * (1 + std::tanh(c * (x + 0.044715 * x * x * x)));
  }));
}

TEST(Exp, All) {
  check_all(unary_check([](auto x) { return F::exp(x); },
                        [](double x) { return std::exp(x); }));
}

TEST(Log, All) {
  check_all(unary_check([](auto x) { return F::log(x); },
                        [](double x) { return std::log(x); }, 0.5f, 3.0f));
}

TEST(Identity, All) {
  check_all(unary_check([](auto x) { return F::identity(x); },
                        [](double x) { return x; }));
}

TEST(AddScalar, All) {
  check_all(unary_check([](auto x) { return F::add_scalar(x, 1.5f); },
                        [](double x) { return x + 1.5; }));
}

TEST(MulScalar, All) {
  check_all(unary_check([](auto x) { return F::mul_scalar(x, -3.0f); },
                        [](double x) { return -3 * x; }));
}

TEST(PowScalar, All) {
  auto c = unary_check([](auto x) { return F::pow_scalar(x, 2.5f); },
                       [](double x) { return std::pow(x, 2.5); }, 0.5f, 2.0f);
  check_all(c);
}

// ---- binary, with broadcasting ----

using BinaryRef = std::function<double(double, double)>;

// Broadcasts by the NumPy rule with explicit index arithmetic.
Doubles broadcast_ref(const Shape& sa, const Doubles& a, const Shape& sb,
                      const Doubles& b, const BinaryRef& f) {
  const size_t nd = std::max(sa.size(), sb.size());
  Shape pa(nd, 1), pb(nd, 1), out(nd);
  std::copy(sa.begin(), sa.end(), pa.begin() + (nd - sa.size()));
  std::copy(sb.begin(), sb.end(), pb.begin() + (nd - sb.size()));
  for (size_t i = 0; i < nd; ++i) out[i] = std::max(pa[i], pb[i]);
  Doubles y(shape_size(out));
  for (int64_t o = 0; o < static_cast<int64_t>(y.size()); ++o) {
    int64_t rem = o, ia = 0, ib = 0, sa_ = 1, sb_ = 1;
    for (int d = static_cast<int>(nd) - 1; d >= 0; --d) {
      const int64_t idx = rem % out[d];
      rem /= out[d];
      ia += (pa[d] == 1 ? 0 : idx) * sa_;
      ib += (pb[d] == 1 ? 0 : idx) * sb_;
      sa_ *= pa[d];
      sb_ *= pb[d];
    }
    y[o] = f(a[ia], b[ib]);
  }
  return y;
}

FunctionCheck binary_check(
    std::function<VariablePtr(const VariablePtr&, const VariablePtr&)> f,
    BinaryRef ref, const Shape& sa, const Shape& sb, float low = -2.0f) {
  FunctionCheck c;
  c.inputs = {{sa, low, 2.0f}, {sb, low, 2.0f}};
  c.build = [f](const std::vector<VariablePtr>& in) { return f(in[0], in[1]); };
  c.reference = [=](const std::vector<Doubles>& in) {
    return broadcast_ref(sa, in[0], sb, in[1], ref);
  };
  return c;
}

struct BinaryCase {
  const char* name;
  std::function<VariablePtr(const VariablePtr&, const VariablePtr&)> f;
  BinaryRef ref;
  float low;
};

class Binary : public ::testing::TestWithParam<BinaryCase> {};

TEST_P(Binary, SameShape) {
  const auto& p = GetParam();
  check_all(binary_check(p.f, p.ref, {2, 3, 4}, {2, 3, 4}, p.low));
}

TEST_P(Binary, Broadcast) {
  const auto& p = GetParam();
  check_all(binary_check(p.f, p.ref, {2, 3, 4}, {3, 1}, p.low));
  check_all(binary_check(p.f, p.ref, {1, 4}, {2, 3, 1}, p.low));
}

TEST_P(Binary, ShapesThatDoNotBroadcastAreRejected) {
  const auto& p = GetParam();
  auto a = make_variable({2, 3}), b = make_variable({4});
  try {
    p.f(a, b);
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("(2, 3)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("(4,)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cannot broadcast"), std::string::npos) << msg;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Arithmetic, Binary,
    ::testing::Values(
        BinaryCase{"Add2", [](auto a, auto b) { return F::add2(a, b); },
                   [](double a, double b) { return a + b; }, -2.0f},
        BinaryCase{"Sub2", [](auto a, auto b) { return F::sub2(a, b); },
                   [](double a, double b) { return a - b; }, -2.0f},
        BinaryCase{"Mul2", [](auto a, auto b) { return F::mul2(a, b); },
                   [](double a, double b) { return a * b; }, -2.0f},
        BinaryCase{"Div2", [](auto a, auto b) { return F::div2(a, b); },
                   [](double a, double b) { return a / b; }, 0.5f}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Mul2, SameVariableTwiceGetsBothGrads) {
  auto x = variable_from({3}, {1, 2, 3}, true);
  auto y = F::mul2(x, x);
  y->forward();
  y->backward();
  EXPECT_EQ(grad_doubles(x), (Doubles{2, 4, 6}));
}

TEST(Elementwise, NullInputIsRejected) {
  try {
    F::relu(nullptr);
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[relu]"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace mg::test
