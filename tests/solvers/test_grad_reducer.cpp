// Data-parallel plumbing in one process: backward's grad-ready callbacks,
// the grad reducer on the 1-rank communicator (the same code paths as with
// MPI, under the sanitizers with leak checks), the updater with a
// communicator, and the errors. tests/mpi/ runs the multi-rank side.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <mixgraph/mixgraph.hpp>

namespace F = mg::functions;
namespace PF = mg::parametric_functions;

namespace {

std::vector<float> grad_of(const mg::Variable& v) {
  const float* g = v.grad()->get<const float>();
  return std::vector<float>(g, g + v.size());
}

struct Net {
  mg::ParameterScope params;
  mg::VariablePtr x, t, loss, shared;
  explicit Net(uint64_t seed = 1) {
    mg::seed(seed);
    x = mg::make_variable({6, 5});
    t = mg::make_variable({6, 1});
    float* xs = x->data()->cast<float>();
    for (int i = 0; i < 30; ++i) xs[i] = 0.1f * ((i * 7) % 11) - 0.5f;
    float* ts = t->data()->cast<float>();
    for (int i = 0; i < 6; ++i) ts[i] = static_cast<float>(i % 3);
    auto h = F::tanh(PF::affine(x, 5, params["fc1"]));
    // fc2's W is read twice: its grad is final after the second read's
    // backward (the first in forward order).
    auto h2 = F::tanh(PF::affine(h, 5, params["fc2"]));
    auto h3 = F::tanh(PF::affine(h2, 5, params["fc2"]));
    loss =
        F::mean(F::softmax_cross_entropy(PF::affine(h3, 3, params["fc3"]), t));
  }
};

}  // namespace

TEST(GradReady, EachParameterOnceWithItsFinalGrad) {
  Net net;
  const auto params = net.params.parameters();
  for (const auto& [name, v] : params) v->grad()->zero();
  std::map<const mg::Variable*, std::vector<float>> at_callback;
  std::vector<const mg::Variable*> order;
  net.loss->forward();
  net.loss->backward(1.0f, /*clear_buffer=*/true, [&](mg::Variable& leaf) {
    EXPECT_EQ(at_callback.count(&leaf), 0u) << "reported twice";
    at_callback[&leaf] = grad_of(leaf);
    order.push_back(&leaf);
  });
  ASSERT_EQ(at_callback.size(), params.size());
  for (const auto& [name, v] : params) {
    EXPECT_EQ(at_callback.at(v.get()), grad_of(*v))
        << name << ": reported before its grad was final";
  }
  // Backward order: the last layer's parameters come first.
  EXPECT_TRUE(order.front() == net.params.get("fc3/affine/W").get() ||
              order.front() == net.params.get("fc3/affine/b").get());
  const mg::Variable* last = order.back();
  EXPECT_TRUE(last == net.params.get("fc1/affine/W").get() ||
              last == net.params.get("fc1/affine/b").get());
}

TEST(GradReady, NotCalledForInputsWithoutGrads) {
  Net net;
  std::set<const mg::Variable*> seen;
  net.loss->forward();
  net.loss->backward(1.0f, false, [&](mg::Variable& v) { seen.insert(&v); });
  EXPECT_EQ(seen.count(net.x.get()), 0u);  // need_grad false
  EXPECT_EQ(seen.count(net.t.get()), 0u);
}

TEST(GradReducer, OneRankLeavesTheGradsAsTheyAre) {
  Net net;
  const auto params = net.params.parameters();
  for (const auto& [name, v] : params) v->grad()->zero();
  net.loss->forward();
  mg::DataParallelOptions o;
  o.bucket_bytes = 64;  // several buckets
  mg::GradReducer reducer(mg::local_communicator(), params, o);
  EXPECT_GT(reducer.buckets().size(), 3u);
  EXPECT_EQ(reducer.buckets().front().front(), "fc3/affine/b");
  // The grads as backward leaves them (a launched bucket's grads are not
  // to be read before finish()), then through the reducer.
  net.loss->backward(1.0f, false);
  std::vector<std::vector<float>> before;
  for (const auto& [name, v] : params) before.push_back(grad_of(*v));
  for (const auto& [name, v] : params) v->grad()->zero();
  net.loss->backward(1.0f, true, reducer.callback());
  reducer.finish();
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_EQ(grad_of(*params[i].second), before[i]) << params[i].first;
  }
  EXPECT_EQ(reducer.stats().launched_during_backward,
            static_cast<int64_t>(reducer.buckets().size()));
  EXPECT_TRUE(reducer.covers(params));
  EXPECT_FALSE(reducer.covers({params.begin(), params.end() - 1}));
}

TEST(GradReducer, AnUpdaterWithACommunicatorTrainsAsWithout) {
  // A 1-rank communicator: the same steps bit for bit, in half with scaling.
  mg::ContextGuard half(mg::context("cpu", "half"));
  Net a(3), b(3);
  std::vector<std::vector<float>> initial;
  for (const auto& [name, v] : a.params.parameters()) {
    const float* w = v->data()->get<const float>();
    initial.emplace_back(w, w + v->size());
  }
  auto train = [](Net& n, mg::CommunicatorPtr comm) {
    auto solver = mg::solvers::Adam(1e-2f);
    solver->set_parameters(n.params.parameters());
    mg::DynamicLossScalingOptions o;
    o.communicator = std::move(comm);
    o.accum_grad = 2;
    mg::DynamicLossScalingUpdater updater(
        solver, n.loss, [] {}, o);
    for (int i = 0; i < 5; ++i) EXPECT_TRUE(updater.update()) << "step " << i;
    EXPECT_EQ(updater.applied_steps(), 5);
    EXPECT_EQ(solver->t(), 5u);
    return updater.grad_reducer() != nullptr;
  };
  EXPECT_FALSE(train(a, nullptr));
  EXPECT_TRUE(train(b, mg::local_communicator()));
  const auto pa = a.params.parameters(), pb = b.params.parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    const float* wa = pa[i].second->data()->get<const float>();
    const float* wb = pb[i].second->data()->get<const float>();
    int64_t moved = 0;
    for (int64_t j = 0; j < pa[i].second->size(); ++j) {
      ASSERT_EQ(wa[j], wb[j]) << pa[i].first;
      moved += wb[j] != initial[i][j];
    }
    // Adam moves every weight with a nonzero grad by about lr per step.
    EXPECT_EQ(moved, pb[i].second->size())
        << pa[i].first << ": the updates were not applied";
  }
}

namespace {

// y = x, whose backward throws while `fail` is set: a step whose backward
// stops half way, after the grads behind it (toward the loss) were final
// and their buckets left.
constexpr mg::FunctionDecl kThrowInBackward{
    "ThrowInBackward", "throw_in_backward", {mg::Port{"x"}}, {mg::Port{"y"}}};
class ThrowInBackward : public mg::Function {
 public:
  ThrowInBackward() { set_decl(kThrowInBackward); }
  bool fail = false;

 protected:
  void setup_impl(const mg::Variables& in, const mg::Variables& out) override {
    out[0]->reshape(in[0]->shape());
  }
  void forward_impl(const mg::Variables& in,
                    const mg::Variables& out) override {
    const float* x = in[0]->data()->get<const float>();
    std::copy(x, x + in[0]->size(), out[0]->data()->cast<float>(true));
  }
  void backward_impl(const mg::Variables& in, const mg::Variables& out,
                     const std::vector<bool>& propagate_down,
                     const std::vector<bool>& accum) override {
    if (fail) throw std::runtime_error("[ThrowInBackward] failing on purpose");
    if (!propagate_down[0]) return;
    const float* dy = out[0]->grad()->get<const float>();
    float* dx = in[0]->grad()->cast<float>(!accum[0]);
    for (int64_t i = 0; i < in[0]->size(); ++i) {
      dx[i] = accum[0] ? dx[i] + dy[i] : dy[i];
    }
  }
};

}  // namespace

// The updater's step whose backward throws after some buckets left (fc3's
// and fc2's, behind the thrower toward the loss): the error reaches the
// caller, the reducer forgets the step (abort()), and the next step reduces
// every bucket from backward again and trains as if the failed one had
// never run. Without abort() the buckets the failed step launched stay
// launched, and the next step leaves them to finish().
TEST(GradReducer, AnUpdaterStepThatThrowsLeavesTheNextWhole) {
  mg::seed(5);
  mg::ParameterScope params;
  auto x = mg::make_variable({6, 5});
  auto t = mg::make_variable({6, 1});
  float* xs = x->data()->cast<float>();
  for (int i = 0; i < 30; ++i) xs[i] = 0.1f * ((i * 7) % 11) - 0.5f;
  float* ts = t->data()->cast<float>();
  for (int i = 0; i < 6; ++i) ts[i] = static_cast<float>(i % 3);
  auto h = F::tanh(PF::affine(x, 5, params["fc1"]));
  auto thrower = std::make_shared<ThrowInBackward>();
  h = mg::connect(std::make_shared<mg::FunctionNode>(
                      thrower, std::vector<mg::VariablePtr>{h}),
                  1)[0];
  auto loss = F::mean(F::softmax_cross_entropy(
      PF::affine(F::tanh(PF::affine(h, 5, params["fc2"])), 3, params["fc3"]),
      t));
  std::vector<std::vector<float>> initial;
  for (const auto& [name, v] : params.parameters()) {
    const float* w = v->data()->get<const float>();
    initial.emplace_back(w, w + v->size());
  }
  auto train = [&](bool fail_first, mg::CommunicatorPtr comm) {
    for (size_t i = 0; i < initial.size(); ++i) {
      std::copy(initial[i].begin(), initial[i].end(),
                params.parameters()[i].second->data()->cast<float>());
    }
    auto solver = mg::solvers::Sgd(0.1f);
    solver->set_parameters(params.parameters());
    mg::DynamicLossScalingOptions o;
    o.communicator = std::move(comm);
    o.data_parallel.bucket_bytes = 64;  // about a bucket a grad
    mg::DynamicLossScalingUpdater updater(
        solver, loss, [] {}, o);
    int64_t launched_before = 0;
    if (fail_first) {
      thrower->fail = true;
      EXPECT_THROW(updater.update(), std::runtime_error);
      thrower->fail = false;
      launched_before =
          updater.grad_reducer()->stats().launched_during_backward;
      EXPECT_GT(launched_before, 0) << "no bucket left before the throw";
    }
    EXPECT_TRUE(updater.update());
    EXPECT_EQ(updater.applied_steps(), 1);
    if (const mg::GradReducer* r = updater.grad_reducer()) {
      EXPECT_EQ(r->stats().steps, 1);
      EXPECT_EQ(r->stats().launched_during_backward - launched_before,
                static_cast<int64_t>(r->buckets().size()))
          << "buckets of the failed step were not relaunched";
    }
    std::vector<std::vector<float>> w;
    for (const auto& [name, v] : params.parameters()) {
      const float* d = v->data()->get<const float>();
      w.emplace_back(d, d + v->size());
    }
    return w;
  };
  const auto clean = train(false, nullptr);
  EXPECT_EQ(train(true, mg::local_communicator()), clean);
}

TEST(Communicator, LocalAndDefault) {
  auto local = mg::local_communicator();
  EXPECT_EQ(local->size(), 1);
  EXPECT_EQ(local->rank(), 0);
  EXPECT_EQ(local->name(), "local");
  float v[2] = {1.5f, -2.0f}, all[2] = {};
  local->all_reduce(v, 2, mg::ReduceOp::mean);
  EXPECT_EQ(v[0], 1.5f);
  local->all_gather(v, 2, all);
  EXPECT_EQ(all[1], -2.0f);
  EXPECT_THROW(local->broadcast(v, 8, 1), std::invalid_argument);
  EXPECT_EQ(mg::default_communicator(), local);
  mg::set_default_communicator(nullptr);
  EXPECT_EQ(mg::default_communicator(), local);
}

TEST(Communicator, WithoutMpiTheErrorSaysHowToGetIt) {
  if (mg::mpi_available()) GTEST_SKIP() << "this build has MPI";
  try {
    mg::mpi_communicator();
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("libopenmpi-dev"), std::string::npos)
        << e.what();
  }
}

TEST(Communicator, WithoutNcclTheErrorSaysWhy) {
  if (mg::nccl_available()) GTEST_SKIP() << "this build has NCCL";
  EXPECT_THROW(mg::nccl_communicator(mg::local_communicator()),
               std::runtime_error);
}

TEST(GradReducer, BadArgumentsAreRefused) {
  Net net;
  auto params = net.params.parameters();
  params.push_back(params.front());
  try {
    mg::GradReducer(mg::local_communicator(), params);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("in the list twice"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(mg::GradReducer(nullptr, net.params.parameters()),
               std::invalid_argument);
}
