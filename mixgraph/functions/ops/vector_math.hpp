// fp32 exp, expm1, log, log1p, tanh and sigmoid for the elementwise
// functors, written so that the compiler vectorizes them: no branches (every
// case is a select), no calls, no tables, only + - * / and integer bit
// operations. libm's expf and tanhf are calls the loops cannot vectorize
// (glibc's vector variants are declared only under -ffast-math), and they
// were a quarter of a GPT step's time (GELU's tanh). These run 16 wide
// under AVX-512 and give the same bits at every width and on the device,
// since they use no FMA (contraction is off in ISO C++).
//
// Accuracy over the whole float range, measured against double precision
// by tests/functions/test_vector_math.cpp (every 7th float): exp 1.3 ulp,
// expm1 1.0, log 0.82, log1p 2.5, tanh 2.5, sigmoid 2.6 at worst (libm's
// expf 0.5, tanhf 2.2); infinities, nan, -0 and subnormals as libm gives
// them. The polynomials are Cephes' (S. Moshier),
// the range reductions the usual Cody-Waite splits.
#pragma once

#include <cstdint>
#include <cstring>

#include <mixgraph/contexts/macros.hpp>

namespace mg::vmath {

namespace detail {

#if defined(__CUDA_ARCH__)
__device__ inline int32_t bits_of(float x) { return __float_as_int(x); }
__device__ inline float float_of(int32_t b) { return __int_as_float(b); }
#else
inline int32_t bits_of(float x) {
  int32_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}
inline float float_of(int32_t b) {
  float x;
  std::memcpy(&x, &b, sizeof x);
  return x;
}
#endif
constexpr int32_t kInfBits = 0x7f800000, kNanBits = 0x7fc00000;

/// 2^k for k in [-126, 127], exactly (128 gives inf).
MG_HD inline float pow2(int32_t k) { return float_of((k + 127) << 23); }

/// x rounded to the nearest integer (ties to even), for |x| < 2^22: adding
/// and subtracting 1.5 * 2^23 leaves the integer part (SSE2 has no round).
MG_HD inline float round_near(float x) {
  constexpr float kShift = 12582912.0f;
  return (x + kShift) - kShift;
}

constexpr float kLog2e = 1.44269504088896341f;
// ln 2 split so that n * kLn2Hi is exact for |n| < 2^8.
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440e-4f;

/// e^r - 1 - r for |r| <= ln(2) / 2, as r^2 p(r) (Cephes' expf).
MG_HD inline float expm1_tail(float r) {
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * r * r;
}

}  // namespace detail

/// e^x.
MG_HD inline float exp(float x) {
  using namespace detail;
  const bool nan = x != x;
  // Past these e^x is inf or 0 in float; clamped, the scaling below still
  // overflows or underflows to them.
  float xc = x > 89.0f ? 89.0f : x;
  xc = xc < -104.0f ? -104.0f : xc;
  xc = nan ? 0.0f : xc;
  const float n = round_near(xc * kLog2e);
  const float r = (xc - n * kLn2Hi) - n * kLn2Lo;
  const float p = 1.0f + r + expm1_tail(r);
  // 2^n in two factors, each a normal float for n in [-151, 129].
  const int32_t k = static_cast<int32_t>(n);
  const int32_t k1 = k / 2;
  const float y = p * pow2(k1) * pow2(k - k1);
  return nan ? x : y;
}

/// e^x - 1 for x <= 0 (tanh's, ELU's and SELU's argument), accurate where
/// e^x - 1 loses digits (small |x|); positive x gives 0.
MG_HD inline float expm1_nonpositive(float x) {
  using namespace detail;
  const bool nan = x != x;
  // Below -30, e^x - 1 rounds to -1.
  float xc = x < -30.0f ? -30.0f : x;
  xc = xc > 0.0f ? 0.0f : xc;
  xc = nan ? 0.0f : xc;
  const float n = round_near(xc * kLog2e);
  const float r = (xc - n * kLn2Hi) - n * kLn2Lo;
  const float q = r + expm1_tail(r);  // e^r - 1
  // e^x - 1 = 2^n (e^r - 1) + (2^n - 1); both terms exact but the sum.
  const float t = pow2(static_cast<int32_t>(n));
  const float y = (t - 1.0f) + t * q;
  return nan ? x : y;
}

/// The natural logarithm: -inf at +-0, nan below 0.
MG_HD inline float log(float x) {
  using namespace detail;
  // Subnormals scaled into the normal range first.
  const bool tiny = x < 1.17549435e-38f;
  const float xs = tiny ? x * 8388608.0f : x;  // 2^23
  const int32_t b = bits_of(xs);
  // x = 2^e m with m in [sqrt(1/2), sqrt(2)).
  int32_t e = ((b >> 23) & 0xff) - 127;
  float m = float_of((b & 0x007fffff) | 0x3f800000);
  const bool high = m > 1.41421356f;
  m = high ? 0.5f * m : m;
  e = high ? e + 1 : e;
  const float ef = static_cast<float>(tiny ? e - 23 : e);
  const float f = m - 1.0f;
  const float z = f * f;
  float p = 7.0376836292e-2f;
  p = p * f - 1.1514610310e-1f;
  p = p * f + 1.1676998740e-1f;
  p = p * f - 1.2420140846e-1f;
  p = p * f + 1.4249322787e-1f;
  p = p * f - 1.6668057665e-1f;
  p = p * f + 2.0000714765e-1f;
  p = p * f - 2.4999993993e-1f;
  p = p * f + 3.3333331174e-1f;
  float y = p * f * z;
  y = y + ef * kLn2Lo;
  y = y - 0.5f * z;
  y = (f + y) + ef * kLn2Hi;
  // The cases the reduction does not cover, as libm gives them.
  const float kInf = float_of(kInfBits);
  y = x == 0.0f ? -kInf : y;
  y = x < 0.0f ? float_of(kNanBits) : y;
  y = x == kInf ? kInf : y;
  return x != x ? x : y;
}

/// log(1 + x), accurate for small |x| (Goldberg: log(u) x / (u - 1) with
/// u = 1 + x rounded, which cancels u's rounding error).
MG_HD inline float log1p(float x) {
  const float u = 1.0f + x;
  const float d = u - 1.0f;
  const bool exact = d == 0.0f;
  const float y = log(u) * (x / (exact ? 1.0f : d));
  // Where 1 + x rounds to 1, log1p(x) = x; at inf, inf (not inf * nan).
  return exact ? x : (u == detail::float_of(detail::kInfBits) ? u : y);
}

/// tanh(x) = -expm1(-2|x|) / (expm1(-2|x|) + 2), with x's sign.
MG_HD inline float tanh(float x) {
  const float a = x < 0.0f ? -x : x;
  const float e = expm1_nonpositive(-2.0f * a);
  const float t = -e / (e + 2.0f);
  return x < 0.0f ? -t : (x == 0.0f ? x : t);
}

/// 1 / (1 + e^-x), from e^-|x| so that nothing overflows: e^x / (1 + e^x)
/// below 0 keeps the tiny values that 1 / (1 + inf) would make 0.
MG_HD inline float sigmoid(float x) {
  const float e = exp(x < 0.0f ? x : -x);
  return (x < 0.0f ? e : 1.0f) / (1.0f + e);
}

}  // namespace mg::vmath
