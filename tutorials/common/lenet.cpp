#include "lenet.hpp"

namespace tutorial {

namespace F = mg::functions;
namespace PF = mg::parametric_functions;

mg::VariablePtr lenet(const mg::VariablePtr& x,
                      const mg::ParameterScope& params) {
  // relu(max_pool(h)) is max_pool(relu(h)) exactly (both are monotone), and
  // NNabla's LeNet pools first: the relu then sees a quarter of the values.
  auto h = PF::convolution(x, 32, {5, 5}, params["conv1"]);
  h = F::relu(F::max_pooling(h, {2, 2}));
  h = PF::convolution(h, 64, {5, 5}, params["conv2"]);
  h = F::relu(F::max_pooling(h, {2, 2}));
  h = F::relu(PF::affine(h, 512, params["fc3"]));
  return PF::affine(h, 10, params["fc4"]);
}

}  // namespace tutorial
