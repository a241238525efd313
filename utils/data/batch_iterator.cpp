#include <mixgraph/utils/data/batch_iterator.hpp>

#include <numeric>
#include <sstream>
#include <stdexcept>

namespace mg {

namespace {

constexpr const char* kHeader = "mixgraph.BatchIterator 1";

[[noreturn]] void bad_state(const std::string& what) {
  throw std::invalid_argument(
      "[BatchIterator] cannot restore the saved state: " + what);
}

}  // namespace

BatchIterator::BatchIterator(int64_t size, int64_t batch_size, uint64_t seed,
                             bool shuffle)
    : size_(size), batch_size_(batch_size), shuffle_(shuffle), rng_(seed) {
  if (batch_size < 1 || size < batch_size) {
    throw std::invalid_argument(
        "[BatchIterator] batch_size must be in [1, size], got batch_size " +
        std::to_string(batch_size) + " for " + std::to_string(size) +
        " examples");
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
  const auto begin = permutation_.begin() + index_ * batch_size_;
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
      << "\nshuffle " << shuffle_ << "\nepoch " << epoch_ << "\nindex "
      << index_ << "\nrng " << rng_ << "\npermutation";
  for (int64_t i : permutation_) out << ' ' << i;
  out << "\nend\n";
  return out.str();
}

void BatchIterator::set_state(const std::string& state) {
  std::istringstream in(state);
  std::string line;
  if (!std::getline(in, line) || line != kHeader) {
    bad_state("it does not start with \"" + std::string(kHeader) + "\"");
  }
  auto field = [&](const char* name) {
    std::string key;
    if (!(in >> key) || key != name) {
      bad_state(std::string("expected the field \"") + name + "\"");
    }
  };
  int64_t size = 0, batch_size = 0, epoch = 0, index = 0;
  bool shuffle = true;
  field("size");
  in >> size;
  field("batch_size");
  in >> batch_size;
  field("shuffle");
  in >> shuffle;
  if (!in || size != size_ || batch_size != batch_size_ ||
      shuffle != shuffle_) {
    bad_state("it is for " + std::to_string(size) + " examples in batches of " +
              std::to_string(batch_size) + (shuffle ? "" : " unshuffled") +
              ", but this iterator has " + std::to_string(size_) +
              " examples in batches of " + std::to_string(batch_size_) +
              (shuffle_ ? "" : " unshuffled"));
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
