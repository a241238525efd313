// Unary and binary elementwise functions through the shared checker.
#include <gtest/gtest.h>

#include <cmath>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::elementwise_tests {
namespace {

const bool kReLUAll =
    harness::add(decl::unary<ops::ReLU>,
                 {{"default", [] {
                     return unary_check([](auto x) { return F::relu(x); },
                                        [](double x) { return x > 0 ? x : 0; });
                   }}});

const bool kLeakyReLUAll = harness::add(
    decl::unary<ops::LeakyReLU>,
    {{"default", [] {
        return unary_check([](auto x) { return F::leaky_relu(x, 0.2f); },
                           [](double x) { return x > 0 ? x : 0.2 * x; });
      }}});

const bool kSigmoidAll = harness::add(
    decl::unary<ops::Sigmoid>,
    {{"default", [] {
        return unary_check([](auto x) { return F::sigmoid(x); },
                           [](double x) { return 1 / (1 + std::exp(-x)); });
      }}});

const bool kTanhAll =
    harness::add(decl::unary<ops::Tanh>,
                 {{"default", [] {
                     return unary_check([](auto x) { return F::tanh(x); },
                                        [](double x) { return std::tanh(x); });
                   }}});

const bool kELUAll = harness::add(
    decl::unary<ops::ELU>,
    {{"default", [] {
        return unary_check(
            [](auto x) { return F::elu(x, 0.5f); },
            [](double x) { return x >= 0 ? x : 0.5 * (std::exp(x) - 1); });
      }}});

const bool kGELUAll = harness::add(
    decl::unary<ops::GELU>,
    {{"default", [] {
        return unary_check(
            [](auto x) { return F::gelu(x); },
            [](double x) {
              const double c = std::sqrt(2 / M_PI);
              return 0.5 * x * (1 + std::tanh(c * (x + 0.044715 * x * x * x)));
            });
      }}});

const bool kExpAll =
    harness::add(decl::unary<ops::Exp>,
                 {{"default", [] {
                     return unary_check([](auto x) { return F::exp(x); },
                                        [](double x) { return std::exp(x); });
                   }}});

const bool kLogAll = harness::add(
    decl::unary<ops::Log>,
    {{"default", [] {
        return unary_check([](auto x) { return F::log(x); },
                           [](double x) { return std::log(x); }, 0.5f, 3.0f);
      }}});

const bool kIdentityAll =
    harness::add(decl::unary<ops::Identity>,
                 {{"default", [] {
                     return unary_check([](auto x) { return F::identity(x); },
                                        [](double x) { return x; });
                   }}});

const bool kAddScalarAll = harness::add(
    decl::unary<ops::AddScalar>,
    {{"default", [] {
        return unary_check([](auto x) { return F::add_scalar(x, 1.5f); },
                           [](double x) { return x + 1.5; });
      }}});

const bool kMulScalarAll = harness::add(
    decl::unary<ops::MulScalar>,
    {{"default", [] {
        return unary_check([](auto x) { return F::mul_scalar(x, -3.0f); },
                           [](double x) { return -3 * x; });
      }}});

const bool kPowScalarAll =
    harness::add(decl::unary<ops::PowScalar>,
                 {{"default", [] {
                     auto c = unary_check(
                         [](auto x) { return F::pow_scalar(x, 2.5f); },
                         [](double x) { return std::pow(x, 2.5); }, 0.5f, 2.0f);
                     return c;
                   }}});

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

// Same shapes, and broadcasting either way.
std::vector<harness::Case> binary_cases(const BinaryCase& p) {
  return {{"same shape",
           [p] {
             return binary_check(p.f, p.ref, {2, 3, 4}, {2, 3, 4}, p.low);
           }},
          {"x1 broadcast",
           [p] {
             return binary_check(p.f, p.ref, {2, 3, 4}, {3, 1}, p.low);
           }},
          {"both broadcast", [p] {
             return binary_check(p.f, p.ref, {1, 4}, {2, 3, 1}, p.low);
           }}};
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

const BinaryCase kAdd2{"Add2", [](auto a, auto b) { return F::add2(a, b); },
                       [](double a, double b) { return a + b; }, -2.0f};
const BinaryCase kSub2{"Sub2", [](auto a, auto b) { return F::sub2(a, b); },
                       [](double a, double b) { return a - b; }, -2.0f};
const BinaryCase kMul2{"Mul2", [](auto a, auto b) { return F::mul2(a, b); },
                       [](double a, double b) { return a * b; }, -2.0f};
const BinaryCase kDiv2{"Div2", [](auto a, auto b) { return F::div2(a, b); },
                       [](double a, double b) { return a / b; }, 0.5f};

const bool kHarness =
    harness::add(decl::binary<ops::Add2>, binary_cases(kAdd2)) &&
    harness::add(decl::binary<ops::Sub2>, binary_cases(kSub2)) &&
    harness::add(decl::binary<ops::Mul2>, binary_cases(kMul2)) &&
    harness::add(decl::binary<ops::Div2>, binary_cases(kDiv2));

INSTANTIATE_TEST_SUITE_P(Arithmetic, Binary,
                         ::testing::Values(kAdd2, kSub2, kMul2, kDiv2),
                         [](const auto& info) {
                           return std::string(info.param.name);
                         });

// ReLU on half and bfloat16 runs on their bits (ops::ReLU::positive_bits):
// every one of the 65536 values gives what ReLU's fp32 rule gives, forward
// and backward (a nan dy passes, as a nan).
template <class T>
void check_relu_on_bits(const char* type) {
  SCOPED_TRACE(type);
  ContextGuard g(context("cpu", type));
  const int64_t n = 1 << 16;
  auto x = make_variable({n}, true);
  T* xs = x->data()->cast<T>(true);
  for (int64_t i = 0; i < n; ++i)
    xs[i] = T::from_bits(static_cast<uint16_t>(i));
  auto y = F::relu(x);
  y->forward();
  auto dy = make_ndarray({n});
  T* dys = dy->cast<T>(true);
  // dy runs through every value too, in another order than x.
  for (int64_t i = 0; i < n; ++i) {
    dys[i] = T::from_bits(static_cast<uint16_t>(i * 40503 + 7));
  }
  y->backward(dy);
  const T* ys = y->data()->get<const T>();
  const T* dxs = x->grad()->get<const T>();
  const ops::ReLU relu;
  int64_t wrong = 0;
  for (int64_t i = 0; i < n; ++i) {
    const T want_y = T(relu(static_cast<float>(xs[i])));
    const T want_dx = T(relu.grad(0.0f, static_cast<float>(want_y),
                                  static_cast<float>(dys[i])));
    const bool y_ok = ys[i].bits == want_y.bits;
    const bool dx_nan = std::isnan(static_cast<float>(want_dx));
    const bool dx_ok = dx_nan ? std::isnan(static_cast<float>(dxs[i]))
                              : dxs[i].bits == want_dx.bits;
    if ((!y_ok || !dx_ok) && wrong++ < 5) {
      ADD_FAILURE() << "x bits " << i << ": y bits " << ys[i].bits << " want "
                    << want_y.bits << ", dx bits " << dxs[i].bits << " want "
                    << want_dx.bits;
    }
  }
  EXPECT_EQ(wrong, 0);
}

TEST(ReLU, HalfAndBFloat16OnTheirBitsAsInFloat) {
  check_relu_on_bits<Half>("half");
  check_relu_on_bits<BFloat16>("bfloat16");
}

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

// NNabla's lists give these functions inplace (obsolete in NNabla): it is
// accepted, and y is the same with it true or false; x is left as it was.
TEST(Elementwise, NNablasInplaceArgumentIsAcceptedAndChangesNothing) {
  auto a = variable_from({3}, {-1, 2, 4});
  auto b = variable_from({3}, {2, 4, 0.5});
  struct Case {
    std::string name;
    FunctionArgs args;  // NNabla's, inplace aside
    bool binary;
    Doubles want;
  };
  const std::vector<Case> cases = {
      {"ReLU", {}, false, {0, 2, 4}},
      {"LeakyReLU", {{"alpha", 0.1}}, false, {-0.1, 2, 4}},
      {"AddScalar", {{"val", 1.0}}, false, {0, 3, 5}},
      {"MulScalar", {{"val", 3.0}}, false, {-3, 6, 12}},
      {"PowScalar", {{"val", 2.0}}, false, {1, 4, 16}},
      {"Add2", {}, true, {1, 6, 4.5}},
      {"BcAdd2", {}, true, {1, 6, 4.5}},
      {"Sub2", {}, true, {-3, -2, 3.5}},
      {"Mul2", {}, true, {-2, 8, 2}},
      {"Div2", {}, true, {-0.5, 0.5, 8}},
      {"Pow2", {}, true, {1, 16, 2}},
  };
  for (const auto& c : cases) {
    for (bool inplace : {false, true}) {
      FunctionArgs args = c.args;
      args.emplace_back("inplace", inplace);
      auto y = apply_from_args(c.name, args,
                               c.binary ? std::vector<VariablePtr>{a, b}
                                        : std::vector<VariablePtr>{a});
      expect_near(to_doubles(y[0]), c.want, 1e-6, 1e-6,
                  c.name + (inplace ? " inplace" : ""));
    }
  }
  EXPECT_EQ(to_doubles(a), (Doubles{-1, 2, 4}));
}

}  // namespace
}  // namespace mg::test::elementwise_tests
