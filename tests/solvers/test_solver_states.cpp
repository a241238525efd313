// Solver states saved to HDF5 and loaded into a fresh solver: every element
// of every state of every parameter comes back bit for bit, with its step
// count, and the two solvers then take the same next step.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <mixgraph/mixgraph.hpp>
#include <mixgraph/utils/hdf5/checkpoint.hpp>

namespace mg {
namespace {

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

const Shape kShapes[] = {{7}, {4, 5}, {2, 3, 2}};

ParameterList make_params() {
  ParameterList params;
  for (int p = 0; p < 3; ++p) {
    auto v = make_variable(kShapes[p], true);
    float* w = v->data()->cast<float>(true);
    for (int64_t i = 0; i < v->size(); ++i) {
      w[i] = 0.03f * static_cast<float>((i * 11 + p * 5) % 23) - 0.3f;
    }
    params.emplace_back("layer" + std::to_string(p) + "/W", v);
  }
  return params;
}

// Different grads per parameter, element and step.
void write_grads(const ParameterList& params, int step) {
  for (size_t p = 0; p < params.size(); ++p) {
    const auto& v = params[p].second;
    float* g = v->grad()->cast<float>(true);
    for (int64_t i = 0; i < v->size(); ++i) {
      g[i] =
          0.05f * static_cast<float>((i * 7 + step * 13 + p * 3) % 17) - 0.4f;
    }
  }
}

std::vector<float> floats(const NdArrayPtr& a) {
  const float* d = a->get<const float>();
  return std::vector<float>(d, d + a->size());
}

void step(Solver& s, const ParameterList& params, int k) {
  write_grads(params, k);
  s.weight_decay(s.name() == "SgdW"    ? 1e-2f
                 : s.name() == "AdamW" ? 1e-4f
                                       : 1e-3f);
  s.update();
}

std::string temp_file(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("mg_solver_states_" + std::to_string(getpid()) + "_" + name + ".h5"))
      .string();
}

TEST(SolverStates, EveryElementOfEveryStateRoundTripsThroughHdf5) {
  size_t checked = 0;
  for (const auto& [name, make] : all_solvers()) {
    SCOPED_TRACE(name);
    auto params = make_params();
    auto solver = make();
    solver->set_parameters(params);
    for (int k = 0; k < 3; ++k) step(*solver, params, k);
    // A parameter with one step fewer: t differs per parameter.
    write_grads(params, 3);
    params[1].second->grad()->zero();
    solver->update();

    const std::string path = temp_file("round_trip");
    save_states(path, *solver);
    auto params2 = make_params();  // the same weights as params now
    for (size_t p = 0; p < params.size(); ++p) {
      const auto w = floats(params[p].second->data());
      float* w2 = params2[p].second->data()->cast<float>(true);
      std::copy(w.begin(), w.end(), w2);
    }
    auto loaded = make();
    loaded->set_parameters(params2);
    load_states(path, *loaded);
    std::remove(path.c_str());

    const auto want = solver->states(), got = loaded->states();
    ASSERT_EQ(got.size(), params.size());
    for (const auto& [key, st] : want) {
      SCOPED_TRACE(key);
      EXPECT_EQ(got.at(key).t, st.t);
      ASSERT_EQ(got.at(key).pstate.size(), solver->state_names().size());
      for (const auto& [sname, arr] : st.pstate) {
        const auto a = floats(arr), b = floats(got.at(key).pstate.at(sname));
        ASSERT_EQ(b.size(), a.size()) << sname;
        for (size_t i = 0; i < a.size(); ++i) {
          EXPECT_EQ(b[i], a[i]) << sname << "[" << i << "]";
        }
        checked += a.size();
      }
    }
    EXPECT_EQ(want.at("layer1/W").t + 1, want.at("layer0/W").t);
    // The next step is the same on both.
    step(*solver, params, 5);
    step(*loaded, params2, 5);
    for (size_t p = 0; p < params.size(); ++p) {
      EXPECT_EQ(floats(params2[p].second->data()),
                floats(params[p].second->data()))
          << params[p].first << " after the next step";
    }
  }
  // Every solver but Sgd keeps state: at least one array per parameter.
  EXPECT_GE(checked, 17u * (7 + 20 + 12));
}

}  // namespace
}  // namespace mg
