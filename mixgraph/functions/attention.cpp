#include <cmath>
#include <limits>
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/affine.hpp>
#include <mixgraph/functions/attention.hpp>
#include <mixgraph/functions/batch_matmul.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/elementwise_builders.hpp>
#include <mixgraph/functions/shape_ops.hpp>
#include <mixgraph/functions/softmax.hpp>
#include <stdexcept>

namespace mg {

namespace {

const Shape& shape_of(const VariablePtr& v, const char* name, size_t min_dims,
                      const std::string& tag) {
  if (!v) throw std::invalid_argument(msg(tag, name, " is a null variable"));
  if (v->shape().size() < min_dims) {
    throw std::invalid_argument(
        msg(tag, name, " with shape ", shape_str(v->shape()), " must have ",
            (min_dims == 3 ? "3 dimensions" : "at least 2 dimensions")));
  }
  return v->shape();
}

// The shape checks both forms share; returns the scale to use.
float check_attention(const Shape& qs, const Shape& ks, const Shape& vs,
                      bool causal, float scale, const std::string& tag) {
  auto check_dims = [&](const Shape& s, const char* name) {
    if (s.size() < 2) {
      throw std::invalid_argument(msg(tag, name, " with shape ", shape_str(s),
                                      " must have at least 2 dimensions"));
    }
  };
  check_dims(qs, "q");
  check_dims(ks, "k");
  check_dims(vs, "v");
  if (qs.back() != ks.back()) {
    throw std::invalid_argument(msg(tag, "q with shape ", shape_str(qs),
                                    " and k with shape ", shape_str(ks),
                                    " must have the same last axis (E)"));
  }
  if (ks[ks.size() - 2] != vs[vs.size() - 2]) {
    throw std::invalid_argument(msg(tag, "k with shape ", shape_str(ks),
                                    " and v with shape ", shape_str(vs),
                                    " must have the same sequence length (S)"));
  }
  const int64_t len_q = qs[qs.size() - 2], len_k = ks[ks.size() - 2];
  if (causal && len_q > len_k) {
    throw std::invalid_argument(
        msg(tag, "causal attention with ", len_q, " queries and ", len_k,
            " keys: the first query would see no key (the mask is "
            "aligned bottom-right; pass at least as many keys as "
            "queries)"));
  }
  return scale > 0.0f ? scale : 1.0f / std::sqrt(static_cast<float>(qs.back()));
}

}  // namespace

void ScaledDotProductAttention::setup_impl(const Variables& in,
                                           const Variables& out) {
  const Shape &qs = in[0]->shape(), &ks = in[1]->shape(), &vs = in[2]->shape();
  scale_ = check_attention(qs, ks, vs, opts_.causal, opts_.scale, tag());
  batch_ = shape_size(qs, 0, qs.size() - 2);
  const int64_t kb = shape_size(ks, 0, ks.size() - 2);
  const int64_t vb = shape_size(vs, 0, vs.size() - 2);
  if (kb != batch_ || vb != batch_) {
    throw std::invalid_argument(msg(tag(), "q with shape ", shape_str(qs),
                                    ", k with shape ", shape_str(ks),
                                    " and v with shape ", shape_str(vs),
                                    " must hold the same number of matrices (",
                                    batch_, ", ", kb, " and ", vb, ")"));
  }
  len_q_ = qs[qs.size() - 2];
  len_k_ = ks[ks.size() - 2];
  dim_ = qs.back();
  dim_v_ = vs.back();
  Shape ys = qs;
  ys.back() = dim_v_;
  out[0]->reshape(ys);
  log_sum_exp_.assign(batch_ * len_q_, 0.0f);
}

std::vector<VariablePtr> ScaledDotProductAttention::composition(
    const std::vector<VariablePtr>& in) const {
  return {functions::scaled_dot_product_attention_composed(
      in[0], in[1], in[2], opts_.causal, opts_.scale)};
}

namespace functions {

VariablePtr scaled_dot_product_attention(const VariablePtr& q,
                                         const VariablePtr& k,
                                         const VariablePtr& v, bool causal,
                                         float scale) {
  if (default_context().device() != "cpu") {
    return scaled_dot_product_attention_composed(q, k, v, causal, scale);
  }
  const std::string tag = "[scaled_dot_product_attention] ";
  shape_of(q, "q", 2, tag);
  shape_of(k, "k", 2, tag);
  shape_of(v, "v", 2, tag);
  return apply_function1(decl::ScaledDotProductAttention,
                         ScaledDotProductAttentionOptions{causal, scale},
                         {q, k, v});
}

VariablePtr scaled_dot_product_attention_composed(const VariablePtr& q,
                                                  const VariablePtr& k,
                                                  const VariablePtr& v,
                                                  bool causal, float scale) {
  const std::string tag = "[scaled_dot_product_attention] ";
  const Shape& qs = shape_of(q, "q", 2, tag);
  const Shape& ks = shape_of(k, "k", 2, tag);
  const Shape& vs = shape_of(v, "v", 2, tag);
  const float s = check_attention(qs, ks, vs, causal, scale, tag);
  // Scaling q rather than the scores keeps q k^T small in half.
  auto scores = batch_matmul(mul_scalar(q, s), k, false, true);
  if (causal) {
    // Aligned bottom-right (as FlashAttention and decoding with a key
    // cache): query i is the (len_k - len_q + i)-th position, so it sees
    // keys 0 .. i + len_k - len_q.
    const int64_t len_q = qs[qs.size() - 2], len_k = ks[ks.size() - 2];
    auto mask = make_variable({len_q, len_k});
    mask->set_constant(true);  // part of the model (ONNX: an initializer)
    float* m = mask->data()->cast<float>(/*write_only=*/true);
    for (int64_t i = 0; i < len_q; ++i) {
      for (int64_t j = 0; j < len_k; ++j) {
        m[i * len_k + j] = j <= i + len_k - len_q
                               ? 0.0f
                               : -std::numeric_limits<float>::infinity();
      }
    }
    scores = add2(scores, mask);
  }
  return batch_matmul(softmax(scores, -1), v);
}

}  // namespace functions

namespace parametric_functions {

VariablePtr multi_head_attention(const VariablePtr& query,
                                 const VariablePtr& key,
                                 const VariablePtr& value, int64_t embed_dim,
                                 int num_heads, ParameterScope scope,
                                 bool causal) {
  const std::string tag = "[multi_head_attention] ";
  const Shape& qs = shape_of(query, "query", 3, tag);
  const Shape& ks = shape_of(key, "key", 3, tag);
  const Shape& vs = shape_of(value, "value", 3, tag);
  if (num_heads <= 0 || embed_dim <= 0 || embed_dim % num_heads != 0) {
    throw std::invalid_argument(
        msg(tag, "embed_dim ", embed_dim,
            " must be a positive multiple of num_heads ", num_heads));
  }
  if (ks[0] != vs[0] || ks[1] != qs[1] || vs[1] != qs[1]) {
    throw std::invalid_argument(
        msg(tag, "query with shape ", shape_str(qs), ", key with shape ",
            shape_str(ks), " and value with shape ", shape_str(vs),
            " must be (L, B, E), (S, B, E_k) and (S, B, E_v)"));
  }
  const int64_t batch = qs[1], head = embed_dim / num_heads;
  // NNabla's parameters: <scope>/multi_head_attention/{q,k,v,out}_weight of
  // (E_in, E) and {q,k,v,out}_bias of (E,), so its files load here.
  ParameterScope layer = scope["multi_head_attention"];
  auto projection = [&](const VariablePtr& x, const std::string& name) {
    const int64_t in = x->shape()[2];
    auto W = layer.get_or_create(name + "_weight", {in, embed_dim},
                                 glorot_uniform_initializer(in, embed_dim));
    auto b = layer.get_or_create(name + "_bias", {embed_dim},
                                 constant_initializer(0.0f));
    return functions::affine(x, W, b, AffineOptions{2});
  };
  // (len, B, E) -> (B * heads, len, head): one attention per batch and head.
  auto heads = [&](const VariablePtr& x, const char* name) {
    auto p = projection(x, name);
    auto r = functions::reshape(p, {x->shape()[0], batch * num_heads, head});
    return functions::transpose(r, {1, 0, 2});
  };
  auto o = functions::scaled_dot_product_attention(
      heads(query, "q"), heads(key, "k"), heads(value, "v"), causal);
  o = functions::transpose(o, {1, 0, 2});
  o = functions::reshape(o, {qs[0], batch, embed_dim});
  return projection(o, "out");
}

}  // namespace parametric_functions

}  // namespace mg
