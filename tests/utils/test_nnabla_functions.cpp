// Every NNabla function against NNabla 1.39 itself (skipped without
// .venv-nnabla): tests/utils/nnabla_functions_diff.py has NNabla write each
// function as a one-function .nnp, with its default arguments and a few
// other combinations, with its inputs, outputs, upstream grads and input
// grads; we load each .nnp, run forward and backward from NNabla's upstream
// grads and compare: |ours - NNabla| <= 1e-5 + 1e-4 |NNabla| unless
// kAccepted says otherwise. Every one of NNabla's 228 functions is compared
// or in kAccepted with the reason, and every entry of kAccepted is used.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <mixgraph/mixgraph.hpp>

#include "../support/nnabla_venv.hpp"

namespace F = mg::functions;
namespace fs = std::filesystem;

namespace {

// What is compared of a case.
enum class Check {
  full,     // outputs and input grads
  forward,  // outputs only
  stats,    // each output's shape, mean and standard deviation
  shapes,   // each output's shape
  skip,     // nothing (NNabla does not run it, or ours is wrong: TODO)
};

struct Accepted {
  const char* function;
  const char* combination;  // "*": every combination
  Check check;
  const char* reason;
  double atol = 1e-5, rtol = 1e-4;
};

const char* const kNNablaCpuChannelLast =
    "NNabla's CPU refuses channel_last (not_implemented)";

// Every accepted difference, with its reason.
const std::vector<Accepted> kAccepted = {
    // NNabla cannot run or write these here.
    {"SyncBatchNormalization", "*", Check::skip,
     "NNabla's needs a communicator (comm); without one it crashes"},
    {"Sink", "*", Check::skip,
     "NNabla's save writes no network whose output is a Sink's"},
    {"Convolution", "channel_last", Check::skip, kNNablaCpuChannelLast},
    {"Deconvolution", "channel_last", Check::skip, kNNablaCpuChannelLast},
    {"MaxPooling", "channel_last", Check::skip, kNNablaCpuChannelLast},
    {"AveragePooling", "channel_last", Check::skip, kNNablaCpuChannelLast},
    {"SumPooling", "channel_last", Check::skip, kNNablaCpuChannelLast},
    {"Unpooling", "channel_last", Check::skip, kNNablaCpuChannelLast},
    {"RoiAlign", "channel_last", Check::skip, kNNablaCpuChannelLast},
    {"WarpByGrid", "channel_last", Check::skip, kNNablaCpuChannelLast},
    {"Interpolate", "channel_last", Check::skip, kNNablaCpuChannelLast},
    {"Interpolate", "cubic", Check::skip,
     "NNabla's CPU Interpolate runs only linear and nearest"},
    {"FFT", "*", Check::skip, "NNabla's CPU has no FFT (not_implemented)"},
    {"IFFT", "*", Check::skip, "NNabla's CPU has no IFFT (not_implemented)"},
    // Where NNabla is wrong: ours keeps the right answer.
    {"Sort", "default", Check::forward,
     "NNabla's CPU Sort backward applies the permutation the wrong way "
     "round (gathers dy where it should scatter it)"},
    {"Sort", "with_index", Check::forward,
     "NNabla's CPU Sort backward applies the permutation the wrong way "
     "round"},
    {"Sort", "only_index", Check::forward,
     "NNabla's backward passes the index output's grad on to x; ours "
     "gives an index output no grad"},
    {"Max", "only_index", Check::forward,
     "NNabla's backward passes the index output's grad on to x at the arg "
     "max; ours gives an index output no grad"},
    {"Min", "only_index", Check::forward,
     "NNabla's backward passes the index output's grad on to x at the arg "
     "min; ours gives an index output no grad"},
    {"PadPackedSequence", "padding_value", Check::shapes,
     "NNabla's CPU ignores padding_value (pads with 0); ours pads with it"},
    {"ScatterNd", "out", Check::forward,
     "NNabla gives `out` no grad; ours gives it dy where nothing is "
     "scattered"},
    {"SpectralNorm", "dim1_itr2_test", Check::forward,
     "NNabla's grad of w is NaN with test=True"},
    // Stochastic: the same distribution, not the same numbers.
    {"Dropout", "*", Check::stats, "stochastic"},
    {"Rand", "*", Check::stats, "stochastic"},
    {"Randint", "*", Check::stats, "stochastic"},
    {"Randn", "*", Check::stats, "stochastic"},
    {"RandBinomial", "*", Check::stats, "stochastic"},
    {"RandBeta", "*", Check::stats, "stochastic"},
    {"RandGamma", "*", Check::stats, "stochastic"},
    {"RandomChoice", "*", Check::shapes, "stochastic"},
    {"RandomCrop", "shape", Check::shapes, "stochastic (a random window)"},
    {"RandomFlip", "*", Check::shapes, "stochastic"},
    {"RandomShift", "shifts", Check::shapes, "stochastic"},
    {"RandomErase", "*", Check::shapes, "stochastic"},
    {"ImageAugmentation", "flip_contrast", Check::shapes, "stochastic"},
};

// A line of the manifest the script writes.
struct Case {
  std::string function, combination, saved_types, status;
  std::string name() const { return function + "." + combination; }
};

std::vector<Case> read_manifest(const std::string& path) {
  std::vector<Case> cases;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    std::stringstream ss(line);
    std::string field;
    while (std::getline(ss, field, '\t')) fields.push_back(field);
    fields.resize(4);
    cases.push_back({fields[0], fields[1], fields[2], fields[3]});
  }
  return cases;
}

std::vector<std::string> nnabla_functions() {
  std::ifstream in(MIXGRAPH_NNABLA_LIST);
  std::vector<std::string> names;
  std::string line;
  while (std::getline(in, line)) {
    const size_t colon = line.find(':');
    if (line.empty() || line[0] == '#' || colon == std::string::npos) continue;
    std::stringstream ss(line.substr(colon + 1));
    std::string name;
    while (ss >> name) names.push_back(name);
  }
  return names;
}

std::vector<float> values_of(const mg::NdArrayPtr& a) {
  const float* p = a->get<const float>();
  return std::vector<float>(p, p + a->size());
}

// The first element out of tolerance, as "at i: ours vs NNabla's", or "".
std::string compare(const std::vector<float>& ours,
                    const std::vector<float>& theirs, double atol,
                    double rtol) {
  for (size_t i = 0; i < ours.size(); ++i) {
    const double a = ours[i], b = theirs[i];
    if (std::isnan(a) && std::isnan(b)) continue;
    if (std::isinf(b) && a == b) continue;
    if (!(std::fabs(a - b) <= atol + rtol * std::fabs(b))) {
      char buf[128];
      std::snprintf(buf, sizeof buf, "at %zu: ours %.7g, NNabla's %.7g", i, a,
                    b);
      return buf;
    }
  }
  return "";
}

std::pair<double, double> mean_and_std(const std::vector<float>& v) {
  double sum = 0, sq = 0;
  for (float x : v) sum += x;
  const double mean = v.empty() ? 0 : sum / v.size();
  for (float x : v) sq += (x - mean) * (x - mean);
  return {mean, v.empty() ? 0 : std::sqrt(sq / v.size())};
}

class NNablaFunctions : public ::testing::Test {
 protected:
  // NNabla runs the script once per build directory, again when the
  // script changes.
  static void SetUpTestSuite() {
    if (!mg::test::nnabla_available()) return;
    dir_ = MIXGRAPH_BINARY_DIR "/nnabla_functions";
    const std::string script =
        MIXGRAPH_SOURCE_DIR "/tests/utils/nnabla_functions_diff.py";
    const std::string done = dir_ + "/done";
    if (fs::exists(done) &&
        fs::last_write_time(done) >= fs::last_write_time(script)) {
      return;
    }
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // NNabla's log (it prints the functions its CPU refuses) is shown
    // only when the script fails.
    const std::string log = dir_ + "/nnabla.log";
    const std::string cmd = mg::test::nnabla_python() + " " + script + " " +
                            dir_ + " >" + log + " 2>&1";
    script_status_ = std::system(cmd.c_str());
    if (script_status_ == 0) {
      std::ofstream(done) << "ok\n";
    } else {
      std::ifstream in(log);
      std::printf("%s\n", std::string(std::istreambuf_iterator<char>(in),
                                      std::istreambuf_iterator<char>())
                              .c_str());
    }
  }

  static std::string dir_;
  static int script_status_;
};

std::string NNablaFunctions::dir_;
int NNablaFunctions::script_status_ = 0;

const Accepted* accepted_for(const Case& c) {
  for (const auto& a : kAccepted) {
    if (c.function == a.function &&
        (std::string(a.combination) == "*" || c.combination == a.combination))
      return &a;
  }
  return nullptr;
}

// Runs case `c` here and compares it as `check` says; returns what
// differs ("" when nothing does).
std::string run_case(const std::string& dir, const Case& c, Check check,
                     double atol, double rtol) {
  const std::string base = dir + "/" + c.name();
  mg::ParameterScope io, params;
  mg::load_parameters(base + ".h5", io);
  mg::Nnp nnp;
  try {
    nnp = mg::load_nnp(base + ".nnp", params);
  } catch (const std::exception& e) {
    return std::string("load_nnp refused it: ") + e.what();
  }
  const mg::Network net = nnp.executor("runtime");
  std::vector<mg::VariablePtr> grads_wanted;
  for (size_t k = 0; k < net.inputs.size(); ++k) {
    const auto& [name, v] = net.inputs[k];
    const auto x = io.get(name);
    if (!x || x->shape() != v->shape()) {
      return "input " + name + " is not NNabla's";
    }
    const auto data = values_of(x->data());
    std::copy(data.begin(), data.end(), v->data()->cast<float>());
    const auto g = io.get("g" + name.substr(1));
    v->set_need_grad(g != nullptr);
  }
  std::vector<mg::VariablePtr> outputs;
  for (const auto& [name, y] : net.outputs) outputs.push_back(y);
  auto sink = F::sink(outputs, /*one_input_grad=*/false);
  try {
    sink->forward();
  } catch (const std::exception& e) {
    return std::string("forward threw: ") + e.what();
  }
  std::string diff;
  for (const auto& [name, y] : net.outputs) {
    const auto want = io.get(name);
    if (!want) return "NNabla wrote no " + name;
    if (want->shape() != y->shape()) {
      return name + " has shape " + mg::shape_str(y->shape()) + ", NNabla's " +
             mg::shape_str(want->shape());
    }
    if (check == Check::shapes) continue;
    const auto ours = values_of(y->data()), theirs = values_of(want->data());
    if (check == Check::stats) {
      const auto [m0, s0] = mean_and_std(ours);
      const auto [m1, s1] = mean_and_std(theirs);
      if (std::fabs(m0 - m1) > 0.15 * s1 + 0.02 ||
          std::fabs(s0 - s1) > 0.15 * s1 + 0.02) {
        char buf[160];
        std::snprintf(buf, sizeof buf,
                      "%s: mean %.4g, std %.4g; NNabla's %.4g, %.4g",
                      name.c_str(), m0, s0, m1, s1);
        return buf;
      }
      continue;
    }
    const std::string d = compare(ours, theirs, atol, rtol);
    if (!d.empty()) diff += (diff.empty() ? "" : "; ") + name + " " + d;
  }
  if (!diff.empty() || check != Check::full) return diff;
  bool any_grad = false;
  for (const auto& [name, v] : net.inputs) any_grad |= v->need_grad();
  if (!any_grad) return "";
  for (const auto& [name, y] : net.outputs) {
    const auto dy = values_of(io.get("d" + name)->data());
    std::copy(dy.begin(), dy.end(), y->grad()->cast<float>());
  }
  try {
    sink->backward();
  } catch (const std::exception& e) {
    return std::string("backward threw: ") + e.what();
  }
  for (const auto& [name, v] : net.inputs) {
    if (!v->need_grad()) continue;
    const auto want = io.get("g" + name.substr(1));
    const std::string d =
        compare(values_of(v->grad()), values_of(want->data()), atol, rtol);
    if (!d.empty()) {
      diff +=
          std::string(diff.empty() ? "" : "; ") + "grad of " + name + " " + d;
    }
  }
  return diff;
}

}  // namespace

TEST_F(NNablaFunctions, EveryFunctionAgreesWithNNabla) {
  SKIP_WITHOUT_NNABLA();
  ASSERT_EQ(script_status_, 0) << "NNabla's script failed (output above)";
  const auto cases = read_manifest(dir_ + "/manifest.txt");
  ASSERT_GT(cases.size(), 0u);
  std::vector<std::string> failures;
  std::set<std::string> compared;  // functions compared in some case
  std::set<const Accepted*> used;
  std::set<std::string> with_cases;
  for (const auto& c : cases) with_cases.insert(c.function);
  int passed = 0, partial = 0, skipped = 0;
  for (const auto& c : cases) {
    const Accepted* a = accepted_for(c);
    if (a) used.insert(a);
    const Check check = a ? a->check : Check::full;
    if (check == Check::skip) {
      ++skipped;
      continue;
    }
    if (c.status != "ok") {
      failures.push_back(c.name() + ": NNabla failed (" + c.status + ")");
      continue;
    }
    if (c.saved_types != c.function) {
      failures.push_back(c.name() + ": NNabla saved the functions '" +
                         c.saved_types + "'");
      continue;
    }
    const std::string diff =
        run_case(dir_, c, check, a ? a->atol : 1e-5, a ? a->rtol : 1e-4);
    if (!diff.empty()) {
      failures.push_back(c.name() + ": " + diff);
      continue;
    }
    compared.insert(c.function);
    ++(check == Check::full ? passed : partial);
  }
  std::set<std::string> accepted_functions;
  for (const auto& a : kAccepted) {
    if (std::string(a.combination) == "*") {
      accepted_functions.insert(a.function);
    }
    if (!used.count(&a) && with_cases.count(a.function)) {
      failures.push_back(std::string("accepted entry ") + a.function + "." +
                         a.combination + " matches no case");
    }
  }
  const auto all = nnabla_functions();
  EXPECT_EQ(all.size(), 228u);
  for (const auto& fn : all) {
    if (!compared.count(fn) && !accepted_functions.count(fn)) {
      failures.push_back(fn + ": neither compared nor accepted");
    }
  }
  std::printf(
      "%zu cases of %zu functions: %d agree in full, %d as accepted "
      "(forward, statistics or shapes), %d not run (accepted); %zu "
      "functions compared\n",
      cases.size(), all.size(), passed, partial, skipped, compared.size());
  const char* const check_names[] = {"full", "forward only", "statistics",
                                     "shapes", "not run"};
  for (const auto& a : kAccepted) {
    std::printf("accepted: %s.%s (%s): %s\n", a.function, a.combination,
                check_names[static_cast<int>(a.check)], a.reason);
  }
  std::string all_failures;
  for (const auto& f : failures) all_failures += "\n  " + f;
  EXPECT_TRUE(failures.empty())
      << failures.size() << " differences:" << all_failures;
}
