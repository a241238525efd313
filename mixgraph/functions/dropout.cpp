#include <mixgraph/functions/dropout.hpp>

#include <cmath>
#include <sstream>
#include <stdexcept>

#include <mixgraph/functions/builder.hpp>

namespace mg {

Dropout::Dropout(const DropoutOptions& opts)
    : FunctionWith(opts), source_(opts.seed), scale_(1.0f / (1.0f - opts.p)) {}

void Dropout::setup_impl(const Variables& in, const Variables& out) {
  // Also rejects nan.
  if (!(opts_.p >= 0.0f && opts_.p < 1.0f)) {
    std::ostringstream os;
    os << tag() << "p must be in [0, 1), got " << opts_.p;
    throw std::invalid_argument(os.str());
  }
  out[0]->reshape(in[0]->shape());
}

void Dropout::draw_mask(int64_t n) {
  // Keep when a 32-bit draw is at least p * 2^32: exact for p = 0 and one
  // generator call per element.
  const uint64_t threshold =
      static_cast<uint64_t>(std::ldexp(static_cast<double>(opts_.p), 32));
  mask_.resize(n);
  std::mt19937& g = source_.engine();
  for (int64_t i = 0; i < n; ++i) mask_[i] = g() >= threshold;
}

namespace functions {

VariablePtr dropout(const VariablePtr& x, float p, int seed) {
  return apply_function1(decl::Dropout, DropoutOptions{p, seed}, {x});
}

}  // namespace functions

}  // namespace mg
