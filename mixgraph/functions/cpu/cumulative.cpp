// CumSum and CumProd on the CPU: each line along the axis is read into
// fp32, run in double, and written once. A line is (outer o, inner j): its
// k-th element is at (o n + k) inner + j; with reverse, position p of the
// run is element n - 1 - p.
#include <vector>

#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/cumulative.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

// Calls fn(line) for every line, where line(p) is the flat index of the
// p-th element in run order.
template <class Fn>
void for_each_line(const AxisSplit& s, bool reverse, Fn&& fn) {
  const int64_t n = s.size, inner = s.inner;
#pragma omp parallel for schedule(static) if (s.outer * n * inner >= \
                                              parallel_min())
  for (int64_t l = 0; l < s.outer * inner; ++l) {
    const int64_t o = l / inner, j = l % inner;
    fn([=](int64_t p) {
      return (o * n + (reverse ? n - 1 - p : p)) * inner + j;
    });
  }
}

template <class T>
class CumSumCpu : public CumSum {
 public:
  using CumSum::CumSum;

 protected:
  // out[line(p)] = the running sum of in over run order.
  void run(const std::vector<float>& in, std::vector<float>& out,
           bool exclusive, bool reverse) const {
    const int64_t n = split_.size;
    for_each_line(split_, reverse, [&](auto line) {
      double sum = 0.0;
      for (int64_t p = 0; p < n; ++p) {
        const int64_t e = line(p);
        if (!exclusive) sum += in[e];
        out[e] = static_cast<float>(sum);
        if (exclusive) sum += in[e];
      }
    });
  }

  void forward_impl(const Variables& in, const Variables& out) override {
    std::vector<float> y(in[0]->size());
    run(floats_of<T>(in[0]), y, opts_.exclusive, opts_.reverse);
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  // dx[k] sums the dy of every y that x[k] went into: the same cumsum the
  // other way round.
  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    std::vector<float> dx(in[0]->size());
    run(dy, dx, opts_.exclusive, !opts_.reverse);
    store(dx.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
  }
};

template <class T>
class CumProdCpu : public CumProd {
 public:
  using CumProd::CumProd;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const std::vector<float> x = floats_of<T>(in[0]);
    std::vector<float> y(x.size());
    const int64_t n = split_.size;
    const bool exclusive = opts_.exclusive;
    for_each_line(split_, opts_.reverse, [&](auto line) {
      double prod = 1.0;
      for (int64_t p = 0; p < n; ++p) {
        const int64_t e = line(p);
        if (!exclusive) prod *= x[e];
        y[e] = static_cast<float>(prod);
        if (exclusive) prod *= x[e];
      }
    });
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  // In run order, with P_k the product of x before position k:
  // inclusive y_m = P_m x_m, so dx_k = P_k S_k with S_k = dy_k + x_{k+1}
  // S_{k+1}; exclusive y_m = P_m, so dx_k = P_k E_k with E_k = dy_{k+1} +
  // x_{k+1} E_{k+1}. No division: zeros in x are no special case.
  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    const std::vector<float> x = floats_of<T>(in[0]);
    const std::vector<float> dy = grad_floats_of<T>(out[0]);
    std::vector<float> dx(x.size());
    const int64_t n = split_.size;
    const bool exclusive = opts_.exclusive;
    for_each_line(split_, opts_.reverse, [&](auto line) {
      double s = 0.0;  // S_k or E_k, from the end of the run
      for (int64_t p = n - 1; p >= 0; --p) {
        if (p + 1 < n) {
          const int64_t next = line(p + 1);
          s = (exclusive ? dy[next] : 0.0) + x[next] * s;
        }
        if (!exclusive) s += dy[line(p)];
        dx[line(p)] = static_cast<float>(s);  // times P_k below
      }
      double prefix = 1.0;
      for (int64_t p = 0; p < n; ++p) {
        const int64_t e = line(p);
        dx[e] = static_cast<float>(dx[e] * prefix);
        prefix *= x[e];
      }
    });
    store(dx.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
  }
};

}  // namespace

void register_cumulative(FunctionRegistry& r) {
  register_float_types<CumSumCpu>(r, decl::CumSum, "cpu");
  register_float_types<CumProdCpu>(r, decl::CumProd, "cpu");
}

}  // namespace mg::cpu
