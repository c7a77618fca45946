// Host-side quantization and packing of 4-bit weights into the Marlin kernel layout.
// Host-only; compiles with a plain C++17 compiler (no CUDA headers).
//
// What it holds:
// - exact IEEE fp16 <-> fp32 conversion on uint16_t bit patterns (half_to_float, float_to_half);
// - group-wise symmetric round-to-nearest quantization (quantize) and its inverse (dequantize);
// - packing of codes and scales into the layout the kernel reads (pack_weights, pack_scales),
//   their exact inverses (unpack_weights, unpack_scales), and quantize_and_pack for the whole
//   path from a weight matrix to kernel-ready buffers.
//
// Why the weight layout looks the way it does. The kernel multiplies with
// mma.sync.m16n8k16, whose B operand (k16 x n8) is spread over a warp: lane = 4*g + t holds
// the rows {2t, 2t+1, 2t+8, 2t+9} of column g. Packing stores, for each 16x16 tile (two n8
// tiles side by side), exactly the 8 codes one lane needs in one 32-bit word, so a lane's
// whole B fragment is a single 32-bit load and no shuffle is needed. Within the word the
// nibbles are interleaved in the order 0,2,4,6,1,3,5,7 of the fragment: nibble i and nibble
// i+4 are then the low nibbles of the two 16-bit halves, so one lop3 with the mask 0x000f000f
// (OR-ed with the fp16 exponent 0x6400) turns the pair (row 2t, row 2t+1) into two fp16
// lanes 1024+q, and shifting the word by 4 exposes the next pair. Four 16-column tiles
// (j = 0..3) of the same lane sit in consecutive words, so a lane reads a 64-column chunk of
// 16 rows with one 16-byte load.
//
// Packed weights: uint32 words, shape [k/16][2*n]. For row block kb and 64-column chunk c,
// word [kb][128*c + 4*lane + j] (t = lane % 4, g = lane / 4) holds in nibble i (bits
// 4i..4i+3) the code of element (16*kb + r, 64*c + 16*j + col), with (r, col) =
//   i=0: (2t, g)   i=1: (2t+8, g)   i=2: (2t, g+8)   i=3: (2t+8, g+8)
//   i=4: (2t+1, g) i=5: (2t+9, g)   i=6: (2t+1, g+8) i=7: (2t+9, g+8)
//
// Packed scales follow the order in which the kernel's lanes produce output columns:
// - grouped (group_size != -1): [k/group_size][n]; within every 64-column block of a row,
//   stored position 8*i + j (i, j in 0..7) holds original column i + 8*j;
// - per-channel (group_size == -1): one row [n]; within every 32-column block, stored
//   position 8*i + jj (i in 0..3, jj in 0..7) holds original column 2*i + off[jj], with
//   off = {0, 1, 8, 9, 16, 17, 24, 25}.
//
// Quantization: for each group of group_size consecutive rows (the whole k when
// group_size == -1) and each column, s = fp16(max|w| / 7.5) (s = 1 when that is 0), and
// q = clamp(round_half_to_even(w / s) + 8, 0, 15). The kernel computes w' = (q - 8) * s.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "marlin/status.hpp"

namespace marlin {

// ---------------------------------------------------------------------------------------------
// fp16 <-> fp32
// ---------------------------------------------------------------------------------------------

/// Converts an IEEE binary16 bit pattern to float. Exact for every input: subnormals become
/// normal floats, +-0 and +-inf keep their sign, a NaN stays a NaN with its sign and its 10
/// payload bits moved to the top of the float payload.
inline float half_to_float(uint16_t h) noexcept {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1Fu;
  const uint32_t mantissa = h & 0x3FFu;
  uint32_t bits;
  if (exponent == 0x1Fu) {
    bits = sign | 0x7F800000u | (mantissa << 13);  // inf or NaN
  } else if (exponent != 0) {
    bits = sign | ((exponent + (127 - 15)) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    bits = sign;  // +-0
  } else {
    // Subnormal: mantissa * 2^-24, exact in float (mantissa < 2^10).
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;  // 2^-24
    std::memcpy(&bits, &magnitude, sizeof(bits));
    bits |= sign;
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

/// Converts a float to the nearest IEEE binary16 bit pattern, ties to even, independent of the
/// current floating-point rounding mode. Magnitudes from 65520 up (and inf) give inf;
/// magnitudes below the smallest subnormal 2^-24 round to a correctly signed 0 or to 2^-24.
/// A NaN gives a NaN with the same sign and the top 10 payload bits (a quiet 0x7E00 pattern
/// if those are all zero), so half -> float -> half is the identity on all 65536 patterns.
inline uint16_t float_to_half(float f) noexcept {
  uint32_t x;
  std::memcpy(&x, &f, sizeof(x));
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7FFFFFFFu;
  if (x > 0x7F800000u) {  // NaN
    uint16_t payload = static_cast<uint16_t>((x >> 13) & 0x3FFu);
    if (payload == 0) payload = 0x200u;
    return static_cast<uint16_t>(sign | 0x7C00u | payload);
  }
  if (x >= 0x477FF000u) {  // >= 65520 (the midpoint 65504..65536 rounds to even: inf)
    return static_cast<uint16_t>(sign | 0x7C00u);
  }
  const uint32_t exponent = x >> 23;
  if (exponent >= 113) {  // result is a normal half (|f| >= 2^-14)
    uint32_t h = ((exponent - 112) << 10) | ((x >> 13) & 0x3FFu);
    const uint32_t rest = x & 0x1FFFu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // carries into the exponent
    return static_cast<uint16_t>(sign | h);
  }
  // Subnormal half (or zero): value * 2^24 = significand * 2^(exponent - 126), rounded.
  const uint32_t shift = 126 - exponent;  // >= 14
  if (shift > 24) return sign;            // |f| < 2^-25: rounds to zero
  const uint32_t significand = (x & 0x7FFFFFu) | 0x800000u;
  uint32_t h = significand >> shift;
  const uint32_t rest = significand & ((1u << shift) - 1u);
  const uint32_t half_ulp = 1u << (shift - 1);
  if (rest > half_ulp || (rest == half_ulp && (h & 1u))) ++h;  // may become 0x0400: 2^-14
  return static_cast<uint16_t>(sign | h);
}

// ---------------------------------------------------------------------------------------------
// Shapes
// ---------------------------------------------------------------------------------------------

/// Code bias: a 4-bit code q stands for the integer q - kCodeBias.
inline constexpr int kCodeBias = 8;

/// True for the group sizes the packing and the kernel support: 128, and -1 (one scale per
/// output column over the whole k).
constexpr bool is_supported_group_size(int group_size) noexcept {
  return group_size == 128 || group_size == -1;
}

/// Rows of the scale matrix: k / group_size, or 1 when group_size == -1.
/// Precondition: k > 0 and group_size supported with k % group_size == 0.
constexpr int scale_rows(int k, int group_size) noexcept {
  return group_size == -1 ? 1 : k / group_size;
}

/// Number of uint32 words of the packed weights: (k / 16) * (2 * n).
/// Precondition: k % 16 == 0, n >= 0.
constexpr std::size_t packed_weight_words(int k, int n) noexcept {
  return static_cast<std::size_t>(k / 16) * (2 * static_cast<std::size_t>(n));
}

namespace detail {

// Validation shared by every packing entry point (GemmArgs have their own, in
// detail/validate.hpp), in a fixed order: shape, pointers, layout divisibility (only when
// `needs_tile_shape`), group size, k vs group size.
inline Status check_pack_args(int k, int n, int group_size, bool pointers_ok,
                              bool needs_tile_shape) noexcept {
  if (k <= 0 || n <= 0) return Status::kErrorInvalidShape;
  if (!pointers_ok) return Status::kErrorNullPointer;
  if (needs_tile_shape && (k % 16 != 0 || n % 64 != 0)) return Status::kErrorUnsupportedShape;
  if (!is_supported_group_size(group_size)) return Status::kErrorUnsupportedGroupSize;
  if (group_size != -1 && k % group_size != 0) return Status::kErrorGroupSizeMismatch;
  return Status::kSuccess;
}

// Code of x = w / s: clamp(round_half_to_even(x) + 8, 0, 15), independent of the current
// rounding mode. Written branch-free (comparisons turned into integers) so the row loop has no
// data-dependent branches: with random weights they would mispredict on most elements.
// Clamping x to [-16, 16] first gives the same code, and the argument order of max maps a NaN
// (outside the preconditions) to -16 rather than into an undefined float -> int conversion.
inline uint8_t quantize_code(float x) noexcept {
  x = std::min(std::max(-16.0f, x), 16.0f);
  const int truncated = static_cast<int>(x);
  const int lower = truncated - static_cast<int>(static_cast<float>(truncated) > x);  // floor
  const float fraction = x - static_cast<float>(lower);  // exact: in [0, 1)
  const int up = static_cast<int>(fraction > 0.5f) |
                 (static_cast<int>(fraction == 0.5f) & lower);  // ties: to the even neighbour
  const int q = lower + (up & 1) + kCodeBias;
  return static_cast<uint8_t>(std::min(std::max(q, 0), 15));
}

// max_abs[col] = max(max_abs[col], |row[col]|) for col < n.
inline void accumulate_max_abs(const float* row, std::size_t n, float* max_abs) noexcept {
  for (std::size_t col = 0; col < n; ++col) {
    max_abs[col] = std::max(max_abs[col], std::fabs(row[col]));
  }
}

// codes[col] = quantize_code(row[col] / scale[col]) for col < n.
inline void quantize_row(const float* row, const float* scale, std::size_t n,
                         uint8_t* codes) noexcept {
  for (std::size_t col = 0; col < n; ++col) codes[col] = quantize_code(row[col] / scale[col]);
}

// Row `r` of w as floats: a pointer into w (fp32 input) or into `buffer`, converted (fp16).
inline const float* row_as_float(const float* w, std::size_t r, std::size_t n,
                                 std::vector<float>&) noexcept {
  return w + r * n;
}
inline const float* row_as_float(const uint16_t* w, std::size_t r, std::size_t n,
                                 std::vector<float>& buffer) noexcept {
  const uint16_t* row = w + r * n;
  for (std::size_t col = 0; col < n; ++col) buffer[col] = half_to_float(row[col]);
  return buffer.data();
}

// Quantize [k][n] (float or fp16 bits). Arguments already validated.
template <class T>
void quantize_impl(const T* w, int k, int n, int group_size, std::vector<uint8_t>& codes,
                   std::vector<uint16_t>& scales) {
  const std::size_t nn = static_cast<std::size_t>(n);
  const std::size_t group = static_cast<std::size_t>(group_size == -1 ? k : group_size);
  const std::size_t groups = static_cast<std::size_t>(k) / group;
  codes.resize(static_cast<std::size_t>(k) * nn);
  scales.resize(groups * nn);
  std::vector<float> max_abs(nn);  // [n] of the current group
  std::vector<float> scale(nn);    // [n] fp16 scales of the current group, as float
  std::vector<float> buffer(nn);   // [n] one fp16 row converted to float
  for (std::size_t gi = 0; gi < groups; ++gi) {
    std::fill(max_abs.begin(), max_abs.end(), 0.0f);
    for (std::size_t r = gi * group; r < (gi + 1) * group; ++r) {
      accumulate_max_abs(row_as_float(w, r, nn, buffer), nn, max_abs.data());
    }
    uint16_t* scale_row = scales.data() + gi * nn;
    for (std::size_t col = 0; col < nn; ++col) {
      uint16_t s = float_to_half(max_abs[col] / 7.5f);
      // All-zero column of the group, or a maximum so small that s underflows to 0: use 1.
      if ((s & 0x7FFFu) == 0) s = 0x3C00u;
      scale_row[col] = s;
      scale[col] = half_to_float(s);
    }
    for (std::size_t r = gi * group; r < (gi + 1) * group; ++r) {
      quantize_row(row_as_float(w, r, nn, buffer), scale.data(), nn, codes.data() + r * nn);
    }
  }
}

// (r, col) offsets of nibble i (0..7) inside a 16x16 tile, for t = lane % 4 and g = lane / 4.
inline constexpr int kNibbleRow[8] = {0, 8, 0, 8, 1, 9, 1, 9};  // added to 2t
inline constexpr int kNibbleCol[8] = {0, 0, 8, 8, 0, 0, 8, 8};  // added to g

// For one 16x64 chunk with row stride n: offsets[w][i] is the element offset, relative to
// the chunk's top-left element, of nibble i of chunk word w = 4 * lane + j.
inline void chunk_offsets(int n, std::size_t (&offsets)[128][8]) noexcept {
  const std::size_t nn = static_cast<std::size_t>(n);
  for (int lane = 0; lane < 32; ++lane) {
    const int t = lane % 4;
    const int g = lane / 4;
    for (int j = 0; j < 4; ++j) {
      for (int i = 0; i < 8; ++i) {
        const std::size_t r = static_cast<std::size_t>(2 * t + kNibbleRow[i]);
        const std::size_t col = static_cast<std::size_t>(16 * j + g + kNibbleCol[i]);
        offsets[4 * lane + j][i] = r * nn + col;
      }
    }
  }
}

// Per-channel (32-column block) scale permutation: stored 8*i + jj <- original 2*i + off[jj].
inline constexpr int kChannelScaleOffset[8] = {0, 1, 8, 9, 16, 17, 24, 25};

// Original column (within its block) of stored position p. Grouped: 64-column blocks;
// per-channel: 32-column blocks.
constexpr int scale_source_column(int p, bool per_channel) noexcept {
  return per_channel ? 2 * (p / 8) + kChannelScaleOffset[p % 8] : p / 8 + 8 * (p % 8);
}

// Shared body of pack_scales (to_packed) and unpack_scales. Arguments already validated.
inline void permute_scales(const uint16_t* in, int k, int n, int group_size, bool to_packed,
                           std::vector<uint16_t>& out) {
  const bool per_channel = group_size == -1;
  const std::size_t block = per_channel ? 32 : 64;
  const std::size_t nn = static_cast<std::size_t>(n);
  const std::size_t rows = static_cast<std::size_t>(scale_rows(k, group_size));
  std::size_t source[64];  // [block] original column of each stored position
  for (std::size_t p = 0; p < block; ++p) {
    source[p] = static_cast<std::size_t>(scale_source_column(static_cast<int>(p), per_channel));
  }
  out.resize(rows * nn);
  for (std::size_t row = 0; row < rows; ++row) {
    const uint16_t* src = in + row * nn;
    uint16_t* dst = out.data() + row * nn;
    for (std::size_t b = 0; b < nn; b += block) {
      for (std::size_t p = 0; p < block; ++p) {
        if (to_packed) {
          dst[b + p] = src[b + source[p]];
        } else {
          dst[b + source[p]] = src[b + p];
        }
      }
    }
  }
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------
// Quantization
// ---------------------------------------------------------------------------------------------

/// Quantizes weights group-wise, symmetric, round-to-nearest.
///
/// - `w`: fp32, row-major [k][n] (k input features = rows, n output columns).
/// - `codes` (resized to k*n): row-major [k][n], each 0..15, q = clamp(rne(w / s) + 8, 0, 15).
/// - `scales` (resized to scale_rows(k, group_size) * n): row-major [k/group_size][n] fp16 bits,
///   NOT permuted; s = fp16(max|w| / 7.5) over the group's rows of the column, or 1.0 where
///   that is 0 (an all-zero group, or one whose maximum is at most 7.5 * 2^-25, ~2.2e-7).
///
/// Preconditions: k > 0, n > 0; group_size is 128 (k % 128 == 0) or -1 (one group over all k);
/// w holds k*n finite values with |w| <= 61000, so that every scale and every dequantized
/// value (down to -8 * s) is finite in fp16.
/// Errors: kErrorInvalidShape, kErrorNullPointer, kErrorUnsupportedGroupSize,
/// kErrorGroupSizeMismatch; on error the outputs are left unchanged.
inline Status quantize(const float* w, int k, int n, int group_size, std::vector<uint8_t>& codes,
                       std::vector<uint16_t>& scales) {
  const Status status = detail::check_pack_args(k, n, group_size, w != nullptr, false);
  if (status != Status::kSuccess) return status;
  detail::quantize_impl(w, k, n, group_size, codes, scales);
  return Status::kSuccess;
}

/// As above, with the weights given as fp16 bit patterns (row-major [k][n]). The result equals
/// quantizing the same values converted to float.
inline Status quantize(const uint16_t* w, int k, int n, int group_size,
                       std::vector<uint8_t>& codes, std::vector<uint16_t>& scales) {
  const Status status = detail::check_pack_args(k, n, group_size, w != nullptr, false);
  if (status != Status::kSuccess) return status;
  detail::quantize_impl(w, k, n, group_size, codes, scales);
  return Status::kSuccess;
}

/// Dequantizes codes and (unpermuted) scales: w[r][c] = fp16((q[r][c] - 8) * s[r / group][c]),
/// the product formed in float and rounded once to fp16 (exactly what the kernel computes).
///
/// - `codes`: row-major [k][n], values 0..15 (only the low 4 bits are read).
/// - `scales`: row-major [scale_rows(k, group_size)][n] fp16 bits, as quantize writes them.
/// - `w` (resized to k*n): row-major [k][n] fp16 bits.
/// Preconditions and errors: as quantize (null `codes` or `scales` gives kErrorNullPointer).
inline Status dequantize(const uint8_t* codes, const uint16_t* scales, int k, int n,
                         int group_size, std::vector<uint16_t>& w) {
  const Status status =
      detail::check_pack_args(k, n, group_size, codes != nullptr && scales != nullptr, false);
  if (status != Status::kSuccess) return status;
  const std::size_t nn = static_cast<std::size_t>(n);
  const int group = group_size == -1 ? k : group_size;
  w.resize(static_cast<std::size_t>(k) * nn);
  std::vector<float> scale(nn);  // [n] scales of the current group, as float
  for (int r = 0; r < k; ++r) {
    if (r % group == 0) {
      const uint16_t* scale_row = scales + static_cast<std::size_t>(r / group) * nn;
      for (std::size_t col = 0; col < nn; ++col) scale[col] = half_to_float(scale_row[col]);
    }
    const std::size_t base = static_cast<std::size_t>(r) * nn;
    for (std::size_t col = 0; col < nn; ++col) {
      const int q = static_cast<int>(codes[base + col] & 0xFu) - kCodeBias;
      w[base + col] = float_to_half(static_cast<float>(q) * scale[col]);
    }
  }
  return Status::kSuccess;
}

// ---------------------------------------------------------------------------------------------
// Packing
// ---------------------------------------------------------------------------------------------

/// Packs 4-bit codes into the Marlin tile layout described at the top of this file.
///
/// - `codes`: row-major [k][n], values 0..15 (only the low 4 bits are read).
/// - `packed` (resized to packed_weight_words(k, n)): uint32 words, row-major [k/16][2*n].
/// Preconditions: k > 0, n > 0, k % 16 == 0, n % 64 == 0 (the kernel also needs k % 128 == 0).
/// Errors: kErrorInvalidShape, kErrorNullPointer, kErrorUnsupportedShape; on error `packed` is
/// left unchanged.
inline Status pack_weights(const uint8_t* codes, int k, int n, std::vector<uint32_t>& packed) {
  if (k <= 0 || n <= 0) return Status::kErrorInvalidShape;
  if (codes == nullptr) return Status::kErrorNullPointer;
  if (k % 16 != 0 || n % 64 != 0) return Status::kErrorUnsupportedShape;
  std::size_t offsets[128][8];
  detail::chunk_offsets(n, offsets);
  const std::size_t nn = static_cast<std::size_t>(n);
  packed.resize(packed_weight_words(k, n));
  uint32_t* out = packed.data();
  for (int kb = 0; kb < k / 16; ++kb) {
    const uint8_t* block = codes + static_cast<std::size_t>(kb) * 16 * nn;  // [16][n]
    for (std::size_t c = 0; c < nn / 64; ++c) {
      const uint8_t* chunk = block + 64 * c;  // [16][64] with row stride n
      for (int word = 0; word < 128; ++word) {
        const std::size_t* off = offsets[word];
        uint32_t v = 0;
        for (int i = 0; i < 8; ++i) v |= static_cast<uint32_t>(chunk[off[i]] & 0xFu) << (4 * i);
        *out++ = v;
      }
    }
  }
  return Status::kSuccess;
}

/// Exact inverse of pack_weights: `packed` [k/16][2*n] words -> `codes` (resized to k*n),
/// row-major [k][n], values 0..15. Preconditions and errors: as pack_weights.
inline Status unpack_weights(const uint32_t* packed, int k, int n, std::vector<uint8_t>& codes) {
  if (k <= 0 || n <= 0) return Status::kErrorInvalidShape;
  if (packed == nullptr) return Status::kErrorNullPointer;
  if (k % 16 != 0 || n % 64 != 0) return Status::kErrorUnsupportedShape;
  std::size_t offsets[128][8];
  detail::chunk_offsets(n, offsets);
  const std::size_t nn = static_cast<std::size_t>(n);
  codes.resize(static_cast<std::size_t>(k) * nn);
  const uint32_t* in = packed;
  for (int kb = 0; kb < k / 16; ++kb) {
    uint8_t* block = codes.data() + static_cast<std::size_t>(kb) * 16 * nn;  // [16][n]
    for (std::size_t c = 0; c < nn / 64; ++c) {
      uint8_t* chunk = block + 64 * c;  // [16][64] with row stride n
      for (int word = 0; word < 128; ++word) {
        const std::size_t* off = offsets[word];
        const uint32_t v = *in++;
        for (int i = 0; i < 8; ++i) chunk[off[i]] = static_cast<uint8_t>((v >> (4 * i)) & 0xFu);
      }
    }
  }
  return Status::kSuccess;
}

/// Permutes scales into the order the kernel reads (see the top of this file).
///
/// - `scales`: row-major [scale_rows(k, group_size)][n] fp16 bits, as quantize writes them.
/// - `packed` (resized to the same size): same shape, each row permuted within every 64-column
///   block (grouped) or every 32-column block (group_size == -1).
/// Preconditions: k > 0, n > 0, k % 16 == 0, n % 64 == 0 (as for pack_weights, so that scales
/// and weights always agree on what is packable); group_size 128 with k % 128 == 0, or -1.
/// Errors: kErrorInvalidShape, kErrorNullPointer, kErrorUnsupportedShape,
/// kErrorUnsupportedGroupSize, kErrorGroupSizeMismatch; on error `packed` is left unchanged.
inline Status pack_scales(const uint16_t* scales, int k, int n, int group_size,
                          std::vector<uint16_t>& packed) {
  const Status status = detail::check_pack_args(k, n, group_size, scales != nullptr, true);
  if (status != Status::kSuccess) return status;
  detail::permute_scales(scales, k, n, group_size, true, packed);
  return Status::kSuccess;
}

/// Exact inverse of pack_scales: `packed` -> `scales` (resized), row-major
/// [scale_rows(k, group_size)][n] in original column order. Preconditions and errors: as
/// pack_scales.
inline Status unpack_scales(const uint16_t* packed, int k, int n, int group_size,
                            std::vector<uint16_t>& scales) {
  const Status status = detail::check_pack_args(k, n, group_size, packed != nullptr, true);
  if (status != Status::kSuccess) return status;
  detail::permute_scales(packed, k, n, group_size, false, scales);
  return Status::kSuccess;
}

namespace detail {

template <class T>
Status quantize_and_pack_impl(const T* w, int k, int n, int group_size,
                              std::vector<uint32_t>& packed_weights,
                              std::vector<uint16_t>& packed_scales,
                              std::vector<uint16_t>* dequantized) {
  const Status status = check_pack_args(k, n, group_size, w != nullptr, true);
  if (status != Status::kSuccess) return status;
  std::vector<uint8_t> codes;    // [k][n]
  std::vector<uint16_t> scales;  // [scale_rows][n], unpermuted
  quantize_impl(w, k, n, group_size, codes, scales);
  if (dequantized != nullptr) {
    dequantize(codes.data(), scales.data(), k, n, group_size, *dequantized);
  }
  pack_weights(codes.data(), k, n, packed_weights);
  permute_scales(scales.data(), k, n, group_size, true, packed_scales);
  return Status::kSuccess;
}

}  // namespace detail

/// Quantizes fp32 weights (row-major [k][n]) and packs them for the kernel: the composition
/// quantize -> pack_weights / pack_scales.
///
/// - `packed_weights` (resized to packed_weight_words(k, n)): [k/16][2*n] uint32 words.
/// - `packed_scales` (resized to scale_rows(k, group_size) * n): permuted fp16 scales.
/// - `dequantized` (optional; resized to k*n when not null): the fp16 weights the kernel
///   effectively multiplies by, row-major [k][n] and unpermuted; a reference for tests.
/// Preconditions: those of quantize and of pack_weights (k % 16 == 0, n % 64 == 0).
/// Errors: kErrorInvalidShape, kErrorNullPointer (w), kErrorUnsupportedShape,
/// kErrorUnsupportedGroupSize, kErrorGroupSizeMismatch; on error the outputs are unchanged.
inline Status quantize_and_pack(const float* w, int k, int n, int group_size,
                                std::vector<uint32_t>& packed_weights,
                                std::vector<uint16_t>& packed_scales,
                                std::vector<uint16_t>* dequantized = nullptr) {
  return detail::quantize_and_pack_impl(w, k, n, group_size, packed_weights, packed_scales,
                                        dequantized);
}

/// As above, with the weights given as fp16 bit patterns (row-major [k][n]).
inline Status quantize_and_pack(const uint16_t* w, int k, int n, int group_size,
                                std::vector<uint32_t>& packed_weights,
                                std::vector<uint16_t>& packed_scales,
                                std::vector<uint16_t>* dequantized = nullptr) {
  return detail::quantize_and_pack_impl(w, k, n, group_size, packed_weights, packed_scales,
                                        dequantized);
}

}  // namespace marlin
