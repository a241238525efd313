// The MPI communicator: OpenMPI's MPI_COMM_WORLD, duplicated so that our
// collectives never mix with the program's own MPI calls.
// MPI's C API only: without these, OpenMPI's mpi.h pulls in its deprecated
// C++ bindings, which the C library does not define.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include <mixgraph/contexts/communicator.hpp>
#include <mixgraph/contexts/strings.hpp>

namespace mg {

namespace {

// MPI counts are int: longer buffers go in pieces of this many elements.
constexpr int64_t kMaxCount = INT_MAX / 2;

MPI_Op mpi_op(ReduceOp op) {
  return op == ReduceOp::max ? MPI_MAX : MPI_SUM;  // mean = sum / size
}

class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) !=
          MPI_SUCCESS) {
        throw std::runtime_error("[mpi_communicator] MPI_Init_thread failed");
      }
      owns_mpi_ = true;
    }
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    // Errors come back as codes, turned into exceptions naming the call.
    check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN),
          "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
    check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL,
                              &node_),
          "MPI_Comm_split_type");
    check(MPI_Comm_rank(node_, &local_rank_), "MPI_Comm_rank");
  }

  /// Frees the communicators and finalises MPI when we initialised it; at
  /// exit, before static destructors run.
  void shutdown() {
    if (comm_ == MPI_COMM_NULL) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
      wait_all_nothrow();
      MPI_Comm_free(&node_);
      MPI_Comm_free(&comm_);
      if (owns_mpi_) MPI_Finalize();
    }
    comm_ = node_ = MPI_COMM_NULL;
  }

  std::string name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }

  void all_reduce(float* data, int64_t n, ReduceOp op) override {
    for (int64_t at = 0; at < n; at += kMaxCount) {
      const int count = static_cast<int>(std::min(kMaxCount, n - at));
      check(MPI_Allreduce(MPI_IN_PLACE, data + at, count, MPI_FLOAT, mpi_op(op),
                          live("all_reduce")),
            "MPI_Allreduce");
    }
    if (op == ReduceOp::mean) divide(data, n);
  }

  void start_all_reduce(float* data, int64_t n, ReduceOp op) override {
    for (int64_t at = 0; at < n; at += kMaxCount) {
      const int count = static_cast<int>(std::min(kMaxCount, n - at));
      MPI_Request request;
      check(MPI_Iallreduce(MPI_IN_PLACE, data + at, count, MPI_FLOAT,
                           mpi_op(op), live("start_all_reduce"), &request),
            "MPI_Iallreduce");
      requests_.push_back(request);
    }
    if (op == ReduceOp::mean) to_divide_.push_back({data, n});
  }

  bool progress() override {
    if (requests_.empty()) return true;
    int done = 0;
    check(MPI_Testall(static_cast<int>(requests_.size()), requests_.data(),
                      &done, MPI_STATUSES_IGNORE),
          "MPI_Testall");
    return done != 0;
  }

  void wait_all() override {
    if (!requests_.empty()) {
      const int rc = MPI_Waitall(static_cast<int>(requests_.size()),
                                 requests_.data(), MPI_STATUSES_IGNORE);
      requests_.clear();
      if (rc != MPI_SUCCESS) {
        to_divide_.clear();
        check(rc, "MPI_Waitall");
      }
    }
    for (const auto& [data, n] : to_divide_) divide(data, n);
    to_divide_.clear();
  }

  void broadcast(void* data, int64_t bytes, int root) override {
    if (root < 0 || root >= size_) {
      throw std::invalid_argument(msg(msg_prefix("broadcast"), "root ", root,
                                      " is not a rank of ", size_));
    }
    auto* p = static_cast<char*>(data);
    for (int64_t at = 0; at < bytes; at += kMaxCount) {
      const int count = static_cast<int>(std::min(kMaxCount, bytes - at));
      check(MPI_Bcast(p + at, count, MPI_BYTE, root, live("broadcast")),
            "MPI_Bcast");
    }
  }

  void all_gather(const float* send, int64_t n, float* recv) override {
    if (n > kMaxCount) {
      throw std::invalid_argument(msg(msg_prefix("all_gather"), n,
                                      " values per rank is more than MPI's int "
                                      "counts allow in one call"));
    }
    check(MPI_Allgather(send, static_cast<int>(n), MPI_FLOAT, recv,
                        static_cast<int>(n), MPI_FLOAT, live("all_gather")),
          "MPI_Allgather");
  }

  void barrier() override {
    check(MPI_Barrier(live("barrier")), "MPI_Barrier");
  }

 private:
  std::string msg_prefix(const char* what) const {
    return "[MpiCommunicator::" + std::string(what) + "] rank " +
           std::to_string(rank_) + ": ";
  }
  MPI_Comm live(const char* what) const {
    if (comm_ == MPI_COMM_NULL) {
      throw std::runtime_error(
          msg(msg_prefix(what), "MPI was finalised (the program is exiting)"));
    }
    return comm_;
  }
  void check(int rc, const char* call) const {
    if (rc == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    MPI_Error_string(rc, text, &length);
    throw std::runtime_error(msg("[MpiCommunicator] rank ", rank_, ": ", call,
                                 " failed: ", std::string(text, length)));
  }
  void divide(float* data, int64_t n) const {
    const float inv = 1.0f / static_cast<float>(size_);
    for (int64_t i = 0; i < n; ++i) data[i] *= inv;
  }
  void wait_all_nothrow() {
    if (!requests_.empty()) {
      MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(),
                  MPI_STATUSES_IGNORE);
      requests_.clear();
    }
    to_divide_.clear();
  }

  MPI_Comm comm_ = MPI_COMM_NULL, node_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1, local_rank_ = 0;
  bool owns_mpi_ = false;
  std::vector<MPI_Request> requests_;
  std::vector<std::pair<float*, int64_t>> to_divide_;
};

std::shared_ptr<MpiCommunicator> world;

void shutdown_world() {
  if (world) world->shutdown();
}

#ifdef __GLIBC__
// At exit. A clean exit finalises MPI, which waits for every rank to get
// there. A failed one (status != 0: a rank that caught its error, reported
// it and returned 1) aborts the job instead: the other ranks may be waiting
// in a collective this rank will never join, and MPI_Finalize would wait for
// them in turn, so the job would hang; mpirun ends every rank and exits
// with this status. (An exception that leaves main aborts the process,
// which mpirun already answers the same way.)
void shutdown_world_at_exit(int status, void*) {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (status != 0 && world && !finalized) MPI_Abort(MPI_COMM_WORLD, status);
  shutdown_world();
}
#endif

}  // namespace

bool mpi_available() { return true; }

CommunicatorPtr mpi_communicator() {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  if (!world) {
    world = std::make_shared<MpiCommunicator>();
#ifdef __GLIBC__
    on_exit(shutdown_world_at_exit, nullptr);  // sees the exit status
#else
    std::atexit(shutdown_world);
#endif
  }
  return world;
}

}  // namespace mg
