// How a builder (F::relu, F::affine, ...) puts a function into the graph.
#pragma once

#include <mixgraph/functions/registry.hpp>
#include <mixgraph/graph/function_node.hpp>

namespace mg {

/// Creates the function declared by `decl` with `opts` in the default
/// context, links it to `inputs` and returns its outputs (setup has run; in
/// auto-forward mode, forward too).
template <class Options>
std::vector<VariablePtr> apply_function(const FunctionDeclOf<Options>& decl,
                                        const Options& opts,
                                        std::vector<VariablePtr> inputs) {
  auto fn = create_function(decl, opts);
  Variables raw;
  for (const auto& v : inputs) raw.push_back(v.get());
  const int n = fn->num_outputs_for(raw);
  return connect(
      std::make_shared<FunctionNode>(std::move(fn), std::move(inputs)), n);
}

/// The single-output form.
template <class Options>
VariablePtr apply_function1(const FunctionDeclOf<Options>& decl,
                            const Options& opts,
                            std::vector<VariablePtr> inputs) {
  return apply_function(decl, opts, std::move(inputs)).front();
}

}  // namespace mg
