// A small Transformer encoder trained in cpu:half with the dynamic loss
// scaler to sort: given kLength random digits, output them in ascending
// order, one output per position.
//
// Model: Embed + sinusoidal positional encoding, two pre-norm blocks of
// multi-head self-attention and a GELU feed-forward layer, each with a
// residual connection and layer normalization, then an Affine to the
// digits. Sequences are (T, N, E), as NNabla's multi_head_attention takes.
//
// Result: 99.87% per-digit and 99.03% whole-sequence accuracy on 100 fresh
// batches after 800 steps of batch 64 (7 s on 2 cores), printed by
//   ./build/examples/transformer_sort
// `--smoke` runs 40 steps and exits 1 unless the loss went down (CI).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <mixgraph/mixgraph.hpp>
#include <random>

#include "example_common.hpp"

namespace F = mg::functions;
namespace PF = mg::parametric_functions;

namespace {

constexpr int kLength = 8, kVocab = 10, kBatch = 64;
constexpr int kEmbed = 32, kHeads = 4, kBlocks = 2, kHidden = 64;

// x (T, N) random digits; t (T, N, 1) each column sorted.
void make_batch(std::mt19937& rng, mg::Variable& x, mg::Variable& t) {
  std::uniform_int_distribution<int> digit(0, kVocab - 1);
  float* xp = x.data()->cast<float>(true);
  float* tp = t.data()->cast<float>(true);
  for (int n = 0; n < kBatch; ++n) {
    std::vector<float> s(kLength);
    for (int i = 0; i < kLength; ++i) {
      s[i] = xp[i * kBatch + n] = static_cast<float>(digit(rng));
    }
    std::sort(s.begin(), s.end());
    for (int i = 0; i < kLength; ++i) tp[i * kBatch + n] = s[i];
  }
}

// sin / cos of the position at geometric frequencies, (T, 1, E): added to
// every sequence of the batch by broadcasting. Built in the graph from
// Arange (positions and frequencies, exact in fp32 whatever the
// type_config), Exp, Sin and Cos: pe[t, 2i] = sin(t f_i), pe[t, 2i + 1] =
// cos(t f_i), f_i = 10000^(-2i / E).
mg::VariablePtr positional_encoding() {
  auto pos = F::reshape(F::arange(0, kLength), {kLength, 1});
  auto freq = F::exp(
      F::mul_scalar(F::arange(0, kEmbed, 2), -std::log(10000.0f) / kEmbed));
  auto angle = F::mul2(pos, F::reshape(freq, {1, kEmbed / 2}));  // (T, E/2)
  auto pe = F::stack({F::sin(angle), F::cos(angle)}, -1);        // (T, E/2, 2)
  return F::reshape(pe, {kLength, 1, kEmbed});
}

mg::VariablePtr layer_norm(const mg::VariablePtr& h, mg::ParameterScope s) {
  return PF::layer_normalization(h, s, {0, 1});  // over E, per token
}

mg::VariablePtr encoder_block(mg::VariablePtr h, mg::ParameterScope s) {
  auto a = layer_norm(h, s["ln1"]);
  h = F::add2(h, PF::multi_head_attention(a, a, a, kEmbed, kHeads, s["attn"]));
  PF::AffineParams tokens;
  tokens.base_axis = 2;
  auto f =
      F::gelu(PF::affine(layer_norm(h, s["ln2"]), kHidden, s["ff1"], tokens));
  return F::add2(h, PF::affine(f, kEmbed, s["ff2"], tokens));
}

// Logits (T, N, kVocab).
mg::VariablePtr transformer(const mg::VariablePtr& x,
                            mg::ParameterScope params) {
  auto h = F::add2(PF::embed(x, kVocab, kEmbed, params["embed"]),
                   positional_encoding());
  for (int b = 0; b < kBlocks; ++b) {
    h = encoder_block(h, params["block" + std::to_string(b)]);
  }
  PF::AffineParams tokens;
  tokens.base_axis = 2;
  return PF::affine(layer_norm(h, params["ln"]), kVocab, params["out"], tokens);
}

}  // namespace

int main(int argc, char** argv) {
  const auto args = example::parse_args(argc, argv);
  const int steps = args.steps > 0 ? args.steps : (args.smoke ? 40 : 800);
  std::printf("Transformer sorting %d digits: %d steps of %d in cpu:%s\n",
              kLength, steps, kBatch, args.type_config.c_str());
  mg::set_default_context(mg::context("cpu", args.type_config));
  mg::seed(1);
  mg::ParameterScope params;
  auto x = mg::make_variable({kLength, kBatch});
  auto t = mg::make_variable({kLength, kBatch, 1});
  auto logits = transformer(x, params);
  auto loss = F::mean(F::softmax_cross_entropy(logits, t));

  std::mt19937 rng(2);
  auto solver = mg::solvers::Adam(2e-3f);
  solver->set_parameters(params.parameters());
  mg::DynamicLossScalingUpdater updater(solver, loss,
                                        [&] { make_batch(rng, *x, *t); });
  const auto log = example::train(updater, loss, steps, 100);

  const auto acc = example::sequence_accuracy(F::argmax(logits, {2}), t,
                                              args.smoke ? 2 : 100,
                                              [&] { make_batch(rng, *x, *t); });
  std::printf("per-digit accuracy %.2f%%, whole sequences %.2f%%\n",
              acc.digit_percent(), acc.sequence_percent());
  // The smoke run (CI) counts 2 batches, so the accuracy graph runs too.
  if (args.smoke) return log.went_down(5) ? 0 : 1;
  return 0;
}
