// The NCCL communicator: grads reduced on the GPUs, over the ranks an MPI
// communicator started (MPI hands out NCCL's id). Collectives run on a
// stream of their own: each waits for the device stream's work so far (the
// grads backward wrote), and wait_all() makes the device stream wait for
// them, so reduces overlap the rest of backward and the solver's kernels
// see the reduced grads, with no host synchronisation.
// Built with CUDA and MPI; compiled and linked in CI, run only on a GPU.
#include <nccl.h>

#include <stdexcept>
#include <string>

#include <mixgraph/contexts/communicator.hpp>
#include <mixgraph/contexts/cuda/cuda_utils.hpp>
#include <mixgraph/contexts/strings.hpp>

namespace mg {

namespace {

void nccl_check(ncclResult_t r, const char* call, int rank) {
  if (r == ncclSuccess) return;
  throw std::runtime_error(msg("[NcclCommunicator] rank ", rank, ": ", call,
                               " failed: ", ncclGetErrorString(r)));
}

#define MG_NCCL_CHECK(call) nccl_check((call), #call, rank_)

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
      return ncclSum;
    case ReduceOp::mean:
      return ncclAvg;
    case ReduceOp::max:
      return ncclMax;
  }
  return ncclSum;
}

class NcclCommunicator : public Communicator {
 public:
  explicit NcclCommunicator(CommunicatorPtr mpi) : mpi_(std::move(mpi)) {
    rank_ = mpi_->rank();
    size_ = mpi_->size();
    local_rank_ = mpi_->local_rank();
    std::string why;
    const int gpus = cuda::device_count(&why);
    if (local_rank_ >= gpus) {
      throw std::runtime_error(msg("[nccl_communicator] rank ", rank_,
                                   " is local rank ", local_rank_,
                                   " but this machine has ", gpus, " GPU(s)",
                                   (why.empty() ? "" : ": " + why)));
    }
    device_ = local_rank_;
    cuda::DeviceGuard guard(device_);
    ncclUniqueId id;
    if (rank_ == 0) MG_NCCL_CHECK(ncclGetUniqueId(&id));
    mpi_->broadcast(&id, sizeof(id), 0);
    MG_NCCL_CHECK(ncclCommInitRank(&comm_, size_, id, rank_));
    MG_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    MG_CUDA_CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
    MG_CUDA_CHECK(cudaEventCreateWithFlags(&done_, cudaEventDisableTiming));
  }
  ~NcclCommunicator() override {
    cuda::DeviceGuard guard(device_);
    cudaStreamSynchronize(stream_);
    ncclCommDestroy(comm_);
    cudaEventDestroy(ready_);
    cudaEventDestroy(done_);
    cudaStreamDestroy(stream_);
  }

  std::string name() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  std::string device() const override {
    return "cuda:" + std::to_string(device_);
  }

  void all_reduce(float* data, int64_t n, ReduceOp op) override {
    start_all_reduce(data, n, op);
    wait_all();
    MG_CUDA_CHECK(cudaStreamSynchronize(cuda::stream(device_)));
  }
  void start_all_reduce(float* data, int64_t n, ReduceOp op) override {
    cuda::DeviceGuard guard(device_);
    follow_device_stream();
    MG_NCCL_CHECK(ncclAllReduce(data, data, static_cast<size_t>(n), ncclFloat,
                                nccl_op(op), comm_, stream_));
    pending_ = true;
  }
  bool progress() override {
    if (!pending_) return true;
    return cudaStreamQuery(stream_) == cudaSuccess;
  }
  void wait_all() override {
    if (!pending_) return;
    cuda::DeviceGuard guard(device_);
    MG_CUDA_CHECK(cudaEventRecord(done_, stream_));
    MG_CUDA_CHECK(cudaStreamWaitEvent(cuda::stream(device_), done_, 0));
    pending_ = false;
  }
  void broadcast(void* data, int64_t bytes, int root) override {
    cuda::DeviceGuard guard(device_);
    follow_device_stream();
    MG_NCCL_CHECK(ncclBroadcast(data, data, static_cast<size_t>(bytes),
                                ncclChar, root, comm_, stream_));
    pending_ = true;
    wait_all();
  }
  void all_gather(const float* send, int64_t n, float* recv) override {
    cuda::DeviceGuard guard(device_);
    follow_device_stream();
    MG_NCCL_CHECK(ncclAllGather(send, recv, static_cast<size_t>(n), ncclFloat,
                                comm_, stream_));
    pending_ = true;
    wait_all();
  }
  void barrier() override {
    wait_all();
    MG_CUDA_CHECK(cudaStreamSynchronize(cuda::stream(device_)));
    mpi_->barrier();
  }

 private:
  /// The collective stream waits for what the device stream has queued.
  void follow_device_stream() {
    MG_CUDA_CHECK(cudaEventRecord(ready_, cuda::stream(device_)));
    MG_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready_, 0));
  }

  CommunicatorPtr mpi_;
  int rank_ = 0, size_ = 1, local_rank_ = 0, device_ = 0;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr, done_ = nullptr;
  bool pending_ = false;
};

}  // namespace

bool nccl_available() { return true; }

CommunicatorPtr nccl_communicator(const CommunicatorPtr& mpi) {
  if (!mpi) {
    throw std::invalid_argument(
        "[nccl_communicator] the MPI communicator is null");
  }
  return std::make_shared<NcclCommunicator>(mpi);
}

}  // namespace mg
