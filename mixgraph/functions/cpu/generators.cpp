// Constant, Arange and Linspace on the CPU: each element computed from its
// index by the formula in functions/generators.hpp, then rounded once.
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/generators.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

// y[i] = value(i) for every element of out.
template <class T, class ValueFn>
void fill_by_index(Variable* out, ValueFn&& value) {
  T* y = output<T>(out);
  for_each_block(out->size(), [&](int64_t begin, int64_t len) {
    float buf[kBlock];
    for (int64_t i = 0; i < len; ++i) buf[i] = value(begin + i);
    store(buf, y + begin, len);
  });
}

template <class T>
class ConstantCpu : public Constant {
 public:
  using Constant::Constant;

 protected:
  void forward_impl(const Variables&, const Variables& out) override {
    const float val = opts_.val;
    fill_by_index<T>(out[0], [val](int64_t) { return val; });
  }
  void backward_impl(const Variables&, const Variables&,
                     const std::vector<bool>&,
                     const std::vector<bool>&) override {}
};

template <class T>
class ArangeCpu : public Arange {
 public:
  using Arange::Arange;

 protected:
  void forward_impl(const Variables&, const Variables& out) override {
    fill_by_index<T>(out[0], [this](int64_t i) {
      return static_cast<float>(arange_value(opts_, i));
    });
  }
  void backward_impl(const Variables&, const Variables&,
                     const std::vector<bool>&,
                     const std::vector<bool>&) override {}
};

template <class T>
class LinspaceCpu : public Linspace {
 public:
  using Linspace::Linspace;

 protected:
  void forward_impl(const Variables&, const Variables& out) override {
    fill_by_index<T>(out[0], [this](int64_t i) {
      return static_cast<float>(linspace_value(opts_, i));
    });
  }
  void backward_impl(const Variables&, const Variables&,
                     const std::vector<bool>&,
                     const std::vector<bool>&) override {}
};

}  // namespace

void register_generators(FunctionRegistry& r) {
  register_float_types<ConstantCpu>(r, decl::Constant, "cpu");
  register_float_types<ArangeCpu>(r, decl::Arange, "cpu");
  register_float_types<LinspaceCpu>(r, decl::Linspace, "cpu");
}

}  // namespace mg::cpu
