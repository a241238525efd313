// Attention, composed of BatchMatmul, Softmax and the shape functions.
#pragma once

#include <mixgraph/graph/parameter_scope.hpp>
#include <mixgraph/graph/variable.hpp>

namespace mg {

namespace functions {
/// softmax(q k^T * scale [+ causal mask]) v over the last two axes: q (...,
/// L, E), k (..., S, E), v (..., S, Ev) -> (..., L, Ev). scale <= 0 means
/// 1 / sqrt(E). With causal, query i attends to keys j <= i + S - L only:
/// the mask is aligned bottom-right, so with fewer queries than keys
/// (decoding against a cache) the last query sees every key; L > S is an
/// error. The mask is -inf, so masked weights are exactly 0.
VariablePtr scaled_dot_product_attention(const VariablePtr& q,
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
