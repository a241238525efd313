// MatrixDiag, MatrixDiagPart and EyeLike on the CPU: the first two move
// elements of the type x holds (integers included) and zeros; their grads
// read or write the diagonal in fp32.
#include <mixgraph/functions/matrix_ops.hpp>

#include <algorithm>
#include <vector>

#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/registry.hpp>

namespace mg::cpu {

namespace {

// rows vectors of M -> the diagonals of rows zeroed M x M matrices.
template <class U>
void to_diagonals(const U* v, U* mats, int64_t rows, int64_t m) {
  std::fill(mats, mats + rows * m * m, U(0.0f));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < m; ++i) mats[(r * m + i) * m + i] = v[r * m + i];
  }
}

// The diagonals of rows M x M matrices -> rows vectors of M.
template <class U>
void from_diagonals(const U* mats, U* v, int64_t rows, int64_t m) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t i = 0; i < m; ++i) v[r * m + i] = mats[(r * m + i) * m + i];
  }
}

template <class T>
class MatrixDiagCpu : public MatrixDiag {
 public:
  using MatrixDiag::MatrixDiag;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    dispatch_layout<T>(in, tag(), [&](auto tag_u) {
      using U = typename decltype(tag_u)::type;
      to_diagonals(input<U>(in[0]), output<U>(out[0]), rows_, m_);
    });
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    std::vector<float> dy = grad_floats_of<T>(out[0]);
    std::vector<float> dx(static_cast<size_t>(rows_ * m_));
    from_diagonals(dy.data(), dx.data(), rows_, m_);
    store(dx.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
  }
};

template <class T>
class MatrixDiagPartCpu : public MatrixDiagPart {
 public:
  using MatrixDiagPart::MatrixDiagPart;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    dispatch_layout<T>(in, tag(), [&](auto tag_u) {
      using U = typename decltype(tag_u)::type;
      from_diagonals(input<U>(in[0]), output<U>(out[0]), rows_, m_);
    });
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    std::vector<float> dy = grad_floats_of<T>(out[0]);
    std::vector<float> dx(static_cast<size_t>(in[0]->size()));
    to_diagonals(dy.data(), dx.data(), rows_, m_);
    store(dx.data(), input_grad<T>(in[0], accum[0]), in[0]->size(), accum[0]);
  }
};

template <class T>
class EyeLikeCpu : public EyeLike {
 public:
  using EyeLike::EyeLike;

 protected:
  void forward_impl(const Variables&, const Variables& out) override {
    const Shape& s = out[0]->shape();
    T* y = output<T>(out[0]);
    for (int64_t i = 0; i < s[0]; ++i) {
      for (int64_t j = 0; j < s[1]; ++j) {
        y[i * s[1] + j] = T(j - i == opts_.k ? 1.0f : 0.0f);
      }
    }
  }

  void backward_impl(const Variables&, const Variables&,
                     const std::vector<bool>&,
                     const std::vector<bool>&) override {}
};

}  // namespace

void register_matrix_ops(FunctionRegistry& r) {
  register_float_types<MatrixDiagCpu>(r, decl::MatrixDiag, "cpu");
  register_float_types<MatrixDiagPartCpu>(r, decl::MatrixDiagPart, "cpu");
  register_float_types<EyeLikeCpu>(r, decl::EyeLike, "cpu");
}

}  // namespace mg::cpu
