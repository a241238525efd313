// cuDNN plumbing: errors with cuDNN's text, dtype to cudnnDataType_t, one
// handle per device on its stream, RAII descriptors, and a bounded LRU cache
// of plans keyed by a plain struct. mixgraph uses cuDNN 9's legacy API
// (cudnn_ops / cudnn_cnn: descriptors, cudnnConvolutionForward, ...).
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <mixgraph/contexts/cuda/cuda_utils.hpp>
#include <mixgraph/contexts/dtype.hpp>

namespace mg::cuda {

/// Throws std::runtime_error "<call> failed: <cuDNN's error text>" unless ok.
void check_cudnn(cudnnStatus_t s, const char* call, const char* file, int line);
#define MG_CUDNN_CHECK(call) \
  ::mg::cuda::check_cudnn((call), #call, __FILE__, __LINE__)

/// CUDNN_DATA_FLOAT, _HALF or _BFLOAT16; std::invalid_argument otherwise.
cudnnDataType_t cudnn_data_type(Dtype dtype);

/// The cuDNN handle of device `index`, bound to the device's stream.
cudnnHandle_t cudnn_handle(int index);

/// A cuDNN descriptor that destroys itself.
template <class T, cudnnStatus_t (*Create)(T*), cudnnStatus_t (*Destroy)(T)>
class Descriptor {
 public:
  Descriptor() { MG_CUDNN_CHECK(Create(&d_)); }
  ~Descriptor() { Destroy(d_); }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  T get() const { return d_; }
  operator T() const { return d_; }

 private:
  T d_ = nullptr;
};

using TensorDesc =
    Descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor,
               cudnnDestroyTensorDescriptor>;
using FilterDesc =
    Descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor,
               cudnnDestroyFilterDescriptor>;
using ConvDesc =
    Descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor,
               cudnnDestroyConvolutionDescriptor>;
using PoolingDesc =
    Descriptor<cudnnPoolingDescriptor_t, cudnnCreatePoolingDescriptor,
               cudnnDestroyPoolingDescriptor>;

/// Sets `desc` to a packed (row-major) tensor of `dims`, padded with
/// trailing 1s to at least 4 dims. Throws std::runtime_error for a dim past
/// 2^31 - 1.
void set_tensor(cudnnTensorDescriptor_t desc, Dtype dtype,
                std::vector<int64_t> dims);

/// The plans (descriptors, chosen algorithms, workspace sizes) for the last
/// `capacity` keys used: Key is a plain struct with operator<.
template <class Key, class Plan>
class PlanCache {
 public:
  explicit PlanCache(size_t capacity = 128) : capacity_(capacity) {}
  /// The plan for `key`, made by make() on a miss.
  template <class Make>
  std::shared_ptr<Plan> get(const Key& key, Make&& make) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = plans_.find(key);
    if (it != plans_.end()) {
      order_.splice(order_.begin(), order_, it->second.second);
      return it->second.first;
    }
    std::shared_ptr<Plan> plan = make();
    order_.push_front(key);
    plans_.emplace(key, std::make_pair(plan, order_.begin()));
    if (plans_.size() > capacity_) {
      plans_.erase(order_.back());
      order_.pop_back();
    }
    return plan;
  }

 private:
  size_t capacity_;
  std::mutex mutex_;
  std::list<Key> order_;  // most recent first
  std::map<Key,
           std::pair<std::shared_ptr<Plan>, typename std::list<Key>::iterator>>
      plans_;
};

}  // namespace mg::cuda
