// Cast on the CPU: one conversion from x's dtype to the requested one,
// through the SyncedArray (y's head becomes that dtype).
#include <mixgraph/functions/cast.hpp>

#include <mixgraph/contexts/convert.hpp>
#include <mixgraph/contexts/dtype_dispatch.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

// T is the backend's type. It only decides the grad's dtype when x holds
// something other than float, half or bfloat16.
template <class T>
class CastCpu : public Cast {
 public:
  using Cast::Cast;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    // Read x as it is held: going through T would round a float x to half
    // before a cast to float.
    SyncedArray& x = in[0]->data()->array();
    const Dtype from = x.dtype();
    x_dtype_ = from;
    const void* src = x.get(from);
    void* dst = out[0]->data()->array().cast(opts_.dtype, "cpu", true);
    convert(src, from, dst, opts_.dtype, static_cast<size_t>(in[0]->size()));
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    // x's data may be freed by now (clear_no_need_grad): use the dtype
    // forward saw.
    const Dtype xd = x_dtype_;
    const Dtype gd = is_floating(xd) && xd != Dtype::f64 ? xd : dtype_of<T>;
    const int64_t n = in[0]->size();
    const float* dy = output_grad<float>(out[0]);
    dispatch_float_types(gd, "cast", [&](auto tag) {
      using U = typename decltype(tag)::type;
      store(dy, input_grad<U>(in[0], accum[0]), n, accum[0]);
    });
  }

 private:
  Dtype x_dtype_ = dtype_of<T>;
};

}  // namespace

void register_cast(FunctionRegistry& r) {
  register_float_types<CastCpu>(r, decl::Cast, "cpu");
}

}  // namespace mg::cpu
