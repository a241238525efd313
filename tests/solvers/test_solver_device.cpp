// The solver's device hooks, driven on the host: grads on the "fake" device
// (host memory, tests/support/fake_device.hpp) with solver ops that apply
// the same rule functors on the host. This checks the plumbing the CUDA
// backend relies on: where update() runs, where the weights and states end
// up, and the fused unscale / inf-nan / norm pass.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <mixgraph/mixgraph.hpp>
#include <mixgraph/solvers/device_ops.hpp>
#include <mixgraph/solvers/rule_list.hpp>
#include <mixgraph/solvers/weight_decay_rule.hpp>

#include "../support/fake_device.hpp"

namespace mg {
namespace {

using test::FakeDevice;

// One rule of MG_UPDATE_RULES applied on the host, as a device kernel would.
template <class Rule, int NS>
void host_rule(const void* rule, int64_t n, float* w, const float* g, float gs,
               float* const* s) {
  const Rule& r = *static_cast<const Rule*>(rule);
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (NS == 0) {
      r(w[i], g[i] * gs);
    } else if constexpr (NS == 1) {
      r(w[i], g[i] * gs, s[0][i]);
    } else if constexpr (NS == 2) {
      r(w[i], g[i] * gs, s[0][i], s[1][i]);
    } else {
      r(w[i], g[i] * gs, s[0][i], s[1][i], s[2][i]);
    }
  }
}

using HostRule = void (*)(const void*, int64_t, float*, const float*, float,
                          float* const*);
// Built from the list as the CUDA backend builds its kernels.
constexpr HostRule kHostRules[] = {
#define MG_HOST_RULE(R, N) &host_rule<R, N>,
    MG_UPDATE_RULES(MG_HOST_RULE)
#undef MG_HOST_RULE
};

// Applies every rule on the host by its slot; counts what it was asked to do.
class FakeSolverOps : public SolverDeviceOps {
 public:
  static FakeSolverOps& instance() {
    static FakeSolverOps* ops = [] {
      auto* o = new FakeSolverOps();
      register_solver_device_ops("fake", o);
      return o;
    }();
    return *ops;
  }
  void apply_rule(int, int slot, const void* rule, int64_t n, float* w,
                  const float* g, float gs, float* const* s) override {
    ++rules;
    slots.push_back(slot);
    kHostRules[slot](rule, n, w, g, gs, s);
  }
  bool scale_check(int, const std::vector<FusedGrad>& grads, float scale,
                   double* norm2) override {
    ++passes;
    last = grads;
    bool bad = false;
    double sum = 0;
    for (const FusedGrad& fg : grads) {
      std::vector<float> in(fg.n);
      convert(fg.in, fg.dtype, in.data(), Dtype::f32, fg.n);
      for (int64_t i = 0; i < fg.n; ++i) {
        const float v = in[i] * scale;
        if (fg.out) fg.out[i] = v;
        bad = bad || !std::isfinite(v);
        sum += static_cast<double>(v) * v;
      }
    }
    if (norm2) *norm2 = sum;
    return bad;
  }
  int rules = 0, passes = 0;
  std::vector<int> slots;  // the rule slots applied, in order
  std::vector<FusedGrad> last;
};

struct FakeSetup {
  FakeSetup() {
    FakeDevice::instance().devices = 2;
    FakeSolverOps::instance().rules = 0;
    FakeSolverOps::instance().passes = 0;
    FakeSolverOps::instance().slots.clear();
  }
};

// Two parameters with fixed fp32 data on the host.
ParameterList make_params() {
  ParameterList params;
  for (int p = 0; p < 2; ++p) {
    auto v = make_variable({3, 5}, true);
    float* w = v->data()->cast<float>();
    for (int i = 0; i < 15; ++i) w[i] = 0.1f * i - 0.7f + p;
    params.emplace_back("p" + std::to_string(p), v);
  }
  return params;
}

// Writes half grads on `device`, as a backward in half there would.
void write_grads(const ParameterList& params, const std::string& device,
                 int step, float scale = 1.0f) {
  for (size_t p = 0; p < params.size(); ++p) {
    Half* g = params[p].second->grad()->cast<Half>(true, device);
    for (int i = 0; i < 15; ++i) {
      g[i] = Half(scale * (0.05f * ((i * 7 + step + static_cast<int>(p)) % 11) -
                           0.25f));
    }
  }
}

std::vector<float> data_of(const VariablePtr& v) {
  const float* d = v->data()->get<const float>();
  return std::vector<float>(d, d + v->size());
}

TEST(SolverDevice, UpdateRunsWhereTheGradsLiveAndMatchesTheHost) {
  FakeSetup s;
  for (const char* which : {"Sgd", "Momentum", "Adam"}) {
    SCOPED_TRACE(which);
    auto make = [&]() -> SolverPtr {
      if (std::string(which) == "Sgd") return solvers::Sgd(0.1f);
      if (std::string(which) == "Momentum")
        return solvers::Momentum(0.1f, 0.9f);
      return solvers::Adam(0.01f);
    };
    auto host_params = make_params(), dev_params = make_params();
    auto host = make(), dev = make();
    host->set_parameters(host_params);
    dev->set_parameters(dev_params);
    const int rules_before = FakeSolverOps::instance().rules;
    for (int step = 0; step < 3; ++step) {
      write_grads(host_params, "cpu", step);
      write_grads(dev_params, "fake:0", step);
      host->update();
      dev->update();
    }
    EXPECT_EQ(FakeSolverOps::instance().rules - rules_before, 6);
    for (size_t p = 0; p < 2; ++p) {
      const auto& hv = host_params[p].second;
      const auto& dv = dev_params[p].second;
      EXPECT_EQ(hv->data()->array().head_device(), "cpu");
      EXPECT_EQ(dv->data()->array().head_device(), "fake:0");
      EXPECT_EQ(data_of(dv), data_of(hv));
      const auto states = dev->states();
      for (const auto& [name, st] : states.at(host_params[p].first).pstate) {
        EXPECT_EQ(st->array().head_device(), "fake:0") << name;
      }
    }
  }
}

// update(grad_scale) folds the unscale into the device's rule kernels: on
// grads written x 256, update(1 / 256) steps exactly as update() on the
// plain grads (256 is a power of two, so half rounds alike).
TEST(SolverDevice, UpdateWithAGradScaleUnscalesInTheRuleKernel) {
  FakeSetup s;
  auto plain_params = make_params(), scaled_params = make_params();
  auto plain = solvers::Adam(0.01f), scaled = solvers::Adam(0.01f);
  plain->set_parameters(plain_params);
  scaled->set_parameters(scaled_params);
  const int passes_before = FakeSolverOps::instance().passes;
  for (int step = 0; step < 3; ++step) {
    write_grads(plain_params, "fake:0", step);
    write_grads(scaled_params, "fake:0", step, 256.0f);
    plain->update();
    scaled->update(1.0f / 256.0f);
  }
  EXPECT_EQ(FakeSolverOps::instance().passes,
            passes_before);  // no pass of its own
  for (size_t p = 0; p < 2; ++p) {
    EXPECT_EQ(scaled_params[p].second->data()->array().head_device(), "fake:0");
    EXPECT_EQ(data_of(scaled_params[p].second),
              data_of(plain_params[p].second));
  }
}

TEST(SolverDevice, WeightDecayRunsOnTheDeviceToo) {
  FakeSetup s;
  auto host_params = make_params(), dev_params = make_params();
  auto host = solvers::Momentum(0.1f, 0.9f),
       dev = solvers::Momentum(0.1f, 0.9f);
  host->set_parameters(host_params);
  dev->set_parameters(dev_params);
  for (int step = 0; step < 2; ++step) {
    write_grads(host_params, "cpu", step);
    write_grads(dev_params, "fake:0", step);
    host->weight_decay(0.01f);
    dev->weight_decay(0.01f);
    host->update();
    dev->update();
  }
  EXPECT_EQ(FakeSolverOps::instance().rules, 8);  // decay + step, 2 params
  for (size_t p = 0; p < 2; ++p) {
    EXPECT_EQ(dev_params[p].second->data()->array().head_device(), "fake:0");
    EXPECT_EQ(data_of(dev_params[p].second), data_of(host_params[p].second));
  }
}

// Every solver against itself on the host: the elementwise ones run on the
// device through the rule list (no name list anywhere), Lars and Lamb stay
// on the host; both give the same bits.
TEST(SolverDevice, EverySolverRunsWhereItsUpdateSaysAndMatchesTheHost) {
  FakeSetup s;
  using Factory = std::function<SolverPtr()>;
  const std::vector<std::pair<std::string, Factory>> all = {
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
  for (const auto& [name, make] : all) {
    SCOPED_TRACE(name);
    const bool on_device = name != "Lars" && name != "Lamb";
    auto host_params = make_params(), dev_params = make_params();
    auto host = make(), dev = make();
    host->set_parameters(host_params);
    dev->set_parameters(dev_params);
    const int rules_before = FakeSolverOps::instance().rules;
    for (int step = 0; step < 3; ++step) {
      write_grads(host_params, "cpu", step, 4.0f);
      write_grads(dev_params, "fake:0", step, 4.0f);
      host->update(0.25f);
      dev->update(0.25f);
    }
    EXPECT_EQ(FakeSolverOps::instance().rules > rules_before, on_device);
    const auto host_states = host->states(), dev_states = dev->states();
    for (size_t p = 0; p < 2; ++p) {
      const auto& key = host_params[p].first;
      EXPECT_EQ(dev_params[p].second->data()->array().head_device(),
                on_device ? "fake:0" : "cpu");
      EXPECT_EQ(data_of(dev_params[p].second), data_of(host_params[p].second));
      for (const auto& [sname, arr] : host_states.at(key).pstate) {
        const auto& darr = dev_states.at(key).pstate.at(sname);
        EXPECT_EQ(darr->array().head_device(), on_device ? "fake:0" : "cpu")
            << sname;
        const float* hd = arr->get<const float>();
        const float* dd = darr->get<const float>();
        EXPECT_EQ(std::vector<float>(dd, dd + 15),
                  std::vector<float>(hd, hd + 15))
            << sname;
      }
    }
  }
}

// The backend is handed the rule's slot in MG_UPDATE_RULES: decay, then step.
TEST(SolverDevice, TheBackendFindsTheRuleBySlot) {
  static_assert(detail::rule_slot<SgdRule, 0>() >= 0);
  static_assert(detail::rule_slot<SgdRule, 1>() == -1, "Sgd has no state");
  static_assert(detail::rule_slot<AdaBoundRule, 2>() !=
                detail::rule_slot<AdaBoundRule, 3>());
  FakeSetup s;
  auto params = make_params();
  auto solver = solvers::Momentum(0.1f, 0.9f);
  solver->set_parameters(params);
  write_grads(params, "fake:0", 0);
  solver->weight_decay(0.01f);
  solver->update();
  const int decay = detail::rule_slot<WeightDecayRule, 0>();
  const int step = detail::rule_slot<MomentumRule, 1>();
  EXPECT_EQ(FakeSolverOps::instance().slots,
            (std::vector<int>{decay, decay, step, step}));
}

// A user's solver that reads w and g itself (and so must run on the host)
// says nothing about elementwise_update: it stays on the host, and it gets
// the grad scale from its context.
class HostSignSgd : public Solver {
 public:
  HostSignSgd() : Solver(0.5f) {}
  std::string name() const override { return "HostSignSgd"; }
  std::vector<std::string> state_names() const override { return {}; }
  float seen_scale = 0;
  std::string seen_device;

 protected:
  void update_impl(const UpdateContext& ctx, float* w, const float* g,
                   SolverState&, int64_t n) override {
    seen_scale = ctx.grad_scale;
    seen_device = ctx.device;
    for (int64_t i = 0; i < n; ++i) {
      const float gi = g[i] * ctx.grad_scale;
      w[i] -= learning_rate_ * static_cast<float>((gi > 0) - (gi < 0));
    }
  }
};

TEST(SolverDevice, ASolverThatDoesNotSayItIsElementwiseStaysOnTheHost) {
  FakeSetup s;
  auto params = make_params();
  auto solver = std::make_shared<HostSignSgd>();
  solver->set_parameters(params);
  write_grads(params, "fake:0", 0);
  const auto before = data_of(params[0].second);
  solver->update(0.125f);
  EXPECT_EQ(FakeSolverOps::instance().rules, 0);
  EXPECT_EQ(solver->seen_scale, 0.125f);
  EXPECT_EQ(solver->seen_device, "cpu");
  EXPECT_EQ(params[0].second->data()->array().head_device(), "cpu");
  const float* g = params[0].second->grad()->get<const float>();
  const auto after = data_of(params[0].second);
  for (int i = 0; i < 15; ++i) {
    const float sign = static_cast<float>((g[i] > 0) - (g[i] < 0));
    EXPECT_EQ(after[i], before[i] - 0.5f * sign) << i;
  }
}

TEST(SolverDevice, SolversTheDeviceDoesNotRunStayOnTheHost) {
  FakeSetup s;
  auto host_params = make_params(), dev_params = make_params();
  auto host = solvers::Lars(0.1f), dev = solvers::Lars(0.1f);
  host->set_parameters(host_params);
  dev->set_parameters(dev_params);
  write_grads(host_params, "cpu", 0);
  write_grads(dev_params, "fake:0", 0);
  host->update();
  dev->update();
  EXPECT_EQ(FakeSolverOps::instance().rules, 0);
  EXPECT_EQ(dev_params[0].second->data()->array().head_device(), "cpu");
  EXPECT_EQ(data_of(dev_params[1].second), data_of(host_params[1].second));
}

TEST(SolverDevice, UnscaleAndCheckIsOneFusedPassWritingFloat) {
  FakeSetup s;
  auto params = make_params();
  auto solver = solvers::Adam();
  solver->set_parameters(params);
  write_grads(params, "fake:0", 0, 1024.0f);
  double norm2 = -1;
  EXPECT_FALSE(solver->scale_grad_and_check_inf_or_nan(1.0f / 1024, &norm2));
  EXPECT_EQ(FakeSolverOps::instance().passes, 1);
  const auto& last = FakeSolverOps::instance().last;
  ASSERT_EQ(last.size(), 2u);
  EXPECT_EQ(last[0].dtype, Dtype::f16) << "read in the dtype backward wrote";
  EXPECT_NE(last[0].out, nullptr);
  double expected = 0;
  for (size_t p = 0; p < 2; ++p) {
    SyncedArray& g = params[p].second->grad()->array();
    EXPECT_EQ(g.dtype(), Dtype::f32) << "unscaled grads are fp32";
    EXPECT_EQ(g.head_device(), "fake:0");
    EXPECT_EQ(g.num_copies(), 1u);
    const float* gf = static_cast<const float*>(g.get(Dtype::f32));
    for (int i = 0; i < 15; ++i) {
      const float want = 0.05f * ((i * 7 + static_cast<int>(p)) % 11) - 0.25f;
      EXPECT_NEAR(gf[i], want, 1e-3f);
      expected += static_cast<double>(gf[i]) * gf[i];
    }
  }
  EXPECT_DOUBLE_EQ(norm2, expected);
  // The read-only passes: check and norm leave the grads as they are.
  EXPECT_FALSE(solver->check_inf_or_nan_grad());
  EXPECT_DOUBLE_EQ(solver->grad_norm_squared(), expected);
  EXPECT_EQ(FakeSolverOps::instance().passes, 3);
  EXPECT_EQ(FakeSolverOps::instance().last[0].out, nullptr);
}

TEST(SolverDevice, AnOverflowIsReported) {
  FakeSetup s;
  auto params = make_params();
  auto solver = solvers::Sgd();
  solver->set_parameters(params);
  write_grads(params, "fake:0", 0);
  params[1].second->grad()->cast<Half>(false, "fake:0")[7] =
      std::numeric_limits<Half>::infinity();
  EXPECT_TRUE(solver->check_inf_or_nan_grad());
  EXPECT_TRUE(solver->scale_grad_and_check_inf_or_nan(0.5f));
}

TEST(SolverDevice, GradsOnSeveralDevicesTakeTheHostPath) {
  FakeSetup s;
  auto params = make_params();
  auto solver = solvers::Sgd();
  solver->set_parameters(params);
  write_grads(params, "cpu", 0);
  params[0].second->grad()->cast<float>(false, "fake:0");
  EXPECT_FALSE(solver->scale_grad_and_check_inf_or_nan(2.0f));
  EXPECT_EQ(FakeSolverOps::instance().passes, 0);
  const float want = 2.0f * (0.05f * ((3 * 7 + 1) % 11) - 0.25f);
  EXPECT_NEAR(params[1].second->grad()->get<const float>()[3], want, 1e-3f);
}

TEST(SolverDevice, DynamicLossScalingStepsOnTheDevice) {
  FakeSetup s;
  auto params = make_params();
  auto solver = solvers::Momentum(0.1f, 0.9f);
  solver->set_parameters(params);
  // The "loss" is a leaf: the feeder writes scaled half grads on the device
  // as a backward would (backward of a leaf adds nothing).
  auto loss = make_variable({1}, false);
  int step = 0;
  DynamicLossScalingOptions o;
  o.scale = 256.0f;
  DynamicLossScalingUpdater updater(
      solver, loss, [&] { write_grads(params, "fake:0", step++, 256.0f); }, o);
  EXPECT_TRUE(updater.update());
  EXPECT_EQ(FakeSolverOps::instance().passes, 1);
  EXPECT_EQ(FakeSolverOps::instance().rules, 2);
  EXPECT_EQ(params[0].second->data()->array().head_device(), "fake:0");
}

}  // namespace
}  // namespace mg
