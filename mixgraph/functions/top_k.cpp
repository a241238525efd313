#include <mixgraph/functions/top_k.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>

namespace mg {

namespace {

// Checks k against the sample size (and the size against int32 positions).
void check_k(int k, int64_t sample_size, const Shape& x, int axis,
             const std::string& tag) {
  if (k < 1 || k > sample_size) {
    throw std::invalid_argument(msg(tag, "k ", k, " must be in [1, ",
                                    sample_size, "], the size of a sample of x",
                                    " with shape ", shape_str(x), " from axis ",
                                    axis));
  }
  if (sample_size > INT32_MAX) {
    throw std::invalid_argument(msg(tag, "a sample of x with shape ",
                                    shape_str(x), " from axis ", axis,
                                    " has more elements than int32 positions "
                                    "can count"));
  }
}

}  // namespace

void top_k_positions(const float* key, int64_t n, int64_t k, bool largest,
                     int32_t* out) {
  std::vector<int32_t> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  auto before = [&](int32_t a, int32_t b) {
    const float ka = key[a], kb = key[b];
    const bool na = std::isnan(ka), nb = std::isnan(kb);
    if (na || nb) return !na && nb ? true : (na && nb ? a < b : false);
    if (ka != kb) return largest ? ka > kb : ka < kb;
    return a < b;
  };
  std::partial_sort(p.begin(), p.begin() + k, p.end(), before);
  std::copy_n(p.begin(), k, out);
}

void TopKData::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const int axis = axis_of_shape(opts_.base_axis, x, tag(), "base_axis");
  sample_size_ = shape_size(x, axis, static_cast<int>(x.size()));
  check_k(opts_.k, sample_size_, x, axis, tag());
  if (opts_.with_index && !opts_.reduce) {
    throw std::invalid_argument(
        msg(tag(), "with_index needs reduce (the indices of the k values)"));
  }
  samples_ = shape_size(x, 0, axis);
  Shape y = x;
  if (opts_.reduce) {
    y.assign(x.begin(), x.begin() + axis);
    y.push_back(opts_.k);
  }
  index_.assign(static_cast<size_t>(samples_ * opts_.k), 0);
  for (Variable* v : out) v->reshape(y);
}

void TopKGrad::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const int axis = axis_of_shape(opts_.base_axis, x, tag(), "base_axis");
  sample_size_ = shape_size(x, axis, static_cast<int>(x.size()));
  check_k(opts_.k, sample_size_, x, axis, tag());
  samples_ = shape_size(x, 0, axis);
  out[0]->reshape(x);
}

namespace functions {

VariablePtr top_k_data(const VariablePtr& x, int k, bool abs, bool reduce,
                       int base_axis, bool largest) {
  return apply_function1(
      decl::TopKData,
      TopKDataOptions{k, abs, reduce, base_axis, largest, false}, {x});
}

std::vector<VariablePtr> top_k_data_with_index(const VariablePtr& x, int k,
                                               bool abs, int base_axis,
                                               bool largest) {
  return apply_function(decl::TopKData,
                        TopKDataOptions{k, abs, true, base_axis, largest, true},
                        {x});
}

VariablePtr top_k_grad(const VariablePtr& x, int k, bool abs, int base_axis) {
  return apply_function1(decl::TopKGrad, TopKGradOptions{k, abs, base_axis},
                         {x});
}

}  // namespace functions

}  // namespace mg
