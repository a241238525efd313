#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/einsum.hpp>

#include <algorithm>
#include <cctype>
#include <map>
#include <stdexcept>

namespace mg {

namespace {

constexpr char kEllipsis = '.';  // "..." once parsed

bool is_label(char c) { return std::isalpha(static_cast<unsigned char>(c)); }

// One side of the equation with each "..." made one '.'; any other '.',
// '-' or '>' is an error.
std::string parse_side(const std::string& side, const std::string& tag,
                       const std::string& equation) {
  std::string s;
  for (size_t i = 0; i < side.size(); ++i) {
    const char c = side[i];
    if (c == '.') {
      if (side.compare(i, 3, "...") != 0) {
        throw std::invalid_argument(
            msg(tag, "equation '", equation,
                "' has a '.' outside an ellipsis '...'"));
      }
      s.push_back(kEllipsis);
      i += 2;
    } else if (is_label(c) || c == ',') {
      s.push_back(c);
    } else {
      throw std::invalid_argument(
          msg(tag, "equation '", equation, "' has '", c,
              "': only letters, commas, '...' and one '->' are allowed"));
    }
  }
  return s;
}

std::vector<std::string> split_terms(const std::string& s) {
  std::vector<std::string> terms(1);
  for (char c : s) {
    if (c == ',') {
      terms.emplace_back();
    } else {
      terms.back().push_back(c);
    }
  }
  return terms;
}

}  // namespace

void Einsum::setup_impl(const Variables& in, const Variables& out) {
  const std::string& eq = opts_.equation;
  std::string compact;
  for (char c : eq) {
    if (c != ' ') compact.push_back(c);
  }
  const size_t arrow = compact.find("->");
  if (arrow != std::string::npos &&
      compact.find("->", arrow + 2) != std::string::npos) {
    throw std::invalid_argument(
        msg(tag(), "equation '", eq, "' has more than one '->'"));
  }
  const std::string left = parse_side(compact.substr(0, arrow), tag(), eq);
  const std::vector<std::string> terms = split_terms(left);
  const int n = static_cast<int>(in.size());
  if (static_cast<int>(terms.size()) != n) {
    throw std::invalid_argument(msg(tag(), "equation '", eq, "' has ",
                                    terms.size(), " input terms but ", n,
                                    " inputs were given"));
  }

  // The axes "..." stands for: the same count in every term that has one.
  int64_t ell = -1;
  for (int k = 0; k < n; ++k) {
    const std::string& t = terms[k];
    const int64_t nd = static_cast<int64_t>(in[k]->shape().size());
    const int64_t dots = std::count(t.begin(), t.end(), kEllipsis);
    if (t.empty()) {
      throw std::invalid_argument(
          msg(tag(), "equation '", eq, "' has an empty term for input ", k));
    }
    if (dots > 1) {
      throw std::invalid_argument(msg(tag(), "the term of input ", k, " in '",
                                      eq, "' has more than one '...'"));
    }
    const int64_t letters = static_cast<int64_t>(t.size()) - dots;
    if (dots == 0 ? nd != letters : nd < letters) {
      throw std::invalid_argument(msg(tag(), "input ", k, " with shape ",
                                      shape_str(in[k]->shape()), " has ", nd,
                                      " axes but its term in '", eq, "' names ",
                                      letters, dots ? " and '...'" : ""));
    }
    if (dots) {
      if (ell >= 0 && ell != nd - letters) {
        throw std::invalid_argument(
            msg(tag(), "'...' stands for ", nd - letters, " axes in input ", k,
                " with shape ", shape_str(in[k]->shape()), " but for ", ell,
                " in an earlier input; it must be the same in all"));
      }
      ell = nd - letters;
    }
  }
  if (ell < 0) ell = 0;

  // The sizes of the letters (equal wherever they appear) and of the
  // ellipsis axes (broadcast: equal or 1).
  std::map<char, int64_t> letter_size;
  std::map<char, int> letter_count;
  std::vector<int64_t> ell_size(static_cast<size_t>(ell), 1);
  for (int k = 0; k < n; ++k) {
    const Shape& s = in[k]->shape();
    size_t a = 0;
    for (char c : terms[k]) {
      if (c == kEllipsis) {
        for (int64_t e = 0; e < ell; ++e, ++a) {
          int64_t& m = ell_size[e];
          if (m != s[a] && m != 1 && s[a] != 1) {
            throw std::invalid_argument(
                msg(tag(), "'...' axis ", e, " of input ", k, " with shape ",
                    shape_str(s), " is ", s[a], " against ", m,
                    " in an earlier input; each must match or be 1"));
          }
          m = std::max(m, s[a]);
        }
        continue;
      }
      auto it = letter_size.find(c);
      if (it != letter_size.end() && it->second != s[a]) {
        throw std::invalid_argument(
            msg(tag(), "label '", c, "' is ", s[a], " at axis ", a,
                " of input ", k, " with shape ", shape_str(s), " but ",
                it->second, " where it appears before"));
      }
      letter_size[c] = s[a];
      ++letter_count[c];
      ++a;
    }
  }

  // The output's term: given after "->", else "..." and the letters that
  // appear once (in ASCII order, as NNabla's).
  std::string out_term;
  if (arrow != std::string::npos) {
    out_term = parse_side(compact.substr(arrow + 2), tag(), eq);
    if (out_term.find(',') != std::string::npos) {
      throw std::invalid_argument(
          msg(tag(), "equation '", eq, "' has a ',' after '->'"));
    }
  } else {
    if (left.find(kEllipsis) != std::string::npos)
      out_term.push_back(kEllipsis);
    for (const auto& [c, count] : letter_count) {
      if (count == 1) out_term.push_back(c);
    }
  }
  std::map<char, int> seen;
  for (char c : out_term) {
    if (++seen[c] > 1) {
      throw std::invalid_argument(
          msg(tag(), "equation '", eq, "' repeats ",
              c == kEllipsis ? std::string("'...'") : std::string(1, c),
              " in its output"));
    }
    if (c != kEllipsis && !letter_size.count(c)) {
      throw std::invalid_argument(msg(tag(), "output label '", c,
                                      "' of equation '", eq,
                                      "' is in no input term"));
    }
  }

  // Index ids: the output's axes in order, then the summed ones.
  std::map<char, int> letter_id;
  std::vector<int> ell_id(static_cast<size_t>(ell), -1);
  sizes_.clear();
  Shape y_shape;
  for (char c : out_term) {
    if (c == kEllipsis) {
      for (int64_t e = 0; e < ell; ++e) {
        ell_id[e] = static_cast<int>(sizes_.size());
        sizes_.push_back(ell_size[e]);
      }
    } else {
      letter_id[c] = static_cast<int>(sizes_.size());
      sizes_.push_back(letter_size[c]);
    }
  }
  y_shape.assign(sizes_.begin(), sizes_.end());
  out_labels_ = static_cast<int64_t>(sizes_.size());
  for (int64_t e = 0; e < ell; ++e) {
    if (ell_id[e] < 0) {
      ell_id[e] = static_cast<int>(sizes_.size());
      sizes_.push_back(ell_size[e]);
    }
  }
  for (const auto& [c, size] : letter_size) {
    if (!letter_id.count(c)) {
      letter_id[c] = static_cast<int>(sizes_.size());
      sizes_.push_back(size);
    }
  }

  // Strides per index: a repeated label adds its axes' strides (the
  // diagonal); a broadcast axis (1 against more) does not move.
  const size_t ids = sizes_.size();
  strides_.assign(static_cast<size_t>(n) + 1, std::vector<int64_t>(ids, 0));
  for (int k = 0; k < n; ++k) {
    const Shape& s = in[k]->shape();
    const std::vector<int64_t> st = shape_strides(s);
    size_t a = 0;
    for (char c : terms[k]) {
      if (c == kEllipsis) {
        for (int64_t e = 0; e < ell; ++e, ++a) {
          if (s[a] == ell_size[e]) strides_[k][ell_id[e]] += st[a];
        }
      } else {
        strides_[k][letter_id[c]] += st[a];
        ++a;
      }
    }
  }
  const std::vector<int64_t> yst = shape_strides(y_shape);
  for (int64_t l = 0; l < out_labels_; ++l) strides_[n][l] = yst[l];
  out[0]->reshape(y_shape);
}

namespace functions {

VariablePtr einsum(std::vector<VariablePtr> xs, const std::string& equation) {
  return apply_function1(decl::Einsum, EinsumOptions{equation}, std::move(xs));
}

}  // namespace functions

}  // namespace mg
