// BatchInv, BatchDet, BatchLogdet and BatchCholesky on the CPU: each
// matrix converted to double and decomposed with Eigen, the results
// rounded once to the storage type.
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/batch_linalg.hpp>
#include <mixgraph/functions/cpu/cpu_functions.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>
#include <mixgraph/functions/registry.hpp>

#include <Eigen/Cholesky>
#include <Eigen/Dense>
#include <Eigen/LU>
#include <Eigen/SVD>

#include <cmath>
#include <limits>
#include <stdexcept>

namespace mg::cpu {

namespace {

using Mat =
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// Matrix b of a (B, N, N) block of floats, in double.
Mat matrix(const std::vector<float>& x, int64_t b, int64_t n) {
  Mat m(n, n);
  const float* p = x.data() + b * n * n;
  for (int64_t i = 0; i < n * n; ++i) m.data()[i] = p[i];
  return m;
}

void put(const Mat& m, std::vector<float>& y, int64_t b) {
  const int64_t nn = m.rows() * m.cols();
  for (int64_t i = 0; i < nn; ++i)
    y[b * nn + i] = static_cast<float>(m.data()[i]);
}

// m^-1 by LU with full pivoting; a matrix of numerical rank below N is an
// error naming it and what was being computed.
Mat inverse_or_throw(const Mat& m, int64_t b, const std::string& tag,
                     const char* what) {
  Eigen::FullPivLU<Mat> lu(m);
  if (!lu.isInvertible()) {
    throw std::invalid_argument(msg(tag, "matrix ", b,
                                    " of x is singular (numerical rank ",
                                    lu.rank(), " of ", m.rows(), "): ", what));
  }
  return lu.inverse();
}

// Backward's frame, the same for each function: x and dy read as float,
// grad(b, x, dy) gives matrix b's block of dx (in double: returned as a
// Mat, not an expression of the lambda's locals), and dx is stored (added
// with accum) as x's grad in T.
template <class T, class Grad>
void each_matrix_grad(const Variables& in, const Variables& out, bool accum,
                      int64_t batch, Grad&& grad) {
  const std::vector<float> x = floats_of<T>(in[0]);
  const std::vector<float> dy = grad_floats_of<T>(out[0]);
  std::vector<float> dx(x.size());
  for (int64_t b = 0; b < batch; ++b) put(grad(b, x, dy), dx, b);
  store_grad<T>(dx.data(), in[0], accum);
}

using Floats = std::vector<float>;

template <class T>
class BatchInvCpu : public BatchInv {
 public:
  using BatchInv::BatchInv;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const std::vector<float> x = floats_of<T>(in[0]);
    std::vector<float> y(x.size());
    for (int64_t b = 0; b < batch_; ++b) {
      put(inverse_or_throw(matrix(x, b, n_), b, tag(), "it has no inverse"), y,
          b);
    }
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    each_matrix_grad<T>(
        in, out, accum[0], batch_,
        [&](int64_t b, const Floats& x, const Floats& dy) -> Mat {
          const Mat inv =
              inverse_or_throw(matrix(x, b, n_), b, tag(), "it has no inverse");
          return -inv.transpose() * matrix(dy, b, n_) * inv.transpose();
        });
  }
};

template <class T>
class BatchDetCpu : public BatchDet {
 public:
  using BatchDet::BatchDet;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const std::vector<float> x = floats_of<T>(in[0]);
    std::vector<float> y(static_cast<size_t>(batch_));
    for (int64_t b = 0; b < batch_; ++b) {
      y[b] = static_cast<float>(matrix(x, b, n_).determinant());
    }
    store(y.data(), output<T>(out[0]), batch_);
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    each_matrix_grad<T>(
        in, out, accum[0], batch_,
        [&](int64_t b, const Floats& x, const Floats& dy) -> Mat {
          // adj(x) from x = U S V^T: det(U) det(V) V adj(S) U^T, adj(S)_ii the
          // product of the other singular values; det(x) x^-1 where x is
          // invertible, and right where it is not.
          Eigen::JacobiSVD<Mat> svd(matrix(x, b, n_),
                                    Eigen::ComputeFullU | Eigen::ComputeFullV);
          const Eigen::VectorXd s = svd.singularValues();
          Eigen::VectorXd adj_s(n_);
          for (int64_t i = 0; i < n_; ++i) {
            double p = 1.0;
            for (int64_t j = 0; j < n_; ++j) {
              if (j != i) p *= s[j];
            }
            adj_s[i] = p;
          }
          const Mat& u = svd.matrixU();
          const Mat& v = svd.matrixV();
          const Mat adj = u.determinant() * v.determinant() * v *
                          adj_s.asDiagonal() * u.transpose();
          return dy[b] * adj.transpose();
        });
  }
};

template <class T>
class BatchLogdetCpu : public BatchLogdet {
 public:
  using BatchLogdet::BatchLogdet;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const std::vector<float> x = floats_of<T>(in[0]);
    std::vector<float> y(static_cast<size_t>(batch_));
    for (int64_t b = 0; b < batch_; ++b) {
      // The sum of log |pivot|: no overflow where det itself would.
      Eigen::PartialPivLU<Mat> lu(matrix(x, b, n_));
      double sum = 0.0;
      for (int64_t i = 0; i < n_; ++i) {
        sum += std::log(std::abs(lu.matrixLU()(i, i)));
      }
      y[b] = static_cast<float>(sum);  // -inf for a zero pivot
    }
    store(y.data(), output<T>(out[0]), batch_);
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    each_matrix_grad<T>(
        in, out, accum[0], batch_,
        [&](int64_t b, const Floats& x, const Floats& dy) -> Mat {
          const Mat inv = inverse_or_throw(matrix(x, b, n_), b, tag(),
                                           "log |det| is -inf and has no grad");
          return dy[b] * inv.transpose();
        });
  }
};

template <class T>
class BatchCholeskyCpu : public BatchCholesky {
 public:
  using BatchCholesky::BatchCholesky;

 protected:
  void forward_impl(const Variables& in, const Variables& out) override {
    const std::vector<float> x = floats_of<T>(in[0]);
    std::vector<float> y(x.size());
    for (int64_t b = 0; b < batch_; ++b) {
      const Mat l = factor(matrix(x, b, n_), b);
      put(opts_.upper ? Mat(l.transpose()) : l, y, b);
    }
    store(y.data(), output<T>(out[0]), out[0]->size());
  }

  void backward_impl(const Variables& in, const Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (!propagate_down[0]) return;
    // L from x again in double (the output holds it rounded to T).
    each_matrix_grad<T>(
        in, out, accum[0], batch_,
        [&](int64_t b, const Floats& x, const Floats& dy) -> Mat {
          const Mat l = factor(matrix(x, b, n_), b);
          // With upper, y = L^T: the grad of L is dy^T.
          const Mat dl = opts_.upper ? Mat(matrix(dy, b, n_).transpose())
                                     : matrix(dy, b, n_);
          Mat p = l.transpose() * dl;  // phi: lower triangle, diagonal halved
          for (int64_t i = 0; i < n_; ++i) {
            p(i, i) *= 0.5;
            for (int64_t j = i + 1; j < n_; ++j) p(i, j) = 0.0;
          }
          const Mat l_inv =
              l.triangularView<Eigen::Lower>().solve(Mat::Identity(n_, n_));
          const Mat s = l_inv.transpose() * p * l_inv;
          return 0.5 * (s + s.transpose());
        });
  }

 private:
  // L of matrix b (its lower triangle read), or an error naming it.
  Mat factor(const Mat& m, int64_t b) const {
    Eigen::LLT<Mat> llt(m);
    if (llt.info() != Eigen::Success) {
      throw std::invalid_argument(
          msg(tag(), "matrix ", b,
              " of x is not positive definite: it has no Cholesky factor"));
    }
    return llt.matrixL();
  }
};

}  // namespace

void register_batch_linalg(FunctionRegistry& r) {
  register_float_types<BatchInvCpu>(r, decl::BatchInv, "cpu");
  register_float_types<BatchDetCpu>(r, decl::BatchDet, "cpu");
  register_float_types<BatchLogdetCpu>(r, decl::BatchLogdet, "cpu");
  register_float_types<BatchCholeskyCpu>(r, decl::BatchCholesky, "cpu");
}

}  // namespace mg::cpu
