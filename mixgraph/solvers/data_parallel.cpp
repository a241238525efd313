#include <mixgraph/solvers/data_parallel.hpp>

#include <chrono>
#include <cstring>
#include <stdexcept>

#include <mixgraph/contexts/device.hpp>
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/contexts/synced_array.hpp>
#include <mixgraph/graph/variable.hpp>

namespace mg {

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

/// n fp32 values from src to dst, both on `device`.
void copy_floats(const DeviceRef& device, float* dst, const float* src,
                 int64_t n) {
  if (n == 0) return;
  if (!device.backend) {
    std::memcpy(dst, src, n * sizeof(float));
  } else {
    device.backend->convert(device.index, src, Dtype::f32, dst, Dtype::f32, n);
  }
}

void zero_floats(const DeviceRef& device, float* dst, int64_t n) {
  if (n == 0) return;
  if (!device.backend) {
    std::memset(dst, 0, n * sizeof(float));
  } else {
    device.backend->fill(device.index, dst, Dtype::f32, 0.0, n);
  }
}

}  // namespace

GradReducer::GradReducer(CommunicatorPtr comm, const ParameterList& params,
                         const DataParallelOptions& options)
    : comm_(std::move(comm)), options_(options) {
  const char* tag = "[GradReducer] ";
  if (!comm_) throw std::invalid_argument(msg(tag, "the communicator is null"));
  if (options_.bucket_bytes < 1) {
    throw std::invalid_argument(
        msg(tag, "bucket_bytes must be >= 1, got ", options_.bucket_bytes));
  }
  if (options_.op == ReduceOp::max) {
    throw std::invalid_argument(
        msg(tag, "grads are reduced by sum or mean, not max"));
  }
  for (const auto& [name, var] : params) {
    if (!var)
      throw std::invalid_argument(msg(tag, "parameter '", name, "' is null"));
    order_.push_back(var.get());
  }
  // Buckets in the order backward finishes grads: the last parameters
  // (the last layers) first.
  const int64_t cap = std::max<int64_t>(1, options_.bucket_bytes / 4);
  for (size_t i = params.size(); i-- > 0;) {
    const auto& [name, var] = params[i];
    if (!var->need_grad()) continue;
    if (slot_of_.count(var.get())) {
      throw std::invalid_argument(
          msg(tag, "parameter '", name, "' is in the list twice"));
    }
    const auto n = static_cast<int64_t>(var->size());
    if (buckets_.empty() ||
        (buckets_.back().size > 0 && buckets_.back().size + n > cap)) {
      buckets_.emplace_back();
    }
    Bucket& b = buckets_.back();
    Slot s{name, var, static_cast<int>(buckets_.size() - 1), b.size, n, false};
    slot_of_[var.get()] = static_cast<int>(slots_.size());
    b.slots.push_back(static_cast<int>(slots_.size()));
    b.size += n;
    slots_.push_back(std::move(s));
  }
  for (Bucket& b : buckets_) {
    b.buffer = std::make_shared<SyncedArray>(static_cast<size_t>(b.size));
    stats_.bytes += b.size * static_cast<int64_t>(sizeof(float));
  }
  stats_.buckets = static_cast<int>(buckets_.size());
}

GradReducer::~GradReducer() {
  // Buffers must outlive reduces still in flight (an exception between
  // backward and finish()).
  if (step_open_) {
    try {
      comm_->wait_all();
    } catch (...) {
    }
  }
}

bool GradReducer::covers(const ParameterList& params) const {
  if (params.size() != order_.size()) return false;
  for (size_t i = 0; i < params.size(); ++i) {
    if (params[i].second.get() != order_[i]) return false;
  }
  return true;
}

std::vector<std::vector<std::string>> GradReducer::buckets() const {
  std::vector<std::vector<std::string>> out;
  for (const Bucket& b : buckets_) {
    out.emplace_back();
    for (int s : b.slots) out.back().push_back(slots_[s].name);
  }
  return out;
}

GradReadyCallback GradReducer::callback() {
  if (!options_.overlap) return {};
  return [this](Variable& leaf) { on_ready(leaf); };
}

void GradReducer::on_ready(Variable& leaf) {
  const auto t0 = std::chrono::steady_clock::now();
  auto it = slot_of_.find(&leaf);
  if (it != slot_of_.end()) {
    Slot& s = slots_[it->second];
    if (!s.ready) {
      s.ready = true;
      Bucket& b = buckets_[s.bucket];
      if (++b.ready == static_cast<int>(b.slots.size())) {
        launch(s.bucket);
        ++stats_.launched_during_backward;
      }
    }
  }
  comm_->progress();  // MPI moves reduces only inside its calls
  stats_.callback_seconds += seconds_since(t0);
}

void GradReducer::launch(int index) {
  Bucket& b = buckets_[index];
  const std::string& device = comm_->device();
  // A bucket of one grad (every grad of a bucket's size or more: most of a
  // model's grads by size) is reduced where the grad is: no copy into the
  // bucket and back. The grad is final (its backward has finished it) and
  // nothing touches it before finish() or abort().
  if (b.slots.size() == 1) {
    SyncedArray& grad = slots_[b.slots.front()].var->grad()->array();
    if (!grad.zeroing()) {
      auto* data = static_cast<float*>(grad.cast(Dtype::f32, device));
      comm_->start_all_reduce(data, b.size, options_.op);
      b.launched = step_open_ = true;
      return;
    }
  }
  const DeviceRef ref = resolve_device(device, "[GradReducer] ");
  auto* buffer = static_cast<float*>(
      b.buffer->cast(Dtype::f32, device, /*write_only=*/true));
  for (int si : b.slots) {
    Slot& s = slots_[si];
    SyncedArray& grad = s.var->grad()->array();
    if (grad.zeroing()) {  // no backward wrote it: zeros take part
      zero_floats(ref, buffer + s.offset, s.size);
    } else {
      copy_floats(ref, buffer + s.offset,
                  static_cast<const float*>(grad.get(Dtype::f32, device)),
                  s.size);
    }
  }
  comm_->start_all_reduce(buffer, b.size, options_.op);
  // Only now: a launch that threw before its reduce started is not one.
  b.launched = step_open_ = true;
}

void GradReducer::abort() {
  if (step_open_) {
    comm_->wait_all();  // nothing may write a grad after this returns
    step_open_ = false;
  }
  forget_step();
}

void GradReducer::forget_step() {
  for (Slot& s : slots_) s.ready = false;
  for (Bucket& b : buckets_) {
    b.ready = 0;
    b.launched = false;
  }
}

void GradReducer::finish() {
  const auto t0 = std::chrono::steady_clock::now();
  step_open_ = true;
  // What no callback launched (overlap off, or unwritten grads), in bucket
  // order: the same order on every rank.
  for (size_t i = 0; i < buckets_.size(); ++i) {
    if (!buckets_[i].launched) launch(static_cast<int>(i));
  }
  comm_->wait_all();
  step_open_ = false;
  const std::string& device = comm_->device();
  const DeviceRef ref = resolve_device(device, "[GradReducer] ");
  for (Bucket& b : buckets_) {
    // A bucket of one grad has nothing to copy back: reduced in place, or
    // an unwritten grad that stays so.
    if (b.slots.size() == 1) continue;
    const auto* buffer =
        static_cast<const float*>(b.buffer->get(Dtype::f32, device));
    for (int si : b.slots) {
      Slot& s = slots_[si];
      SyncedArray& grad = s.var->grad()->array();
      if (!grad.zeroing()) {
        copy_floats(ref,
                    static_cast<float*>(grad.cast(Dtype::f32, device,
                                                  /*write_only=*/true)),
                    buffer + s.offset, s.size);
      }
    }
  }
  forget_step();
  ++stats_.steps;
  stats_.last_finish_seconds = seconds_since(t0);
  stats_.finish_seconds += stats_.last_finish_seconds;
}

void broadcast_parameters(Communicator& comm, const ParameterList& params,
                          int root) {
  const std::string& device = comm.device();
  for (const auto& [name, var] : params) {
    if (!var) {
      throw std::invalid_argument(
          msg("[broadcast_parameters] parameter '", name, "' is null"));
    }
    // The fp32 masters, in place: rank root's values overwrite the others'.
    void* data = var->data()->array().cast(Dtype::f32, device);
    comm.broadcast(data, static_cast<int64_t>(var->size() * sizeof(float)),
                   root);
  }
}

void all_reduce_grads(const CommunicatorPtr& comm, const ParameterList& params,
                      const DataParallelOptions& options) {
  GradReducer reducer(comm, params, options);
  reducer.finish();
}

}  // namespace mg
