// SoftmaxCrossEntropy on the device: the row bodies of
// cuda/index_kernels.hpp over x seen as (outer, classes, inner), in fp32;
// a warp a row where the classes are contiguous (inner 1: a language
// model's logits), a thread a row where they are `inner` apart (per-pixel
// labels: neighbouring threads read neighbouring values). Labels that are on
// the host are checked there before the launch, with the CPU's message;
// labels made on the device are not read back (no host round trip inside a
// step), and one out of range gives a NaN loss.
#include <mixgraph/functions/loss.hpp>

#include <mixgraph/functions/cuda/cuda_function.hpp>
#include <mixgraph/functions/cuda/cuda_functions.hpp>
#include <mixgraph/functions/cuda/launch.cuh>

namespace mg::cuda {

namespace {

template <class T>
class SoftmaxCrossEntropyCuda : public SoftmaxCrossEntropy {
 public:
  using SoftmaxCrossEntropy::SoftmaxCrossEntropy;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    check_labels_on_host(in);
    const Launch l(*this);
    const AxisSplit& s = split_;
    launch_by_layout(
        SoftmaxCrossEntropyForwardBody<T>{
            input<T>(*this, in[0]), input<int32_t>(*this, in[1]),
            output<T>(*this, out[0]), s.size, s.inner},
        l.stream);
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (propagate_down[1]) refuse_label_grad(tag());
    if (!propagate_down[0]) return;
    const Launch l(*this);
    const AxisSplit& s = split_;
    launch_by_layout(
        SoftmaxCrossEntropyBackwardBody<T>{
            input<T>(*this, in[0]), input<int32_t>(*this, in[1]),
            output_grad<T>(*this, out[0]),
            input_grad<T>(*this, in[0], accum[0]), s.size, s.inner, accum[0]},
        l.stream);
  }

 private:
  // A warp a row where a row's classes are contiguous, a thread a row
  // where they are `inner` apart.
  template <class Body>
  void launch_by_layout(const Body& body, cudaStream_t stream) const {
    const int64_t rows = split_.outer * split_.inner;
    if (split_.inner == 1) {
      launch_rows(rows, body, stream);
    } else {
      launch(rows, body, stream);
    }
  }

  // Labels fed from the host (the usual case) have a host copy: checking
  // them there costs no transfer.
  void check_labels_on_host(const Variables& in) const {
    const SyncedArray& a = in[1]->data()->array();
    if (!a.has_copy(Dtype::i32, "cpu")) return;
    check_class_labels(in[1]->data()->get<const int32_t>(), in[1]->size(),
                       in[0]->shape(), split_, tag());
  }
};

}  // namespace

void register_loss(FunctionRegistry& r) {
  register_float_types<SoftmaxCrossEntropyCuda>(r, decl::SoftmaxCrossEntropy,
                                                "cuda");
}

}  // namespace mg::cuda
