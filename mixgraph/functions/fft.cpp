#include <mixgraph/functions/fft.hpp>

#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>

namespace mg {

void FFTBase::setup_impl(const Variables& in, const Variables& out) {
  const Shape& x = in[0]->shape();
  const int64_t d = opts_.signal_ndim;
  if (d < 1 || d > 3) {
    throw std::invalid_argument(
        msg(tag(), "signal_ndim ", d, " must be 1, 2 or 3"));
  }
  if (static_cast<int64_t>(x.size()) < d + 1 || x.back() != 2) {
    throw std::invalid_argument(
        msg(tag(), "x with shape ", shape_str(x), " must have at least ", d + 1,
            " axes, the last of size 2 (real, imaginary), for ", "signal_ndim ",
            d));
  }
  for (int64_t a = static_cast<int64_t>(x.size()) - 1 - d;
       a < static_cast<int64_t>(x.size()) - 1; ++a) {
    if (x[a] == 0) {
      throw std::invalid_argument(msg(tag(), "x with shape ", shape_str(x),
                                      " is empty along signal axis ", a));
    }
  }
  out[0]->reshape(x);
}

namespace functions {

VariablePtr fft(const VariablePtr& x, int64_t signal_ndim, bool normalized) {
  return apply_function1(decl::FFT, FFTOptions{signal_ndim, normalized}, {x});
}

VariablePtr ifft(const VariablePtr& x, int64_t signal_ndim, bool normalized) {
  return apply_function1(decl::IFFT, FFTOptions{signal_ndim, normalized}, {x});
}

}  // namespace functions

}  // namespace mg
