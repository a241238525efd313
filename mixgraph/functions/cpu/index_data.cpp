// Reading integer inputs (labels, ids, indices), with the checks that keep a
// float variable used as labels from being rounded or truncated silently.
#include <cmath>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>

namespace mg::cpu {

const int32_t* index_data(Variable* v, const std::string& tag,
                          const char* what) {
  if (!holds_integers(v) && v->data()->array().has_head()) {
    // Read in double: exact for every float, half and bfloat16 value.
    const double* d = v->data()->get<const double>();
    const int64_t n = v->size();
    for (int64_t i = 0; i < n; ++i) {
      const double x = d[i];
      if (!(std::floor(x) == x) || x < -2147483648.0 || x > 2147483647.0) {
        throw std::invalid_argument(msg(
            tag, what, " holds ", x, " at flat index ", i, ": ", what,
            " holds integer data (labels, ids, indices), which must be whole "
            "numbers in int32's range; store integers with cast<int32_t>() "
            "or F::cast to keep them exact"));
      }
    }
  }
  return v->data()->get<const int32_t>();
}

}  // namespace mg::cpu
