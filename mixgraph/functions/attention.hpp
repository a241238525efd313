// Attention: one fused function (ScaledDotProductAttention, not one of
// NNabla's) and the same math composed of BatchMatmul, Softmax and Add2,
// which the files NNabla and ONNX read are given.
#pragma once

#include <vector>

#include <mixgraph/graph/function.hpp>
#include <mixgraph/graph/parameter_scope.hpp>
#include <mixgraph/graph/variable.hpp>

namespace mg {

struct ScaledDotProductAttentionOptions {
  /// Query i attends to keys j <= i + S - L only (aligned bottom-right).
  bool causal = false;
  /// The factor on q k^T; <= 0 means 1 / sqrt(E).
  float scale = 0.0f;

  MG_FIELDS(causal, scale);
};

namespace decl {
/// ScaledDotProductAttention's declaration.
inline constexpr FunctionDeclOf<ScaledDotProductAttentionOptions>
    ScaledDotProductAttention{{"ScaledDotProductAttention",
                               "scaled_dot_product_attention",
                               {Port{"q"}, Port{"k"}, Port{"v"}},
                               {Port{"y"}},
                               Precision::reduced,
                               /*variadic=*/false,
                               /*variadic_outputs=*/false,
                               /*composed=*/true}};
}  // namespace decl

/// y = softmax(q k^T * scale [+ causal mask]) v per matrix of the batch, as
/// one function: on the CPU blocked, with the softmax online in fp32 (as
/// FlashAttention computes it), fully masked blocks skipped, and no (L, S)
/// matrix kept for the backward, which recomputes the weights per block
/// from each query's log-sum-exp. q (..., L, E), k (..., S, E), v (..., S,
/// Ev): the three hold the same number of matrices; y q.shape[:-1] + (Ev).
class ScaledDotProductAttention
    : public FunctionWith<ScaledDotProductAttentionOptions> {
 public:
  using FunctionWith::FunctionWith;
  // The backward reads y (each query's sum of dy y) as well as q, k, v.
  bool grad_depends_output_data(int) const override { return true; }
  /// functions::scaled_dot_product_attention_composed on the same inputs.
  std::vector<VariablePtr> composition(
      const std::vector<VariablePtr>& inputs) const override;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  int64_t batch_ = 0, len_q_ = 0, len_k_ = 0, dim_ = 0, dim_v_ = 0;
  float scale_ = 0.0f;  // the factor used: opts_.scale or 1 / sqrt(E)
  /// Each query's log of the sum of its exp(score - max) plus max, from the
  /// last forward: (batch, L), fp32, what the backward rebuilds weights
  /// from.
  std::vector<float> log_sum_exp_;
};

namespace functions {
/// softmax(q k^T * scale [+ causal mask]) v over the last two axes: q (...,
/// L, E), k (..., S, E), v (..., S, Ev) -> (..., L, Ev). scale <= 0 means
/// 1 / sqrt(E). With causal, query i attends to keys j <= i + S - L only:
/// the mask is aligned bottom-right, so with fewer queries than keys
/// (decoding against a cache) the last query sees every key; L > S is an
/// error. Masked weights are exactly 0. Where the default context computes
/// on the CPU, one ScaledDotProductAttention; elsewhere (CUDA, which has no
/// fused kernel yet) the composition below, so that no step leaves the
/// device.
VariablePtr scaled_dot_product_attention(const VariablePtr& q,
                                         const VariablePtr& k,
                                         const VariablePtr& v,
                                         bool causal = false,
                                         float scale = 0.0f);

/// The same attention composed of NNabla's functions: MulScalar on q,
/// BatchMatmul, Add2 of a constant -inf mask (causal), Softmax and
/// BatchMatmul. What .nnp files are written with (NNabla has no fused
/// attention), and the reference the fused function is tested against.
VariablePtr scaled_dot_product_attention_composed(const VariablePtr& q,
                                                  const VariablePtr& k,
                                                  const VariablePtr& v,
                                                  bool causal = false,
                                                  float scale = 0.0f);
}  // namespace functions

namespace parametric_functions {
/// Multi-head attention in NNabla's (and PyTorch's) layout: query (L, B,
/// E_q), key (S, B, E_k), value (S, B, E_v) -> (L, B, embed_dim).
/// The projections are NNabla's parameters in `scope`/multi_head_attention:
/// q_weight (E_q, E), k_weight (E_k, E), v_weight (E_v, E), out_weight
/// (E, E) and the biases q_bias ... out_bias (E,); embed_dim E must divide
/// into num_heads.
VariablePtr multi_head_attention(const VariablePtr& query,
                                 const VariablePtr& key,
                                 const VariablePtr& value, int64_t embed_dim,
                                 int num_heads, ParameterScope scope,
                                 bool causal = false);
}  // namespace parametric_functions

}  // namespace mg
