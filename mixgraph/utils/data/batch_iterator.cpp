#include <mixgraph/utils/data/batch_iterator.hpp>

#include <numeric>
#include <sstream>
#include <stdexcept>

#include <mixgraph/contexts/strings.hpp>

namespace mg {

namespace {

// Version 2 added the number of ranks; version 1 texts are one rank's.
constexpr const char* kHeader = "mixgraph.BatchIterator 2";
constexpr const char* kHeaderV1 = "mixgraph.BatchIterator 1";

[[noreturn]] void bad_state(const std::string& what) {
  throw std::invalid_argument(
      msg("[BatchIterator] cannot restore the saved state: ", what));
}

}  // namespace

BatchIterator::BatchIterator(int64_t size, int64_t batch_size, uint64_t seed,
                             bool shuffle, int rank, int ranks)
    : size_(size),
      batch_size_(batch_size),
      rank_(rank),
      ranks_(ranks),
      shuffle_(shuffle),
      rng_(seed) {
  if (ranks < 1 || rank < 0 || rank >= ranks) {
    throw std::invalid_argument(
        msg("[BatchIterator] rank ", rank, " is not a rank of ", ranks));
  }
  if (batch_size < 1 || size < batch_size * ranks) {
    throw std::invalid_argument(
        msg("[BatchIterator] batch_size must be in [1, size / ranks], got "
            "batch_size ",
            batch_size, " on ", ranks, " rank(s) for ", size, " examples"));
  }
  permutation_.resize(size);
  std::iota(permutation_.begin(), permutation_.end(), int64_t{0});
  reshuffle();
}

void BatchIterator::reshuffle() {
  if (!shuffle_) return;
  // Fisher-Yates written out, so the order does not depend on the standard
  // library's std::shuffle.
  for (int64_t i = size_ - 1; i > 0; --i) {
    const int64_t j = static_cast<int64_t>(rng_() % uint64_t(i + 1));
    std::swap(permutation_[i], permutation_[j]);
  }
}

const std::vector<int64_t>& BatchIterator::next() {
  const auto begin =
      permutation_.begin() + (index_ * ranks_ + rank_) * batch_size_;
  batch_.assign(begin, begin + batch_size_);
  if (++index_ == batches_per_epoch()) {
    index_ = 0;
    ++epoch_;
    reshuffle();
  }
  return batch_;
}

std::string BatchIterator::state() const {
  std::ostringstream out;
  out << kHeader << "\nsize " << size_ << "\nbatch_size " << batch_size_
      << "\nranks " << ranks_ << "\nshuffle " << shuffle_ << "\nepoch "
      << epoch_ << "\nindex " << index_ << "\nrng " << rng_ << "\npermutation";
  for (int64_t i : permutation_) out << ' ' << i;
  out << "\nend\n";
  return out.str();
}

void BatchIterator::set_state(const std::string& state) {
  std::istringstream in(state);
  std::string line;
  if (!std::getline(in, line) || (line != kHeader && line != kHeaderV1)) {
    bad_state("it does not start with \"" + std::string(kHeader) + "\"");
  }
  const bool v1 = line == kHeaderV1;
  auto field = [&](const char* name) {
    std::string key;
    if (!(in >> key) || key != name) {
      bad_state(std::string("expected the field \"") + name + "\"");
    }
  };
  int64_t size = 0, batch_size = 0, epoch = 0, index = 0, ranks = 1;
  bool shuffle = true;
  field("size");
  in >> size;
  field("batch_size");
  in >> batch_size;
  if (!v1) {
    field("ranks");
    in >> ranks;
  }
  field("shuffle");
  in >> shuffle;
  auto describe = [](int64_t n, int64_t b, int64_t r, bool sh) {
    return std::to_string(n) + " examples in batches of " + std::to_string(b) +
           " on " + std::to_string(r) + " rank(s)" + (sh ? "" : " unshuffled");
  };
  if (!in || size != size_ || batch_size != batch_size_ || ranks != ranks_ ||
      shuffle != shuffle_) {
    bad_state("it is for " + describe(size, batch_size, ranks, shuffle) +
              ", but this iterator has " +
              describe(size_, batch_size_, ranks_, shuffle_));
  }
  field("epoch");
  in >> epoch;
  field("index");
  in >> index;
  if (!in || epoch < 0 || index < 0 || index >= batches_per_epoch()) {
    bad_state("epoch " + std::to_string(epoch) + " and batch index " +
              std::to_string(index) + " are not a position in " +
              std::to_string(batches_per_epoch()) + " batches per epoch");
  }
  field("rng");
  std::mt19937_64 rng;
  in >> rng;
  field("permutation");
  std::vector<int64_t> permutation(size_);
  std::vector<char> seen(size_, 0);
  for (int64_t& p : permutation) {
    if (!(in >> p) || p < 0 || p >= size_ || seen[p]) {
      bad_state("the permutation is not one of [0, " + std::to_string(size_) +
                ")");
    }
    seen[p] = 1;
  }
  field("end");
  if (!in) bad_state("it is truncated");
  epoch_ = epoch;
  index_ = index;
  rng_ = rng;
  permutation_ = std::move(permutation);
}

}  // namespace mg
