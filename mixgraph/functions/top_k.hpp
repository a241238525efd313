// TopKData and TopKGrad: the k largest (or smallest) values of each sample
// passed on, the rest dropped (NNabla's).
#pragma once

#include <cstdint>
#include <vector>

#include <mixgraph/graph/function.hpp>

namespace mg {

/// TopKData's arguments (NNabla's, with its defaults; k has none there).
struct TopKDataOptions {
  /// The number of values kept per sample, 1 to the sample's size.
  int k = 1;
  /// Rank by magnitude (|x|) instead of by value.
  bool abs = false;
  /// y holds the k values alone, (x.shape[:base_axis], k); false: y has x's
  /// shape with every other value 0.
  bool reduce = true;
  /// The first axis of a sample; the axes before it count the samples
  /// (negative counts from the end).
  int base_axis = 1;
  /// Keep the k largest; false: the k smallest.
  bool largest = true;
  /// Also output the int32 positions of the k values within their sample
  /// (needs reduce).
  bool with_index = false;

  MG_FIELDS(k, abs, reduce, base_axis, largest, with_index);
};

/// TopKGrad's arguments.
struct TopKGradOptions {
  /// The number of grads passed back per sample, 1 to the sample's size.
  int k = 1;
  /// Rank the grads by magnitude instead of by value.
  bool abs = false;
  /// The first axis of a sample (negative counts from the end).
  int base_axis = 1;

  MG_FIELDS(k, abs, base_axis);
};

namespace decl {
/// TopKData's declaration: with with_index the second output holds the int32
/// positions (flat within the sample) of the k values.
inline constexpr FunctionDeclOf<TopKDataOptions> TopKData{
    {"TopKData",
     "top_k_data",
     {Port{"x"}},
     {Port{"y"}, Port{"indices", Port::integer}}}};
/// TopKGrad's declaration.
inline constexpr FunctionDeclOf<TopKGradOptions> TopKGrad{
    {"TopKGrad", "top_k_grad", {Port{"x"}}, {Port{"y"}}}};
}  // namespace decl

/// The positions of the k best keys of key[0 .. n), best first: largest (or
/// smallest) first, ties in the order of their positions, NaN after every
/// number (so the order is deterministic, where NNabla's heap is not).
/// The one selection rule of both functions (and any backend's reference).
void top_k_positions(const float* key, int64_t n, int64_t k, bool largest,
                     int32_t* out);

/// Each sample (the axes from base_axis on, flattened) keeps its k largest
/// values (smallest with largest = false; by |x| with abs). With reduce y is
/// (x.shape[:base_axis], k): the k values best first; dx gets dy at the
/// positions they came from. Without reduce y has x's shape, the k values
/// in place and 0 elsewhere, and dx = dy everywhere (NNabla's grad: a
/// straight-through estimator, not the derivative of the masking). Keys
/// are read in fp32 (exact for half and bfloat16); y's values move as they
/// are.
class TopKData : public FunctionWith<TopKDataOptions> {
 public:
  using FunctionWith::FunctionWith;
  int num_outputs() const override { return opts_.with_index ? 2 : 1; }
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  int64_t samples_ = 1, sample_size_ = 1;
  /// The last forward's positions, (samples, k).
  std::vector<int32_t> index_;
};

/// y = x; backward passes only the k largest grads of each sample (by
/// |dy| with abs), dx = 0 elsewhere (NNabla's: a sparsified backward pass,
/// as in meProp). Ties are broken as TopKData's.
class TopKGrad : public FunctionWith<TopKGradOptions> {
 public:
  using FunctionWith::FunctionWith;
  bool grad_depends_input_data(int) const override { return false; }

 protected:
  void setup_impl(const Variables& in, const Variables& out) override;
  int64_t samples_ = 1, sample_size_ = 1;
};

namespace functions {
/// The k largest values of each sample (NNabla's TopKData).
VariablePtr top_k_data(const VariablePtr& x, int k, bool abs = false,
                       bool reduce = true, int base_axis = 1,
                       bool largest = true);
/// (values, int32 positions within the sample) of the k largest values of
/// each sample (TopKData with with_index; reduce is implied).
std::vector<VariablePtr> top_k_data_with_index(const VariablePtr& x, int k,
                                               bool abs = false,
                                               int base_axis = 1,
                                               bool largest = true);
/// x, with only the k largest grads of each sample passed back (NNabla's
/// TopKGrad).
VariablePtr top_k_grad(const VariablePtr& x, int k, bool abs = false,
                       int base_axis = 1);
}  // namespace functions

}  // namespace mg
