// bf16 products on AMX tiles (TDPBF16PS: 16 x 16 fp32 sums, each the dot
// product of a row of A and a column of B, 32 bf16 deep) for blocks whose
// every side is whole tiles, and the layouts that feed them: B as pairs of
// rows (each 32-bit word a column's two consecutive elements, the lower
// row's in the low half) and 32-bit transposes. oneDNN runs the large
// products on AMX itself; these are for blocks too small for a call of
// its own (attention's, cpu/attention.cpp).
#pragma once

#include <cstdint>
#include <initializer_list>

#include <mixgraph/contexts/half.hpp>

namespace mg::cpu {

/// Whether amx_product() runs here: AMX-BF16 within the ISA cap of
/// cpu_features(), and Linux lets this process use the tiles' state (asked
/// for once, the first time; oneDNN asks for the same).
bool amx_available();

/// The tiles configured on the calling thread for amx_product() while it
/// lives, released (their state back to its initial, empty one) at its
/// end. Needs amx_available().
class AmxTiles {
 public:
  AmxTiles();
  ~AmxTiles();
  AmxTiles(const AmxTiles&) = delete;
  AmxTiles& operator=(const AmxTiles&) = delete;
};

/// One product of amx_product()'s sum: A (m x k bf16, rows lda apart)
/// and B as k / 2 rows of n pairs (rows ldb 32-bit words apart;
/// pair_rows()).
struct AmxTerm {
  const BFloat16* a;
  int64_t lda;
  const uint32_t* b;
  int64_t ldb;
};

/// C (m x n fp32, rows ldc apart) = the sum of one or two terms' A B [+ C
/// where accum], the products of bf16 summed in fp32 (two terms: an
/// operand in two bf16 parts, split_bf16(), with C held in the tiles over
/// both). m and n multiples of 32, k of 32, on the calling thread under
/// an AmxTiles. Sums within a tile's dot products flush subnormals to
/// zero, as AMX does.
void amx_product(int64_t m, int64_t n, int64_t k,
                 std::initializer_list<AmxTerm> terms, float* c, int64_t ldc,
                 bool accum);

/// x (n fp32, n a multiple of 16) in two bf16 parts: hi, x rounded to
/// bf16, and lo, what is left (x - hi) rounded. hi + lo is x to about
/// 2^-17 of it, where hi alone is off by up to 2^-9: the two products of a
/// split operand lose far less than the bf16 inputs and outputs round
/// away. (An inf splits into inf and NaN.)
void split_bf16(const float* x, int64_t n, BFloat16* hi, BFloat16* lo);

/// Rows [0, rows) of x (cols used, rows ld apart; rows even) as rows / 2
/// rows of cols 32-bit words (ldo apart): word (q, j) holds x[2q][j] in
/// its low half and x[2q + 1][j] in its high half. As amx_product()'s B
/// it is x.
void pair_rows(const BFloat16* x, int64_t ld, int64_t rows, int64_t cols,
               uint32_t* out, int64_t ldo);

/// dst (cols x rows, rows ldd apart) = src^T (rows x cols 32-bit values,
/// rows lds apart); rows and cols multiples of 16. K (keys x E bf16) read
/// as keys x E / 2 words and turned is amx_product()'s B for K^T; a pair
/// of rows turned is a transposed matrix's rows; and fp32 sums are 32-bit
/// values too.
void transpose_words(const uint32_t* src, int64_t rows, int64_t cols,
                     int64_t lds, uint32_t* dst, int64_t ldd);

}  // namespace mg::cpu
