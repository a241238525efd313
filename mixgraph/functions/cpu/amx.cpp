#include <mixgraph/functions/cpu/amx.hpp>

#include <sys/syscall.h>
#include <unistd.h>

#include <stdexcept>

#include <mixgraph/contexts/cpu/cpu_features.hpp>
#include <mixgraph/contexts/cpu/transpose_avx512.hpp>
#include <mixgraph/contexts/strings.hpp>
#include <mixgraph/graph/profile.hpp>

#define MG_TARGET_AMX __attribute__((target("amx-tile,amx-bf16")))
#define MG_TARGET_PAIRS __attribute__((target("avx512f,avx512bw")))

namespace mg::cpu {

namespace {

// Linux hands a process the tiles' 8 KB of state only when asked
// (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); without it the
// first tile instruction is a SIGILL.
constexpr long kReqXcompPerm = 0x1023;
constexpr long kXfeatureXtiledata = 18;

// ldtilecfg's 64 bytes: palette 1, eight tiles of 16 rows of 64 bytes.
struct alignas(64) TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};

// Static: GCC 12 does not see ldtilecfg read its operand, and dropped the
// stores that filled one on the stack (a SIGSEGV on the zeroed config).
const TileConfig kTiles = [] {
  TileConfig c;
  for (int t = 0; t < 8; ++t) {
    c.bytes_per_row[t] = 64;
    c.rows[t] = 16;
  }
  return c;
}();

MG_TARGET_AMX void load_tiles() { _tile_loadconfig(&kTiles); }
MG_TARGET_AMX void release_tiles() { _tile_release(); }

// C's 32 x 32 block at c, kept in tiles 0-3 (its four 16 x 16 quarters)
// over every term's k, 32 at a time: tiles 4-5 the two 16-row strips of
// the term's A, 6-7 the two 16-column strips of its B. C is loaded and
// stored once for the terms together: with a call a term, each loading
// the C the one before had just stored, perf put a third of these
// products' samples on loading C, and their share of the GPT's bfloat16
// step went from 5.7% to 4.1% of the samples with one call.
MG_TARGET_AMX void product_32x32(int64_t k, const AmxTerm* terms, int count,
                                 float* c, int64_t ldc, bool accum) {
  const int64_t c_stride = ldc * 4;
  if (accum) {
    _tile_loadd(0, c, c_stride);
    _tile_loadd(1, c + 16, c_stride);
    _tile_loadd(2, c + 16 * ldc, c_stride);
    _tile_loadd(3, c + 16 * ldc + 16, c_stride);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  for (int t = 0; t < count; ++t) {
    const BFloat16* a = terms[t].a;
    const uint32_t* b = terms[t].b;
    const int64_t lda = terms[t].lda, ldb = terms[t].ldb;
    const int64_t a_stride = lda * 2, b_stride = ldb * 4;
    for (int64_t k0 = 0; k0 < k; k0 += 32) {
      _tile_loadd(4, a + k0, a_stride);
      _tile_loadd(5, a + 16 * lda + k0, a_stride);
      _tile_loadd(6, b + k0 / 2 * ldb, b_stride);
      _tile_loadd(7, b + k0 / 2 * ldb + 16, b_stride);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(1, 4, 7);
      _tile_dpbf16ps(2, 5, 6);
      _tile_dpbf16ps(3, 5, 7);
    }
  }
  _tile_stored(0, c, c_stride);
  _tile_stored(1, c + 16, c_stride);
  _tile_stored(2, c + 16 * ldc, c_stride);
  _tile_stored(3, c + 16 * ldc + 16, c_stride);
}

MG_TARGET_PAIRS void pair_rows_avx512(const uint16_t* x, int64_t ld,
                                      int64_t rows, int64_t cols, uint32_t* out,
                                      int64_t ldo) {
  for (int64_t q = 0; 2 * q < rows; ++q) {
    const uint16_t* lo = x + 2 * q * ld;
    const uint16_t* hi = lo + ld;
    uint32_t* o = out + q * ldo;
    for (int64_t j = 0; j < cols; ++j) {
      o[j] = lo[j] | static_cast<uint32_t>(hi[j]) << 16;
    }
  }
}

MG_TARGET_AVX512 void split_bf16_avx512(const float* x, int64_t n, BFloat16* hi,
                                        BFloat16* lo) {
  for (int64_t i = 0; i < n; i += 16) {
    const __m512 v = _mm512_loadu_ps(x + i);
    avx512::store16(hi + i, v);
    avx512::store16(lo + i, _mm512_sub_ps(v, avx512::load16(hi + i)));
  }
}

MG_TARGET_AVX512 void transpose_words_avx512(const uint32_t* src, int64_t rows,
                                             int64_t cols, int64_t lds,
                                             uint32_t* dst, int64_t ldd) {
  for (int64_t i = 0; i < rows; i += 16) {
    for (int64_t j = 0; j < cols; j += 16) {
      __m512 r[16];
      for (int t = 0; t < 16; ++t) {
        r[t] = _mm512_castsi512_ps(_mm512_loadu_si512(src + (i + t) * lds + j));
      }
      avx512::transpose16(r);
      for (int t = 0; t < 16; ++t) {
        _mm512_storeu_si512(dst + (j + t) * ldd + i, _mm512_castps_si512(r[t]));
      }
    }
  }
}

}  // namespace

bool amx_available() {
  const CpuFeatures& cpu = cpu_features();
  if (!cpu.amx_bf16 || !cpu.avx512f || !cpu.avx512bw) return false;
  static const bool permitted =
      syscall(SYS_arch_prctl, kReqXcompPerm, kXfeatureXtiledata) == 0;
  return permitted;
}

AmxTiles::AmxTiles() { load_tiles(); }
AmxTiles::~AmxTiles() { release_tiles(); }

void amx_product(int64_t m, int64_t n, int64_t k,
                 std::initializer_list<AmxTerm> terms, float* c, int64_t ldc,
                 bool accum) {
  const FunctionProfile::ProductScope timed;
  AmxTerm at[2];
  const int count = static_cast<int>(terms.size());
  if (count < 1 || count > 2) {
    throw std::invalid_argument(
        msg("[amx_product] ", count, " terms; it sums one or two"));
  }
  for (int64_t i = 0; i < m; i += 32) {
    for (int64_t j = 0; j < n; j += 32) {
      int t = 0;
      for (const AmxTerm& term : terms) {
        at[t++] = {term.a + i * term.lda, term.lda, term.b + j, term.ldb};
      }
      product_32x32(k, at, count, c + i * ldc + j, ldc, accum);
    }
  }
}

void split_bf16(const float* x, int64_t n, BFloat16* hi, BFloat16* lo) {
  split_bf16_avx512(x, n, hi, lo);
}

void pair_rows(const BFloat16* x, int64_t ld, int64_t rows, int64_t cols,
               uint32_t* out, int64_t ldo) {
  pair_rows_avx512(reinterpret_cast<const uint16_t*>(x), ld, rows, cols, out,
                   ldo);
}

void transpose_words(const uint32_t* src, int64_t rows, int64_t cols,
                     int64_t lds, uint32_t* dst, int64_t ldd) {
  transpose_words_avx512(src, rows, cols, lds, dst, ldd);
}

}  // namespace mg::cpu
