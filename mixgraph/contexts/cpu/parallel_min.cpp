#include <mixgraph/contexts/cpu/parallel_min.hpp>

#include <cctype>
#include <cstdlib>
#include <string>

namespace mg::cpu {

int64_t parallel_min_for(const char* wait_policy, const char* forced) {
  if (forced) {
    char* end = nullptr;
    const long long n = std::strtoll(forced, &end, 10);
    if (end != forced && *end == '\0' && n > 0) return n;
  }
  std::string policy = wait_policy ? wait_policy : "";
  for (char& c : policy) {
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return policy == "passive" ? int64_t{1} << 20 : int64_t{1} << 15;
}

int64_t parallel_min() {
  static const int64_t min = parallel_min_for(
      std::getenv("OMP_WAIT_POLICY"), std::getenv("MIXGRAPH_PARALLEL_MIN"));
  return min;
}

int64_t parallel_min_exp() { return parallel_min_exp_for(parallel_min()); }

}  // namespace mg::cpu
