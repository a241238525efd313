// Matrix products on the CPU through oneDNN, accumulating in fp32.
#pragma once

#include <cstdint>
#include <memory>

#include <mixgraph/contexts/memory.hpp>
#include <mixgraph/functions/cpu/cpu_utils.hpp>

namespace mg::cpu {

/// C (m x n) = op(A) (m x k) * op(B) (k x n) [+ bias (n)] [+ C if accum],
/// row-major, op = transpose where ta / tb, accumulated in fp32. C is T:
/// float, Half or BFloat16; A and B may each be fp32, fp16 or bf16 (a
/// parameter's fp32 master copy, half activations for a float C); the bias,
/// when given, is fp32. Primitives are cached per shape. oneDNN computes in
/// bf16 where its bf16 kernels pay (compute_type) and C or both operands
/// are bf16; a product with another 16-bit operand or C (always for Half:
/// oneDNN 2.6 has no fp16 kernels) runs our own (gemm_packed.hpp), with no
/// scratch copies: it converts while it packs and rounds C as it writes it.
/// fp32 products are oneDNN's. On a CPU without AVX2, FMA and F16C,
/// operands of another type than the compute type go through scratch
/// buffers and an fp32 result is rounded to T once.
/// With batch > 1, `batch` such products of matrices stored one after the
/// other in A, B and C, in one call (attention's small products: one call,
/// and where there is scratch one conversion per operand, not one per
/// matrix); the bias must then be null.
/// c_finite, where not null, is set to whether the call saw every element
/// of C finite as it wrote it: true only where our own product wrote an
/// fp32 C (a parameter's grad in half: Affine marks it, and the loss
/// scaler's check skips it, SyncedArray::mark_finite); false where C holds
/// an inf or NaN, or where no one looked (oneDNN's kernels, a 16-bit C).
template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, Operand a,
          Operand b, T* c, const float* bias = nullptr, bool accum = false,
          int64_t batch = 1, bool* c_finite = nullptr);

/// As above with both operands of type T.
template <class T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a,
          const T* b, T* c, const float* bias = nullptr, bool accum = false,
          int64_t batch = 1) {
  gemm<T>(ta, tb, m, n, k, Operand{a, dtype_of<T>}, Operand{b, dtype_of<T>}, c,
          bias, accum, batch);
}

/// Whether gemm() reads fp16 and bf16 operands as they are, converting them
/// as it packs them (our own product, gemm_packed.hpp, on every CPU with
/// AVX2, FMA and F16C): then no fp32 copy of a 16-bit activation is made.
bool gemm_converts_operands();

/// An activation (x or dy) as a product's operand: where the products of T
/// compute in fp32 (Half; BFloat16 without bf16 kernels) and gemm() does
/// not convert operands itself (gemm_converts_operands()), converted once
/// into `scratch`, which the caller keeps as long as the products that read
/// it (dy serves both products of a backward), so that no fp32 copy
/// outlives the call. Data held in fp32 (fed in fp32) is read as it is; a
/// grad is always read as T, so that a loss scale that overflows T shows as
/// inf. Elsewhere the T array itself.
template <class T>
Operand product_operand(const NdArrayPtr& a, bool is_grad,
                        std::unique_ptr<Memory>& scratch) {
  if (std::is_same_v<T, float> || compute_type<T>() != Dtype::f32) {
    return {a->get<const T>(), dtype_of<T>};
  }
  const SyncedArray& array = a->array();
  if (!is_grad && (array.filling() || array.has_copy(Dtype::f32))) {
    return {a->get<const float>(), Dtype::f32};
  }
  if (gemm_converts_operands()) return {a->get<const T>(), dtype_of<T>};
  const T* p = a->get<const T>();
  scratch = CpuAllocator::instance().allocate(a->size() * sizeof(float));
  convert(p, dtype_of<T>, scratch->ptr(), Dtype::f32, a->size());
  return {scratch->ptr(), Dtype::f32};
}

/// The products C = A op(B) [+ bias] [+ C] of one shape with one B used
/// many times (a recurrent layer's Wh, once per step): B is stored once in
/// the layout the kernel reads, so that no product packs it again. C is
/// fp32; A and B have one type, fp32, or bf16 where oneDNN has bf16
/// kernels (as gemm() computes). fp32 runs our own product (gemm_packed.hpp's
/// PackedB, on every CPU with AVX2, FMA and F16C; gemm.cpp says what it
/// ran against), bf16 our own on AVX512-BF16 (gemm_bf16.hpp's PackedBf16B,
/// which threads can share out by columns), else oneDNN's on its blocked
/// layout (a 32 x 2048 x 512 step: 0.26 -> 0.20 ms against a plain B). B is
/// copied: it may change after.
struct GemmPlan;    // gemm.cpp's cached primitive
class PackedB;      // gemm_packed.hpp
class PackedBf16B;  // gemm_bf16.hpp

class GemmFixedB {
 public:
  GemmFixedB(bool tb, int64_t m, int64_t n, int64_t k, Operand b,
             bool bias = false, bool accum = false);
  ~GemmFixedB();
  /// C (m x n) = A (m x k, row-major) op(B) [+ bias] [+ C when accum].
  void operator()(Operand a, float* c, const float* bias = nullptr) const;
  /// Whether B was stored once in another layout than the plain one it came
  /// in (our tile's panels, or oneDNN's blocked one): what saves a step's
  /// product its B traffic. False for an empty product.
  bool b_relaid() const;
  /// B in our tile's panels (fp32), or null (bf16, or an empty product).
  const PackedB* packed() const { return packed_.get(); }
  /// B in our bf16 tile's panels, or null (fp32, oneDNN's kernel, or an
  /// empty product).
  const PackedBf16B* packed_bf16() const { return packed_bf16_.get(); }
  bool accum() const { return accum_; }

 private:
  Dtype type_;
  int64_t m_, n_;
  bool bias_, accum_;
  std::unique_ptr<PackedB> packed_;           // fp32: B in our tile's panels
  std::unique_ptr<PackedBf16B> packed_bf16_;  // bf16 on AVX512-BF16
  // Else oneDNN's kernel and B in its blocked layout; null where m, n or k
  // is 0.
  const GemmPlan* plan_ = nullptr;
  std::unique_ptr<Memory> b_;
};

}  // namespace mg::cpu
