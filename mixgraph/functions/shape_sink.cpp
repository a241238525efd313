#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/shape_sink.hpp>

#include <algorithm>
#include <stdexcept>

namespace mg {

void ShapeOf::setup_impl(const Variables& in, const Variables& out) {
  const int64_t nd = static_cast<int64_t>(in[0]->shape().size());
  if (nd == 0) {
    throw std::invalid_argument(
        msg(tag(), "x is a scalar (shape ()): it has no axes to read"));
  }
  // NNabla's rules: a negative start or end counts from the end; a start
  // past the end and an end of 0 or past the end clamp to ndim.
  begin_ = opts_.start < 0 ? opts_.start + nd : std::min(opts_.start, nd);
  end_ = opts_.end < 0 ? opts_.end + nd
                       : (opts_.end > 0 ? std::min(opts_.end, nd) : nd);
  if (begin_ < 0) {
    throw std::invalid_argument(
        msg(tag(), "start ", opts_.start, " is before axis 0 of x with shape ",
            shape_str(in[0]->shape()), " (", nd, " axes)"));
  }
  out[0]->reshape({std::max<int64_t>(end_ - begin_, 0)});
}

void Sink::setup_impl(const Variables& in, const Variables& out) {
  if (in.empty()) {
    throw std::invalid_argument(msg(tag(), "needs at least one input"));
  }
  out[0]->reshape({});
}

namespace functions {

VariablePtr shape(const VariablePtr& x, int64_t start, int64_t end) {
  return apply_function1(decl::Shape, ShapeOptions{start, end}, {x});
}

VariablePtr sink(std::vector<VariablePtr> xs, bool one_input_grad) {
  return apply_function1(decl::Sink, SinkOptions{one_input_grad},
                         std::move(xs));
}

}  // namespace functions

}  // namespace mg
