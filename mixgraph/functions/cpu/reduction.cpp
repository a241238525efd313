// Sum, Mean, Max, ReduceSum and ReduceMean on the CPU through the reduction
// driver (reduce.hpp); Prod and Norm in double through an element-to-output
// map.
#include <mixgraph/functions/reduction.hpp>

#include <algorithm>
#include <cmath>

#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/cpu/reduce.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

// Sum (Mean = false) and Mean: y = sum * scale, dx = dy * scale.
template <class T, class Base, bool Mean>
class SumMeanCpu : public Base {
 public:
  using Base::Base;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    std::vector<float> y =
        reduce<reduce_ops::Sum>(input<T>(in[0]), in[0]->shape(), this->axes_);
    if (Mean) {
      // Divide rather than multiply by 1/count: the mean of equal values is
      // then exact.
      const float count = static_cast<float>(this->count_);
      for (float& v : y) v /= count;
    }
    store(y.data(), output<T>(out[0]), static_cast<int64_t>(y.size()));
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const float scale = Mean ? 1.0f / static_cast<float>(this->count_) : 1.0f;
    broadcast_back(output_grad<T>(out[0]), in[0]->shape(), this->axes_, scale,
                   input_grad<T>(in[0], accum[0]), accum[0]);
  }
};

template <class T>
using SumCpu = SumMeanCpu<T, Sum, false>;
template <class T>
using MeanCpu = SumMeanCpu<T, Mean, true>;

template <class T>
using MaxCpu = ExtremumCpu<T, reduce_ops::Max, Max>;
template <class T>
using ReduceSumCpu = SumMeanCpu<T, ReduceSum, false>;
template <class T>
using ReduceMeanCpu = SumMeanCpu<T, ReduceMean, true>;

// For each element of x (of `shape`), the flat index of the output element
// it reduces into (`axes` sorted): Prod's and Norm's map, gathered once.
std::vector<int64_t> output_of_each(const Shape& shape,
                                    const std::vector<int>& axes) {
  const int nd = static_cast<int>(shape.size());
  std::vector<int64_t> ostride(nd, 0);
  int64_t n_out = 1;
  for (int i = nd - 1; i >= 0; --i) {
    if (std::binary_search(axes.begin(), axes.end(), i)) continue;
    ostride[i] = n_out;
    n_out *= shape[i];
  }
  std::vector<int64_t> map(static_cast<size_t>(shape_size(shape)));
  std::vector<int64_t> idx(nd, 0);
  int64_t off = 0;
  for (int64_t& m : map) {
    m = off;
    for (int i = nd - 1; i >= 0; --i) {
      off += ostride[i];
      if (++idx[i] < shape[i]) break;
      off -= ostride[i] * shape[i];
      idx[i] = 0;
    }
  }
  return map;
}

template <class T>
class ProdCpu : public Prod {
 public:
  using Prod::Prod;

 protected:
  // Per output: the product of the nonzero elements and how many are zero.
  void products(Variable* x, int64_t n_out) {
    const std::vector<float> v = floats_of<T>(x);
    map_ = output_of_each(x->shape(), axes_);
    nonzero_.assign(n_out, 1.0);
    zeros_.assign(n_out, 0);
    for (size_t e = 0; e < v.size(); ++e) {
      if (v[e] == 0.0f) {
        ++zeros_[map_[e]];
      } else {
        nonzero_[map_[e]] *= v[e];
      }
    }
  }

  void forward_impl(const Variables& in, const Variables& out) override {
    const int64_t n_out = out[0]->size();
    products(in[0], n_out);
    std::vector<float> y(n_out);
    for (int64_t o = 0; o < n_out; ++o) {
      y[o] = zeros_[o] ? 0.0f : static_cast<float>(nonzero_[o]);
    }
    store(y.data(), output<T>(out[0]), n_out);
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    products(in[0], out[0]->size());
    const std::vector<float> x = floats_of<T>(in[0]);
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    std::vector<float> dx(x.size());
    for (size_t e = 0; e < x.size(); ++e) {
      const int64_t o = map_[e];
      double others = 0.0;  // the product of the other elements
      if (zeros_[o] == 0) {
        others = nonzero_[o] / x[e];
      } else if (zeros_[o] == 1 && x[e] == 0.0f) {
        others = nonzero_[o];
      }
      dx[e] = static_cast<float>(dy[o] * others);
    }
    store(dx.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
  }

  std::vector<int64_t> map_;
  std::vector<double> nonzero_;
  std::vector<int64_t> zeros_;
};

template <class T>
class NormCpu : public Norm {
 public:
  using Norm::Norm;

 protected:
  // Per output: (sum |x|^p)^(1/p), summed in double.
  std::vector<double> norms(Variable* x, int64_t n_out) {
    const std::vector<float> v = floats_of<T>(x);
    map_ = output_of_each(x->shape(), axes_);
    const double p = norm_.p;
    std::vector<double> s(n_out, 0.0);
    for (size_t e = 0; e < v.size(); ++e) {
      const double a = std::abs(static_cast<double>(v[e]));
      s[map_[e]] += p == 2.0 ? a * a : std::pow(a, p);
    }
    for (double& n : s) n = p == 2.0 ? std::sqrt(n) : std::pow(n, 1.0 / p);
    return s;
  }

  void forward_impl(const Variables& in, const Variables& out) override {
    const std::vector<double> n = norms(in[0], out[0]->size());
    const std::vector<float> y(n.begin(), n.end());
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const std::vector<double> y = norms(in[0], out[0]->size());
    const std::vector<float> x = floats_of<T>(in[0]);
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    const double p = norm_.p;
    std::vector<float> dx(x.size());
    for (size_t e = 0; e < x.size(); ++e) {
      const double yo = y[map_[e]], a = x[e];
      if (yo == 0.0 || a == 0.0) {
        dx[e] = 0.0f;
        continue;
      }
      // d/dx (sum |x|^p)^(1/p) = sign(x) |x|^(p-1) y^(1-p).
      const double g = p == 2.0 ? a / yo
                                : (a > 0 ? 1.0 : -1.0) *
                                      std::pow(std::abs(a), p - 1) *
                                      std::pow(yo, 1 - p);
      dx[e] = static_cast<float>(dy[map_[e]] * g);
    }
    store(dx.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
  }

  std::vector<int64_t> map_;
};

}  // namespace

void register_reduction(FunctionRegistry& r) {
  register_float_types<SumCpu>(r, decl::Sum, "cpu");
  register_float_types<MeanCpu>(r, decl::Mean, "cpu");
  register_float_types<MaxCpu>(r, decl::Max, "cpu");
  register_float_types<ProdCpu>(r, decl::Prod, "cpu");
  register_float_types<NormCpu>(r, decl::Norm, "cpu");
  register_float_types<ReduceSumCpu>(r, decl::ReduceSum, "cpu");
  register_float_types<ReduceMeanCpu>(r, decl::ReduceMean, "cpu");
}

}  // namespace mg::cpu
