#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/functions/builder.hpp>
#include <mixgraph/functions/fused_batch_normalization.hpp>

#include <stdexcept>

namespace mg {

void FusedBatchNormalization::setup_full(const Variables& in,
                                         const Variables& out) {
  if (fused_opts_.nonlinearity != "relu") {
    throw std::invalid_argument(
        msg(tag(), "nonlinearity '", fused_opts_.nonlinearity,
            "' is not one of ('relu') (NNabla's only one)"));
  }
  setup_layout(in);
  check_batch_values(in[0]->shape(), 1);
  if (in.size() == 6 && in[5]->shape() != in[0]->shape()) {
    throw std::invalid_argument(
        msg(tag(), "z with shape ", shape_str(in[5]->shape()),
            " must have x's shape ", shape_str(in[0]->shape())));
  }
  out[0]->reshape(in[0]->shape());
}

namespace functions {

VariablePtr fused_batch_normalization(
    const VariablePtr& x, const VariablePtr& beta, const VariablePtr& gamma,
    const VariablePtr& mean, const VariablePtr& variance, const VariablePtr& z,
    const FusedBatchNormalizationOptions& opts) {
  std::vector<VariablePtr> in{x, beta, gamma, mean, variance};
  if (z) in.push_back(z);
  return apply_function1(decl::FusedBatchNormalization, opts, std::move(in));
}

}  // namespace functions

}  // namespace mg
