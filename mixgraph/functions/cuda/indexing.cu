// Embed on the device: a gather per element of y and, for W's grad, one
// sum per element of W over the ids in order (deterministic, no atomics),
// in fp32 (cuda/index_kernels.hpp). Ids that are on the host are checked
// there before the launch, with the CPU's message; ids made on the device
// are not read back, and one out of range gives NaN.
#include <mixgraph/functions/indexing.hpp>

#include <mixgraph/functions/cuda/cuda_function.hpp>
#include <mixgraph/functions/cuda/cuda_functions.hpp>
#include <mixgraph/functions/cuda/launch.cuh>

namespace mg::cuda {

namespace {

template <class T>
class EmbedCuda : public Embed {
 public:
  using Embed::Embed;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    check_ids_on_host(in);
    const Launch l(*this);
    launch(out[0]->size(),
           EmbedForwardBody<T>{input<int32_t>(*this, in[0]),
                               input<T>(*this, in[1]), output<T>(*this, out[0]),
                               rows_, width_},
           l.stream);
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    // Ids are piecewise constant: their grad is zero.
    if (propagate_down[0] && !accum[0]) in[0]->grad()->zero();
    if (!propagate_down[1]) return;
    const Launch l(*this);
    auto sum = l.scratch(in[1]->size() * sizeof(float));
    float* dw = static_cast<float*>(sum->ptr());
    launch(in[1]->size(),
           EmbedWeightGradBody<T>{input<int32_t>(*this, in[0]),
                                  output_grad<T>(*this, out[0]), dw,
                                  in[0]->size(), width_},
           l.stream);
    store_param_grad<T>(*this, dw, in[1], accum[1], l.stream);
  }

 private:
  // Ids fed from the host (the usual case) have a host copy: checking them
  // there costs no transfer.
  void check_ids_on_host(const Variables& in) const {
    if (!in[0]->data()->array().has_copy(Dtype::i32, "cpu")) return;
    check_ids(in[0]->data()->get<const int32_t>(), in);
  }
};

}  // namespace

void register_indexing(FunctionRegistry& r) {
  register_float_types<EmbedCuda>(r, decl::Embed, "cuda");
}

}  // namespace mg::cuda
