// LSTM cells and sequences against a double reference that reads the
// parameters back from the scope.
#include <gtest/gtest.h>

#include <cmath>
#include <mixgraph/utils/yaml/network.hpp>

#include "../support/function_tester.hpp"

namespace mg::test {
namespace {

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// One step for N rows: x (N, I), h and c (N, H); W (I + H, 4H), b (4H),
// gates [i, o, f, g]. Updates h and c in place.
void cell_ref(const double* x, Doubles& h, Doubles& c, const Doubles& W,
              const Doubles& b, int64_t N, int64_t I, int64_t H) {
  Doubles hn(N * H), cn(N * H);
  for (int64_t n = 0; n < N; ++n) {
    Doubles g(4 * H);
    for (int64_t o = 0; o < 4 * H; ++o) {
      double s = b[o];
      for (int64_t k = 0; k < I; ++k) s += x[n * I + k] * W[k * 4 * H + o];
      for (int64_t k = 0; k < H; ++k)
        s += h[n * H + k] * W[(I + k) * 4 * H + o];
      g[o] = s;
    }
    for (int64_t k = 0; k < H; ++k) {
      const double i = sigmoid(g[k]), o = sigmoid(g[H + k]);
      const double f = sigmoid(g[2 * H + k]), u = std::tanh(g[3 * H + k]);
      cn[n * H + k] = f * c[n * H + k] + i * u;
      hn[n * H + k] = o * std::tanh(cn[n * H + k]);
    }
  }
  h = hn;
  c = cn;
}

TEST(LstmCell, All) {
  const int64_t N = 2, I = 3, H = 4;
  ParameterScope params;
  FunctionCheck c;
  c.inputs = {{{N, I}}, {{N, H}}, {{N, H}}};
  c.build = [=](const std::vector<VariablePtr>& in) {
    auto [h, cell] = PF::lstm_cell(in[0], in[1], in[2], H, params["cell"]);
    return F::concatenate({h, cell}, 1);
  };
  c.reference = [=](const std::vector<Doubles>& in) {
    Doubles h = in[1], cell = in[2];
    cell_ref(in[0].data(), h, cell, to_doubles(params.get("cell/W")),
             to_doubles(params.get("cell/b")), N, I, H);
    Doubles y;
    for (int64_t n = 0; n < N; ++n) {
      y.insert(y.end(), h.begin() + n * H, h.begin() + (n + 1) * H);
      y.insert(y.end(), cell.begin() + n * H, cell.begin() + (n + 1) * H);
    }
    return y;
  };
  check_all(c);
  EXPECT_EQ(params.get("cell/W")->shape(), (Shape{I + H, 4 * H}));
}

TEST(Lstm, SequenceOutputs) {
  const int64_t T = 4, N = 2, I = 3, H = 3;
  ParameterScope params;
  FunctionCheck c;
  c.inputs = {{{T, N, I}}, {{N, H}}, {{N, H}}};
  c.build = [=](const std::vector<VariablePtr>& in) {
    auto [y, h, cell] = PF::lstm(in[0], in[1], in[2], H, params["lstm"]);
    return y;
  };
  c.reference = [=](const std::vector<Doubles>& in) {
    Doubles h = in[1], cell = in[2], y;
    const Doubles W = to_doubles(params.get("lstm/W"));
    const Doubles b = to_doubles(params.get("lstm/b"));
    for (int64_t t = 0; t < T; ++t) {
      cell_ref(in[0].data() + t * N * I, h, cell, W, b, N, I, H);
      y.insert(y.end(), h.begin(), h.end());
    }
    return y;
  };
  check_all(c);
}

TEST(Lstm, ZeroInitialStateAndLastOutputs) {
  ParameterScope params;
  auto x = make_variable({5, 2, 3});
  auto [y, h, c] = PF::lstm(x, nullptr, nullptr, 4, params);
  EXPECT_EQ(y->shape(), (Shape{5, 2, 4}));
  EXPECT_EQ(h->shape(), (Shape{2, 4}));
  EXPECT_EQ(c->shape(), (Shape{2, 4}));
  EXPECT_EQ(params.parameters().size(), 2u);  // one W and b for every step
}

TEST(Lstm, BadShapes) {
  ParameterScope params;
  try {
    PF::lstm_cell(make_variable({2, 3}), make_variable({2, 5}),
                  make_variable({2, 4}), 4, params);
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[lstm_cell] h with shape (2, 5) must "
                                         "be (2, 4)"),
              std::string::npos)
        << e.what();
  }
  try {
    PF::lstm(make_variable({2, 3}), nullptr, nullptr, 4, params);
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(
        std::string(e.what()).find("[lstm] x must be a (T, N, I) sequence"),
        std::string::npos)
        << e.what();
  }
}

// Split (several outputs), Stack and the gate functions write and read back
// as a network: the rebuilt LSTM gives the same outputs.
TEST(Lstm, RoundTripThroughYaml) {
  seed(4);
  ParameterScope params;
  auto x = make_variable({3, 2, 3});
  x->set_name("x");
  auto h0 = variable_from({2, 4}, std::vector<float>(8, 0.25f));
  h0->set_name("h0");
  auto [y, h, c] = PF::lstm(x, h0, nullptr, 4, params["lstm"]);
  uniform_initializer()(*x->data());
  y->forward();
  const std::string yaml = network_to_yaml("lstm", {{"y", y}}, params);
  EXPECT_NE(yaml.find("type: Split"), std::string::npos) << yaml;
  Network net = network_from_yaml(yaml, params);
  net.input("x")->set_data(x->data());
  net.input("h0")->set_data(h0->data());
  auto y2 = net.output("y");
  y2->forward();
  EXPECT_EQ(to_doubles(y2), to_doubles(y));
}

}  // namespace
}  // namespace mg::test
