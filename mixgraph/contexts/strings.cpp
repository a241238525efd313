#include <mixgraph/contexts/strings.hpp>

#include <algorithm>
#include <cctype>

namespace mg {

namespace {

std::string lower(const std::string& s) {
  std::string out = s;
  for (char& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// The optimal string alignment distance: Levenshtein's insertions,
// deletions and substitutions, plus swapping two neighbours as one edit
// (the commonest typo: "Tahn" is one edit from "Tanh", as from "Tan").
size_t edit_distance(const std::string& a, const std::string& b) {
  const size_t n = b.size() + 1;
  std::vector<size_t> d((a.size() + 1) * n);
  for (size_t i = 0; i <= a.size(); ++i) d[i * n] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t& here = d[i * n + j];
      here =
          std::min({d[(i - 1) * n + j] + 1, d[i * n + j - 1] + 1,
                    d[(i - 1) * n + j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        here = std::min(here, d[(i - 2) * n + j - 2] + 1);
      }
    }
  }
  return d[a.size() * n + b.size()];
}

}  // namespace

std::vector<std::string> nearest_names(
    const std::vector<std::string>& candidates, const std::string& name,
    size_t most) {
  const std::string key = lower(name);
  const size_t limit = key.size() / 3 + 1;
  // By distance, then by how far the lengths differ (a swap keeps the
  // length: "Tahn" suggests "Tanh" before "Tan"), then in the given order.
  struct Scored {
    size_t distance, length_gap;
    std::string name;
  };
  std::vector<Scored> scored;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(key, lower(c));
    const size_t gap =
        c.size() > key.size() ? c.size() - key.size() : key.size() - c.size();
    if (d <= limit) scored.push_back({d, gap, c});
  }
  std::stable_sort(
      scored.begin(), scored.end(), [](const Scored& a, const Scored& b) {
        return a.distance != b.distance ? a.distance < b.distance
                                        : a.length_gap < b.length_gap;
      });
  // Only the nearest: "tanh" suggests "Tanh" alone, not also "ATanh".
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < most; ++i) {
    if (scored[i].distance != scored[0].distance) break;
    out.push_back(scored[i].name);
  }
  return out;
}

std::string did_you_mean(const std::vector<std::string>& candidates,
                         const std::string& name) {
  const auto near = nearest_names(candidates, name);
  if (near.empty()) return "";
  std::string s = "; did you mean ";
  for (size_t i = 0; i < near.size(); ++i) {
    if (i) s += i + 1 == near.size() ? " or " : ", ";
    s += "'" + near[i] + "'";
  }
  return s + "?";
}

}  // namespace mg
