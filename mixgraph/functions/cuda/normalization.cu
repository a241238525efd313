// LayerNormalization on the device, where its statistics groups are
// contiguous rows and gamma and beta hold one value per row element (the
// batch axes lead: a Transformer's (T, B, E) normalized over E): the row
// bodies of cuda/index_kernels.hpp, in fp32, one warp a row (its reads
// coalesced), with forward's mean and rstd kept on the device for
// backward; gamma's and beta's grads in two passes, chunks of rows and
// then the chunks, each in a fixed order. Other layouts run on the CPU
// stand-in.
#include <mixgraph/functions/normalization.hpp>

#include <mixgraph/functions/cuda/cuda_function.hpp>
#include <mixgraph/functions/cuda/cuda_functions.hpp>
#include <mixgraph/functions/cuda/launch.cuh>

namespace mg::cuda {

namespace {

template <class T>
class LayerNormalizationCuda : public LayerNormalization {
 public:
  using LayerNormalization::LayerNormalization;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override {
    LayerNormalization::setup_impl(in, out);
    stand_in_.reset();
    if (!rows_fit(in)) {
      stand_in_ = cpu_stand_in(decl(), dtype_of<T>,
                               typeid(LayerNormalizationOptions), &opts_);
      stand_in_->setup(in, out);
    }
  }

  void forward_impl(const Variables& in, const Variables& out) override {
    if (stand_in_) return stand_in_->forward(in, out);
    const Launch l(*this);
    stats_ = l.scratch(2 * rows_ * sizeof(float));
    float* mean = static_cast<float*>(stats_->ptr());
    const int gi = gamma_index(), bi = beta_index();
    launch_rows(rows_,
                LayerNormForwardBody<T>{
                    input<T>(*this, in[0]),
                    gi >= 0 ? input<float>(*this, in[gi]) : nullptr,
                    bi >= 0 ? input<float>(*this, in[bi]) : nullptr,
                    output<T>(*this, out[0]), mean, mean + rows_, len_, eps_},
                l.stream);
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (stand_in_) return stand_in_->backward(in, out, propagate_down, accum);
    const int gi = gamma_index(), bi = beta_index();
    const bool want_dgamma = gi >= 0 && propagate_down[gi];
    const bool want_dbeta = bi >= 0 && propagate_down[bi];
    if (!propagate_down[0] && !want_dgamma && !want_dbeta) return;
    const Launch l(*this);
    const float* mean = static_cast<const float*>(stats_->ptr());
    const float* rstd = mean + rows_;
    const T* x = input<T>(*this, in[0]);
    const T* dy = output_grad<T>(*this, out[0]);
    if (want_dgamma || want_dbeta) {
      const int64_t chunk_rows = layer_norm_chunk_rows(rows_);
      const int64_t chunks = (rows_ + chunk_rows - 1) / chunk_rows;
      // The chunks' sums, then (with more than one) the grads.
      auto sums =
          l.scratch(2 * (chunks > 1 ? chunks + 1 : 1) * len_ * sizeof(float));
      float* partial_g = static_cast<float*>(sums->ptr());
      float* partial_b = partial_g + chunks * len_;
      launch(chunks * len_,
             LayerNormParamGradBody<T>{
                 x, dy, mean, rstd, want_dgamma ? partial_g : nullptr,
                 want_dbeta ? partial_b : nullptr, rows_, len_, chunk_rows},
             l.stream);
      float* dgamma = partial_g;
      float* dbeta = partial_b;
      if (chunks > 1) {
        dgamma = partial_b + chunks * len_;
        dbeta = dgamma + len_;
        if (want_dgamma) {
          launch(len_, ColumnSumBody{partial_g, dgamma, chunks, len_},
                 l.stream);
        }
        if (want_dbeta) {
          launch(len_, ColumnSumBody{partial_b, dbeta, chunks, len_}, l.stream);
        }
      }
      if (want_dgamma) {
        store_param_grad<T>(*this, dgamma, in[gi], accum[gi], l.stream);
      }
      if (want_dbeta) {
        store_param_grad<T>(*this, dbeta, in[bi], accum[bi], l.stream);
      }
    }
    if (propagate_down[0]) {
      launch_rows(
          rows_,
          LayerNormBackwardBody<T>{
              x, dy, gi >= 0 ? input<float>(*this, in[gi]) : nullptr, mean,
              rstd, input_grad<T>(*this, in[0], accum[0]), len_, accum[0]},
          l.stream);
    }
  }

 private:
  // The statistics axes trail the batch axes, and gamma and beta are 1 on
  // the batch axes and x's size on the others.
  bool rows_fit(const Variables& in) {
    const Shape& x = in[0]->shape();
    const std::vector<bool>& kept = layout_.kept;
    if (layout_.view != x) return false;
    size_t lead = 0;
    while (lead < kept.size() && kept[lead]) ++lead;
    for (size_t d = lead; d < kept.size(); ++d) {
      if (kept[d]) return false;
    }
    rows_ = 1;
    len_ = 1;
    for (size_t d = 0; d < x.size(); ++d) (d < lead ? rows_ : len_) *= x[d];
    for (int p : {beta_index(), gamma_index()}) {
      if (p < 0) continue;
      const Shape& ps = in[p]->shape();
      if (ps.size() != x.size()) return false;
      for (size_t d = 0; d < x.size(); ++d) {
        if (ps[d] != (d < lead ? 1 : x[d])) return false;
      }
    }
    return rows_ > 0 && len_ > 0;
  }

  int64_t rows_ = 0, len_ = 0;
  std::unique_ptr<Memory> stats_;  // forward's mean, then rstd, per row
  std::shared_ptr<Function> stand_in_;
};

}  // namespace

void register_normalization(FunctionRegistry& r) {
  register_float_types<LayerNormalizationCuda>(r, decl::LayerNormalization,
                                               "cuda");
}

}  // namespace mg::cuda
