// Host tests of <marlin/pack.hpp>: fp16 conversion, quantization, and the Marlin packing
// layout (round trips, golden words derived by hand from the layout definition, argument
// validation). No GPU and no CUDA headers needed.
#include <marlin/pack.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <ostream>
#include <random>
#include <string>
#include <vector>

namespace {

using marlin::Status;

float bits_to_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

bool is_half_nan(uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0; }

std::string seed_trace(uint32_t seed) { return "seed = " + std::to_string(seed); }

// Index of the first element where a and b differ, or -1 (sizes must already match).
template <class T>
long first_mismatch(const std::vector<T>& a, const std::vector<T>& b) {
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return static_cast<long>(i);
  }
  return -1;
}

std::vector<uint8_t> random_codes(std::mt19937& rng, std::size_t count) {
  std::uniform_int_distribution<int> dist(0, 15);
  std::vector<uint8_t> codes(count);
  for (auto& c : codes) c = static_cast<uint8_t>(dist(rng));
  return codes;
}

// Random finite positive fp16 values (scales).
std::vector<uint16_t> random_scales(std::mt19937& rng, std::size_t count) {
  std::uniform_int_distribution<int> dist(0x0001, 0x7BFF);
  std::vector<uint16_t> scales(count);
  for (auto& s : scales) s = static_cast<uint16_t>(dist(rng));
  return scales;
}

// ---------------------------------------------------------------------------------------------
// fp16 <-> fp32
// ---------------------------------------------------------------------------------------------

TEST(Half, AllPatternsMatchDefinitionAndRoundTrip) {
  for (uint32_t h = 0; h <= 0xFFFFu; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    const float f = marlin::half_to_float(bits);
    const int exponent = (h >> 10) & 0x1F;
    const int mantissa = h & 0x3FF;
    const double sign = (h & 0x8000u) ? -1.0 : 1.0;
    if (exponent == 0x1F) {
      if (mantissa == 0) {
        EXPECT_EQ(f, static_cast<float>(sign) * std::numeric_limits<float>::infinity()) << h;
      } else {
        EXPECT_TRUE(std::isnan(f)) << h;
      }
    } else {
      // Value by definition: (-1)^s * m * 2^-24 (subnormal) or (1024 + m) * 2^(e - 25).
      const double expected = exponent == 0 ? sign * std::ldexp(mantissa, -24)
                                            : sign * std::ldexp(1024 + mantissa, exponent - 25);
      EXPECT_EQ(static_cast<double>(f), expected) << h;
      EXPECT_EQ(std::signbit(f), (h & 0x8000u) != 0) << h;
    }
    // Bit-exact round trip, NaN payloads and signed zeros included.
    EXPECT_EQ(marlin::float_to_half(f), bits) << h;
  }
}

TEST(Half, KnownValues) {
  EXPECT_EQ(marlin::float_to_half(1.0f), 0x3C00u);
  EXPECT_EQ(marlin::float_to_half(-2.0f), 0xC000u);
  EXPECT_EQ(marlin::float_to_half(0.5f), 0x3800u);
  EXPECT_EQ(marlin::float_to_half(0.1f), 0x2E66u);
  EXPECT_EQ(marlin::float_to_half(1.0f / 3.0f), 0x3555u);
  EXPECT_EQ(marlin::float_to_half(65504.0f), 0x7BFFu);  // largest finite
  EXPECT_EQ(marlin::float_to_half(65519.0f), 0x7BFFu);  // below the midpoint 65520
  EXPECT_EQ(marlin::float_to_half(65520.0f), 0x7C00u);  // midpoint: ties to even = inf
  EXPECT_EQ(marlin::float_to_half(1.0e6f), 0x7C00u);
  EXPECT_EQ(marlin::float_to_half(-1.0e6f), 0xFC00u);
  EXPECT_EQ(marlin::float_to_half(std::numeric_limits<float>::infinity()), 0x7C00u);
  EXPECT_EQ(marlin::float_to_half(-std::numeric_limits<float>::infinity()), 0xFC00u);
  EXPECT_EQ(marlin::float_to_half(0.0f), 0x0000u);
  EXPECT_EQ(marlin::float_to_half(-0.0f), 0x8000u);
  EXPECT_EQ(marlin::float_to_half(std::ldexp(1.0f, -14)), 0x0400u);  // 6.103515625e-5
  EXPECT_EQ(marlin::float_to_half(6.1e-5f), 0x03FFu);  // 1023.4 * 2^-24: largest subnormal
  EXPECT_EQ(marlin::float_to_half(std::ldexp(1.0f, -24)), 0x0001u);  // 5.96e-8
  EXPECT_EQ(marlin::float_to_half(std::ldexp(1.0f, -25)), 0x0000u);  // tie 0 / 2^-24: even
  EXPECT_EQ(marlin::float_to_half(std::ldexp(1.0f, -25) * 1.0000001f), 0x0001u);
  EXPECT_EQ(marlin::float_to_half(std::ldexp(3.0f, -25)), 0x0002u);  // tie 1 / 2: even
  EXPECT_EQ(marlin::float_to_half(-std::ldexp(1.0f, -30)), 0x8000u);
  EXPECT_EQ(marlin::float_to_half(std::numeric_limits<float>::denorm_min()), 0x0000u);
  EXPECT_EQ(marlin::float_to_half(std::ldexp(2047.0f, -25)), 0x0400u);  // rounds up to normal
  EXPECT_TRUE(is_half_nan(marlin::float_to_half(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(is_half_nan(marlin::float_to_half(bits_to_float(0x7F800001u))));  // low payload
  EXPECT_EQ(marlin::float_to_half(bits_to_float(0xFFC00000u)), 0xFE00u);
  EXPECT_EQ(marlin::half_to_float(0x3C00u), 1.0f);
  EXPECT_EQ(marlin::half_to_float(0x7BFFu), 65504.0f);
  EXPECT_EQ(marlin::half_to_float(0x0001u), std::ldexp(1.0f, -24));
  EXPECT_EQ(marlin::half_to_float(0x03FFu), std::ldexp(1023.0f, -24));
}

TEST(Half, TiesToEven) {
  // 1 + 2^-11 lies halfway between 0x3C00 (even) and 0x3C01.
  EXPECT_EQ(marlin::float_to_half(1.0f + std::ldexp(1.0f, -11)), 0x3C00u);
  EXPECT_EQ(marlin::float_to_half(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)),
            0x3C01u);
  // 1 + 3 * 2^-11 lies halfway between 0x3C01 and 0x3C02 (even).
  EXPECT_EQ(marlin::float_to_half(1.0f + std::ldexp(3.0f, -11)), 0x3C02u);
  EXPECT_EQ(marlin::float_to_half(-(1.0f + std::ldexp(3.0f, -11))), 0xBC02u);
  // 2048 + 1 lies halfway between 2048 (0x6800) and 2050 (0x6801): even is 0x6800.
  EXPECT_EQ(marlin::float_to_half(2049.0f), 0x6800u);
  EXPECT_EQ(marlin::float_to_half(2051.0f), 0x6802u);
  // Mantissa carry into the exponent: 2 - 2^-11 is halfway between 0x3BFF and 0x4000.
  EXPECT_EQ(marlin::float_to_half(2.0f - std::ldexp(1.0f, -11)), 0x4000u);
}

// Every midpoint between two adjacent finite halves (and its float neighbours) rounds right.
TEST(Half, AllMidpointsRoundToNearestEven) {
  for (uint32_t a = 0; a < 0x7BFFu; ++a) {
    const uint16_t lo = static_cast<uint16_t>(a);
    const uint16_t hi = static_cast<uint16_t>(a + 1);
    // Exact: halves have 11 significant bits, their midpoint 12, a float 24.
    const float mid = static_cast<float>(
        (static_cast<double>(marlin::half_to_float(lo)) + marlin::half_to_float(hi)) / 2.0);
    const uint16_t even = (lo & 1u) ? hi : lo;
    const float above = std::nextafter(mid, std::numeric_limits<float>::infinity());
    const float below = std::nextafter(mid, 0.0f);
    ASSERT_EQ(marlin::float_to_half(mid), even) << a;
    ASSERT_EQ(marlin::float_to_half(above), hi) << a;
    ASSERT_EQ(marlin::float_to_half(below), lo) << a;
    ASSERT_EQ(marlin::float_to_half(-mid), even | 0x8000u) << a;
    ASSERT_EQ(marlin::float_to_half(-above), hi | 0x8000u) << a;
    ASSERT_EQ(marlin::float_to_half(-below), lo | 0x8000u) << a;
  }
}

#if defined(__FLT16_MAX__)
// Cross-check against the compiler's own _Float16 conversion on a spread of float patterns.
TEST(Half, MatchesCompilerFloat16) {
  const uint32_t seed = 20240611u;
  SCOPED_TRACE(seed_trace(seed));
  std::mt19937 rng(seed);
  auto check = [](uint32_t bits) {
    const float f = bits_to_float(bits);
    if (std::isnan(f)) return;
    const _Float16 reference = static_cast<_Float16>(f);
    uint16_t expected;
    std::memcpy(&expected, &reference, sizeof(expected));
    ASSERT_EQ(marlin::float_to_half(f), expected) << "float bits 0x" << std::hex << bits;
  };
  for (uint64_t bits = 0; bits <= 0xFFFFFFFFull; bits += 4093) check(static_cast<uint32_t>(bits));
  for (int i = 0; i < 1000000; ++i) check(static_cast<uint32_t>(rng()));
  // Dense around the fp16 range, where the rounding cases are.
  for (uint32_t bits = 0x33000000u; bits < 0x47800000u; bits += 97) check(bits);
}
#endif

// ---------------------------------------------------------------------------------------------
// Packing: round trips
// ---------------------------------------------------------------------------------------------

struct Shape {
  int k;
  int n;
};

void PrintTo(const Shape& s, std::ostream* os) { *os << "k=" << s.k << " n=" << s.n; }

class PackShapes : public ::testing::TestWithParam<Shape> {};

TEST_P(PackShapes, WeightsRoundTrip) {
  const Shape shape = GetParam();
  const uint32_t seed = 1000u + static_cast<uint32_t>(shape.k * 7 + shape.n);
  SCOPED_TRACE(seed_trace(seed));
  std::mt19937 rng(seed);
  const std::size_t count = static_cast<std::size_t>(shape.k) * static_cast<std::size_t>(shape.n);
  const std::vector<uint8_t> codes = random_codes(rng, count);

  std::vector<uint32_t> packed;
  ASSERT_EQ(marlin::pack_weights(codes.data(), shape.k, shape.n, packed), Status::kSuccess);
  ASSERT_EQ(packed.size(), marlin::packed_weight_words(shape.k, shape.n));
  ASSERT_EQ(packed.size(), static_cast<std::size_t>(shape.k / 16) * 2 * shape.n);

  std::vector<uint8_t> unpacked;
  ASSERT_EQ(marlin::unpack_weights(packed.data(), shape.k, shape.n, unpacked), Status::kSuccess);
  ASSERT_EQ(unpacked.size(), codes.size());
  EXPECT_EQ(first_mismatch(unpacked, codes), -1);

  // The other direction: any word pattern is a valid packing.
  std::vector<uint32_t> words(packed.size());
  for (auto& w : words) w = static_cast<uint32_t>(rng());
  ASSERT_EQ(marlin::unpack_weights(words.data(), shape.k, shape.n, unpacked), Status::kSuccess);
  std::vector<uint32_t> repacked;
  ASSERT_EQ(marlin::pack_weights(unpacked.data(), shape.k, shape.n, repacked), Status::kSuccess);
  EXPECT_EQ(first_mismatch(repacked, words), -1);
}

TEST_P(PackShapes, ScalesRoundTrip) {
  const Shape shape = GetParam();
  for (int group_size : {128, -1}) {
    if (group_size != -1 && shape.k % group_size != 0) continue;
    const uint32_t seed = 2000u + static_cast<uint32_t>(shape.k * 7 + shape.n + group_size);
    SCOPED_TRACE(seed_trace(seed) + ", group_size = " + std::to_string(group_size));
    std::mt19937 rng(seed);
    const std::size_t rows = static_cast<std::size_t>(marlin::scale_rows(shape.k, group_size));
    const std::vector<uint16_t> scales =
        random_scales(rng, rows * static_cast<std::size_t>(shape.n));

    std::vector<uint16_t> packed;
    ASSERT_EQ(marlin::pack_scales(scales.data(), shape.k, shape.n, group_size, packed),
              Status::kSuccess);
    ASSERT_EQ(packed.size(), scales.size());
    std::vector<uint16_t> unpacked;
    ASSERT_EQ(marlin::unpack_scales(packed.data(), shape.k, shape.n, group_size, unpacked),
              Status::kSuccess);
    EXPECT_EQ(first_mismatch(unpacked, scales), -1);
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, PackShapes,
                         ::testing::Values(Shape{16, 64}, Shape{16, 192}, Shape{16, 256},
                                           Shape{128, 64}, Shape{128, 192}, Shape{128, 256},
                                           Shape{256, 64}, Shape{256, 192}, Shape{256, 256}),
                         [](const ::testing::TestParamInfo<Shape>& info) {
                           return "k" + std::to_string(info.param.k) + "_n" +
                                  std::to_string(info.param.n);
                         });

// Element -> (word, nibble), read straight off the layout definition in pack.hpp, checked for
// every element of a random matrix with several row blocks and chunks.
TEST(Pack, EveryElementWhereTheLayoutPutsIt) {
  const int k = 48;
  const int n = 192;
  const uint32_t seed = 3000u;
  SCOPED_TRACE(seed_trace(seed));
  std::mt19937 rng(seed);
  const std::vector<uint8_t> codes = random_codes(rng, static_cast<std::size_t>(k) * n);
  std::vector<uint32_t> packed;
  ASSERT_EQ(marlin::pack_weights(codes.data(), k, n, packed), Status::kSuccess);
  for (int row = 0; row < k; ++row) {
    for (int col = 0; col < n; ++col) {
      const int kb = row / 16;
      const int r = row % 16;
      const int c = col / 64;
      const int j = (col % 64) / 16;
      const int col16 = col % 16;
      const int g = col16 % 8;
      const int t = (r % 8) / 2;
      // i = 4 * (r odd) + 2 * (col16 >= 8) + (r >= 8)
      const int nibble = 4 * (r % 2) + 2 * (col16 / 8) + (r / 8);
      const int lane = 4 * g + t;
      const std::size_t word = static_cast<std::size_t>(kb) * 2 * n + 128 * c + 4 * lane + j;
      const uint32_t got = (packed[word] >> (4 * nibble)) & 0xFu;
      ASSERT_EQ(got, codes[static_cast<std::size_t>(row) * n + col])
          << "row " << row << " col " << col;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Packing: golden words, derived by hand
// ---------------------------------------------------------------------------------------------

// One 16x64 tile with code(r, col) = (r + col + 4 * (col / 8) + col / 16) % 16.
//
// Within one word (lane: t = lane % 4, g = lane / 4; tile j), every nibble reads the tile at
// (2t + dr, 16j + g + dc). Moving dr by 1 adds 1, by 8 adds 8; moving dc by 8 (still inside the
// 16-column tile) adds 8 + 4 = 12; moving j by 1 adds 16 + 8 + 1 = 9 (mod 16). So with
// base = code(2t, 16j + g) = (2t + g + 9j) % 16, nibbles i = 0..7 hold
//   (dr, dc) = (0,0) (8,0) (0,8) (8,8) (1,0) (9,0) (1,8) (9,8)
//   value    = base + {0, 8, 12, 20=4, 1, 9, 13, 21=5}  (mod 16)
// and the hex word lists them from nibble 7 down to nibble 0:
//   base+5, base+13, base+9, base+1, base+4, base+12, base+8, base+0.
//
// Example, lane 5 (t = 1, g = 1), j = 2: base = 2 + 1 + 18 = 21 = 5, nibbles 7..0 =
//   10, 18=2, 14, 6, 9, 17=1, 13, 5  ->  0xA2E691D5.
// Lane 0: bases 0, 9, 2, 11. Lane 5: bases 3, 12, 5, 14. Lane 31 (t = 3, g = 7): 13, 6, 15, 8.
TEST(PackGolden, Tile16x64Words) {
  std::vector<uint8_t> codes(16 * 64);
  for (int r = 0; r < 16; ++r) {
    for (int col = 0; col < 64; ++col) {
      codes[static_cast<std::size_t>(r * 64 + col)] =
          static_cast<uint8_t>((r + col + 4 * (col / 8) + col / 16) % 16);
    }
  }
  std::vector<uint32_t> packed;
  ASSERT_EQ(marlin::pack_weights(codes.data(), 16, 64, packed), Status::kSuccess);
  ASSERT_EQ(packed.size(), 128u);

  const uint32_t lane0[4] = {0x5D914C80u, 0xE62AD519u, 0x7FB36EA2u, 0x084CF73Bu};
  const uint32_t lane5[4] = {0x80C47FB3u, 0x195D084Cu, 0xA2E691D5u, 0x3B7F2A6Eu};
  const uint32_t lane31[4] = {0x2A6E195Du, 0xB3F7A2E6u, 0x4C803B7Fu, 0xD519C408u};
  for (int j = 0; j < 4; ++j) {
    EXPECT_EQ(packed[0 * 4 + j], lane0[j]) << "lane 0, j " << j;
    EXPECT_EQ(packed[5 * 4 + j], lane5[j]) << "lane 5, j " << j;
    EXPECT_EQ(packed[31 * 4 + j], lane31[j]) << "lane 31, j " << j;
  }
}

// Single non-zero elements in a 32x128 matrix (2 row blocks, 2 chunks): where each one lands.
TEST(PackGolden, OneHotElements) {
  struct Case {
    int row, col;
    std::size_t word;  // index into the [k/16][2n] = [2][256] words
    uint32_t value;    // the whole word, 0xF in one nibble
  };
  const Case cases[] = {
      {0, 0, 0, 0x0000000Fu},     // lane 0, j 0, i 0
      {8, 8, 0, 0x0000F000u},     // (2t+8, g+8), t = g = 0: i 3
      {1, 16, 1, 0x000F0000u},    // j 1, (2t+1, g): i 4
      {15, 63, 127, 0xF0000000u}, // r 15 = 2t+9 (t 3), col 63: j 3, g 7, +8: i 7; lane 31
      // row 19 = block 1, r 3 = 2t+1 (t 1); col 109 = chunk 1, col 45: j 2, 13 = g 5 + 8:
      // i 6; lane 4*5+1 = 21; word 1*256 + 128*1 + 4*21 + 2 = 470.
      {19, 109, 470, 0x0F000000u},
      // row 10: block 0, r 10 = 2t+8 (t 1); col 70 = chunk 1, col 6: j 0, g 6: i 1;
      // lane 25; word 128 + 100 = 228.
      {10, 70, 228, 0x000000F0u},
  };
  for (const Case& c : cases) {
    std::vector<uint8_t> codes(32 * 128, 0);
    codes[static_cast<std::size_t>(c.row * 128 + c.col)] = 15;
    std::vector<uint32_t> packed;
    ASSERT_EQ(marlin::pack_weights(codes.data(), 32, 128, packed), Status::kSuccess);
    for (std::size_t w = 0; w < packed.size(); ++w) {
      EXPECT_EQ(packed[w], w == c.word ? c.value : 0u)
          << "element (" << c.row << ", " << c.col << "), word " << w;
    }
  }
}

// Scales whose value is their original column: the packed row lists source columns.
TEST(PackGolden, ScalePermutations) {
  // Grouped, one 64-column block: stored 8*i + j <- original i + 8*j.
  const uint16_t grouped[64] = {
      0, 8,  16, 24, 32, 40, 48, 56, 1, 9,  17, 25, 33, 41, 49, 57,
      2, 10, 18, 26, 34, 42, 50, 58, 3, 11, 19, 27, 35, 43, 51, 59,
      4, 12, 20, 28, 36, 44, 52, 60, 5, 13, 21, 29, 37, 45, 53, 61,
      6, 14, 22, 30, 38, 46, 54, 62, 7, 15, 23, 31, 39, 47, 55, 63};
  // Per-channel, one 32-column block: stored 8*i + jj <- 2*i + {0,1,8,9,16,17,24,25}[jj].
  const uint16_t channel[32] = {0, 1, 8,  9,  16, 17, 24, 25, 2, 3, 10, 11, 18, 19, 26, 27,
                                4, 5, 12, 13, 20, 21, 28, 29, 6, 7, 14, 15, 22, 23, 30, 31};

  // Two rows (k = 256, group 128) of 128 columns: each row and each block permuted alike.
  std::vector<uint16_t> scales(2 * 128);
  for (int row = 0; row < 2; ++row) {
    for (int col = 0; col < 128; ++col) {
      scales[static_cast<std::size_t>(row * 128 + col)] = static_cast<uint16_t>(1000 * row + col);
    }
  }
  std::vector<uint16_t> packed;
  ASSERT_EQ(marlin::pack_scales(scales.data(), 256, 128, 128, packed), Status::kSuccess);
  ASSERT_EQ(packed.size(), 256u);
  for (int row = 0; row < 2; ++row) {
    for (int p = 0; p < 128; ++p) {
      const int expected = 1000 * row + 64 * (p / 64) + grouped[p % 64];
      EXPECT_EQ(packed[static_cast<std::size_t>(row * 128 + p)], expected)
          << "row " << row << " position " << p;
    }
  }

  // Per-channel: one row of 128 columns = 4 blocks of 32.
  ASSERT_EQ(marlin::pack_scales(scales.data(), 256, 128, -1, packed), Status::kSuccess);
  ASSERT_EQ(packed.size(), 128u);
  for (int p = 0; p < 128; ++p) {
    EXPECT_EQ(packed[static_cast<std::size_t>(p)], 32 * (p / 32) + channel[p % 32])
        << "position " << p;
  }
}

// ---------------------------------------------------------------------------------------------
// Quantization
// ---------------------------------------------------------------------------------------------

// Error bound checked per element, with s the element's fp16 scale and w' its fp16 dequantized
// value:
//   |w - w'| <= 0.5 * s * (1 + 2^-7) + 2^-11 * |w'| + 2^-22
// Why: unclamped codes are within 0.5 + 8.5 * 2^-24 of w / s (the division is rounded once in
// float). The top code clamps (q = 15 for w / s >= 7.5), and since s = fp16(max / 7.5) may be
// rounded down by up to half an ulp (2^-11 relative), the group maximum can sit up to
// 0.5 s + 7.5 * 2^-11 s (+ 2^-24 terms) from 7 s; 8 * 2^-11 s = 0.5 s * 2^-7 covers it. The
// bottom never clamps (|w / s| < 7.51). Rounding (q - 8) * s to fp16 adds at most 2^-11 |w'|.
// 2^-22 covers a subnormal s, whose absolute rounding error 2^-25 is scaled by 7.5.
// (The tighter-looking 0.5 * s * (1 + 2^-10) + 2^-11 * |w'| fails at the clamped top code:
// see QuantizeExact.TopCodeClampsAndBoundHolds.)
double error_bound(float scale, float dequantized) {
  return 0.5 * scale * (1.0 + std::ldexp(1.0, -7)) + std::ldexp(1.0, -11) * std::fabs(dequantized) +
         std::ldexp(1.0, -22);
}

struct QuantCase {
  int k;
  int n;
  int group_size;
  float sigma;  // weight scale
};

void PrintTo(const QuantCase& c, std::ostream* os) {
  *os << "k=" << c.k << " n=" << c.n << " group_size=" << c.group_size << " sigma=" << c.sigma;
}

class QuantizeRandom : public ::testing::TestWithParam<QuantCase> {};

TEST_P(QuantizeRandom, ErrorBoundAndFp16InputAgrees) {
  const QuantCase qc = GetParam();
  const uint32_t seed = 4000u + static_cast<uint32_t>(qc.k + qc.n + qc.group_size);
  SCOPED_TRACE(seed_trace(seed));
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, qc.sigma);
  const std::size_t count = static_cast<std::size_t>(qc.k) * static_cast<std::size_t>(qc.n);
  std::vector<float> w(count);
  for (auto& v : w) v = dist(rng);

  std::vector<uint8_t> codes;
  std::vector<uint16_t> scales;
  ASSERT_EQ(marlin::quantize(w.data(), qc.k, qc.n, qc.group_size, codes, scales),
            Status::kSuccess);
  const int group = qc.group_size == -1 ? qc.k : qc.group_size;
  ASSERT_EQ(codes.size(), count);
  ASSERT_EQ(scales.size(), static_cast<std::size_t>(qc.k / group) * qc.n);
  std::vector<uint16_t> deq;
  ASSERT_EQ(marlin::dequantize(codes.data(), scales.data(), qc.k, qc.n, qc.group_size, deq),
            Status::kSuccess);
  ASSERT_EQ(deq.size(), count);

  for (int row = 0; row < qc.k; ++row) {
    for (int col = 0; col < qc.n; ++col) {
      const std::size_t idx = static_cast<std::size_t>(row) * qc.n + col;
      const std::size_t scale_idx = static_cast<std::size_t>(row / group) * qc.n + col;
      const float s = marlin::half_to_float(scales[scale_idx]);
      const float d = marlin::half_to_float(deq[idx]);
      ASSERT_LE(codes[idx], 15);
      ASSERT_GT(s, 0.0f);
      ASSERT_TRUE(std::isfinite(d));
      ASSERT_LE(std::fabs(static_cast<double>(w[idx]) - d), error_bound(s, d))
          << "row " << row << " col " << col << ": w " << w[idx] << " s " << s << " w' " << d;
    }
  }

  // Scale = fp16(max |w| / 7.5) of each group and column.
  for (int gi = 0; gi < qc.k / group; ++gi) {
    for (int col = 0; col < qc.n; ++col) {
      float max_abs = 0.0f;
      for (int r = gi * group; r < (gi + 1) * group; ++r) {
        max_abs = std::fmax(max_abs, std::fabs(w[static_cast<std::size_t>(r) * qc.n + col]));
      }
      uint16_t expected = marlin::float_to_half(max_abs / 7.5f);
      if ((expected & 0x7FFFu) == 0) expected = 0x3C00u;
      ASSERT_EQ(scales[static_cast<std::size_t>(gi) * qc.n + col], expected)
          << "group " << gi << " col " << col;
    }
  }

  // The fp16 overload equals the float one on the same (fp16-representable) values.
  std::vector<uint16_t> w16(count);
  std::vector<float> w16f(count);
  for (std::size_t i = 0; i < count; ++i) {
    w16[i] = marlin::float_to_half(w[i]);
    w16f[i] = marlin::half_to_float(w16[i]);
  }
  std::vector<uint8_t> codes_a, codes_b;
  std::vector<uint16_t> scales_a, scales_b;
  ASSERT_EQ(marlin::quantize(w16.data(), qc.k, qc.n, qc.group_size, codes_a, scales_a),
            Status::kSuccess);
  ASSERT_EQ(marlin::quantize(w16f.data(), qc.k, qc.n, qc.group_size, codes_b, scales_b),
            Status::kSuccess);
  EXPECT_EQ(first_mismatch(codes_a, codes_b), -1);
  EXPECT_EQ(first_mismatch(scales_a, scales_b), -1);
}

INSTANTIATE_TEST_SUITE_P(
    Grid, QuantizeRandom,
    ::testing::Values(QuantCase{128, 64, 128, 1.0f}, QuantCase{256, 192, 128, 0.02f},
                      QuantCase{256, 192, -1, 0.02f}, QuantCase{384, 64, 128, 300.0f},
                      QuantCase{100, 70, -1, 1.0f},
                      // Subnormal scales: max |w| / 7.5 below 2^-14.
                      QuantCase{256, 64, 128, 1.0e-5f}, QuantCase{128, 64, -1, 1.0e-7f}),
    [](const ::testing::TestParamInfo<QuantCase>& info) {
      const int g = info.param.group_size;
      return "case" + std::to_string(info.index) + "_k" + std::to_string(info.param.k) + "_n" +
             std::to_string(info.param.n) + "_g" + (g < 0 ? std::string("all") : std::to_string(g));
    });

// Hand-computed codes with s = 1 (column maximum 7.5): ties to even and the top clamp.
TEST(QuantizeExact, TiesToEvenAndClamp) {
  // One column (n = 1) of k = 12 rows, group_size -1.
  const float w[12] = {7.5f, -7.5f, 2.5f, 3.5f, -0.5f, 0.5f, 1.5f, -2.5f, 7.0f, 6.5f, 0.0f, -1.0f};
  //                    7.5->8 clamp  -8   2      4    -0     0     2    -2     7     6     0     -1
  const uint8_t expected_codes[12] = {15, 0, 10, 12, 8, 8, 10, 6, 15, 14, 8, 7};
  // w' = (q - 8) * 1.
  const float expected_w[12] = {7.0f, -8.0f, 2.0f, 4.0f, 0.0f, 0.0f, 2.0f, -2.0f, 7.0f, 6.0f,
                                0.0f, -1.0f};
  std::vector<uint8_t> codes;
  std::vector<uint16_t> scales;
  ASSERT_EQ(marlin::quantize(w, 12, 1, -1, codes, scales), Status::kSuccess);
  ASSERT_EQ(scales.size(), 1u);
  EXPECT_EQ(scales[0], 0x3C00u);  // 7.5 / 7.5 = 1
  std::vector<uint16_t> deq;
  ASSERT_EQ(marlin::dequantize(codes.data(), scales.data(), 12, 1, -1, deq), Status::kSuccess);
  for (int i = 0; i < 12; ++i) {
    EXPECT_EQ(codes[static_cast<std::size_t>(i)], expected_codes[i]) << "w = " << w[i];
    EXPECT_EQ(marlin::half_to_float(deq[static_cast<std::size_t>(i)]), expected_w[i])
        << "w = " << w[i];
  }
}

// The scale is rounded to fp16 before dividing, so the group maximum can land past 7.5 and
// clamp to the top code.
TEST(QuantizeExact, TopCodeClampsAndBoundHolds) {
  // max 1.0: 1 / 7.5 = 0.13333 -> fp16 0x3044 = 1092 * 2^-13 = 0.1333008 (rounded down);
  // 1 / 0.1333008 = 7.5018 -> 8 -> q = 16, clamped to 15; w' = 7 * 1092 * 2^-13
  // = 1911 * 2^-11 = 0.93310547 exactly = fp16 0x3B77.
  {
    const float w[2] = {1.0f, -0.25f};
    std::vector<uint8_t> codes;
    std::vector<uint16_t> scales, deq;
    ASSERT_EQ(marlin::quantize(w, 2, 1, -1, codes, scales), Status::kSuccess);
    EXPECT_EQ(scales[0], 0x3044u);
    EXPECT_EQ(codes[0], 15);
    // -0.25 / 0.1333008 = -1.8755 -> -2 -> 6.
    EXPECT_EQ(codes[1], 6);
    ASSERT_EQ(marlin::dequantize(codes.data(), scales.data(), 2, 1, -1, deq), Status::kSuccess);
    EXPECT_EQ(deq[0], 0x3B77u);
  }
  // max 9.35603523 (a float): / 7.5 = 1.2474714 = 1277.41 * 2^-10 -> s = 1277 * 2^-10
  // = 1.24707031; w / s = 7.5024 -> clamp to 15; 7 s = 8.72949 = 1117.375 * 2^-7 -> fp16
  // 1117 * 2^-7 = 8.7265625. |w - w'| = 0.629473 exceeds 0.5 s (1 + 2^-10) + 2^-11 |w'|
  // = 0.628405, and is within error_bound.
  {
    const float w[1] = {9.35603523f};
    std::vector<uint8_t> codes;
    std::vector<uint16_t> scales, deq;
    ASSERT_EQ(marlin::quantize(w, 1, 1, -1, codes, scales), Status::kSuccess);
    const float s = marlin::half_to_float(scales[0]);
    EXPECT_EQ(s, 1277.0f / 1024.0f);
    EXPECT_EQ(codes[0], 15);
    ASSERT_EQ(marlin::dequantize(codes.data(), scales.data(), 1, 1, -1, deq), Status::kSuccess);
    const float d = marlin::half_to_float(deq[0]);
    EXPECT_EQ(d, 8.7265625f);
    const double err = std::fabs(static_cast<double>(w[0]) - d);
    EXPECT_GT(err, 0.5 * s * (1.0 + std::ldexp(1.0, -10)) + std::ldexp(1.0, -11) * d);
    EXPECT_LE(err, error_bound(s, d));
  }
}

TEST(QuantizeExact, AllZeroGroupHasUnitScaleAndExactZeros) {
  // k = 256, n = 64, group 128: group 0 all zero, group 1 zero except column 3.
  const int k = 256, n = 64;
  std::vector<float> w(static_cast<std::size_t>(k) * n, 0.0f);
  w[static_cast<std::size_t>(200) * n + 3] = -3.0f;
  std::vector<uint8_t> codes;
  std::vector<uint16_t> scales, deq;
  ASSERT_EQ(marlin::quantize(w.data(), k, n, 128, codes, scales), Status::kSuccess);
  ASSERT_EQ(scales.size(), 128u);
  for (int col = 0; col < n; ++col) {
    EXPECT_EQ(scales[static_cast<std::size_t>(col)], 0x3C00u) << col;
    // Column 3 of group 1: 3 / 7.5 = 0.4 = 1.6 * 2^-2 -> fp16 0x3400 | round(0.6 * 1024 = 614.4)
    // = 0x3666 (0.39990234).
    EXPECT_EQ(scales[static_cast<std::size_t>(n + col)], col == 3 ? 0x3666u : 0x3C00u) << col;
  }
  // -3 / 0.39990234 = -7.5018 -> -8 -> code 0.
  EXPECT_EQ(codes[static_cast<std::size_t>(200) * n + 3], 0);
  ASSERT_EQ(marlin::dequantize(codes.data(), scales.data(), k, n, 128, deq), Status::kSuccess);
  for (std::size_t i = 0; i < deq.size(); ++i) {
    if (i == static_cast<std::size_t>(200) * n + 3) continue;
    ASSERT_EQ(codes[i], 8) << i;
    ASSERT_EQ(deq[i], 0x0000u) << i;  // exactly +0
  }
}

TEST(QuantizeExact, DequantizeKnownValues) {
  // Two groups of 128 rows, one column: scales 0.5 and 3.0.
  std::vector<uint8_t> codes(256, 8);
  codes[0] = 0;     // -8 * 0.5 = -4
  codes[1] = 15;    //  7 * 0.5 = 3.5
  codes[128] = 9;   //  1 * 3 = 3
  codes[129] = 1;   // -7 * 3 = -21
  const uint16_t scales[2] = {0x3800u, 0x4200u};
  std::vector<uint16_t> deq;
  ASSERT_EQ(marlin::dequantize(codes.data(), scales, 256, 1, 128, deq), Status::kSuccess);
  EXPECT_EQ(deq[0], 0xC400u);
  EXPECT_EQ(deq[1], 0x4300u);
  EXPECT_EQ(deq[2], 0x0000u);
  EXPECT_EQ(deq[128], 0x4200u);
  EXPECT_EQ(deq[129], 0xCD40u);
}

// quantize_and_pack is quantize + dequantize + pack_weights + pack_scales, for both overloads.
TEST(QuantizeAndPack, EqualsTheComposition) {
  const int k = 256, n = 128;
  const uint32_t seed = 5000u;
  SCOPED_TRACE(seed_trace(seed));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> w(static_cast<std::size_t>(k) * n);
  for (auto& v : w) v = dist(rng);
  std::vector<uint16_t> w16(w.size());
  for (std::size_t i = 0; i < w.size(); ++i) w16[i] = marlin::float_to_half(w[i]);

  for (int group_size : {128, -1}) {
    SCOPED_TRACE("group_size = " + std::to_string(group_size));
    for (bool fp16_input : {false, true}) {
      SCOPED_TRACE(fp16_input ? "fp16 input" : "fp32 input");
      std::vector<uint8_t> codes;
      std::vector<uint16_t> scales, deq, packed_scales, ref_scales, got_deq;
      std::vector<uint32_t> packed, ref_packed;
      Status st = fp16_input ? marlin::quantize(w16.data(), k, n, group_size, codes, scales)
                             : marlin::quantize(w.data(), k, n, group_size, codes, scales);
      ASSERT_EQ(st, Status::kSuccess);
      ASSERT_EQ(marlin::dequantize(codes.data(), scales.data(), k, n, group_size, deq),
                Status::kSuccess);
      ASSERT_EQ(marlin::pack_weights(codes.data(), k, n, ref_packed), Status::kSuccess);
      ASSERT_EQ(marlin::pack_scales(scales.data(), k, n, group_size, ref_scales),
                Status::kSuccess);

      st = fp16_input ? marlin::quantize_and_pack(w16.data(), k, n, group_size, packed,
                                                  packed_scales, &got_deq)
                      : marlin::quantize_and_pack(w.data(), k, n, group_size, packed,
                                                  packed_scales, &got_deq);
      ASSERT_EQ(st, Status::kSuccess);
      ASSERT_EQ(packed.size(), ref_packed.size());
      ASSERT_EQ(packed_scales.size(), ref_scales.size());
      ASSERT_EQ(got_deq.size(), deq.size());
      EXPECT_EQ(first_mismatch(packed, ref_packed), -1);
      EXPECT_EQ(first_mismatch(packed_scales, ref_scales), -1);
      EXPECT_EQ(first_mismatch(got_deq, deq), -1);

      // Without the optional reference output.
      std::vector<uint32_t> packed2;
      std::vector<uint16_t> packed_scales2;
      st = fp16_input
               ? marlin::quantize_and_pack(w16.data(), k, n, group_size, packed2, packed_scales2)
               : marlin::quantize_and_pack(w.data(), k, n, group_size, packed2, packed_scales2);
      ASSERT_EQ(st, Status::kSuccess);
      EXPECT_EQ(packed2, packed);
      EXPECT_EQ(packed_scales2, packed_scales);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Argument validation
// ---------------------------------------------------------------------------------------------

TEST(PackErrors, PackWeights) {
  const std::vector<uint8_t> codes(256 * 256, 0);
  const std::vector<uint32_t> words(256 * 256, 0);
  std::vector<uint32_t> packed{1u, 2u, 3u};
  std::vector<uint8_t> unpacked{7u};
  EXPECT_EQ(marlin::pack_weights(codes.data(), 0, 64, packed), Status::kErrorInvalidShape);
  EXPECT_EQ(marlin::pack_weights(codes.data(), 16, -64, packed), Status::kErrorInvalidShape);
  EXPECT_EQ(marlin::pack_weights(nullptr, 16, 64, packed), Status::kErrorNullPointer);
  EXPECT_EQ(marlin::pack_weights(codes.data(), 24, 64, packed), Status::kErrorUnsupportedShape);
  EXPECT_EQ(marlin::pack_weights(codes.data(), 16, 96, packed), Status::kErrorUnsupportedShape);
  EXPECT_EQ(marlin::unpack_weights(words.data(), -16, 64, unpacked), Status::kErrorInvalidShape);
  EXPECT_EQ(marlin::unpack_weights(nullptr, 16, 64, unpacked), Status::kErrorNullPointer);
  EXPECT_EQ(marlin::unpack_weights(words.data(), 8, 64, unpacked),
            Status::kErrorUnsupportedShape);
  EXPECT_EQ(marlin::unpack_weights(words.data(), 16, 32, unpacked),
            Status::kErrorUnsupportedShape);
  // Outputs untouched on error.
  EXPECT_EQ(packed, (std::vector<uint32_t>{1u, 2u, 3u}));
  EXPECT_EQ(unpacked, (std::vector<uint8_t>{7u}));
}

TEST(PackErrors, PackScales) {
  const std::vector<uint16_t> scales(1024, 0x3C00u);
  std::vector<uint16_t> out{42u};
  for (bool unpack : {false, true}) {
    SCOPED_TRACE(unpack ? "unpack_scales" : "pack_scales");
    auto call = [&](const uint16_t* p, int k, int n, int g) {
      return unpack ? marlin::unpack_scales(p, k, n, g, out) : marlin::pack_scales(p, k, n, g, out);
    };
    EXPECT_EQ(call(scales.data(), 0, 64, 128), Status::kErrorInvalidShape);
    EXPECT_EQ(call(scales.data(), 128, 0, -1), Status::kErrorInvalidShape);
    EXPECT_EQ(call(nullptr, 128, 64, 128), Status::kErrorNullPointer);
    EXPECT_EQ(call(nullptr, 128, 64, -1), Status::kErrorNullPointer);
    EXPECT_EQ(call(scales.data(), 120, 64, -1), Status::kErrorUnsupportedShape);
    EXPECT_EQ(call(scales.data(), 128, 32, -1), Status::kErrorUnsupportedShape);
    EXPECT_EQ(call(scales.data(), 128, 64, 64), Status::kErrorUnsupportedGroupSize);
    EXPECT_EQ(call(scales.data(), 128, 64, 0), Status::kErrorUnsupportedGroupSize);
    EXPECT_EQ(call(scales.data(), 128, 64, -2), Status::kErrorUnsupportedGroupSize);
    EXPECT_EQ(call(scales.data(), 128, 64, 32), Status::kErrorUnsupportedGroupSize);
    EXPECT_EQ(call(scales.data(), 144, 64, 128), Status::kErrorGroupSizeMismatch);
    EXPECT_EQ(out, (std::vector<uint16_t>{42u}));
  }
}

TEST(PackErrors, QuantizeAndDequantize) {
  const std::vector<float> w(512 * 128, 1.0f);
  const std::vector<uint16_t> w16(512 * 128, 0x3C00u);
  const std::vector<uint8_t> codes(512 * 128, 8);
  const std::vector<uint16_t> scales(512, 0x3C00u);
  std::vector<uint8_t> out_codes{1u};
  std::vector<uint16_t> out_scales{2u};
  std::vector<uint16_t> out_w{3u};
  const float* null_f = nullptr;
  const uint16_t* null_h = nullptr;

  EXPECT_EQ(marlin::quantize(w.data(), 0, 64, -1, out_codes, out_scales),
            Status::kErrorInvalidShape);
  EXPECT_EQ(marlin::quantize(w16.data(), 128, -1, -1, out_codes, out_scales),
            Status::kErrorInvalidShape);
  EXPECT_EQ(marlin::quantize(null_f, 128, 64, 128, out_codes, out_scales),
            Status::kErrorNullPointer);
  EXPECT_EQ(marlin::quantize(null_h, 128, 64, 128, out_codes, out_scales),
            Status::kErrorNullPointer);
  for (int g : {64, 0, -2, 256}) {
    EXPECT_EQ(marlin::quantize(w.data(), 256, 64, g, out_codes, out_scales),
              Status::kErrorUnsupportedGroupSize)
        << g;
    EXPECT_EQ(marlin::quantize(w16.data(), 256, 64, g, out_codes, out_scales),
              Status::kErrorUnsupportedGroupSize)
        << g;
  }
  EXPECT_EQ(marlin::quantize(w.data(), 192, 64, 128, out_codes, out_scales),
            Status::kErrorGroupSizeMismatch);
  EXPECT_EQ(marlin::quantize(w16.data(), 100, 64, 128, out_codes, out_scales),
            Status::kErrorGroupSizeMismatch);
  EXPECT_EQ(out_codes, (std::vector<uint8_t>{1u}));
  EXPECT_EQ(out_scales, (std::vector<uint16_t>{2u}));

  EXPECT_EQ(marlin::dequantize(codes.data(), scales.data(), -1, 64, -1, out_w),
            Status::kErrorInvalidShape);
  EXPECT_EQ(marlin::dequantize(nullptr, scales.data(), 128, 64, 128, out_w),
            Status::kErrorNullPointer);
  EXPECT_EQ(marlin::dequantize(codes.data(), nullptr, 128, 64, 128, out_w),
            Status::kErrorNullPointer);
  EXPECT_EQ(marlin::dequantize(codes.data(), scales.data(), 128, 64, 64, out_w),
            Status::kErrorUnsupportedGroupSize);
  EXPECT_EQ(marlin::dequantize(codes.data(), scales.data(), 160, 64, 128, out_w),
            Status::kErrorGroupSizeMismatch);
  EXPECT_EQ(out_w, (std::vector<uint16_t>{3u}));

  // Quantization alone needs no tile shape: any k and n work with group_size -1.
  EXPECT_EQ(marlin::quantize(w.data(), 7, 5, -1, out_codes, out_scales), Status::kSuccess);
  EXPECT_EQ(out_codes.size(), 35u);
  EXPECT_EQ(out_scales.size(), 5u);
}

TEST(PackErrors, QuantizeAndPack) {
  const std::vector<float> w(512 * 128, 1.0f);
  const std::vector<uint16_t> w16(512 * 128, 0x3C00u);
  std::vector<uint32_t> packed{1u};
  std::vector<uint16_t> packed_scales{2u};
  std::vector<uint16_t> deq{3u};
  const float* null_f = nullptr;
  const uint16_t* null_h = nullptr;
  EXPECT_EQ(marlin::quantize_and_pack(w.data(), 0, 64, -1, packed, packed_scales, &deq),
            Status::kErrorInvalidShape);
  EXPECT_EQ(marlin::quantize_and_pack(null_f, 128, 64, -1, packed, packed_scales, &deq),
            Status::kErrorNullPointer);
  EXPECT_EQ(marlin::quantize_and_pack(null_h, 128, 64, -1, packed, packed_scales, &deq),
            Status::kErrorNullPointer);
  EXPECT_EQ(marlin::quantize_and_pack(w.data(), 120, 64, -1, packed, packed_scales, &deq),
            Status::kErrorUnsupportedShape);
  EXPECT_EQ(marlin::quantize_and_pack(w16.data(), 128, 100, -1, packed, packed_scales, &deq),
            Status::kErrorUnsupportedShape);
  EXPECT_EQ(marlin::quantize_and_pack(w.data(), 128, 64, 64, packed, packed_scales, &deq),
            Status::kErrorUnsupportedGroupSize);
  EXPECT_EQ(marlin::quantize_and_pack(w16.data(), 128, 64, 0, packed, packed_scales, &deq),
            Status::kErrorUnsupportedGroupSize);
  EXPECT_EQ(marlin::quantize_and_pack(w.data(), 128, 64, -2, packed, packed_scales, &deq),
            Status::kErrorUnsupportedGroupSize);
  EXPECT_EQ(marlin::quantize_and_pack(w.data(), 144, 64, 128, packed, packed_scales, &deq),
            Status::kErrorGroupSizeMismatch);
  EXPECT_EQ(packed, (std::vector<uint32_t>{1u}));
  EXPECT_EQ(packed_scales, (std::vector<uint16_t>{2u}));
  EXPECT_EQ(deq, (std::vector<uint16_t>{3u}));
}

}  // namespace
