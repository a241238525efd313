// Assign on the CPU: src copied into dst in the type dst is held in (fp32
// for a master parameter) and into y in T.
#include <mixgraph/functions/assign.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/registry.hpp>

#include <algorithm>

namespace mg::cpu {

namespace {

template <class T>
class AssignCpu : public Assign {
 public:
  using Assign::Assign;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const int64_t n = in[1]->size();
    const std::vector<float> src = floats_of<T>(in[1]);
    if (held_in_float(in[0])) {
      std::copy(src.begin(), src.end(), output<float>(in[0]));
    } else {
      store(src.data(), output<T>(in[0]), n);
    }
    store(src.data(), output<T>(out[0]), n);
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (propagate_down[1] && !accum[1]) {
      std::fill_n(input_grad<T>(in[1], false), in[1]->size(), T(0.0f));
    }
    if (!propagate_down[0]) return;
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    store_grad<T>(dy.data(), in[0], accum[0]);
  }
};

}  // namespace

void register_assign(FunctionRegistry& r) {
  register_float_types<AssignCpu>(r, decl::Assign, "cpu");
}

}  // namespace mg::cpu
