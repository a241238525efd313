// The functions whose output shape comes from their inputs' data, on the
// CPU: each forward first re-reads its plan from the data (the base class
// reshapes the outputs), then moves elements in the type they are held in
// (integers exactly); the grads move back through the same plan in fp32.
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/data_shaped.hpp>
#include <mixgraph/functions/registry.hpp>

#include <algorithm>

namespace mg::cpu {

namespace {

// Copies `row` elements for each (dst row, src row) pair from src to dst.
template <class U, class Pairs>
void copy_rows(const U* src, U* dst, int64_t row, const Pairs& pairs) {
  for (const auto& [d, s] : pairs) {
    std::copy_n(src + s * row, row, dst + d * row);
  }
}

// The grad of a row copy: x's grad gets, in fp32, dy's row for each x row
// that was copied to y (pairs of (y row, x row), or (x row, y row) where
// x_first), zero elsewhere; stored as T (added with accum).
template <class T, class Pairs>
void row_copy_grad(Variable* x, Variable* y, int64_t row, const Pairs& pairs,
                   bool accum, bool x_first = false) {
  std::vector<float> dx(static_cast<size_t>(x->size()), 0.0f);
  if (y->size() > 0) {
    const std::vector<float> dy = grad_floats_of<T>(y);
    for (const auto& [a, b] : pairs) {
      const int64_t yr = x_first ? b : a, xr = x_first ? a : b;
      std::copy_n(dy.data() + yr * row, row, dx.data() + xr * row);
    }
  }
  store(dx.data(), input_grad<T>(x, accum), x->size(), accum);
}

template <class T>
class BoolGatherCpu : public BoolGather {
 public:
  using BoolGather::BoolGather;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    find_rows(in, out);
    if (out[0]->size() == 0) return;
    dispatch_layout<T>({in[0]}, tag(), [&](auto tag_u) {
      using U = typename decltype(tag_u)::type;
      copy_rows(input<U>(in[0]), output<U>(out[0]), row_, pairs());
    });
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (propagate_down[1]) zero_input_grad<T>(in[1], accum[1]);
    if (!propagate_down[0]) return;
    row_copy_grad<T>(in[0], out[0], row_, pairs(), accum[0]);
  }

 private:
  // (output row, input row) for each nonzero of the mask.
  std::vector<std::pair<int64_t, int64_t>> pairs() const {
    std::vector<std::pair<int64_t, int64_t>> p;
    for (size_t r = 0; r < rows_.size(); ++r) {
      p.emplace_back(static_cast<int64_t>(r), rows_[r]);
    }
    return p;
  }
};

template <class T>
class NonZeroCpu : public NonZero {
 public:
  using NonZero::NonZero;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    compute(in, out);
  }
  void backward_impl(const Variables& in, const Variables&,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (propagate_down[0]) zero_input_grad<T>(in[0], accum[0]);
  }
};

template <class T>
class UniqueCpu : public Unique {
 public:
  using Unique::Unique;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    compute(in, out);
    if (out[0]->size() == 0) return;
    const Shape& s = in[0]->shape();
    const int nd = static_cast<int>(s.size());
    const int64_t u = static_cast<int64_t>(source_.size());
    const int64_t outer = opts_.flatten ? 1 : shape_size(s, 0, axis_);
    const int64_t n = opts_.flatten ? in[0]->size() : s[axis_];
    const int64_t inner = opts_.flatten ? 1 : shape_size(s, axis_ + 1, nd);
    dispatch_layout<T>({in[0]}, tag(), [&](auto tag_u) {
      using U = typename decltype(tag_u)::type;
      const U* x = input<U>(in[0]);
      U* y = output<U>(out[0]);
      for (int64_t o = 0; o < outer; ++o) {
        for (int64_t i = 0; i < u; ++i) {
          std::copy_n(x + (o * n + source_[i]) * inner, inner,
                      y + (o * u + i) * inner);
        }
      }
    });
  }
  void backward_impl(const Variables& in, const Variables&,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (propagate_down[0]) zero_input_grad<T>(in[0], accum[0]);
  }
};

template <class T>
class PackPaddedSequenceCpu : public PackPaddedSequence {
 public:
  using PackPaddedSequence::PackPaddedSequence;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    plan(in, out);
    if (out[0]->size() == 0) return;
    dispatch_layout<T>({in[0]}, tag(), [&](auto tag_u) {
      using U = typename decltype(tag_u)::type;
      copy_rows(input<U>(in[0]), output<U>(out[0]), row_, pairs(in));
    });
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (propagate_down[1]) zero_input_grad<T>(in[1], accum[1]);
    if (!propagate_down[0]) return;
    row_copy_grad<T>(in[0], out[0], row_, pairs(in), accum[0]);
  }

 private:
  // (packed row, padded row) for each step of each sequence, time-major.
  std::vector<std::pair<int64_t, int64_t>> pairs(const Variables& in) const {
    const Shape& x = in[0]->shape();
    const int64_t t = x[opts_.batch_first ? 1 : 0];
    const int64_t b = x[opts_.batch_first ? 0 : 1];
    std::vector<std::pair<int64_t, int64_t>> p;
    int64_t r = 0;
    for (size_t s = 0; s < batch_sizes_.size(); ++s) {
      const int64_t step = static_cast<int64_t>(s);
      for (int64_t i = 0; i < batch_sizes_[s]; ++i) {
        p.emplace_back(r++, opts_.batch_first ? i * t + step : step * b + i);
      }
    }
    return p;
  }
};

template <class T>
class PadPackedSequenceCpu : public PadPackedSequence {
 public:
  using PadPackedSequence::PadPackedSequence;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    plan(in, out);
    if (out[0]->size() == 0) return;
    dispatch_layout<T>({in[0]}, tag(), [&](auto tag_u) {
      using U = typename decltype(tag_u)::type;
      U* y = output<U>(out[0]);
      std::fill_n(y, out[0]->size(), static_cast<U>(opts_.padding_value));
      for (const auto& [p, d] : pairs()) {
        std::copy_n(input<U>(in[0]) + p * row_, row_, y + d * row_);
      }
    });
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (propagate_down[1]) zero_input_grad<T>(in[1], accum[1]);
    if (!propagate_down[0]) return;
    // pairs() are (packed row: x, padded row: y).
    row_copy_grad<T>(in[0], out[0], row_, pairs(), accum[0], /*x_first=*/true);
  }

 private:
  // (packed row, padded row) for each step of each sequence, time-major.
  std::vector<std::pair<int64_t, int64_t>> pairs() const {
    const int64_t b = batch_sizes_.empty() ? 0 : batch_sizes_[0];
    std::vector<std::pair<int64_t, int64_t>> p;
    int64_t r = 0;
    for (size_t s = 0; s < batch_sizes_.size(); ++s) {
      const int64_t step = static_cast<int64_t>(s);
      for (int64_t i = 0; i < batch_sizes_[s]; ++i) {
        p.emplace_back(r++,
                       opts_.batch_first ? i * steps_ + step : step * b + i);
      }
    }
    return p;
  }
};

template <class T>
class ONNXNonMaxSuppressionCpu : public ONNXNonMaxSuppression {
 public:
  using ONNXNonMaxSuppression::ONNXNonMaxSuppression;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    compute(in, out);
  }
  void backward_impl(const Variables& in, const Variables&,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    for (int i = 0; i < 2; ++i) {
      if (propagate_down[i]) zero_input_grad<float>(in[i], accum[i]);
    }
  }
};

}  // namespace

void register_data_shaped(FunctionRegistry& r) {
  register_float_types<BoolGatherCpu>(r, decl::BoolGather, "cpu");
  register_float_types<NonZeroCpu>(r, decl::NonZero, "cpu");
  register_float_types<UniqueCpu>(r, decl::Unique, "cpu");
  register_float_types<PackPaddedSequenceCpu>(r, decl::PackPaddedSequence,
                                              "cpu");
  register_float_types<PadPackedSequenceCpu>(r, decl::PadPackedSequence, "cpu");
  register_float_types<ONNXNonMaxSuppressionCpu>(r, decl::ONNXNonMaxSuppression,
                                                 "cpu");
}

}  // namespace mg::cpu
