// Where a step's time goes: while a FunctionProfile is alive, every
// function's forward and backward and every solver's update (one a call of
// update(), one a parameter in backward_and_update()) add their wall time to
// it, by name ("Affine forward", "Affine backward", "Adam update"). NNabla's
// GraphProfiler and PyTorch's profiler answer the same question; this one costs
// two clock reads a call while it records and one relaxed atomic load while it
// does not.
//
// Times are the host's: on a device backend they are launch times, unless
// the profile is given the device, which it then waits for before and
// after each call, so that a call's time is its kernels' (plus a wait's
// cost, some microseconds a call: the shares are the information, not the
// sum). A function run inside another's forward or backward counts as the
// outer one's time, so that the entries add up to no more than the step.
//
// Beside the functions, the CPU's matrix products and convolutions time
// themselves (ProductScope, at the few places they run: gemm(), the packed
// products, oneDNN's convolutions, our Winograd ones): product_seconds() is
// how much of the step they took, without their functions' other work (a
// bias sum, the cells of a recurrent step, attention's softmax), so that a
// model's products can be held to the FMA peak on their own.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace mg {

class FunctionProfile {
 public:
  struct Time {
    double seconds = 0;
    int64_t calls = 0;
  };

  /// Starts recording. One profile records at a time: a second while one
  /// is alive is an error (std::logic_error), not a silent split. With a
  /// device ("cuda:0"), each call waits for it before and after, so that
  /// the times are the device's; "" or "cpu" times the host alone.
  explicit FunctionProfile(const std::string& device = "");
  ~FunctionProfile();
  FunctionProfile(const FunctionProfile&) = delete;
  FunctionProfile& operator=(const FunctionProfile&) = delete;

  /// What was recorded so far, by "<function> forward", "<function>
  /// backward" and "<solver> update".
  std::map<std::string, Time> times() const;
  /// The sum of every entry's seconds.
  double total_seconds() const;
  /// The CPU's products' share of the wall time so far: each outermost
  /// product called outside a parallel region adds its wall time (it runs
  /// on the whole team), one called by a thread of a team of N (attention's
  /// blocks, a recurrent step's bands) a 1/N share of its own, so that a
  /// team that only multiplies adds its wall time once.
  double product_seconds() const;
  /// Forgets what was recorded (a warmup step, say).
  void clear();

  /// Whether a profile records now (for the call sites below).
  static bool recording();
  /// Times one call from construction to destruction into the profile that
  /// records, if any, under `name` + `what` (" forward").
  class Scope {
   public:
    Scope(std::string_view name, const char* what);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    std::string key_;  // empty: nothing records, or an inner call
    int64_t start_ns_ = 0;
    bool counted_ = false;  // this call raised the thread's depth
  };

  /// Times one product (a call of gemm(), a convolution primitive's run)
  /// into product_seconds() of the profile that records, if any. A product
  /// inside another on the same thread, or on a team's thread while an
  /// outer product runs on the whole team, adds nothing of its own. The
  /// whole-team count is the process's: the profile times one step at a
  /// time (two threads stepping at once would skip each other's teams).
  class ProductScope {
   public:
    ProductScope();
    ~ProductScope();
    ProductScope(const ProductScope&) = delete;
    ProductScope& operator=(const ProductScope&) = delete;

   private:
    int64_t start_ns_ = -1;    // -1: not timed
    int team_size_ = 1;        // the share of the wall time is 1 / team_size_
    bool counted_ = false;     // this call raised the thread's depth
    bool whole_team_ = false;  // an outermost product outside a team
  };

 private:
  struct State;
  State* state_ = nullptr;
};

}  // namespace mg
