#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/patch_correlation.hpp>
#include <mixgraph/functions/shape_ops.hpp>

#include <stdexcept>

namespace mg {

namespace {

// v with 1 value repeated to n, or as it is with n values; `min` checked.
void expand(const std::string& tag, const char* name,
            const std::vector<int64_t>& v, int n, int64_t min, int64_t* out) {
  if (v.size() == 1) {
    for (int i = 0; i < n; ++i) out[i] = v[0];
  } else if (static_cast<int>(v.size()) == n) {
    for (int i = 0; i < n; ++i) out[i] = v[i];
  } else if (n == 4 && v.size() == 2) {
    out[0] = out[1] = v[0], out[2] = out[3] = v[1];
  } else {
    throw std::invalid_argument(msg(tag, name, " ", shape_str(v), " must have ",
                                    n == 4 ? "1, 2 or 4" : "1 or 2",
                                    " values"));
  }
  for (int i = 0; i < n; ++i) {
    if (out[i] < min) {
      throw std::invalid_argument(msg(tag, name, " ", shape_str(v), " must be ",
                                      min == 0 ? "non-negative" : "positive"));
    }
  }
}

}  // namespace

void PatchCorrelation::setup_impl(const Variables& in, const Variables& out) {
  const Shape& a = in[0]->shape();
  const Shape& b = in[1]->shape();
  if (a.size() != 4 || a != b) {
    throw std::invalid_argument(
        msg(tag(), "x1 with shape ", shape_str(a), " and x2 with shape ",
            shape_str(b), " must both be (N, H, W, C), of one shape"));
  }
  expand(tag(), "patch", opts_.patch, 2, 1, patch_);
  expand(tag(), "shift", opts_.shift, 2, 0, shift_);
  expand(tag(), "patch_step", opts_.patch_step, 2, 1, pstep_);
  expand(tag(), "shift_step", opts_.shift_step, 2, 1, sstep_);
  expand(tag(), "padding", opts_.padding, 4, 0, pad_);
  const int64_t ph = a[1] + pad_[0] + pad_[1], pw = a[2] + pad_[2] + pad_[3];
  if (ph < patch_[0] || pw < patch_[1]) {
    throw std::invalid_argument(
        msg(tag(), "patch (", patch_[0], ", ", patch_[1],
            ") is larger than x1 with shape ", shape_str(a), " padded to (", ph,
            ", ", pw, ")"));
  }
  out[0]->reshape(
      {a[0], (ph - patch_[0]) / pstep_[0] + 1, (pw - patch_[1]) / pstep_[1] + 1,
       2 * shift_[0] / sstep_[0] + 1, 2 * shift_[1] / sstep_[1] + 1});
}

namespace functions {

VariablePtr patch_correlation(const VariablePtr& x1, const VariablePtr& x2,
                              const PatchCorrelationOptions& opts,
                              bool channel_last) {
  if (channel_last) {
    return apply_function1(decl::PatchCorrelation, opts, {x1, x2});
  }
  for (const VariablePtr& x : {x1, x2}) {
    if (x && x->shape().size() != 4) {
      throw std::invalid_argument(msg(decl::PatchCorrelation.tag(),
                                      "x1 and x2 must be 4-D (N, C, H, "
                                      "W), got shape ",
                                      shape_str(x->shape())));
    }
  }
  auto y = apply_function1(
      decl::PatchCorrelation, opts,
      {transpose(x1, {0, 2, 3, 1}), transpose(x2, {0, 2, 3, 1})});
  return transpose(y, {0, 3, 4, 1, 2});
}

}  // namespace functions

}  // namespace mg
