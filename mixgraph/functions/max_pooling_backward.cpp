#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/max_pooling_backward.hpp>

#include <stdexcept>

namespace mg {

namespace {

PoolingArgs pooling_args(const MaxPoolingBackwardOptions& o) {
  PoolingArgs a;
  a.kernel = o.kernel;
  a.options.stride = o.stride;
  a.options.ignore_border = o.ignore_border;
  a.options.pad = o.pad;
  return a;
}

}  // namespace

MaxPoolingBackward::MaxPoolingBackward(const MaxPoolingBackwardOptions& opts)
    : Pooling(pooling_args(opts)), mpb_opts_(opts) {}

void MaxPoolingBackward::setup_impl(const Variables& in, const Variables& out) {
  if (mpb_opts_.channel_last) {
    throw std::invalid_argument(
        msg(tag(),
            "channel_last=true is not supported (as NNabla's CPU "
            "kernel): pool channels-first data"));
  }
  // MaxPooling's shape rule on x gives the shape dy must have.
  auto pooled = make_variable({});
  Pooling::setup_impl({in[1]}, {pooled.get()});
  if (in[0]->shape() != pooled->shape()) {
    throw std::invalid_argument(
        msg(tag(), "dy with shape ", shape_str(in[0]->shape()),
            " must have the shape max pooling gives x with shape ",
            shape_str(in[1]->shape()), ": ", shape_str(pooled->shape())));
  }
  out[0]->reshape(in[1]->shape());
}

namespace functions {

VariablePtr max_pooling_backward(const VariablePtr& dy, const VariablePtr& x,
                                 const MaxPoolingBackwardOptions& opts) {
  return apply_function1(decl::MaxPoolingBackward, opts, {dy, x});
}

}  // namespace functions

}  // namespace mg
