// Batches into variables, the error rate over a dataset with a padded last
// batch, and the Ctrl-C guard.
#include <gtest/gtest.h>

#include <signal.h>

#include <csignal>

#include <mixgraph/functions/loss.hpp>
#include <mixgraph/graph/variable.hpp>
#include <mixgraph/utils/data/feed.hpp>
#include <mixgraph/utils/interrupt.hpp>

namespace mg::test {
namespace {

// 10 images of 2x2; image i's brightest pixel is i % 4, and its label is
// that pixel except for images 0, 3 and 7 (so a network answering "the
// brightest pixel" gets exactly those three wrong).
ImageDataset tiny() {
  ImageDataset d;
  d.size = 10;
  d.height = d.width = 2;
  d.classes = 4;
  for (int i = 0; i < 10; ++i) {
    for (int p = 0; p < 4; ++p) {
      d.images.push_back(static_cast<uint8_t>(p == i % 4 ? 200 + i : 10 * p));
    }
    const bool wrong = i == 0 || i == 3 || i == 7;
    d.labels.push_back(static_cast<uint8_t>(wrong ? (i + 1) % 4 : i % 4));
  }
  return d;
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no std::invalid_argument)";
}

TEST(Feed, ImagesAreScaledAndLabelsCopiedInOrder) {
  const ImageDataset d = tiny();
  auto x = make_variable({2, 1, 2, 2});
  auto t = make_variable({2, 1});
  feed_images(d, {5, 2}, *x);
  feed_labels(d, {5, 2}, *t);
  const float* px = x->data()->get<const float>();
  EXPECT_EQ(px[0], 0.0f);              // image 5, pixel 0
  EXPECT_EQ(px[1], 205 / 255.0f);      // its brightest, pixel 1
  EXPECT_EQ(px[4 + 2], 202 / 255.0f);  // image 2, pixel 2
  EXPECT_EQ(t->data()->get<const float>()[0], 1.0f);
  EXPECT_EQ(t->data()->get<const float>()[1], 2.0f);

  auto flat = make_variable({1, 4});
  feed_images(d, {1}, *flat, {0.5f, 0.25f});
  EXPECT_EQ(flat->data()->get<const float>()[1], (201 / 255.0f - 0.5f) / 0.25f);
  EXPECT_EQ(flat->data()->get<const float>()[0], (0 / 255.0f - 0.5f) / 0.25f);

  auto labels = make_variable({3});
  labels->data()->cast<int32_t>();
  feed_labels(d, {0, 1, 3}, *labels);
  EXPECT_EQ(labels->data()->array().dtype(), Dtype::i32);
  EXPECT_EQ(labels->data()->get<const int32_t>()[2], 0);  // (3 + 1) % 4
}

TEST(Feed, WrongShapesAndIndicesAreNamed) {
  const ImageDataset d = tiny();
  auto x = make_variable({2, 4, 1});
  EXPECT_NE(error_of([&] {
              feed_images(d, {0, 1}, *x);
            })
                .find("[feed_images] x must have shape (2, 1, 2, 2) or (2, 4) "
                      "for 2 images of 2x2, got (2, 4, 1)"),
            std::string::npos);
  auto t = make_variable({3, 1});
  EXPECT_NE(error_of([&] {
              feed_labels(d, {0, 1}, *t);
            })
                .find("[feed_labels] t must have shape (2, 1) or (2,) for 2 "
                      "labels, got (3, 1)"),
            std::string::npos);
  auto ok = make_variable({1, 4});
  EXPECT_NE(error_of([&] {
              feed_images(d, {10}, *ok);
            }).find("index 10 is outside the dataset's 10 examples"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              feed_images(d, {1}, *ok, {0.0f, 0.0f});
            }).find("scaling.std must be positive"),
            std::string::npos);
}

// The "network" answers the brightest pixel: 3 of 10 wrong, whatever the
// batch size; a padded last batch (image 0, which is wrong) must not count.
TEST(Feed, ErrorRateCountsEveryImageOnceWithAPaddedLastBatch) {
  const ImageDataset d = tiny();
  for (int64_t n : {1, 3, 4, 10, 16}) {
    SCOPED_TRACE(n);
    auto x = make_variable({n, 4});
    auto t = make_variable({n, 1});
    auto error = functions::top_n_error(x, t);
    EXPECT_DOUBLE_EQ(evaluate_error_rate(d, x, t, error), 0.3);
  }
  auto x = make_variable({3, 4});
  auto t = make_variable({3, 1});
  auto not_per_example = make_variable({2});
  EXPECT_NE(error_of([&] { evaluate_error_rate(d, x, t, not_per_example); })
                .find("error must hold one value per example (3 for x of "
                      "shape (3, 4)), got shape (2,)"),
            std::string::npos);
}

// ---- InterruptGuard ----

void (*current_sigint())(int) {
  struct sigaction now;
  sigaction(SIGINT, nullptr, &now);
  return now.sa_handler;
}

TEST(InterruptGuard, CtrlCStopsTheLoopAndSavesOnceThenRestoresTheHandler) {
  InterruptGuard::clear();
  void (*before)(int) = current_sigint();
  int saves = 0, steps = 0;
  {
    InterruptGuard guard([&] { ++saves; });
    EXPECT_NE(current_sigint(), before) << "the guard installs its handler";
    for (; steps < 100 && !guard.stop(); ++steps) {
      if (steps == 4) std::raise(SIGINT);  // Ctrl-C during step 4
    }
    EXPECT_EQ(steps, 5) << "the loop stops after the step that saw Ctrl-C";
    EXPECT_EQ(saves, 1);
    EXPECT_TRUE(guard.stop());
    EXPECT_EQ(saves, 1) << "saved once";
    EXPECT_TRUE(InterruptGuard::requested());
    // The handler reset itself: a second Ctrl-C would end the process.
    EXPECT_EQ(current_sigint(), SIG_DFL);
  }
  EXPECT_EQ(current_sigint(), before) << "the old handler is back";
  InterruptGuard::clear();
  EXPECT_FALSE(InterruptGuard::requested());
}

TEST(InterruptGuard, NestedGuardsEachSaveAndClearRearms) {
  InterruptGuard::clear();
  int outer_saves = 0, inner_saves = 0;
  InterruptGuard outer([&] { ++outer_saves; });
  {
    InterruptGuard inner([&] { ++inner_saves; });
    EXPECT_FALSE(inner.stop());
    std::raise(SIGINT);
    EXPECT_TRUE(inner.stop());
  }
  EXPECT_TRUE(outer.stop());
  EXPECT_EQ(inner_saves, 1);
  EXPECT_EQ(outer_saves, 1);
  InterruptGuard::clear();
  EXPECT_FALSE(outer.stop());
  EXPECT_NE(current_sigint(), SIG_DFL) << "clear() re-arms the handler";
  std::raise(SIGINT);
  EXPECT_TRUE(outer.stop());
  EXPECT_EQ(outer_saves, 2) << "a Ctrl-C after clear() saves again";
  InterruptGuard::clear();
}

TEST(InterruptGuard, AFailedSaveIsReportedAndTriedAgain) {
  InterruptGuard::clear();
  int tries = 0;
  InterruptGuard guard([&] {
    if (++tries == 1) throw std::runtime_error("disk full");
  });
  std::raise(SIGINT);
  EXPECT_THROW(guard.stop(), std::runtime_error);
  EXPECT_TRUE(guard.stop());
  EXPECT_EQ(tries, 2);
  InterruptGuard::clear();
}

}  // namespace
}  // namespace mg::test
