// Solvers on a GPU against the same solvers on the host: every update rule
// as a kernel, the weights and states left on the device, the fused
// unscale / inf-nan / norm pass, and a mixed precision training run with
// the dynamic loss scaler in cudnn:half next to cpu:half.
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <mixgraph/mixgraph.hpp>

#include "cuda_test.hpp"

namespace mg {
namespace {

using CudaSolvers = test::CudaTest;

using Factory = std::function<SolverPtr()>;

const std::vector<std::pair<std::string, Factory>>& all_solvers() {
  static const std::vector<std::pair<std::string, Factory>> list = {
      {"Sgd", [] { return solvers::Sgd(0.1f); }},
      {"Momentum", [] { return solvers::Momentum(0.1f, 0.9f); }},
      {"Nesterov", [] { return solvers::Nesterov(0.1f, 0.9f); }},
      {"SgdW", [] { return solvers::SgdW(0.1f, 0.9f, 1e-2f); }},
      {"Lion", [] { return solvers::Lion(1e-2f); }},
      {"Adagrad", [] { return solvers::Adagrad(0.1f); }},
      {"Adadelta", [] { return solvers::Adadelta(); }},
      {"RMSprop", [] { return solvers::RMSprop(1e-2f); }},
      {"RMSpropGraves", [] { return solvers::RMSpropGraves(1e-2f); }},
      {"Adam", [] { return solvers::Adam(1e-2f); }},
      {"AdamW", [] { return solvers::AdamW(1e-2f); }},
      {"Adamax", [] { return solvers::Adamax(1e-2f); }},
      {"AMSGRAD", [] { return solvers::AMSGRAD(1e-2f); }},
      {"AdaBelief", [] { return solvers::AdaBelief(1e-2f); }},
      {"AdaBelief amsgrad",
       [] {
         return solvers::AdaBelief(1e-2f, 0.9f, 0.999f, 1e-8f, 0.0f, true);
       }},
      {"AdaBound", [] { return solvers::AdaBound(1e-2f); }},
      {"AMSBound", [] { return solvers::AMSBound(1e-2f); }},
      {"Lars", [] { return solvers::Lars(0.1f); }},
      {"Lamb", [] { return solvers::Lamb(1e-2f); }},
  };
  return list;
}

// Parameters of a few sizes with fixed fp32 data on the host.
ParameterList make_params() {
  ParameterList params;
  const Shape shapes[] = {{7}, {33, 65}, {300, 301}};
  for (int p = 0; p < 3; ++p) {
    auto v = make_variable(shapes[p], true);
    float* w = v->data()->cast<float>(true);
    for (int64_t i = 0; i < v->size(); ++i) {
      w[i] = 0.01f * static_cast<float>((i * 13 + p) % 101) - 0.5f;
    }
    params.emplace_back("p" + std::to_string(p), v);
  }
  return params;
}

// Grads as a backward in `dtype` on `device` writes them.
void write_grads(const ParameterList& params, const std::string& device,
                 int step, float scale = 1.0f) {
  for (size_t p = 0; p < params.size(); ++p) {
    const auto& v = params[p].second;
    std::vector<float> g(v->size());
    for (int64_t i = 0; i < v->size(); ++i) {
      g[i] = scale *
             (0.02f * static_cast<float>((i * 7 + step * 3 + p) % 51) - 0.5f);
    }
    // Written on the host in half, then moved: the head ends up on `device`.
    Half* h = v->grad()->cast<Half>(true);
    for (int64_t i = 0; i < v->size(); ++i) h[i] = Half(g[i]);
    if (device != "cpu") v->grad()->cast<Half>(false, device);
  }
}

std::vector<double> values(const NdArrayPtr& a) {
  const float* d = a->get<const float>();
  return std::vector<double>(d, d + a->size());
}

void expect_close(const std::vector<double>& got,
                  const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t worst = 0;
  double worst_err = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double err = std::abs(got[i] - want[i]) / (1e-4 + std::abs(want[i]));
    if (err > worst_err) worst_err = err, worst = i;
  }
  // The same fp32 operations on both sides (the CUDA code is built without
  // FMA contraction); only library functions (powf, expf) may differ.
  EXPECT_LT(worst_err, 1e-5) << what << ": element " << worst << " is "
                             << got[worst] << ", the host has " << want[worst];
}

TEST_F(CudaSolvers, EverySolverMatchesTheHost) {
  for (const auto& [name, make] : all_solvers()) {
    SCOPED_TRACE(name);
    auto host_params = make_params(), dev_params = make_params();
    auto host = make(), dev = make();
    host->set_parameters(host_params);
    dev->set_parameters(dev_params);
    for (int step = 0; step < 4; ++step) {
      write_grads(host_params, "cpu", step);
      write_grads(dev_params, "cuda:0", step);
      if (name == "Lars" || name == "Lamb") {
        host->weight_decay(1e-3f);
        dev->weight_decay(1e-3f);
      }
      host->update();
      dev->update();
    }
    const bool on_device = name != "Lars" && name != "Lamb";
    const auto host_states = host->states(), dev_states = dev->states();
    for (size_t p = 0; p < host_params.size(); ++p) {
      const auto& key = host_params[p].first;
      EXPECT_EQ(dev_params[p].second->data()->array().head_device(),
                on_device ? "cuda:0" : "cpu");
      expect_close(values(dev_params[p].second->data()),
                   values(host_params[p].second->data()), key + " weights");
      for (const auto& [sname, arr] : host_states.at(key).pstate) {
        const auto& darr = dev_states.at(key).pstate.at(sname);
        if (on_device) {
          EXPECT_EQ(darr->array().head_device(), "cuda:0") << sname;
        }
        expect_close(values(darr), values(arr), key + " state " + sname);
      }
      EXPECT_EQ(dev_states.at(key).t, host_states.at(key).t);
    }
  }
}

TEST_F(CudaSolvers, FusedUnscaleCheckAndNorm) {
  auto host_params = make_params(), dev_params = make_params();
  auto host = solvers::Sgd(), dev = solvers::Sgd();
  host->set_parameters(host_params);
  dev->set_parameters(dev_params);
  write_grads(host_params, "cpu", 1, 512.0f);
  write_grads(dev_params, "cuda:0", 1, 512.0f);
  double norm2 = 0;
  EXPECT_FALSE(dev->scale_grad_and_check_inf_or_nan(1.0f / 512, &norm2));
  EXPECT_FALSE(host->scale_grad_and_check_inf_or_nan(1.0f / 512));
  for (size_t p = 0; p < 3; ++p) {
    SyncedArray& g = dev_params[p].second->grad()->array();
    EXPECT_EQ(g.head_device(), "cuda:0");
    EXPECT_EQ(g.dtype(), Dtype::f32) << "unscaled grads are fp32";
    expect_close(values(dev_params[p].second->grad()),
                 values(host_params[p].second->grad()), "grad");
  }
  EXPECT_NEAR(norm2, host->grad_norm_squared(), 1e-9 * norm2);
  EXPECT_NEAR(dev->grad_norm_squared(), norm2, 1e-12 * norm2);
  EXPECT_FALSE(dev->check_inf_or_nan_grad());
  // One inf in a half grad of the large parameter, and one nan.
  write_grads(dev_params, "cuda:0", 2);
  Half* h = dev_params[2].second->grad()->cast<Half>();
  h[90000] = std::numeric_limits<Half>::infinity();
  dev_params[2].second->grad()->cast<Half>(false, "cuda:0");
  EXPECT_TRUE(dev->check_inf_or_nan_grad());
  EXPECT_TRUE(dev->scale_grad_and_check_inf_or_nan(0.5f));
  write_grads(dev_params, "cuda:0", 3);
  dev_params[0].second->grad()->cast<float>()[3] = std::nanf("");
  dev_params[0].second->grad()->cast<float>(false, "cuda:0");
  EXPECT_TRUE(dev->scale_grad_and_check_inf_or_nan(1.0f));
  // Small half grads unscaled by a large scale stay representable: they
  // are written in fp32.
  write_grads(dev_params, "cuda:0", 4, 1.0f);
  EXPECT_FALSE(dev->scale_grad_and_check_inf_or_nan(1.0f / 65536));
  // Element 1 of parameter 1 at step 4 is -0.1 in half; unscaled in half it
  // would be a subnormal and lose digits.
  const float want = static_cast<float>(Half(-0.1f)) * (1.0f / 65536);
  EXPECT_EQ(dev_params[1].second->grad()->get<const float>()[1], want);
}

// An MLP trained in cpu:half and in cudnn:half from the same start, the
// dynamic loss scaler on both: the losses follow each other.
std::vector<float> train(const Context& ctx, int steps) {
  ContextGuard guard(ctx);
  seed(11);
  ParameterScope params;
  auto x = make_variable({32, 8});
  auto t = make_variable({32, 1});
  auto h = F::relu(PF::affine(x, 16, params["fc1"]));
  auto loss =
      F::mean(F::softmax_cross_entropy(PF::affine(h, 4, params["fc2"]), t));
  auto solver = solvers::Adam(1e-2f);
  solver->set_parameters(params.parameters());
  int step = 0;
  DynamicLossScalingUpdater updater(solver, loss, [&] {
    float* xd = x->data()->cast<float>(true);
    float* td = t->data()->cast<float>(true);
    for (int i = 0; i < 32; ++i) {
      const int label = (i + step) % 4;
      td[i] = static_cast<float>(label);
      for (int j = 0; j < 8; ++j) {
        xd[i * 8 + j] =
            (j % 4 == label ? 1.0f : -0.5f) + 0.01f * ((i * j + step) % 7);
      }
    }
    ++step;
  });
  std::vector<float> losses;
  for (int s = 0; s < steps; ++s) {
    updater.update();
    losses.push_back(loss->data()->get<const float>()[0]);
  }
  return losses;
}

TEST_F(CudaSolvers, MixedPrecisionTrainingFollowsTheHost) {
  const auto host = train(context("cpu", "half"), 30);
  const auto dev = train(context("cudnn", "half"), 30);
  ASSERT_EQ(host.size(), dev.size());
  for (size_t i = 0; i < host.size(); ++i) {
    EXPECT_NEAR(dev[i], host[i], 0.03 + 0.03 * host[i]) << "step " << i;
  }
  EXPECT_LT(dev.back(), 0.5f * dev.front()) << "the device run learns";
}

// The grad of an fp32 master weight is fp32 on every backend, also after
// a solver step on the GPU has left the fp32 masters there alone (no host
// copy): Affine, Convolution and BatchNormalization (with batch and with
// running statistics), in half and bfloat16. Before each step too: the
// first pass (weights still a pending fill) may write them in the type,
// as the CPU does; from the second on they must be fp32.
TEST_F(CudaSolvers, MasterWeightGradsAreFp32AfterDeviceSteps) {
  for (const char* type : {"half", "bfloat16"}) {
    for (bool batch_stat : {true, false}) {
      SCOPED_TRACE(std::string(type) + (batch_stat ? ", batch statistics"
                                                   : ", running statistics"));
      ContextGuard guard(context("cudnn", type));
      seed(5);
      ParameterScope params;
      auto x = make_variable({2, 3, 6, 6});
      float* xd = x->data()->cast<float>(true);
      for (int64_t i = 0; i < x->size(); ++i) {
        xd[i] = 0.01f * static_cast<float>((i * 17) % 97) - 0.4f;
      }
      auto h = PF::convolution(x, 4, {3, 3}, params["conv"]);
      h = PF::batch_normalization(h, params["bn"], batch_stat);
      auto y = F::mean(PF::affine(F::relu(h), 2, params["fc"]));
      auto solver = solvers::Momentum(0.01f, 0.9f);
      solver->set_parameters(params.parameters());
      for (int step = 0; step < 3; ++step) {
        solver->zero_grad();
        y->forward();
        y->backward();
        if (step > 0) {
          for (const auto& [name, p] : params.parameters()) {
            const SyncedArray& g = p->grad()->array();
            EXPECT_EQ(g.dtype(), Dtype::f32) << name << " at step " << step;
            EXPECT_EQ(g.head_device(), "cuda:0") << name;
            EXPECT_FALSE(p->data()->array().has_copy(Dtype::f32, "cpu"))
                << name << ": the master is meant to be on the device alone";
          }
        }
        solver->update();
      }
      EXPECT_TRUE(std::isfinite(y->data()->get<const float>()[0]));
    }
  }
}

}  // namespace
}  // namespace mg
