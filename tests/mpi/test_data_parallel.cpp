// Data-parallel training under `mpirun -np 2` (label mpi): the MPI
// communicator's collectives, the grad buckets and their overlap with
// backward, 2 ranks x batch 32 against 1 rank x batch 64 (float and half
// with the updater), an overflow on one rank, the sharded batch iterator,
// and rank 0's checkpoint resumed by every rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <mixgraph/mixgraph.hpp>
#include <mixgraph/utils/data/batch_iterator.hpp>
#include <mixgraph/utils/hdf5/checkpoint.hpp>

namespace F = mg::functions;
namespace PF = mg::parametric_functions;

namespace {

mg::CommunicatorPtr world() { return mg::mpi_communicator(); }

std::vector<float> floats_of(const mg::VariablePtr& v) {
  const float* p = v->data()->get<const float>();
  return std::vector<float>(p, p + v->size());
}

/// The largest |a - b| over every parameter of two scopes.
float max_diff(const mg::ParameterList& a, const mg::ParameterList& b) {
  float d = 0.0f;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto x = floats_of(a[i].second), y = floats_of(b[i].second);
    for (size_t j = 0; j < x.size(); ++j)
      d = std::max(d, std::fabs(x[j] - y[j]));
  }
  return d;
}

/// The largest |w - rank 0's w| over the parameters, the same on every rank.
float spread_across_ranks(const mg::ParameterList& params) {
  mg::Communicator& comm = *world();
  float d = 0.0f;
  for (const auto& [name, var] : params) {
    std::vector<float> mine = floats_of(var), root = mine;
    comm.broadcast(root.data(), root.size() * sizeof(float), 0);
    for (size_t j = 0; j < mine.size(); ++j) {
      d = std::max(d, std::fabs(mine[j] - root[j]));
    }
  }
  comm.all_reduce(&d, 1, mg::ReduceOp::max);
  return d;
}

/// A fixed data set: 64 * 40 examples of 16 features, 4 classes.
struct Data {
  std::vector<float> x;
  std::vector<int> t;
  static constexpr int kFeatures = 16, kClasses = 4, kSize = 64 * 40;
  Data() {
    std::mt19937 rng(5);
    std::normal_distribution<float> normal;
    x.resize(kSize * kFeatures);
    t.resize(kSize);
    for (int i = 0; i < kSize; ++i) {
      t[i] = i % kClasses;
      for (int f = 0; f < kFeatures; ++f) {
        x[i * kFeatures + f] = normal(rng) + (f % kClasses == t[i] ? 1.5f : 0);
      }
    }
  }
};

const Data& data() {
  static const Data d;
  return d;
}

/// An MLP on batches from a (possibly sharded) iterator.
struct Model {
  mg::ParameterScope params;
  mg::VariablePtr x, t, loss;
  mg::BatchIterator batches;
  bool poison_next = false;  // the next batch gets an inf

  Model(int batch, int rank, int ranks, uint64_t weight_seed)
      : batches(Data::kSize, batch, /*seed=*/11, true, rank, ranks) {
    mg::seed(weight_seed);
    x = mg::make_variable({batch, Data::kFeatures});
    t = mg::make_variable({batch, 1});
    auto h = F::relu(PF::affine(x, 32, params["fc1"]));
    h = F::tanh(PF::affine(h, 32, params["fc2"]));
    auto y = PF::affine(h, Data::kClasses, params["fc3"]);
    loss = F::mean(F::softmax_cross_entropy(y, t));
  }
  void feed() {
    float* xs = x->data()->cast<float>();
    float* ts = t->data()->cast<float>();
    const auto& idx = batches.next();
    for (size_t i = 0; i < idx.size(); ++i) {
      for (int f = 0; f < Data::kFeatures; ++f) {
        xs[i * Data::kFeatures + f] = data().x[idx[i] * Data::kFeatures + f];
      }
      ts[i] = static_cast<float>(data().t[idx[i]]);
    }
    if (poison_next) xs[3] = INFINITY;
    poison_next = false;
  }
};

mg::SolverPtr adam() { return mg::solvers::Adam(1e-2f); }

/// `steps` steps (20 Adam steps unless told) of batch 64 in one process, and
/// of batch 32 on each of the 2 ranks with the updater and the
/// communicator, from the same weights; returns the largest weight
/// difference. `base` gives the updater's other options; `whole_weights`
/// gets the one-process run's weights.
float one_rank_against_two(
    const std::string& type_config, bool loss_scaling,
    const mg::DataParallelOptions& dp = {},
    mg::DynamicLossScalingOptions base = {},
    const std::function<mg::SolverPtr()>& make_solver = adam, int steps = 20,
    std::vector<float>* whole_weights = nullptr) {
  mg::set_default_context(mg::context("cpu", type_config));
  auto comm = world();
  Model whole(64, 0, 1, 3), part(32, comm->rank(), 2, 3 + comm->rank());
  auto solve = [&](Model& m, mg::CommunicatorPtr c) {
    auto solver = make_solver();
    solver->set_parameters(m.params.parameters());
    mg::DynamicLossScalingOptions o = base;
    o.loss_scaling = loss_scaling;
    o.communicator = std::move(c);  // broadcasts rank 0's weights
    o.data_parallel = dp;
    mg::DynamicLossScalingUpdater updater(
        solver, m.loss, [&] { m.feed(); }, o);
    for (int i = 0; i < steps; ++i) {
      EXPECT_TRUE(updater.update()) << "step " << i;
    }
  };
  // Rank 1 starts from other weights: the updater's broadcast makes them
  // rank 0's, which are the one-process run's.
  solve(whole, nullptr);
  solve(part, comm);
  EXPECT_EQ(spread_across_ranks(part.params.parameters()), 0.0f)
      << "the ranks' weights differ";
  mg::set_default_context(mg::context("cpu", "float"));
  if (whole_weights) {
    whole_weights->clear();
    for (const auto& [name, var] : whole.params.parameters()) {
      const auto w = floats_of(var);
      whole_weights->insert(whole_weights->end(), w.begin(), w.end());
    }
  }
  return max_diff(whole.params.parameters(), part.params.parameters());
}

}  // namespace

TEST(MpiCommunicator, RanksAndCollectives) {
  auto comm = world();
  ASSERT_EQ(comm->size(), 2) << "run under mpirun -np 2";
  EXPECT_EQ(comm->name(), "mpi");
  EXPECT_EQ(comm->device(), "cpu");
  EXPECT_EQ(comm, mg::mpi_communicator()) << "one communicator per process";
  const int r = comm->rank();
  EXPECT_EQ(comm->local_rank(), r);  // one machine

  std::vector<float> v = {1.0f + r, -2.0f * r, 0.5f};
  comm->all_reduce(v.data(), 3, mg::ReduceOp::sum);
  EXPECT_EQ(v, (std::vector<float>{3.0f, -2.0f, 1.0f}));
  v = {1.0f + r, 4.0f};
  comm->all_reduce(v.data(), 2, mg::ReduceOp::mean);
  EXPECT_EQ(v, (std::vector<float>{1.5f, 4.0f}));
  v = {static_cast<float>(r), -static_cast<float>(r)};
  comm->all_reduce(v.data(), 2, mg::ReduceOp::max);
  EXPECT_EQ(v, (std::vector<float>{1.0f, 0.0f}));

  // Several reduces in flight, finished together.
  std::vector<float> a(1000, 1.0f + r), b(7, 2.0f * r);
  comm->start_all_reduce(a.data(), 1000, mg::ReduceOp::sum);
  comm->start_all_reduce(b.data(), 7, mg::ReduceOp::mean);
  comm->progress();
  comm->wait_all();
  EXPECT_TRUE(comm->progress());
  EXPECT_EQ(a[999], 3.0f);
  EXPECT_EQ(b[6], 1.0f);

  int value = r == 1 ? 42 : 0;
  comm->broadcast(&value, sizeof(value), 1);
  EXPECT_EQ(value, 42);
  const float mine[2] = {10.0f * r, 10.0f * r + 1};
  float all[4] = {};
  comm->all_gather(mine, 2, all);
  EXPECT_EQ(std::vector<float>(all, all + 4),
            (std::vector<float>{0.0f, 1.0f, 10.0f, 11.0f}));
  comm->barrier();
  try {
    comm->broadcast(&value, sizeof(value), 2);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("root 2 is not a rank of 2"),
              std::string::npos)
        << e.what();
  }
}

// m's batch through forward and backward, grads zeroed first (on_ready:
// a reducer's callback, or none).
void run_backward(Model& m, const mg::GradReadyCallback& on_ready) {
  for (const auto& [name, var] : m.params.parameters()) var->grad()->zero();
  m.loss->forward();
  m.loss->backward(1.0f, false, on_ready);
}

std::vector<std::vector<float>> grads_of(const mg::ParameterList& params) {
  std::vector<std::vector<float>> grads;
  for (const auto& [name, var] : params) {
    const float* g = var->grad()->get<const float>();
    grads.emplace_back(g, g + var->size());
  }
  return grads;
}

// Every grad of params is the mean over the 2 ranks of `local`, theirs.
void expect_mean_of_ranks(mg::Communicator& comm,
                          const mg::ParameterList& params,
                          const std::vector<std::vector<float>>& local) {
  for (size_t i = 0; i < params.size(); ++i) {
    std::vector<float> sum = local[i];
    comm.all_reduce(sum.data(), sum.size(), mg::ReduceOp::sum);
    const float* g = params[i].second->grad()->get<const float>();
    for (size_t j = 0; j < sum.size(); ++j) {
      ASSERT_FLOAT_EQ(g[j], sum[j] * 0.5f)
          << params[i].first << "[" << j << "]";
    }
  }
}

TEST(GradReducer, BucketsInBackwardOrderLaunchedDuringBackward) {
  auto comm = world();
  Model m(8, comm->rank(), 2, 1);
  const auto params = m.params.parameters();
  // fc3's W (32 x 4) and b fit 600 bytes; fc2's W (32 x 32) gets its own.
  mg::DataParallelOptions o;
  o.bucket_bytes = 600;
  mg::GradReducer reducer(comm, params, o);
  const auto buckets = reducer.buckets();
  ASSERT_GE(buckets.size(), 3u);
  EXPECT_EQ(buckets[0],
            (std::vector<std::string>{"fc3/affine/b", "fc3/affine/W"}));
  EXPECT_EQ(buckets[1], (std::vector<std::string>{"fc2/affine/b"}));
  EXPECT_EQ(buckets[2], (std::vector<std::string>{"fc2/affine/W"}));

  // Each rank's own grads (a launched bucket's grads are being reduced
  // until finish(): not readable then), then the reduced ones: their mean.
  m.feed();
  run_backward(m, {});
  const auto local = grads_of(params);
  run_backward(m, reducer.callback());
  // Every bucket's grads are final before backward returns.
  EXPECT_EQ(reducer.stats().launched_during_backward,
            static_cast<int64_t>(buckets.size()));
  reducer.finish();
  expect_mean_of_ranks(*comm, params, local);
  EXPECT_EQ(reducer.stats().steps, 1);
  EXPECT_GT(reducer.stats().bytes, 0);
}

TEST(GradReducer, UnwrittenGradsStayUnwritten) {
  auto comm = world();
  Model m(8, comm->rank(), 2, 1);
  auto params = m.params.parameters();
  auto unused =
      m.params["extra"].get_or_create("W", {5}, mg::constant_initializer(1.0f));
  params.emplace_back("extra/W", unused);
  // In a bucket with others (the default), and alone in one (4 bytes: every
  // grad its own bucket, which a written grad is reduced in place).
  for (const int64_t bucket_bytes : {int64_t{1} << 20, int64_t{4}}) {
    mg::DataParallelOptions o;
    o.bucket_bytes = bucket_bytes;
    mg::GradReducer reducer(comm, params, o);
    for (const auto& [name, var] : params) var->grad()->zero();
    m.feed();
    m.loss->forward();
    m.loss->backward(1.0f, false, reducer.callback());
    reducer.finish();
    EXPECT_TRUE(unused->grad()->array().zeroing())
        << "a grad no backward wrote must stay unwritten (the solver skips "
           "it), buckets of "
        << bucket_bytes << " bytes";
  }
}

// A step whose backward threw after some buckets left: abort() waits for
// them (a grad reduced in place must not be written after the next step
// zeroes it) and forgets the step, so the next one reduces every bucket
// again. Without the reset, the next finish() would skip the buckets the
// aborted step launched, and the grads would stay each rank's own.
TEST(GradReducer, AnAbortedStepLeavesTheNextWhole) {
  auto comm = world();
  Model m(8, comm->rank(), 2, 1);
  const auto params = m.params.parameters();
  mg::DataParallelOptions o;
  o.bucket_bytes = 600;  // several buckets, fc2's W in place
  mg::GradReducer reducer(comm, params, o);
  m.feed();
  run_backward(m, reducer.callback());  // every bucket left; "it threw"
  reducer.abort();
  run_backward(m, {});
  const auto local = grads_of(params);
  run_backward(m, reducer.callback());
  reducer.finish();
  expect_mean_of_ranks(*comm, params, local);
  EXPECT_EQ(reducer.stats().steps, 1);
}

TEST(GradReducer, BadOptionsAreRefused) {
  mg::ParameterList none;
  mg::DataParallelOptions o;
  o.bucket_bytes = 0;
  EXPECT_THROW(mg::GradReducer(world(), none, o), std::invalid_argument);
  EXPECT_THROW(mg::GradReducer(nullptr, none), std::invalid_argument);
  o = {};
  o.op = mg::ReduceOp::max;
  EXPECT_THROW(mg::GradReducer(world(), none, o), std::invalid_argument);
}

// The reduced grads of 2 ranks x batch 16 are the grads of the whole batch
// of 32 (the mean of the ranks' mean losses is the whole batch's mean
// loss): within the fp32 rounding of sums over 32 rows against two of 16
// (measured 3e-8 of grads up to 0.23; the bound is 1e-6 of the largest),
// far below the factor 2 a sum in place of the mean gives (tried: 0.23).
TEST(GradReducer, ReducedGradsAreTheWholeBatchsGrads) {
  auto comm = world();
  Model whole(32, 0, 1, 4), part(16, comm->rank(), 2, 4);  // same weights
  auto grads = [](Model& m, mg::GradReducer* reducer) {
    const auto params = m.params.parameters();
    for (const auto& [name, var] : params) var->grad()->zero();
    m.feed();
    m.loss->forward();
    m.loss->backward(1.0f, false,
                     reducer ? reducer->callback() : mg::GradReadyCallback());
    if (reducer) reducer->finish();
    std::vector<float> all;
    for (const auto& [name, var] : params) {
      const float* g = var->grad()->get<const float>();
      all.insert(all.end(), g, g + var->size());
    }
    return all;
  };
  mg::DataParallelOptions o;
  o.bucket_bytes = 600;  // several buckets
  mg::GradReducer reducer(comm, part.params.parameters(), o);
  for (int step = 0; step < 2; ++step) {
    const auto want = grads(whole, nullptr), got = grads(part, &reducer);
    ASSERT_EQ(got.size(), want.size());
    float largest = 0, err = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      largest = std::max(largest, std::fabs(want[i]));
      err = std::max(err, std::fabs(got[i] - want[i]));
    }
    EXPECT_GT(largest, 1e-3f);
    EXPECT_LE(err, 1e-6f * largest) << "step " << step;
    if (comm->rank() == 0) {
      std::printf(
          "step %d: max |reduced - whole-batch grad| = %.3g (of %.3g)\n", step,
          err, largest);
    }
  }
}

mg::SolverPtr sgd() { return mg::solvers::Sgd(0.5f); }

// SGD moves the weights by lr times the grad: a constant factor in the
// reduced grads (a sum in place of the mean) shows in the weights, where
// Adam would hide it. Accumulation over 2 batches and weight decay, then
// the same with clipping to a global norm below the grads' (every step
// clips: checked against the unclipped run), all in float; measured max
// differences 6e-8 (fp32 sums over 64 rows against two of 32). A sum in
// place of the mean (tried) is 0.19 off without clipping.
TEST(DataParallel, SgdWithAccumulationDecayAndClippingEqualsOneRank) {
  mg::DynamicLossScalingOptions o;
  std::vector<float> unclipped, clipped;
  const float plain = one_rank_against_two("float", false, {}, o, sgd, 6);
  o.accum_grad = 2;
  o.weight_decay = 1e-2f;
  const float decayed =
      one_rank_against_two("float", false, {}, o, sgd, 6, &unclipped);
  o.clip_grad_by_global_norm = 0.05f;
  const float clip =
      one_rank_against_two("float", false, {}, o, sgd, 6, &clipped);
  if (world()->rank() == 0) {
    std::printf(
        "SGD, max |w(1 x 64) - w(2 x 32)|: %.3g; with accumulation "
        "and decay %.3g; and clipping %.3g\n",
        plain, decayed, clip);
  }
  EXPECT_LE(plain, 1e-6f);
  EXPECT_LE(decayed, 1e-6f);
  EXPECT_LE(clip, 1e-6f);
  float clip_effect = 0;
  for (size_t i = 0; i < clipped.size(); ++i) {
    clip_effect = std::max(clip_effect, std::fabs(clipped[i] - unclipped[i]));
  }
  EXPECT_GT(clip_effect, 1e-3f) << "the clipping norm clips nothing";
}

// The loss scaler's counter under accumulation and a communicator: it
// counts the applied updates, which every rank agrees on, not batches.
TEST(DataParallel, TheScaleGrowsAfterIntervalUpdatesOfAccumulatedBatches) {
  mg::set_default_context(mg::context("cpu", "half"));
  auto comm = world();
  Model m(16, comm->rank(), 2, 9);
  auto solver = mg::solvers::Sgd(0.1f);
  solver->set_parameters(m.params.parameters());
  mg::DynamicLossScalingOptions o;
  o.communicator = comm;
  o.scale = 1024.0f;
  o.interval = 2;
  o.accum_grad = 3;
  mg::DynamicLossScalingUpdater updater(
      solver, m.loss, [&] { m.feed(); }, o);
  std::vector<float> scales;
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(updater.update()) << "step " << i;
    scales.push_back(updater.scale());
  }
  EXPECT_EQ(scales, (std::vector<float>{1024, 2048, 2048, 4096}));
  EXPECT_EQ(updater.applied_steps(), 4);
  EXPECT_EQ(solver->t(), 4u);
  mg::set_default_context(mg::context("cpu", "float"));
}

TEST(DataParallel, TwoRanksOfBatch32EqualOneRankOfBatch64Float) {
  const float d = one_rank_against_two("float", /*loss_scaling=*/false);
  if (world()->rank() == 0) {
    std::printf("float, 20 Adam steps: max |w(1 x 64) - w(2 x 32)| = %.3g\n",
                d);
  }
  EXPECT_LE(d, 1e-6f);
}

TEST(DataParallel, WithoutOverlapTheSameWeights) {
  mg::DataParallelOptions dp;
  dp.overlap = false;
  dp.bucket_bytes = 1000;
  EXPECT_LE(one_rank_against_two("float", false, dp), 1e-6f);
}

TEST(DataParallel, TwoRanksOfBatch32EqualOneRankOfBatch64HalfWithTheUpdater) {
  const float d = one_rank_against_two("half", /*loss_scaling=*/true);
  if (world()->rank() == 0) {
    std::printf(
        "half + updater, 20 Adam steps: max |w(1 x 64) - w(2 x 32)| "
        "= %.3g\n",
        d);
  }
  // The fp32 sums of dW over one batch of 64 and over two of 32 differ in
  // their last bits, and a half rounding of an activation can fall between
  // them: measured 5.6e-6 here, against Adam steps of 1e-2.
  EXPECT_LE(d, 1e-4f);
}

TEST(DataParallel, AnOverflowOnOneRankSkipsTheStepOnEvery) {
  mg::set_default_context(mg::context("cpu", "half"));
  auto comm = world();
  Model m(16, comm->rank(), 2, 9);
  auto solver = mg::solvers::Adam(1e-3f);
  solver->set_parameters(m.params.parameters());
  mg::DynamicLossScalingOptions o;
  o.communicator = comm;
  o.scale = 1024.0f;
  mg::DynamicLossScalingUpdater updater(
      solver, m.loss, [&] { m.feed(); }, o);
  std::vector<float> applied;
  for (int i = 0; i < 6; ++i) {
    m.poison_next = comm->rank() == 1 && i == 3;  // rank 1 alone, step 3
    applied.push_back(updater.update() ? 1.0f : 0.0f);
  }
  EXPECT_EQ(applied, (std::vector<float>{1, 1, 1, 0, 1, 1}));
  EXPECT_EQ(updater.skipped_steps(), 1);
  float scales[2] = {};
  const float mine = updater.scale();
  comm->all_gather(&mine, 1, scales);
  EXPECT_EQ(scales[0], scales[1]);
  EXPECT_EQ(mine, 512.0f);
  EXPECT_EQ(spread_across_ranks(m.params.parameters()), 0.0f);
  mg::set_default_context(mg::context("cpu", "float"));
}

TEST(DataParallel, ShardedIteratorsReadTheWholeBatchesBetweenThem) {
  auto comm = world();
  mg::BatchIterator whole(1000, 20, 4);
  mg::BatchIterator mine(1000, 10, 4, true, comm->rank(), 2);
  for (int step = 0; step < 60; ++step) {  // across epochs (50 per epoch)
    const auto& b = mine.next();
    std::vector<float> local(b.begin(), b.end()), all(20);
    comm->all_gather(local.data(), 10, all.data());
    const auto& expected = whole.next();
    ASSERT_EQ(std::vector<float>(expected.begin(), expected.end()), all)
        << "step " << step;
  }
}

TEST(DataParallel, RankZerosCheckpointResumesEveryRankExactly) {
  auto comm = world();
  const std::string path =
      (std::filesystem::temp_directory_path() / "mg_mpi_ckpt.h5").string();
  struct Run {
    Model m;
    mg::SolverPtr solver = mg::solvers::Adam(1e-2f);
    std::unique_ptr<mg::DynamicLossScalingUpdater> updater;
    Run(int rank, uint64_t seed) : m(16, rank, 2, seed) {
      solver->set_parameters(m.params.parameters());
      mg::DynamicLossScalingOptions o;
      o.loss_scaling = false;
      o.communicator = world();
      updater = std::make_unique<mg::DynamicLossScalingUpdater>(
          solver, m.loss, [this] { m.feed(); }, o);
    }
    void steps(int n) {
      for (int i = 0; i < n; ++i) updater->update();
    }
  };
  Run straight(comm->rank(), 21);
  straight.steps(5);
  if (comm->rank() == 0) {  // rank 0 writes; every rank reads
    mg::CheckpointExtras extras;
    extras.set("batches", straight.m.batches.state());
    mg::save_checkpoint(path, straight.m.params, *straight.solver,
                        *straight.updater, 5, extras);
  }
  comm->barrier();  // the file is whole before anyone reads it
  straight.steps(5);

  Run resumed(comm->rank(), 77);  // other weights, a fresh iterator
  const auto info = mg::load_checkpoint(path, resumed.m.params, *resumed.solver,
                                        resumed.updater.get());
  EXPECT_EQ(info.iteration, 5);
  resumed.m.batches.set_state(info.extras.get_string("batches"));
  resumed.steps(5);
  EXPECT_EQ(
      max_diff(straight.m.params.parameters(), resumed.m.params.parameters()),
      0.0f);
  EXPECT_EQ(spread_across_ranks(resumed.m.params.parameters()), 0.0f);
  comm->barrier();
  if (comm->rank() == 0) std::filesystem::remove(path);
}
