// The libtorch side of the training benchmark: the same two models, trained
// with the same optimizer, in this process and on the same OpenMP pool.
#pragma once

#include <functional>
#include <string>

namespace mg::bench {

/// One float training step (zero_grad, forward, cross entropy, backward,
/// Adam step) of `model` ("lenet" or "mlp") at `batch` on random data, on
/// `threads` threads; empty when the benchmark was built without libtorch.
std::function<void()> torch_training_step(const std::string& model, int batch,
                                          int threads);

/// One line about the libtorch build (version, threads).
std::string torch_description();

}  // namespace mg::bench
