// Pad, Tile, Shift and Unpooling on the device: every one is an AxisGather
// (y[j] = x at one source index per axis, or the fill value), so one pair
// of bodies moves them all (cuda/index_kernels.hpp). The per-axis sources
// and their inverse are made once per setup and live on the device; the
// grad of each x element sums the y elements that read it, in y's order,
// as the CPU does: the same result, no atomics.
#include <mixgraph/functions/array_ops.hpp>

#include <mixgraph/functions/cuda/cuda_functions.hpp>
#include <mixgraph/functions/cuda/launch.cuh>
#include <mixgraph/functions/cuda/layout_cuda.hpp>

namespace mg::cuda {

namespace {

template <class T, class Base, class Options>
class AxisGatherCuda : public LayoutCuda<T, Base, Options> {
 public:
  using LayoutCuda<T, Base, Options>::LayoutCuda;

 protected:
  void setup_impl(const Variables& in, const Variables& out) override {
    Base::setup_impl(in, out);
    tables_.reset();
    if (out[0]->shape().size() > static_cast<size_t>(kMaxDims)) return;
    const std::vector<int64_t> values = axis_gather_tables(
        this->x_view(), out[0]->shape(), this->source(), &layout_);
    // Host data, copied to the device at the first forward and kept there.
    tables_ = std::make_unique<SyncedArray>(values.size());
    auto* t = static_cast<int64_t*>(tables_->cast(Dtype::i64, "cpu", true));
    std::copy(values.begin(), values.end(), t);
  }

  void forward_on_device(const Variables& in, const Variables& out) override {
    const Launch l(*this);
    launch(out[0]->size(),
           AxisGatherBody<T>{input<T>(*this, in[0]), output<T>(*this, out[0]),
                             tables(), this->fill_value()},
           l.stream);
  }

  void backward_on_device(const Variables& in, const Variables& out,
                          const std::vector<bool>& propagate_down,
                          const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const Launch l(*this);
    launch(in[0]->size(),
           AxisGatherGradBody<T>{output_grad<T>(*this, out[0]),
                                 input_grad<T>(*this, in[0], accum[0]),
                                 tables(), accum[0]},
           l.stream);
  }

 private:
  AxisGatherTables tables() const {
    AxisGatherTables t = layout_;
    t.table =
        static_cast<const int64_t*>(tables_->get(Dtype::i64, this->device()));
    return t;
  }

  AxisGatherTables layout_;  // sizes and offsets; table set per launch
  std::unique_ptr<SyncedArray> tables_;
};

template <class T>
using PadCuda = AxisGatherCuda<T, Pad, PadOptions>;
template <class T>
using TileCuda = AxisGatherCuda<T, Tile, TileOptions>;
template <class T>
using ShiftCuda = AxisGatherCuda<T, Shift, ShiftOptions>;
template <class T>
using UnpoolingCuda = AxisGatherCuda<T, Unpooling, UnpoolingOptions>;

}  // namespace

void register_array_ops(FunctionRegistry& r) {
  register_float_types<PadCuda>(r, decl::Pad, "cuda");
  register_float_types<TileCuda>(r, decl::Tile, "cuda");
  register_float_types<ShiftCuda>(r, decl::Shift, "cuda");
  register_float_types<UnpoolingCuda>(r, decl::Unpooling, "cuda");
}

}  // namespace mg::cuda
