// The idx reader (plain and gzip, corrupt input), the Fashion-MNIST loader on
// small files the test writes, the checkpointable batch iterator, and the CSV
// and progress helpers the tutorials use.
#include <gtest/gtest.h>

#include <unistd.h>
#include <zlib.h>

#include <sys/stat.h>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <set>

#include <mixgraph/graph/parameter_scope.hpp>
#include <mixgraph/solvers/sgd.hpp>
#include <mixgraph/utils/csv.hpp>
#include <mixgraph/utils/data/batch_iterator.hpp>
#include <mixgraph/utils/data/fashion_mnist.hpp>
#include <mixgraph/utils/data/idx.hpp>
#include <mixgraph/utils/hdf5/checkpoint.hpp>
#include <mixgraph/utils/progress.hpp>

namespace mg::test {
namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "mixgraph_data_" + std::to_string(::getpid()) +
         "_" + name;
}

// Runs f, expects a std::invalid_argument (a bad file or bad input) whose
// message holds every part.
void expect_error(const std::function<void()>& f,
                  const std::vector<std::string>& parts) {
  try {
    f();
    ADD_FAILURE() << "expected an error mentioning " << parts.front();
  } catch (const std::invalid_argument& e) {
    for (const auto& p : parts) {
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "missing \"" << p << "\" in: " << e.what();
    }
  }
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

IdxArray counting_images(int64_t n, int64_t rows, int64_t cols) {
  IdxArray a;
  a.shape = {n, rows, cols};
  for (int64_t i = 0; i < n * rows * cols; ++i) a.data.push_back(i * 7 % 256);
  return a;
}

// ---- idx ----

class IdxRoundTrip : public ::testing::TestWithParam<bool> {};

TEST_P(IdxRoundTrip, WritesAndReadsBack) {
  const std::string path = temp_path(GetParam() ? "a.idx.gz" : "a.idx");
  const IdxArray a = counting_images(5, 3, 4);
  write_idx(path, a, GetParam());
  const IdxArray b = read_idx(path);
  EXPECT_EQ(b.shape, a.shape);
  EXPECT_EQ(b.data, a.data);
  // The gzip file really is compressed: it starts with gzip's magic.
  const std::string bytes = read_bytes(path);
  EXPECT_EQ(bytes.substr(0, 2) == "\x1f\x8b", GetParam());
  std::remove(path.c_str());
}

INSTANTIATE_TEST_SUITE_P(PlainAndGzip, IdxRoundTrip, ::testing::Bool());

TEST(Idx, OneDimensionalLabels) {
  const std::string path = temp_path("labels.idx");
  write_idx(path, IdxArray{{4}, {3, 1, 4, 1}}, false);
  const IdxArray b = read_idx(path);
  EXPECT_EQ(b.shape, Shape({4}));
  EXPECT_EQ(b.data, std::vector<uint8_t>({3, 1, 4, 1}));
  std::remove(path.c_str());
}

TEST(Idx, MissingFileNamesIt) {
  const std::string path = temp_path("nowhere.idx.gz");
  expect_error([&] { read_idx(path); },
               {"[read_idx]", path, "cannot open", "No such file"});
}

TEST(Idx, BadMagicNumber) {
  const std::string path = temp_path("text.idx");
  write_bytes(path, "hello, this is not an idx file");
  expect_error([&] { read_idx(path); },
               {"[read_idx]", path, "bad magic number 0x68656C6C"});
  std::remove(path.c_str());
}

TEST(Idx, OtherElementTypeIsNamed) {
  const std::string path = temp_path("floats.idx");
  write_bytes(path, std::string("\0\0\x0D\x01\0\0\0\x01\0\0\0\0", 12));
  expect_error([&] { read_idx(path); },
               {"[read_idx]", path, "float32", "0x0D", "unsigned bytes"});
  std::remove(path.c_str());
}

TEST(Idx, TruncatedHeader) {
  const std::string path = temp_path("short_header.idx");
  write_bytes(path, std::string("\0\0\x08\x03\0\0\0\x05\0\0", 10));
  expect_error([&] { read_idx(path); },
               {"[read_idx]", path, "truncated", "3 dimensions", "10 bytes"});
  write_bytes(path, std::string("\0\0", 2));
  expect_error([&] { read_idx(path); },
               {"[read_idx]", path, "truncated", "magic number"});
  std::remove(path.c_str());
}

// A damaged header that claims 2^40 bytes is a truncated file, not an
// attempt to allocate them.
TEST(Idx, AHeaderClaimingMoreThanTheFileHoldsIsTruncated) {
  const std::string path = temp_path("claims_too_much.idx");
  write_bytes(path, std::string("\0\0\x08\x03\x00\x10\x00\x00"
                                "\x00\x00\x04\x00\x00\x00\x04\x00"
                                "abcdef",
                                22));
  expect_error([&] { read_idx(path); },
               {"[read_idx]", path, "truncated", "(1048576, 1024, 1024)",
                "ends after 6"});
  std::remove(path.c_str());
}

TEST(Idx, TruncatedDataPlain) {
  const std::string path = temp_path("short.idx");
  write_idx(path, counting_images(5, 3, 4), false);
  const std::string bytes = read_bytes(path);
  write_bytes(path, bytes.substr(0, bytes.size() - 10));
  expect_error([&] { read_idx(path); },
               {"[read_idx]", path, "truncated", "(5, 3, 4)", "60 bytes",
                "ends after 50"});
  std::remove(path.c_str());
}

TEST(Idx, TruncatedDataGzip) {
  const std::string path = temp_path("short.idx.gz");
  write_idx(path, counting_images(50, 28, 28), true);
  const std::string bytes = read_bytes(path);
  write_bytes(path, bytes.substr(0, bytes.size() / 2));
  expect_error([&] { read_idx(path); }, {"[read_idx]", path, "truncated"});
  std::remove(path.c_str());
}

TEST(Idx, CorruptGzip) {
  const std::string path = temp_path("corrupt.idx.gz");
  write_idx(path, counting_images(50, 28, 28), true);
  std::string bytes = read_bytes(path);
  for (size_t i = bytes.size() / 3; i < bytes.size() / 3 + 16; ++i) {
    bytes[i] = static_cast<char>(bytes[i] ^ 0x5A);
  }
  write_bytes(path, bytes);
  expect_error([&] { read_idx(path); }, {"[read_idx]", path, "corrupt"});
  std::remove(path.c_str());
}

TEST(Idx, BytesAfterTheData) {
  const std::string path = temp_path("long.idx");
  write_idx(path, counting_images(2, 2, 2), false);
  write_bytes(path, read_bytes(path) + "xyz");
  expect_error([&] { read_idx(path); },
               {"[read_idx]", path, "3 bytes after", "(2, 2, 2)"});
  std::remove(path.c_str());
}

// ---- Fashion-MNIST on a small fake copy ----

class FakeFashionMnist : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = temp_path("fmnist");
    ::mkdir(dir_.c_str(), 0755);
    write("train", 6, true);
    write("t10k", 4, false);  // uncompressed files are found too
  }
  void TearDown() override {
    for (const char* f :
         {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
          "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
      std::remove((dir_ + "/" + f).c_str());
    }
    ::rmdir(dir_.c_str());
  }
  void write(const std::string& prefix, int64_t n, bool gz,
             uint8_t label_offset = 0) {
    const std::string ext = gz ? ".gz" : "";
    write_idx(dir_ + "/" + prefix + "-images-idx3-ubyte" + ext,
              counting_images(n, 28, 28), gz);
    IdxArray labels{{n}, {}};
    for (int64_t i = 0; i < n; ++i)
      labels.data.push_back(i % 10 + label_offset);
    write_idx(dir_ + "/" + prefix + "-labels-idx1-ubyte" + ext, labels, gz);
  }
  std::string dir_;
};

TEST_F(FakeFashionMnist, LoadsBothSplits) {
  EXPECT_TRUE(fashion_mnist_available(dir_));
  const ImageDataset train = load_fashion_mnist("train", dir_);
  EXPECT_EQ(train.size, 6);
  EXPECT_EQ(train.height, 28);
  EXPECT_EQ(train.width, 28);
  EXPECT_EQ(train.classes, 10);
  EXPECT_EQ(train.images, counting_images(6, 28, 28).data);
  EXPECT_EQ(train.labels, std::vector<uint8_t>({0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(load_fashion_mnist("test", dir_).size, 4);
}

TEST_F(FakeFashionMnist, MissingFileSaysHowToInstall) {
  const std::string gone = dir_ + "/train-labels-idx1-ubyte.gz";
  std::remove(gone.c_str());
  EXPECT_FALSE(fashion_mnist_available(dir_));
  expect_error(
      [&] { load_fashion_mnist("train", dir_); },
      {"[load_fashion_mnist]", gone, "apt-get install dataset-fashion-mnist"});
}

TEST_F(FakeFashionMnist, LabelCountMustMatchImages) {
  write_idx(dir_ + "/train-labels-idx1-ubyte.gz",
            IdxArray{{5}, {0, 1, 2, 3, 4}}, true);
  expect_error([&] { load_fashion_mnist("train", dir_); },
               {"[load_fashion_mnist]", "train-labels-idx1-ubyte.gz", "(5,)",
                "6 images"});
}

TEST_F(FakeFashionMnist, LabelsMustBeClasses) {
  write("train", 6, true, /*label_offset=*/5);  // labels 5..10
  expect_error([&] { load_fashion_mnist("train", dir_); },
               {"[load_fashion_mnist]", "train-labels-idx1-ubyte.gz",
                "label 10 at index 5"});
}

TEST_F(FakeFashionMnist, UnknownSplit) {
  EXPECT_THROW(load_fashion_mnist("validation", dir_), std::invalid_argument);
}

// ---- BatchIterator ----

std::vector<int64_t> take(BatchIterator& it, int batches) {
  std::vector<int64_t> all;
  for (int b = 0; b < batches; ++b) {
    const auto& batch = it.next();
    all.insert(all.end(), batch.begin(), batch.end());
  }
  return all;
}

TEST(BatchIterator, EachEpochIsAPermutationOfFullBatches) {
  BatchIterator it(10, 3, 7);
  EXPECT_EQ(it.batches_per_epoch(), 3);
  const auto epoch0 = take(it, 3);
  EXPECT_EQ(it.epoch(), 1);
  EXPECT_EQ(it.index(), 0);
  const auto epoch1 = take(it, 3);
  for (const auto& e : {epoch0, epoch1}) {
    ASSERT_EQ(e.size(), 9u);
    const std::set<int64_t> distinct(e.begin(), e.end());
    EXPECT_EQ(distinct.size(), 9u);  // no repeats within an epoch
    EXPECT_LE(*distinct.rbegin(), 9);
  }
  EXPECT_NE(epoch0, epoch1);  // reshuffled
}

TEST(BatchIterator, TheSeedFixesTheOrder) {
  BatchIterator a(100, 10, 1), b(100, 10, 1), c(100, 10, 2);
  const auto ta = take(a, 25), tb = take(b, 25), tc = take(c, 25);
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);
}

TEST(BatchIterator, UnshuffledIsInOrder) {
  BatchIterator it(7, 2, 1, /*shuffle=*/false);
  EXPECT_EQ(take(it, 4), std::vector<int64_t>({0, 1, 2, 3, 4, 5, 0, 1}));
}

TEST(BatchIterator, RestoredStateContinuesIdentically) {
  for (int stop : {0, 4, 9, 10, 17}) {  // mid-epoch and at epoch boundaries
    BatchIterator straight(50, 5, 3);
    const auto before = take(straight, stop);
    const std::string saved = straight.state();
    const auto after = take(straight, 23);

    BatchIterator resumed(50, 5, 999);  // another seed: the state decides
    resumed.set_state(saved);
    EXPECT_EQ(resumed.epoch(), stop / 10);
    EXPECT_EQ(resumed.index(), stop % 10);
    EXPECT_EQ(take(resumed, 23), after) << "stopped after " << stop;
  }
}

TEST(BatchIterator, StateForAnotherIteratorIsRefused) {
  BatchIterator a(50, 5, 3);
  take(a, 2);
  BatchIterator b(50, 10, 3);
  const auto expected = take(b, 1);
  BatchIterator b_again(50, 10, 3);
  expect_error(
      [&] { b_again.set_state(a.state()); },
      {"[BatchIterator]", "50 examples in batches of 5", "batches of 10"});
  EXPECT_EQ(take(b_again, 1), expected);  // nothing changed
}

TEST(BatchIterator, CorruptStateIsRefused) {
  BatchIterator a(20, 4, 3);
  const std::string good = a.state();
  BatchIterator b(20, 4, 3);
  expect_error([&] { b.set_state("garbage"); },
               {"[BatchIterator]", "does not start with"});
  expect_error([&] { b.set_state(good.substr(0, good.size() / 2)); },
               {"[BatchIterator]"});
  std::string repeated = good;  // a permutation with a repeated index
  const size_t p = repeated.find("permutation ") + 12;
  const size_t q = repeated.find(' ', p);
  const std::string first = repeated.substr(p, q - p);
  const size_t r = repeated.find(' ', q + 1);
  repeated.replace(q + 1, r - q - 1, first);
  expect_error([&] { b.set_state(repeated); },
               {"[BatchIterator]", "not one of [0, 20)"});
}

TEST(BatchIterator, BadBatchSize) {
  EXPECT_THROW(BatchIterator(5, 6, 1), std::invalid_argument);
  EXPECT_THROW(BatchIterator(5, 0, 1), std::invalid_argument);
}

TEST(BatchIterator, ShardsPutTogetherAreTheOneProcessBatches) {
  // 3 ranks of 4 read what one process with batches of 12 reads, in order,
  // each a disjoint slice, across epochs (50 / 12: 4 batches per epoch).
  BatchIterator whole(50, 12, 7);
  std::vector<BatchIterator> shards;
  for (int r = 0; r < 3; ++r) shards.emplace_back(50, 4, 7, true, r, 3);
  EXPECT_EQ(shards[1].batches_per_epoch(), 4);
  for (int step = 0; step < 10; ++step) {
    const std::vector<int64_t> expected = whole.next();
    std::vector<int64_t> joined;
    for (auto& shard : shards) {
      const auto& b = shard.next();
      joined.insert(joined.end(), b.begin(), b.end());
    }
    EXPECT_EQ(joined, expected) << "step " << step;
  }
  // One state for all ranks: rank 0's resumes rank 2.
  BatchIterator resumed(50, 4, 99, true, 2, 3);
  resumed.set_state(shards[0].state());
  EXPECT_EQ(resumed.next(), shards[2].next());
}

TEST(BatchIterator, ShardingErrorsNameTheRanks) {
  expect_error([] { BatchIterator(50, 4, 7, true, 3, 3); },
               {"[BatchIterator]", "rank 3 is not a rank of 3"});
  expect_error([] { BatchIterator(50, 20, 7, true, 0, 3); },
               {"[BatchIterator]", "batch_size 20 on 3 rank(s)", "50"});
  BatchIterator two(50, 5, 3, true, 0, 2);
  BatchIterator one(50, 5, 3);
  expect_error([&] { one.set_state(two.state()); },
               {"[BatchIterator]", "on 2 rank(s)", "on 1 rank(s)"});
  // A text written before sharding reads as one rank's.
  std::string v1 = one.state();
  v1.replace(v1.find("BatchIterator 2"), 15, "BatchIterator 1");
  v1.erase(v1.find("ranks 1\n"), 8);
  BatchIterator old(50, 5, 11);
  old.set_state(v1);
  EXPECT_EQ(old.next(), one.next());
}

// The iterator's position travels in a checkpoint's extras.
TEST(BatchIterator, PositionRoundTripsThroughACheckpoint) {
  ParameterScope params;
  params["fc"].get_or_create("W", {2, 3}, constant_initializer(1));
  auto solver = solvers::Sgd(0.1f);
  solver->set_parameters(params.parameters());
  BatchIterator it(30, 4, 5);
  take(it, 9);
  const std::string path = temp_path("iterator.h5");
  CheckpointExtras extras;
  extras.set("data_iterator", it.state());
  extras.set("empty", "");
  save_checkpoint(path, params, *solver, nullptr, 9, extras);
  const auto after = take(it, 12);

  const CheckpointInfo info = load_checkpoint(path, params, *solver);
  EXPECT_EQ(info.iteration, 9);
  ASSERT_EQ(info.extras.size(), 2u);
  EXPECT_EQ(info.extras.get_string("empty"), "");
  BatchIterator resumed(30, 4, 0);
  resumed.set_state(info.extras.get_string("data_iterator"));
  EXPECT_EQ(take(resumed, 12), after);
  std::remove(path.c_str());

  CheckpointExtras slash;
  slash.set("a/b", "");
  EXPECT_THROW(save_checkpoint(path, params, *solver, nullptr, 0, slash),
               std::invalid_argument);
}

// ---- CSV and progress ----

TEST(Csv, WritesAppendsAndTruncates) {
  const std::string path = temp_path("curve.csv");
  {
    CsvWriter csv(path, {"step", "loss", "type_config"});
    csv.row(1, 2.5f, "half");
    csv.row(2, 0.125, "half");
    EXPECT_THROW(csv.row(3, 1.0), std::invalid_argument);
  }
  {
    CsvWriter csv(path, {"step", "loss", "type_config"}, /*append=*/true);
    csv.row(3, 0.1f, "half");
  }
  auto rows = read_csv(path);
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0], std::vector<std::string>({"step", "loss", "type_config"}));
  EXPECT_EQ(rows[2], std::vector<std::string>({"2", "0.125", "half"}));
  EXPECT_EQ(std::stof(rows[3][1]), 0.1f);  // 9 digits read back exactly

  truncate_csv_rows(path, 2);
  rows = read_csv(path);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2][0], "2");
  expect_error(
      [&] {
        CsvWriter(path, {"step", "scale"}, true);
      },
      {"[CsvWriter]", path, "step,loss,type_config"});
  expect_error([&] { read_csv(path + ".missing"); },
               {"[read_csv]", path + ".missing", "cannot open"});
  std::remove(path.c_str());
}

TEST(ProgressBar, PrintsPlainLinesWhenNotATerminal) {
  const std::string path = temp_path("progress.txt");
  std::FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(ProgressBar::is_terminal(f));
  {
    ProgressBar bar("epoch 1/3", 25, 10, f);
    for (int i = 1; i <= 25; ++i) bar.update(i, "loss 1");
  }
  std::fclose(f);
  const std::string text = read_bytes(path);
  EXPECT_EQ(text,
            "epoch 1/3 10/25  loss 1\nepoch 1/3 20/25  loss 1\n"
            "epoch 1/3 25/25  loss 1\n");
  std::remove(path.c_str());
}

}  // namespace
}  // namespace mg::test
