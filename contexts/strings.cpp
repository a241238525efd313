#include <mixgraph/contexts/strings.hpp>

#include <algorithm>
#include <cctype>

namespace mg {

namespace {

std::string lower(const std::string& s) {
  std::string out = s;
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Levenshtein distance, two rows.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1,
                         prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::vector<std::string> nearest_names(const std::vector<std::string>& candidates,
                                       const std::string& name, size_t most) {
  const std::string key = lower(name);
  const size_t limit = key.size() / 3 + 1;
  std::vector<std::pair<size_t, std::string>> scored;
  for (const auto& c : candidates) {
    const size_t d = edit_distance(key, lower(c));
    if (d <= limit) scored.emplace_back(d, c);
  }
  std::stable_sort(scored.begin(), scored.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < most; ++i) {
    out.push_back(scored[i].second);
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
