// RNN, LSTM and GRU (the fused functions) and the LSTM cell against double
// references: harness cases over layers, directions and biases, a 500-step
// half LSTM against float, PF::lstm and the argument errors; the CPU's
// steps shared out by hidden units against the driver's own loop.
#include <gtest/gtest.h>

#include <cmath>
#include <mixgraph/utils/yaml/network.hpp>

#include <mixgraph/contexts/cpu/cpu_features.hpp>
#include <mixgraph/functions/cpu/gemm_bf16.hpp>
#include <mixgraph/functions/cpu/gemm_packed.hpp>
#include <mixgraph/functions/cpu/recurrent_backend.hpp>
#include <mixgraph/functions/ops/recurrent_driver.hpp>

#include <omp.h>

#include <iostream>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../support/function_tester.hpp"
#include "../support/harness.hpp"

namespace mg::test::recurrent_tests {
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
    cell_ref(in[0].data(), h, cell,
             to_doubles(params.get("cell/lstm/affine/W")),
             to_doubles(params.get("cell/lstm/affine/b")), N, I, H);
    Doubles y;
    for (int64_t n = 0; n < N; ++n) {
      y.insert(y.end(), h.begin() + n * H, h.begin() + (n + 1) * H);
      y.insert(y.end(), cell.begin() + n * H, cell.begin() + (n + 1) * H);
    }
    return y;
  };
  check_all(c);
  EXPECT_EQ(params.get("cell/lstm/affine/W")->shape(), (Shape{I + H, 4, H}));
}

enum class Kind { rnn_tanh, rnn_relu, lstm, gru };

int gates_of(Kind k) { return k == Kind::lstm ? 4 : k == Kind::gru ? 3 : 1; }
int bias_rows_of(Kind k) { return k == Kind::lstm || k == Kind::gru ? 4 : 1; }

// NNabla's RNN, LSTM and GRU functions in double: x (T, B, I), h0 (and c0)
// (L, D, B, H), w0 (D, G, H, I + H), w (L - 1, D, G, H, D H + H) or empty,
// b (L, D, G_b, H) or empty. Returns y, h_n (and c_n), concatenated flat.
Doubles recurrent_ref(Kind kind, const Doubles& x, const Doubles& h0,
                      const Doubles& c0, const Doubles& w0, const Doubles& w,
                      const Doubles& b, int64_t T, int64_t B, int64_t I,
                      int64_t H, int L, int D) {
  const int G = gates_of(kind), R = bias_rows_of(kind);
  Doubles in = x, hn(L * D * B * H), cn(L * D * B * H);
  int64_t n_in = I;
  for (int l = 0; l < L; ++l) {
    Doubles out(T * B * D * H);
    for (int d = 0; d < D; ++d) {
      const int k = l * D + d;
      const int64_t row = n_in + H;
      const double* W = l == 0 ? w0.data() + d * G * H * row
                               : w.data() + ((l - 1) * D + d) * G * H * row;
      auto bias = [&](int r, int64_t j) {
        return b.empty() ? 0.0 : b[(k * R + r) * H + j];
      };
      Doubles h(h0.begin() + k * B * H, h0.begin() + (k + 1) * B * H);
      Doubles c = kind == Kind::lstm ? Doubles(c0.begin() + k * B * H,
                                               c0.begin() + (k + 1) * B * H)
                                     : Doubles(B * H);
      for (int64_t s = 0; s < T; ++s) {
        const int64_t t = d == 0 ? s : T - 1 - s;
        Doubles h_next(B * H);
        for (int64_t n = 0; n < B; ++n) {
          // xs[q] = x_t W_q^T (input part), hs[q] = h W_q^T (hidden part).
          Doubles xs(G * H), hs(G * H);
          for (int64_t q = 0; q < G * H; ++q) {
            for (int64_t j = 0; j < n_in; ++j) {
              xs[q] += in[(t * B + n) * n_in + j] * W[q * row + j];
            }
            for (int64_t j = 0; j < H; ++j) {
              hs[q] += h[n * H + j] * W[q * row + n_in + j];
            }
          }
          for (int64_t j = 0; j < H; ++j) {
            double hv;
            if (kind == Kind::lstm) {
              auto gate = [&](int r) {
                return xs[r * H + j] + hs[r * H + j] + bias(r, j);
              };
              const double i = sigmoid(gate(0)), f = sigmoid(gate(1)),
                           u = std::tanh(gate(2)), o = sigmoid(gate(3));
              c[n * H + j] = f * c[n * H + j] + i * u;
              hv = o * std::tanh(c[n * H + j]);
            } else if (kind == Kind::gru) {
              const double r = sigmoid(xs[j] + hs[j] + bias(0, j));
              const double z = sigmoid(xs[H + j] + hs[H + j] + bias(1, j));
              const double nv = std::tanh(xs[2 * H + j] + bias(2, j) +
                                          r * (hs[2 * H + j] + bias(3, j)));
              hv = (1 - z) * nv + z * h[n * H + j];
            } else {
              const double z = xs[j] + hs[j] + bias(0, j);
              hv = kind == Kind::rnn_relu ? std::max(z, 0.0) : std::tanh(z);
            }
            h_next[n * H + j] = hv;
            out[((t * B + n) * D + d) * H + j] = hv;
          }
        }
        h = h_next;
      }
      std::copy(h.begin(), h.end(), hn.begin() + k * B * H);
      std::copy(c.begin(), c.end(), cn.begin() + k * B * H);
    }
    in = out;
    n_in = D * H;
  }
  Doubles all = in;
  all.insert(all.end(), hn.begin(), hn.end());
  if (kind == Kind::lstm) all.insert(all.end(), cn.begin(), cn.end());
  return all;
}

Doubles lstm_ref(const Doubles& x, const Doubles& h0, const Doubles& c0,
                 const Doubles& w0, const Doubles& w, const Doubles& b,
                 int64_t T, int64_t B, int64_t I, int64_t H, int L, int D) {
  return recurrent_ref(Kind::lstm, x, h0, c0, w0, w, b, T, B, I, H, L, D);
}

// F::rnn / F::lstm / F::gru with L layers and D directions on x (T, 2, 3),
// H = 3; y, h_n (and c_n) checked together (flattened and concatenated).
harness::Case recurrent_case(Kind kind, int64_t T, int L, bool bidirectional,
                             bool bias) {
  const int D = bidirectional ? 2 : 1, G = gates_of(kind),
            R = bias_rows_of(kind);
  const bool lstm = kind == Kind::lstm;
  const int64_t B = 2, I = 3, H = 3;
  std::string label = std::to_string(L) + " layer(s), " +
                      (bidirectional ? "bidirectional" : "one direction") +
                      (bias ? "" : ", no bias") +
                      (kind == Kind::rnn_relu ? ", relu" : "");
  return {label,
          [=] {
            FunctionCheck c;
            c.inputs = {{{T, B, I}}, {{L, D, B, H}}};
            if (lstm) c.inputs.push_back({{L, D, B, H}});
            c.inputs.push_back({{D, G, H, I + H}, -0.6f, 0.6f});
            if (L > 1) {
              c.inputs.push_back({{L - 1, D, G, H, D * H + H}, -0.6f, 0.6f});
            }
            if (bias) c.inputs.push_back({{L, D, R, H}, -0.5f, 0.5f});
            c.build = [=](const std::vector<VariablePtr>& in) {
              const int w0 = lstm ? 3 : 2;
              const VariablePtr w = L > 1 ? in[w0 + 1] : nullptr;
              const VariablePtr b = bias ? in.back() : nullptr;
              std::vector<VariablePtr> outs;
              if (lstm) {
                LSTMOptions o;
                o.num_layers = L;
                o.bidirectional = bidirectional;
                auto [y, hn, cn] = F::lstm(in[0], in[1], in[2], in[3], w, b, o);
                outs = {y, hn, cn};
              } else if (kind == Kind::gru) {
                GRUOptions o;
                o.num_layers = L;
                o.bidirectional = bidirectional;
                auto [y, hn] = F::gru(in[0], in[1], in[2], w, b, o);
                outs = {y, hn};
              } else {
                RNNOptions o;
                o.num_layers = L;
                o.bidirectional = bidirectional;
                if (kind == Kind::rnn_relu) o.nonlinearity = "relu";
                auto [y, hn] = F::rnn(in[0], in[1], in[2], w, b, o);
                outs = {y, hn};
              }
              for (auto& v : outs) v = F::reshape(v, {-1});
              return F::concatenate(outs, 0);
            };
            c.reference = [=](const std::vector<Doubles>& in) {
              const int64_t steps =
                  static_cast<int64_t>(in[0].size()) / (B * I);
              const int w0 = lstm ? 3 : 2;
              return recurrent_ref(kind, in[0], in[1], lstm ? in[2] : Doubles{},
                                   in[w0], L > 1 ? in[w0 + 1] : Doubles{},
                                   bias ? in.back() : Doubles{}, steps, B, I, H,
                                   L, D);
            };
            return c;
          },
          false, true,
          /*batch_inputs=*/{0}};  // x's first axis is time: T changes
}

const bool kRecurrent =
    harness::add(decl::LSTM, {recurrent_case(Kind::lstm, 3, 1, false, true),
                              recurrent_case(Kind::lstm, 4, 1, false, false),
                              recurrent_case(Kind::lstm, 3, 2, true, true),
                              recurrent_case(Kind::lstm, 2, 2, false, true)}) &&
    harness::add(decl::GRU, {recurrent_case(Kind::gru, 3, 1, false, true),
                             recurrent_case(Kind::gru, 4, 1, false, false),
                             recurrent_case(Kind::gru, 3, 2, true, true),
                             recurrent_case(Kind::gru, 2, 2, false, true)}) &&
    harness::add(decl::RNN,
                 {recurrent_case(Kind::rnn_tanh, 3, 1, false, true),
                  recurrent_case(Kind::rnn_relu, 3, 1, false, true),
                  recurrent_case(Kind::rnn_tanh, 3, 2, true, false),
                  recurrent_case(Kind::rnn_tanh, 2, 3, false, true)});

TEST(Lstm, SequenceOutputs) {
  // PF::lstm is the LSTM function on its scope's weight_l0 and bias.
  const int64_t T = 4, N = 2, I = 3, H = 3;
  ParameterScope params;
  FunctionCheck c;
  c.inputs = {{{T, N, I}}, {{N, H}}, {{N, H}}};
  c.build = [=](const std::vector<VariablePtr>& in) {
    auto [y, h, cell] = PF::lstm(in[0], in[1], in[2], H, params["lstm"]);
    return F::concatenate(
        {F::reshape(y, {-1}), F::reshape(h, {-1}), F::reshape(cell, {-1})}, 0);
  };
  c.reference = [=](const std::vector<Doubles>& in) {
    return lstm_ref(in[0], in[1], in[2],
                    to_doubles(params.get("lstm/lstm/weight_l0")), {},
                    to_doubles(params.get("lstm/lstm/bias")), T, N, I, H, 1, 1);
  };
  check_all(c);
}

TEST(Lstm, FiveHundredStepsInHalfStayWithinAThousandthOfFloat) {
  // The cell state of a 500-step LSTM in cpu:half against cpu:float on the
  // same inputs and weights: the state is carried in fp32 in both, so half
  // differs only by the rounding of x, the weights and the outputs (a state
  // rounded to half at every step drifts much further). c_n itself is
  // rounded to half once, whose spacing is 2^-8 between 4 and 8, so the
  // bound is 1e-3 of the largest |c| (and 1e-3 absolute below 1). Measured:
  // 0.0019 at |c| up to 5.9, a relative 3.3e-4.
  const int64_t T = 500, B = 4, I = 8, H = 16;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> x(T * B * I), w(4 * H * (I + H)), b(4 * H);
  for (auto& v : x) v = u(rng);
  for (auto& v : w) v = 0.25f * u(rng);
  for (auto& v : b) v = 0.25f * u(rng);
  // Forget gates that remember (sigmoid(3) = 0.95): the state sums ~20
  // steps and grows to several units, where half's spacing is 2^-8.
  for (int64_t j = 0; j < H; ++j) b[H + j] = 3.0f;
  Doubles cell[2];
  for (int k = 0; k < 2; ++k) {
    ContextGuard g(context("cpu", k == 0 ? "float" : "half"));
    auto xv = variable_from({T, B, I}, x);
    auto w0 = variable_from({1, 4, H, I + H}, w);
    auto bv = variable_from({1, 1, 4, H}, b);
    auto zeros = make_variable({1, 1, B, H});
    auto [y, hn, cn] = F::lstm(xv, zeros, zeros, w0, nullptr, bv);
    cn->forward();
    cell[k] = to_doubles(cn);
  }
  double worst = 0, largest = 0;
  for (size_t i = 0; i < cell[0].size(); ++i) {
    worst = std::max(worst, std::abs(cell[1][i] - cell[0][i]));
    largest = std::max(largest, std::abs(cell[0][i]));
  }
  std::cout << "500-step LSTM: final cell state in half vs float, largest "
            << "difference " << worst << " (largest |c| " << largest << ")\n";
  EXPECT_LT(worst, 1e-3 * std::max(1.0, largest));
}

TEST(Lstm, Fp32MastersGetFp32GradsAndBadShapesAreNamed) {
  ContextGuard g(context("cpu", "half"));
  ParameterScope params;
  auto x = variable_from({3, 2, 4}, std::vector<float>(24, 0.5f), true);
  auto [y, h, c] = PF::lstm(x, nullptr, nullptr, 5, params["lstm"]);
  F::sum(y)->forward();
  auto loss = F::sum(y);
  loss->forward();
  loss->backward();
  for (const auto& [name, v] : params.parameters()) {
    SCOPED_TRACE(name);
    EXPECT_EQ(v->grad()->array().dtype(), Dtype::f32);
  }
  EXPECT_EQ(x->grad()->array().dtype(), Dtype::f16);
  expect_error(
      [] {
        F::lstm(make_variable({3, 2, 4}), make_variable({1, 1, 2, 5}),
                make_variable({1, 1, 2, 5}), make_variable({1, 4, 5, 8}),
                nullptr, nullptr);
      },
      {"[lstm] weight_l0 with shape (1, 4, 5, 8) must be (1, 4, 5, 9)"});
  expect_error(
      [] {
        LSTMOptions o;
        o.num_layers = 2;
        F::lstm(make_variable({3, 2, 4}), make_variable({2, 1, 2, 5}),
                make_variable({2, 1, 2, 5}), make_variable({1, 4, 5, 9}),
                nullptr, nullptr, o);
      },
      {"[lstm] num_layers 2 needs the weight input"});
  expect_error(
      [] {
        LSTMOptions o;
        o.dropout = 0.2f;
        F::lstm(make_variable({3, 2, 4}), make_variable({1, 1, 2, 5}),
                make_variable({1, 1, 2, 5}), make_variable({1, 4, 5, 9}),
                nullptr, nullptr, o);
      },
      {"[lstm] dropout 0.2 between layers is not implemented"});
  expect_error(
      [] {
        F::gru(make_variable({3, 2, 4}), make_variable({1, 1, 2, 5}),
               make_variable({1, 3, 5, 9}), nullptr,
               make_variable({1, 1, 3, 5}));
      },
      {"[gru] bias with shape (1, 1, 3, 5) must be (1, 1, 4, 5)"});
  expect_error(
      [] {
        RNNOptions o;
        o.nonlinearity = "sigmoid";
        F::rnn(make_variable({3, 2, 4}), make_variable({1, 1, 2, 5}),
               make_variable({1, 1, 5, 9}), nullptr, nullptr, o);
      },
      {"[rnn] nonlinearity 'sigmoid' must be 'tanh' or 'relu'"});
}

TEST(Lstm, ZeroInitialStateAndLastOutputs) {
  ParameterScope params;
  auto x = make_variable({5, 2, 3});
  auto [y, h, c] = PF::lstm(x, nullptr, nullptr, 4, params);
  EXPECT_EQ(y->shape(), (Shape{5, 2, 4}));
  EXPECT_EQ(h->shape(), (Shape{2, 4}));
  EXPECT_EQ(c->shape(), (Shape{2, 4}));
  EXPECT_EQ(params.parameters().size(), 2u);  // weight_l0 and bias
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

// Backward needs the states forward kept: without a forward it says so
// instead of reading nothing.
TEST(Lstm, BackwardBeforeForwardIsAnError) {
  auto x = make_variable({3, 2, 4}, true),
       h = make_variable({1, 1, 2, 5}, true),
       c = make_variable({1, 1, 2, 5}, true),
       w0 = make_variable({1, 4, 5, 9}, true);
  auto [y, hn, cn] = F::lstm(x, h, c, w0, nullptr, nullptr);
  try {
    y->backward();
    FAIL() << "expected an exception";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("[lstm] backward before any forward"),
              std::string::npos)
        << e.what();
  }
  y->forward();
  EXPECT_NO_THROW(y->backward());
}

// Backward gives the grads of the forward that ran: weights and initial
// states changed between the two (a solver step in between, say) do not
// reach it, as the states forward kept do not change either.
TEST(Lstm, BackwardIsOfTheForwardThatRan) {
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> dist(-0.5f, 0.5f);
  auto var = [&](const Shape& shape) {
    std::vector<float> v(static_cast<size_t>(shape_size(shape)));
    for (auto& e : v) e = dist(gen);
    return variable_from(shape, v, true);
  };
  // 2 layers, 2 directions: weight_l0, weight and bias all in play.
  auto x = var({3, 2, 4}), h0 = var({2, 2, 2, 5}), c0 = var({2, 2, 2, 5}),
       w0 = var({2, 4, 5, 9}), w = var({1, 2, 4, 5, 15}), b = var({2, 2, 4, 5});
  LSTMOptions o;
  o.num_layers = 2;
  o.bidirectional = true;
  auto [y, hn, cn] = F::lstm(x, h0, c0, w0, w, b, o);
  auto loss = F::add2(F::sum(F::mul2(y, y)), F::sum(F::add2(hn, cn)));
  const std::vector<VariablePtr> inputs{x, h0, c0, w0, w, b};
  auto grads = [&](bool change_between) {
    for (const auto& v : inputs) v->grad()->zero();
    loss->forward();
    if (change_between) {
      for (const auto& v : {h0, c0, w0, w, b}) {
        float* d = v->data()->cast<float>();
        for (int64_t i = 0; i < v->size(); ++i) d[i] = 2 * d[i] + 0.25f;
      }
    }
    loss->backward();
    std::vector<Doubles> g;
    for (const auto& v : inputs) g.push_back(grad_doubles(v));
    return g;
  };
  const std::vector<std::string> names{"x",         "h0",     "c0",
                                       "weight_l0", "weight", "bias"};
  const auto want = grads(false);
  const auto got = grads(true);
  for (size_t i = 0; i < inputs.size(); ++i) {
    EXPECT_EQ(got[i], want[i]) << "the grad of " << names[i];
  }
}

// An LSTM's gates take the same grads through Wx and Wh, so backward holds
// one array of them over every step (S B 4H floats), not two. Sized so that
// the array dominates what backward allocates: 512 KiB of gate grads, the
// grad of y twice (y's own and the fp32 copy the driver reads: a quarter of
// the gate grads each) and about 30 KiB more (the weights' grads, dx, the
// states). Measured 835 KiB; two arrays made it 1.3 MiB.
TEST(Lstm, BackwardHoldsOneArrayOfGateGrads) {
  const int64_t S = 128, B = 16, I = 4, H = 16;
  auto x = variable_from({S, B, I}, std::vector<float>(S * B * I, 0.5f), true);
  auto w0 = variable_from({1, 4, H, I + H},
                          std::vector<float>(4 * H * (I + H), 0.01f), true);
  auto zeros = make_variable({1, 1, B, H});
  auto [y, hn, cn] = F::lstm(x, zeros, zeros, w0, nullptr, nullptr);
  y->forward();
  auto& allocator = CpuAllocator::instance();
  allocator.release_cache();
  const size_t before = allocator.stats().in_use;
  allocator.reset_peak();
  y->backward();
  const size_t peak = allocator.stats().peak - before;
  const size_t gate_grads = S * B * 4 * H * sizeof(float);
  std::cout << "LSTM backward's peak " << peak / 1024 << " KiB, gate grads "
            << gate_grads / 1024 << " KiB\n";
  EXPECT_GE(peak, gate_grads);
  EXPECT_LT(peak, gate_grads * 7 / 4);
}

// The LSTM function and its reshapes write and read back as a network: the
// rebuilt LSTM gives the same outputs.
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
  EXPECT_NE(yaml.find("type: LSTM"), std::string::npos) << yaml;
  Network net = network_from_yaml(yaml, params);
  net.input("x")->set_data(x->data());
  net.input("h0")->set_data(h0->data());
  auto y2 = net.output("y");
  y2->forward();
  EXPECT_EQ(to_doubles(y2), to_doubles(y));
}

// NNabla's RNN layout has no gate axis: weight_l0 (D, H, I + H), weight
// (L - 1, D, H, D H + H), bias (L, D, H). Two tanh layers of one unit.
TEST(RNN, NNablasWeightLayoutLoads) {
  auto x = variable_from({1, 1, 1}, {0.5});
  auto h = variable_from({2, 1, 1, 1}, {0.25, -0.5});
  auto w0 = variable_from({1, 1, 2}, {2, 4});
  auto w = variable_from({1, 1, 1, 2}, {3, 1});
  auto b = variable_from({2, 1, 1}, {0.1, -0.2});
  const FunctionArgs args = {{"num_layers", int64_t{2}},
                             {"nonlinearity", std::string("tanh")},
                             {"dropout", 0.0},
                             {"bidirectional", false},
                             {"training", true}};
  auto out = apply_from_args("RNN", args, {x, h, w0, w, b});
  const double h0 = std::tanh(0.5 * 2 + 0.25 * 4 + 0.1);
  const double h1 = std::tanh(h0 * 3 + -0.5 * 1 - 0.2);
  expect_near(to_doubles(out[0]), {h1}, 1e-6, 0, "y");
  expect_near(to_doubles(out[1]), {h0, h1}, 1e-6, 0, "h_n");
  expect_error(
      [&] {
        apply_from_args("RNN", args,
                        {x, h, variable_from({1, 2, 2}, {0, 0, 0, 0}), w, b});
      },
      {"weight_l0 with shape (1, 2, 2) must be (1, 1, 2) or (1, 1, 1, 2)"},
      "[rnn] ");
}

// The CPU backend with its steps shared out by hidden units, counting the
// layers it ran so (forward_steps true), or (step_by_step) leaving every
// layer to the driver's loop: a product on the team, then the cells.
template <class T>
struct CountingBackendOf : cpu::RecurrentBackend<T> {
  using Base = cpu::RecurrentBackend<T>;
  bool step_by_step = false;
  int shared_forward = 0, shared_backward = 0;
  template <class Cell>
  bool forward_steps(const Cell& cell, const cpu::GemmFixedB& product,
                     const std::vector<recurrent::StepForward>& steps,
                     float* rh, const float* bias, int64_t B, int64_t H) {
    if (step_by_step) return false;
    const bool ran = Base::forward_steps(cell, product, steps, rh, bias, B, H);
    shared_forward += ran;
    return ran;
  }
  template <class Cell>
  bool backward_steps(const Cell& cell, const cpu::GemmFixedB& product,
                      const std::vector<recurrent::StepBack>& steps, int64_t B,
                      int64_t H) {
    if (step_by_step) return false;
    const bool ran = Base::backward_steps(cell, product, steps, B, H);
    shared_backward += ran;
    return ran;
  }
};
using CountingBackend = CountingBackendOf<float>;

// omp_set_num_threads(n) for its lifetime.
class ScopedThreads {
 public:
  explicit ScopedThreads(int n) : previous_(omp_get_max_threads()) {
    omp_set_num_threads(n);
  }
  ~ScopedThreads() { omp_set_num_threads(previous_); }

 private:
  int previous_;
};

// Two bidirectional layers over five steps, forward and backward, their
// steps shared out and step by step: the same bits in every output and
// grad. Hidden 160 is 5 panels of AVX-512's tile (three threads: bands of
// 1, 2 and 2 panels) and 10 of AVX2's (3, 3, 4), and the backward product's
// k (G H, 640 for the LSTM) runs past one block of depth. In bfloat16 on
// AVX512-BF16 (the products in bf16 on gemm_bf16.hpp's tile, 5 panels):
// the same, each thread rounding its band of h and of drh for the next
// product as the loop rounds the whole.
template <class Cell, class T>
void check_shared_steps_of(
    const Cell& cell,
    const std::vector<std::pair<const char*, cpu::CpuFeatures>>& paths) {
  using Backend = CountingBackendOf<T>;
  using Driver = recurrent::Driver<Cell, Backend>;
  using Buffer = typename Backend::Buffer;
  constexpr int G = Cell::kGates, L = 2, D = 2;
  constexpr bool lstm = std::is_same_v<Cell, recurrent::LstmCell>;
  const int bias_rows = std::is_same_v<Cell, recurrent::GruCell> ? 4 : G;
  const int64_t S = 5, I = 5, H = 160;
  // Enough rows that a step is shared (2 B G H^2 flops past 4e6).
  const int64_t B = 4'000'000 / (2 * G * H * H) + 1;
  std::mt19937 gen(7);
  auto values = [&](int64_t n, float scale) {
    std::uniform_real_distribution<float> u(-scale, scale);
    Buffer v(n);
    for (float& x : v) x = u(gen);
    return v;
  };
  const Buffer x = values(S * B * I, 1), h0 = values(L * D * B * H, 1),
               c0 = values(L * D * B * H, 1),
               w0 = values(D * G * H * (I + H), 0.2f),
               w = values((L - 1) * D * G * H * (D * H + H), 0.2f),
               b = values(L * D * bias_rows * H, 0.5f),
               dy = values(S * B * D * H, 1), dhn = values(L * D * B * H, 1),
               dcn = values(L * D * B * H, 1);
  const typename Driver::Params p{h0.data(), lstm ? c0.data() : nullptr,
                                  w0.data(), w.data(), b.data()};
  const recurrent::Dims dims{L, D, S, B, I, H, bias_rows};
  auto run = [&](Backend& be) {
    Driver driver(cell, dims);
    auto out = driver.forward(be, x, p);
    auto g = driver.backward(be, dy, dhn.data(), dcn.data());
    return std::vector<Buffer>{out.y, out.hn, out.cn, g.dx, g.dh0,
                               g.dc0, g.dw0,  g.dw,   g.db};
  };
  for (const auto& [tile, features] : paths) {
    SCOPED_TRACE(tile);
    const cpu::ScopedCpuFeatures path(features);
    const ScopedThreads threads(3);
    Backend shared, step_by_step;
    step_by_step.step_by_step = true;
    const auto got = run(shared), want = run(step_by_step);
    EXPECT_EQ(shared.shared_forward, L * D);
    EXPECT_EQ(shared.shared_backward, L * D);
    const char* names[] = {"y",   "h_n", "c_n", "dx", "dh0",
                           "dc0", "dw0", "dw",  "db"};
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_TRUE(got[i] == want[i]) << names[i] << " differs";
    }
  }
}

template <class Cell>
void check_shared_steps(const Cell& cell, const char* name) {
  SCOPED_TRACE(name);
  const cpu::CpuFeatures all = cpu::detected_cpu_features();
  cpu::CpuFeatures avx2;
  avx2.avx2 = all.avx2;
  avx2.f16c = all.f16c;
  std::vector<std::pair<const char*, cpu::CpuFeatures>> paths = {
      {"avx2 tile", avx2}};
  if (all.avx512f) paths.insert(paths.begin(), {"avx512 tile", all});
  check_shared_steps_of<Cell, float>(cell, paths);
  // Our bf16 tile runs where AMX does not (GemmFixedB): AMX held back.
  cpu::CpuFeatures no_amx = all;
  no_amx.amx_bf16 = false;
  const cpu::ScopedCpuFeatures bf16_tile(no_amx);
  if (cpu::PackedBf16B::available() &&
      cpu::compute_type<BFloat16>() == Dtype::bf16) {
    SCOPED_TRACE("bfloat16");
    check_shared_steps_of<Cell, BFloat16>(cell, {{"avx512-bf16 tile", no_amx}});
  }
}

TEST(Recurrent, StepsSharedByHiddenUnitsGiveTheSameBits) {
  if (!cpu::gemm_packed_available()) GTEST_SKIP() << "no AVX2, FMA and F16C";
  check_shared_steps(recurrent::LstmCell{}, "LSTM");
  check_shared_steps(recurrent::GruCell{}, "GRU");
  check_shared_steps(recurrent::RnnCell{false}, "RNN tanh");
  check_shared_steps(recurrent::RnnCell{true}, "RNN relu");
}

// Steps the team cannot share by whole panels run in the driver's loop:
// hidden 48 (not whole panels of AVX-512's tile; 3 panels of AVX2's, fewer
// than 4 threads), and a step under the threshold.
TEST(Recurrent, StepsTooNarrowToShareRunInTheDriversLoop) {
  if (!cpu::gemm_packed_available()) GTEST_SKIP() << "no AVX2, FMA and F16C";
  const ScopedThreads threads(4);
  for (const auto& [B, H] : {std::pair<int64_t, int64_t>{400, 48},
                             std::pair<int64_t, int64_t>{2, 64}}) {
    SCOPED_TRACE("batch " + std::to_string(B) + ", hidden " +
                 std::to_string(H));
    const int64_t S = 2, I = 3;
    const CountingBackend::Buffer x(S * B * I, 0.5f), h0(B * H, 0.1f),
        c0(B * H, 0.2f), w0(4 * H * (I + H), 0.01f), b(4 * H, 0.1f),
        dy(S * B * H, 1.0f), dhn(B * H, 0.5f), dcn(B * H, 0.5f);
    recurrent::Driver<recurrent::LstmCell, CountingBackend> driver(
        recurrent::LstmCell{}, recurrent::Dims{1, 1, S, B, I, H, 4});
    CountingBackend be;
    driver.forward(be, x, {h0.data(), c0.data(), w0.data(), nullptr, b.data()});
    driver.backward(be, dy, dhn.data(), dcn.data());
    EXPECT_EQ(be.shared_forward, 0);
    EXPECT_EQ(be.shared_backward, 0);
  }
}

}  // namespace
}  // namespace mg::test::recurrent_tests
