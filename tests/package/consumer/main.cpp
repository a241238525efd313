// A downstream program: one affine layer in half, forward and backward.
#include <mixgraph/mixgraph.hpp>

#include <cstdio>

int main() {
  namespace F = mg::functions;
  namespace PF = mg::parametric_functions;
  mg::set_default_context(mg::context("cpu", "half"));
  mg::ParameterScope params;
  auto x = mg::make_variable({4, 3});
  x->data()->fill(1.0);
  auto y = F::mean(F::relu(PF::affine(x, 2, params["fc"])));
  y->forward();
  y->backward();
  const float loss = *y->data()->get<const float>();
  std::printf("consumer: loss %g, %zu parameters\n", loss,
              params.parameters().size());
  return params.parameters().size() == 2 ? 0 : 1;
}
