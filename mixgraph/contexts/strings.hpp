// The text helpers every error message uses: one variadic formatter (floats
// print their digits, 1e-05 and 0.1, not std::to_string's 0.000010) and the
// nearest-name suggestion of "unknown ... did you mean ...?" errors.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace mg {

/// The arguments streamed one after another: msg("[affine] alpha ", 1e-5f,
/// " must be positive") is "[affine] alpha 1e-05 must be positive".
template <class... Args>
std::string msg(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

/// The candidates closest to `name`: those at the smallest case-insensitive
/// edit distance (a swap of neighbours is one edit), if that is at most a
/// third of the name's length plus one; same-length names first, at most
/// `most`.
std::vector<std::string> nearest_names(
    const std::vector<std::string>& candidates, const std::string& name,
    size_t most = 3);

/// "; did you mean 'Tanh'?" (or "'a' or 'b'"), or "" when nothing is close.
std::string did_you_mean(const std::vector<std::string>& candidates,
                         const std::string& name);

}  // namespace mg
