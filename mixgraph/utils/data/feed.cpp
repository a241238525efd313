#include <mixgraph/utils/data/feed.hpp>

#include <algorithm>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>

namespace mg {

namespace {

void check_indices(const char* tag, const ImageDataset& data,
                   const std::vector<int64_t>& indices) {
  for (int64_t i : indices) {
    if (i < 0 || i >= data.size) {
      throw std::invalid_argument(msg("[", tag, "] index ", i,
                                      " is outside the dataset's ", data.size,
                                      " examples"));
    }
  }
}

}  // namespace

void feed_images(const ImageDataset& data, const std::vector<int64_t>& indices,
                 Variable& x, const PixelScaling& scaling) {
  const auto n = static_cast<int64_t>(indices.size());
  const int64_t pixels = data.height * data.width;
  const Shape& s = x.shape();
  const bool ok =
      (s == Shape{n, 1, data.height, data.width}) || (s == Shape{n, pixels});
  if (!ok) {
    throw std::invalid_argument(msg("[feed_images] x must have shape ",
                                    shape_str({n, 1, data.height, data.width}),
                                    " or ", shape_str({n, pixels}), " for ", n,
                                    " images of ", data.height, "x", data.width,
                                    ", got ", shape_str(s)));
  }
  if (!(scaling.std > 0.0f)) {
    throw std::invalid_argument(
        msg("[feed_images] scaling.std must be positive, got ", scaling.std));
  }
  check_indices("feed_images", data, indices);
  float* out = x.data()->cast<float>(/*write_only=*/true);
  for (int64_t k = 0; k < n; ++k) {
    const uint8_t* image = &data.images[indices[k] * pixels];
    float* dst = out + k * pixels;
    for (int64_t p = 0; p < pixels; ++p) {
      dst[p] = (image[p] / 255.0f - scaling.mean) / scaling.std;
    }
  }
}

void feed_labels(const ImageDataset& data, const std::vector<int64_t>& indices,
                 Variable& t) {
  const auto n = static_cast<int64_t>(indices.size());
  if (t.shape() != Shape{n, 1} && t.shape() != Shape{n}) {
    throw std::invalid_argument(
        msg("[feed_labels] t must have shape ", shape_str({n, 1}), " or ",
            shape_str({n}), " for ", n, " labels, got ", shape_str(t.shape())));
  }
  check_indices("feed_labels", data, indices);
  SyncedArray& a = t.data()->array();
  const Dtype dtype = a.has_head() ? a.dtype() : Dtype::f32;
  if (dtype == Dtype::i32 || dtype == Dtype::i64) {
    // An integer label variable keeps its type.
    if (dtype == Dtype::i32) {
      auto* out = t.data()->cast<int32_t>(/*write_only=*/true);
      for (int64_t k = 0; k < n; ++k) out[k] = data.labels[indices[k]];
    } else {
      auto* out = t.data()->cast<int64_t>(/*write_only=*/true);
      for (int64_t k = 0; k < n; ++k) out[k] = data.labels[indices[k]];
    }
    return;
  }
  float* out = t.data()->cast<float>(/*write_only=*/true);
  for (int64_t k = 0; k < n; ++k) out[k] = data.labels[indices[k]];
}

double evaluate_error_rate(const ImageDataset& data, const VariablePtr& x,
                           const VariablePtr& t, const VariablePtr& error,
                           const PixelScaling& scaling) {
  if (!x || !t || !error) {
    throw std::invalid_argument(
        "[evaluate_error_rate] x, t and error must "
        "not be null");
  }
  if (x->shape().empty() || x->shape()[0] <= 0) {
    throw std::invalid_argument(
        msg("[evaluate_error_rate] x must have a batch "
            "dimension first, got shape ",
            shape_str(x->shape())));
  }
  const int64_t n = x->shape()[0];
  if (error->size() != n) {
    throw std::invalid_argument(
        msg("[evaluate_error_rate] error must hold one value per example (", n,
            " for x of shape ", shape_str(x->shape()), "), got shape ",
            shape_str(error->shape()), ": pass F::top_n_error's output"));
  }
  if (data.size == 0) {
    throw std::invalid_argument("[evaluate_error_rate] the dataset is empty");
  }
  int64_t wrong = 0;
  std::vector<int64_t> indices(n);
  for (int64_t begin = 0; begin < data.size; begin += n) {
    const int64_t valid = std::min(n, data.size - begin);
    for (int64_t i = 0; i < n; ++i) indices[i] = i < valid ? begin + i : 0;
    feed_images(data, indices, *x, scaling);
    feed_labels(data, indices, *t);
    error->forward(/*clear_buffer=*/true);
    const float* e = error->data()->get<const float>();
    for (int64_t i = 0; i < valid; ++i) wrong += e[i] != 0.0f;
  }
  return static_cast<double>(wrong) / static_cast<double>(data.size);
}

}  // namespace mg
