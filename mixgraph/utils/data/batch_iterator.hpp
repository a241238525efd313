// A shuffling batch iterator whose position can be checkpointed.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace mg {

/// Batches of example indices. An epoch is one permutation of [0, size) cut
/// into size / batch_size full batches (the few examples left over wait for
/// the next epoch's shuffle); the next epoch reshuffles as soon as the last
/// batch is handed out. The position (epoch, batch index, permutation, RNG)
/// is saved as text by state() and restored by set_state(), so a resumed run
/// sees the same batches bit for bit.
///
/// Sharded for data-parallel runs (rank r of `ranks`): every rank shuffles
/// with the same seed, an epoch is cut into global batches of
/// batch_size * ranks, and rank r takes the r-th slice of batch_size of each.
/// So the ranks read disjoint examples, and their batches put together are
/// the batches one process with batch_size * ranks would see, in order.
class BatchIterator {
 public:
  /// `seed` fixes every epoch's order; shuffle = false keeps 0, 1, 2, ...
  /// `batch_size` is this rank's.
  BatchIterator(int64_t size, int64_t batch_size, uint64_t seed,
                bool shuffle = true, int rank = 0, int ranks = 1);

  /// The indices of the next batch (batch_size of them); valid until the
  /// next call.
  const std::vector<int64_t>& next();

  /// Epochs completed so far.
  int64_t epoch() const { return epoch_; }
  /// The batch that next() returns, within the current epoch.
  int64_t index() const { return index_; }
  int64_t batches_per_epoch() const { return size_ / (batch_size_ * ranks_); }
  int64_t size() const { return size_; }
  int64_t batch_size() const { return batch_size_; }
  int rank() const { return rank_; }
  int ranks() const { return ranks_; }

  /// The position as text, for a checkpoint: the same on every rank (the
  /// rank is not in it), so rank 0's checkpoint resumes all of them.
  std::string state() const;
  /// Restores a position from state(); the size, batch size and number of
  /// ranks must match this iterator's, and the text must be intact, else
  /// std::invalid_argument saying what differs (nothing changes). Texts
  /// from before sharding read as one rank.
  void set_state(const std::string& state);

 private:
  void reshuffle();
  int64_t size_, batch_size_;
  int rank_, ranks_;
  bool shuffle_;
  int64_t epoch_ = 0, index_ = 0;
  std::vector<int64_t> permutation_;
  std::vector<int64_t> batch_;
  std::mt19937_64 rng_;
};

}  // namespace mg
