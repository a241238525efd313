#include <mixgraph/contexts/communicator.hpp>
#include <mixgraph/contexts/strings.hpp>

#include <cstring>
#include <mutex>
#include <stdexcept>

namespace mg {

namespace {

/// One rank: the reduce of one buffer is the buffer.
class LocalCommunicator : public Communicator {
 public:
  std::string name() const override { return "local"; }
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int local_rank() const override { return 0; }
  void all_reduce(float*, int64_t, ReduceOp) override {}
  void start_all_reduce(float*, int64_t, ReduceOp) override {}
  bool progress() override { return true; }
  void wait_all() override {}
  void broadcast(void*, int64_t, int root) override {
    if (root != 0) {
      throw std::invalid_argument(
          msg("[Communicator::broadcast] root ", root,
              " is not a rank of a 1-rank communicator"));
    }
  }
  void all_gather(const float* send, int64_t n, float* recv) override {
    if (n > 0 && send != recv) std::memmove(recv, send, n * sizeof(float));
  }
  void barrier() override {}
};

std::mutex default_mutex;
CommunicatorPtr default_comm;

}  // namespace

CommunicatorPtr local_communicator() {
  static const CommunicatorPtr local = std::make_shared<LocalCommunicator>();
  return local;
}

CommunicatorPtr default_communicator() {
  std::lock_guard<std::mutex> lock(default_mutex);
  return default_comm ? default_comm : local_communicator();
}

void set_default_communicator(CommunicatorPtr comm) {
  std::lock_guard<std::mutex> lock(default_mutex);
  default_comm = std::move(comm);
}

#ifndef MIXGRAPH_WITH_MPI
bool mpi_available() { return false; }
CommunicatorPtr mpi_communicator() {
  throw std::runtime_error(
      "[mpi_communicator] mixgraph was built without MPI: install OpenMPI "
      "(apt-get install libopenmpi-dev openmpi-bin) and configure again "
      "with -DMIXGRAPH_MPI=AUTO or ON");
}
#endif

#ifndef MIXGRAPH_WITH_NCCL
bool nccl_available() { return false; }
CommunicatorPtr nccl_communicator(const CommunicatorPtr&) {
  throw std::runtime_error(
      "[nccl_communicator] mixgraph was built without NCCL: it needs the "
      "CUDA backend (MIXGRAPH_CUDA) and MPI (MIXGRAPH_MPI) found at "
      "configure time, with nccl.h and libnccl beside the CUDA toolkit");
}
#endif

}  // namespace mg
