// Communicators: the processes of a data-parallel run and the collectives
// between them, on existing engines (OpenMPI for processes and host buffers,
// NCCL for CUDA buffers). This layer moves fp32 buffers; which buffers (the
// grads of a parameter list, in buckets) is the solvers layer's business
// (solvers/data_parallel.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

namespace mg {

/// What an all-reduce computes: every rank ends with the sum, the mean
/// (the sum divided by size(), in fp32) or the largest value of each
/// element over the ranks.
enum class ReduceOp { sum, mean, max };

/// The ranks of one run and the collectives between them. Every rank must
/// call a collective in the same order with the same sizes (as MPI's);
/// buffers live where device() says ("cpu" for MPI, "cuda:<local rank>" for
/// NCCL). Errors are std::runtime_error naming the collective and the rank.
class Communicator {
 public:
  virtual ~Communicator() = default;
  /// "mpi", "nccl" or "local".
  virtual std::string name() const = 0;
  /// This process's rank in [0, size()).
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// The rank among the processes on this machine (which GPU it takes).
  virtual int local_rank() const = 0;
  /// Where the buffers of the collectives live.
  virtual std::string device() const { return "cpu"; }

  /// In-place all-reduce of n fp32 values; returns when it is done.
  virtual void all_reduce(float* data, int64_t n, ReduceOp op) = 0;
  /// Starts an in-place all-reduce of n fp32 values and returns at once; the
  /// buffer must not be touched until wait_all(). Reduces started in the
  /// same order on every rank may run together.
  virtual void start_all_reduce(float* data, int64_t n, ReduceOp op) = 0;
  /// Lets started reduces make progress (MPI moves them only inside its
  /// calls); true when none is pending. Cheap: called from backward.
  virtual bool progress() = 0;
  /// Waits for every started reduce.
  virtual void wait_all() = 0;
  /// Copies `bytes` bytes from rank `root`'s buffer into every other rank's.
  virtual void broadcast(void* data, int64_t bytes, int root) = 0;
  /// recv (size() * n values) = every rank's n values of send, by rank.
  virtual void all_gather(const float* send, int64_t n, float* recv) = 0;
  /// Returns when every rank has called it.
  virtual void barrier() = 0;
};

using CommunicatorPtr = std::shared_ptr<Communicator>;

/// A communicator of one rank (rank 0 of 1): every collective is a copy or
/// nothing. Code written for data-parallel runs also runs alone with it.
CommunicatorPtr local_communicator();

/// True when this build has the MPI communicator (MIXGRAPH_MPI found
/// OpenMPI at configure time).
bool mpi_available();

/// The communicator of the processes mpirun started (MPI_COMM_WORLD),
/// initialising MPI (with MPI_THREAD_FUNNELED) when nobody has; MPI is
/// finalised at exit when it was initialised here. A process that exits with
/// a non-zero status (a rank that caught an error and returned 1) aborts the
/// whole job instead (MPI_Abort), so that no other rank is left waiting in a
/// collective it will never join. The same object on every call. Started
/// without mpirun it has one rank. Throws std::runtime_error when the build has
/// no MPI (saying how to get it).
CommunicatorPtr mpi_communicator();

/// True when this build has the NCCL communicator (CUDA, NCCL and MPI).
bool nccl_available();

/// A communicator that reduces CUDA buffers with NCCL, over the ranks of
/// `mpi` (which hands out NCCL's id); rank r uses GPU local_rank() on its
/// machine. Throws std::runtime_error without NCCL or a GPU.
CommunicatorPtr nccl_communicator(const CommunicatorPtr& mpi);

/// The communicator functions use when none is given to them (SyncBatch-
/// Normalization read from a network file): local_communicator() until set.
CommunicatorPtr default_communicator();
void set_default_communicator(CommunicatorPtr comm);

}  // namespace mg
