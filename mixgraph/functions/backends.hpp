// The hook through which the backends' functions reach the registry: the
// registry calls it and depends on no backend; functions/backends.cpp, the
// list of the backends this build has, depends on each.
#pragma once

namespace mg {

class FunctionRegistry;

/// Adds the functions of every backend this build has (CPU, and CUDA/cuDNN
/// when built with them) to `r`. Called once, by FunctionRegistry::instance(),
/// as a plain call: no static initializer to be dropped by a static link or
/// run in the wrong order.
void register_backends(FunctionRegistry& r);

}  // namespace mg
