// cpu/channel_blocks: the one-pass conversions between row-major
// activations and oneDNN's channel-blocked fp32 layout that the
// convolutions use for half and bfloat16 (and for sums into float).
// The scalar path is checked against the layout's definition; the vector
// paths (AVX-512's blocks of 16 and channels last, AVX2's blocks of 8)
// against the scalar one, bit for bit, over partial channel blocks, spatial
// sizes that leave a tail, accumulation and bias. Channels last (nhwc, which
// oneDNN's AMX kernels read) is the block of all the channels.
#include <gtest/gtest.h>

#include <mixgraph/contexts/convert.hpp>
#include <mixgraph/contexts/cpu/channel_blocks.hpp>

#include <cstring>
#include <iostream>
#include <random>
#include <vector>

namespace mg::test::channel_blocks_tests {
namespace {

struct Shape {
  int64_t batch, channels, spatial;
  int64_t padded(int64_t block) const {
    return (channels + block - 1) / block * block;
  }
  int64_t plain_size() const { return batch * channels * spatial; }
  int64_t blocked_size(int64_t block) const {
    return batch * padded(block) * spatial;
  }
};

// Blocks of 8, of 16 and of all the shape's channels (channels last).
std::vector<int64_t> blocks_for(const struct Shape& s) {
  return {8, 16, s.channels};
}

const Shape kShapes[] = {{1, 1, 1},   {2, 16, 16}, {3, 20, 49}, {2, 64, 64},
                         {1, 8, 196}, {2, 33, 17}, {2, 3, 35},  {1, 64, 4}};
const Dtype kTypes[] = {Dtype::f32, Dtype::f16, Dtype::bf16};
// The layouts oneDNN's convolutions take here.
const Dtype kBlockTypes[] = {Dtype::f32, Dtype::bf16};

// Values that are not all exact in the 16-bit types, nan and inf among
// them, so that the rounding on the way back is exercised.
std::vector<float> values(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 3.0f);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  if (n > 3) v[1] = INFINITY, v[2] = NAN, v[3] = -70000.0f;
  return v;
}

std::vector<uint8_t> in_type(const std::vector<float>& v, Dtype t) {
  std::vector<uint8_t> r(v.size() * dtype_size(t));
  convert(v.data(), Dtype::f32, r.data(), t, v.size());
  return r;
}

std::vector<float> as_float(const std::vector<uint8_t>& v, Dtype t) {
  std::vector<float> r(v.size() / dtype_size(t));
  convert(v.data(), t, r.data(), Dtype::f32, r.size());
  return r;
}

bool same_bits(const void* a, const void* b, size_t bytes) {
  return std::memcmp(a, b, bytes) == 0;
}

// x rounded to t and read back as float.
float rounded(float x, Dtype t) { return as_float(in_type({x}, t), t)[0]; }

TEST(ChannelBlocks, ScalarFollowsTheLayout) {
  for (const Shape& s : kShapes) {
    for (const int64_t blk : blocks_for(s)) {
      for (Dtype t : kTypes) {
        for (Dtype bt : kBlockTypes) {
          const auto src = in_type(values(s.plain_size(), 1), t);
          const auto src_f = as_float(src, t);
          std::vector<uint8_t> blocked(s.blocked_size(blk) * dtype_size(bt),
                                       0xff);
          cpu::to_channel_blocks_scalar(src.data(), t, blocked.data(), bt, blk,
                                        s.batch, s.channels, s.spatial);
          const auto blocked_f = as_float(blocked, bt);
          const int64_t blocks = s.padded(blk) / blk;
          for (int64_t n = 0; n < s.batch; ++n) {
            for (int64_t c = 0; c < s.padded(blk); ++c) {
              for (int64_t i = 0; i < s.spatial; ++i) {
                const float got =
                    blocked_f[((n * blocks + c / blk) * s.spatial + i) * blk +
                              c % blk];
                const float want =
                    c < s.channels
                        ? rounded(src_f[(n * s.channels + c) * s.spatial + i],
                                  bt)
                        : 0.0f;
                ASSERT_TRUE(got == want || (got != got && want != want))
                    << dtype_name(t) << " into " << dtype_name(bt)
                    << " blocks of " << blk << ": n " << n << " c " << c
                    << " s " << i;
              }
            }
          }
          // And back, with a bias and onto what was there: one rounding of
          // the fp32 sum.
          const auto old = in_type(values(s.plain_size(), 2), t);
          const auto old_f = as_float(old, t);
          std::vector<float> bias(s.channels);
          for (int64_t c = 0; c < s.channels; ++c) bias[c] = 0.25f * c;
          auto out = old;
          cpu::from_channel_blocks_scalar(blocked.data(), bt, out.data(), t,
                                          blk, s.batch, s.channels, s.spatial,
                                          true, bias.data());
          for (int64_t k = 0; k < s.plain_size(); ++k) {
            const int64_t n = k / (s.channels * s.spatial);
            const int64_t c = k / s.spatial % s.channels, i = k % s.spatial;
            const float b =
                blocked_f[((n * blocks + c / blk) * s.spatial + i) * blk +
                          c % blk];
            const auto want = in_type({old_f[k] + (b + bias[c])}, t);
            ASSERT_TRUE(same_bits(out.data() + k * dtype_size(t), want.data(),
                                  dtype_size(t)))
                << dtype_name(bt) << " blocks of " << blk << " into "
                << dtype_name(t) << ": element " << k;
          }
        }
      }
    }
  }
}

TEST(ChannelBlocks, VectorMatchesScalarBitForBit) {
  if (!cpu::channel_blocks_vectorized(8)) {
    GTEST_SKIP() << "this CPU has no AVX2 and F16C: only the scalar path";
  }
  for (const Shape& s : kShapes) {
    for (const int64_t blk : blocks_for(s)) {
      if (!cpu::channel_blocks_vectorized(blk)) {
        std::cout << "blocks of " << blk
                  << ": no vector path here (AVX-512F)\n";
        continue;
      }
      for (Dtype t : kTypes) {
        for (Dtype bt : kBlockTypes) {
          const auto src = in_type(values(s.plain_size(), 3), t);
          const size_t bytes = s.blocked_size(blk) * dtype_size(bt);
          std::vector<uint8_t> want(bytes, 0xff), got = want;
          cpu::to_channel_blocks_scalar(src.data(), t, want.data(), bt, blk,
                                        s.batch, s.channels, s.spatial);
          cpu::to_channel_blocks(src.data(), t, got.data(), bt, blk, s.batch,
                                 s.channels, s.spatial);
          ASSERT_TRUE(same_bits(got.data(), want.data(), bytes))
              << dtype_name(t) << " into " << dtype_name(bt) << " blocks of "
              << blk << ", " << s.channels << " channels, " << s.spatial
              << " spatial";
          std::vector<float> bias(s.channels, 0.5f);
          for (bool accum : {false, true}) {
            for (const float* b : {static_cast<const float*>(nullptr),
                                   static_cast<const float*>(bias.data())}) {
              auto out_want = in_type(values(s.plain_size(), 4), t);
              auto out_got = out_want;
              cpu::from_channel_blocks_scalar(want.data(), bt, out_want.data(),
                                              t, blk, s.batch, s.channels,
                                              s.spatial, accum, b);
              cpu::from_channel_blocks(want.data(), bt, out_got.data(), t, blk,
                                       s.batch, s.channels, s.spatial, accum,
                                       b);
              ASSERT_TRUE(
                  same_bits(out_got.data(), out_want.data(), out_want.size()))
                  << dtype_name(bt) << " blocks of " << blk << " into "
                  << dtype_name(t) << ", " << s.channels << " channels, "
                  << s.spatial << " spatial, accum " << accum << ", bias "
                  << (b != nullptr);
            }
          }
        }
      }
    }
  }
}

TEST(ChannelBlocks, RefusesOtherTypesByName) {
  std::vector<int32_t> src(16);
  std::vector<float> dst(16);
  try {
    cpu::to_channel_blocks(src.data(), Dtype::i32, dst.data(), Dtype::f32, 16,
                           1, 1, 16);
    FAIL() << "int32 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("to_channel_blocks"),
              std::string::npos);
    EXPECT_NE(std::string(e.what()).find(dtype_name(Dtype::i32)),
              std::string::npos)
        << e.what();
  }
}

TEST(ChannelBlocks, RefusesOtherBlockSizes) {
  std::vector<float> src(16), dst(16);
  try {
    cpu::from_channel_blocks(src.data(), Dtype::f32, dst.data(), Dtype::f32, 4,
                             1, 5, 3, false, nullptr);
    FAIL() << "blocks of 4 of 5 channels accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[from_channel_blocks] blocks of 4"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace mg::test::channel_blocks_tests
