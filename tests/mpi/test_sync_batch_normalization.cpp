// SyncBatchNormalization under `mpirun -np 2` (label mpi): a batch of 8
// samples, the same on both ranks, split 4 and 4; each rank normalises its
// half with the MPI communicator and compares with BatchNormalization on the
// whole batch in the same process: y and dx on its rows, the running
// statistics, and dbeta, dgamma, which are this rank's sums (not reduced).
// In float, half and bfloat16; rank 0 prints the largest differences.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <mixgraph/mixgraph.hpp>

namespace F = mg::functions;

namespace {

constexpr int64_t N = 8, C = 3, H = 4, W = 4, L = C * H * W;

mg::CommunicatorPtr world() { return mg::mpi_communicator(); }

// Values in [low, high) plus `offset` times the channel (means far from 0),
// rounded to bfloat16 so that every type_config sees the same input.
std::vector<float> values(int64_t n, float low, float high, float offset,
                          uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(low, high);
  std::vector<float> v(n);
  for (int64_t i = 0; i < n; ++i) {
    const float c = static_cast<float>((i / (H * W)) % C);
    v[i] = static_cast<float>(mg::BFloat16(dist(rng) + offset * c));
  }
  return v;
}

std::vector<float> floats_of(const mg::VariablePtr& v) {
  const float* p = v->data()->get<const float>();
  return std::vector<float>(p, p + v->size());
}

std::vector<float> grad_floats_of(const mg::VariablePtr& v) {
  const float* p = v->grad()->get<const float>();
  return std::vector<float>(p, p + v->size());
}

mg::VariablePtr variable_of(const mg::Shape& shape, const std::vector<float>& v,
                            bool need_grad) {
  auto x = mg::make_variable(shape, need_grad);
  std::copy(v.begin(), v.end(), x->data()->cast<float>(true));
  return x;
}

mg::NdArrayPtr array_of(const mg::Shape& shape, const std::vector<float>& v) {
  auto a = mg::make_ndarray(shape);
  std::copy(v.begin(), v.end(), a->cast<float>(true));
  return a;
}

// Rows [first, first + n) of a (N, C, H, W) array.
std::vector<float> rows(const std::vector<float>& v, int64_t first, int64_t n) {
  return std::vector<float>(v.begin() + first * L, v.begin() + (first + n) * L);
}

// One layer's results: y, dx, dbeta, dgamma and the running statistics
// after one forward.
struct Result {
  std::vector<float> y, dx, dbeta, dgamma, mean, var;
};

struct Inputs {
  std::vector<float> x, dy, beta, gamma, mean, var;
};

Inputs make_inputs() {
  return {values(N * L, -2, 2, 3, 1), values(N * L, -1, 1, 0, 2),
          values(C, -1, 1, 0, 3),     values(C, 0.5f, 1.5f, 0, 4),
          values(C, -1, 1, 0, 5),     values(C, 0.5f, 1.5f, 0, 6)};
}

// Runs one forward and backward of SyncBatchNormalization (comm given) or
// BatchNormalization (comm null) on rows [first, first + n) of the batch,
// seeded with dy on rows [dy_first, dy_first + dy_n) and 0 elsewhere.
Result run(const Inputs& in, int64_t first, int64_t n, bool sync,
           const mg::CommunicatorPtr& comm, int64_t dy_first, int64_t dy_n) {
  const mg::Shape xs{n, C, H, W}, ps{1, C, 1, 1};
  auto x = variable_of(xs, rows(in.x, first, n), true);
  auto beta = variable_of(ps, in.beta, true);
  auto gamma = variable_of(ps, in.gamma, true);
  auto mean = variable_of(ps, in.mean, false);
  auto var = variable_of(ps, in.var, false);
  auto y = sync ? F::sync_batch_normalization(x, beta, gamma, mean, var, comm)
                : F::batch_normalization(x, beta, gamma, mean, var);
  y->forward();
  std::vector<float> dy(n * L, 0.0f);
  for (int64_t i = dy_first; i < dy_first + dy_n; ++i) {
    std::copy_n(in.dy.begin() + i * L, L, dy.begin() + (i - first) * L);
  }
  y->backward(array_of(xs, dy));
  return {floats_of(y),          grad_floats_of(x), grad_floats_of(beta),
          grad_floats_of(gamma), floats_of(mean),   floats_of(var)};
}

// The largest |a - b| over this rank and the other.
float max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float d = 0.0f;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    d = std::max(d, std::fabs(a[i] - b[i]));
  }
  world()->all_reduce(&d, 1, mg::ReduceOp::max);
  return d;
}

// Compares and reports the largest differences over both ranks.
void expect_close(const std::string& type, const std::string& what,
                  const std::vector<float>& a, const std::vector<float>& b,
                  float tol) {
  const float d = max_diff(a, b);
  if (world()->rank() == 0) {
    std::printf("  %-8s %-16s max |diff| %.3g (tolerance %.3g)\n", type.c_str(),
                what.c_str(), d, tol);
  }
  EXPECT_LE(d, tol) << type << " " << what;
}

struct Tolerance {
  const char* type;
  float values;  // y, dx, dbeta, dgamma
  float stats;   // the running mean and variance (fp32 in every type)
};

// Each rank's half through the MPI communicator equals the whole batch in
// one process. Both run in the same type with fp32 sums that differ only in
// order, so under half and bfloat16 y and dx may differ by one rounding of
// the type (2^-11 and 2^-8 relative, |y| < 4); the running statistics and
// the grads of beta and gamma are fp32.
TEST(SyncBatchNormalization, TwoRanksEqualTheWholeBatch) {
  auto comm = world();
  ASSERT_EQ(comm->size(), 2);
  const int64_t r = comm->rank(), n = N / 2, first = r * n;
  const Inputs in = make_inputs();
  for (const Tolerance& t :
       {Tolerance{"float", 1e-5f, 1e-5f}, Tolerance{"half", 2e-3f, 1e-5f},
        Tolerance{"bfloat16", 1.6e-2f, 1e-5f}}) {
    SCOPED_TRACE(t.type);
    mg::ContextGuard guard(mg::context("cpu", t.type));
    const Result sync = run(in, first, n, true, comm, first, n);
    // The whole batch with the whole dy; then with dy on this rank's rows
    // alone, whose dbeta and dgamma are this rank's sums.
    const Result whole = run(in, 0, N, false, nullptr, 0, N);
    const Result mine = run(in, 0, N, false, nullptr, first, n);
    expect_close(t.type, "y", sync.y, rows(whole.y, first, n), t.values);
    expect_close(t.type, "dx", sync.dx, rows(whole.dx, first, n), t.values);
    expect_close(t.type, "running mean", sync.mean, whole.mean, t.stats);
    expect_close(t.type, "running var", sync.var, whole.var, t.stats);
    expect_close(t.type, "dbeta (local)", sync.dbeta, mine.dbeta, t.values);
    expect_close(t.type, "dgamma (local)", sync.dgamma, mine.dgamma, t.values);
    // Summed over the ranks (the grad all-reduce's work) they are the whole
    // batch's.
    std::vector<float> dbeta = sync.dbeta, dgamma = sync.dgamma;
    comm->all_reduce(dbeta.data(), C, mg::ReduceOp::sum);
    comm->all_reduce(dgamma.data(), C, mg::ReduceOp::sum);
    expect_close(t.type, "sum of dbeta", dbeta, whole.dbeta, 2 * t.values);
    expect_close(t.type, "sum of dgamma", dgamma, whole.dgamma, 2 * t.values);
  }
}

// Without a communicator it takes the default one when forward runs (as a
// network read from YAML does).
TEST(SyncBatchNormalization, DefaultCommunicatorIsUsedWithoutOne) {
  auto comm = world();
  const int64_t n = N / 2, first = comm->rank() * n;
  const Inputs in = make_inputs();
  const Result given = run(in, first, n, true, comm, first, n);
  mg::set_default_communicator(comm);
  const Result by_default = run(in, first, n, true, nullptr, first, n);
  mg::set_default_communicator(nullptr);
  EXPECT_EQ(by_default.y, given.y);
  EXPECT_EQ(by_default.dx, given.dx);
  EXPECT_EQ(by_default.mean, given.mean);
  EXPECT_EQ(by_default.var, given.var);
}

}  // namespace
