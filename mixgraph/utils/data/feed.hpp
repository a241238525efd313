// Batches of an image dataset into a graph's input variables, and the error
// rate of a network over a whole dataset.
#pragma once

#include <cstdint>
#include <vector>

#include <mixgraph/graph/variable.hpp>
#include <mixgraph/utils/data/fashion_mnist.hpp>

namespace mg {

/// How an image byte becomes the network's input:
///   value = (byte / 255 - mean) / std.
/// The default keeps bytes scaled to [0, 1].
struct PixelScaling {
  float mean = 0.0f;
  float std = 1.0f;
};

/// Writes the images `indices` of `data` into x, whose shape must be
/// (N, 1, height, width) or (N, height * width) with N = indices.size(). The
/// data is written as fp32 (the head of x's array), whatever the context:
/// a half graph converts it once when it reads x.
void feed_images(const ImageDataset& data, const std::vector<int64_t>& indices,
                 Variable& x, const PixelScaling& scaling = {});

/// Writes the labels of `indices` into t, of shape (N, 1) or (N,): as int32
/// or int64 when t's array holds that type, else as fp32 class numbers
/// (exact: classes are below 2^24). Labels never pass through half.
void feed_labels(const ImageDataset& data, const std::vector<int64_t>& indices,
                 Variable& t);

/// The fraction of `data` (in [0, 1]) that a network gets wrong: `error` is
/// computed from x and t (F::top_n_error's output, one 0 or 1 per example,
/// N of them) for batches of x's batch size N. Every image is seen once, in
/// order; the last batch is padded with image 0 and only its real examples
/// count. Runs forward only (the caller builds the graph under NoGradGuard).
double evaluate_error_rate(const ImageDataset& data, const VariablePtr& x,
                           const VariablePtr& t, const VariablePtr& error,
                           const PixelScaling& scaling = {});

}  // namespace mg
