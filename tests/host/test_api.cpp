// Host-only tests of the API's device-independent parts: argument validation (every Status it
// can give), Status strings, configuration choice, the tile table, and the striped partition
// with its reduction slots.
#include <gtest/gtest.h>
#include <marlin/detail/heuristics.hpp>
#include <marlin/detail/partition.hpp>
#include <marlin/detail/validate.hpp>
#include <marlin/kernel/tile_config.hpp>
#include <marlin/status.hpp>
#include <marlin/types.hpp>
#include <marlin/version.hpp>

#include "../../bench/shapes.hpp"  // the bench grid's layers

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace {

using marlin::GemmArgs;
using marlin::Status;
using marlin::detail::check_args;

// Addresses that check_args only compares, never reads: disjoint, 16-byte aligned, each range
// far larger than valid_args' operands (a 16 KiB, b 64 KiB, scales 2 KiB, c 8 KiB).
char* fake_address(std::uintptr_t address) { return reinterpret_cast<char*>(address); }
char* const kA = fake_address(0x10000000);
char* const kB = fake_address(0x20000000);
char* const kScales = fake_address(0x30000000);
char* const kC = fake_address(0x40000000);

GemmArgs valid_args() {
  GemmArgs args;
  args.m = 16;
  args.n = 256;
  args.k = 512;
  args.a = kA;
  args.b = kB;
  args.scales = kScales;
  args.c = kC;
  args.group_size = 128;
  return args;
}

TEST(Validate, AcceptsValidArguments) {
  EXPECT_EQ(check_args(valid_args()), Status::kSuccess);
  GemmArgs a = valid_args();
  a.group_size = -1;
  EXPECT_EQ(check_args(a), Status::kSuccess);
}

TEST(Validate, EachFaultGivesItsOwnStatus) {
  struct Case {
    const char* what;
    void (*mutate)(GemmArgs&);
    Status want;
  };
  const Case cases[] = {
      {"m < 0", [](GemmArgs& a) { a.m = -1; }, Status::kErrorInvalidShape},
      {"n == 0", [](GemmArgs& a) { a.n = 0; }, Status::kErrorInvalidShape},
      {"k < 0", [](GemmArgs& a) { a.k = -128; }, Status::kErrorInvalidShape},
      {"group 64", [](GemmArgs& a) { a.group_size = 64; }, Status::kErrorUnsupportedGroupSize},
      {"group 0", [](GemmArgs& a) { a.group_size = 0; }, Status::kErrorUnsupportedGroupSize},
      {"group -2", [](GemmArgs& a) { a.group_size = -2; }, Status::kErrorUnsupportedGroupSize},
      {"k % group", [](GemmArgs& a) { a.k = 192; }, Status::kErrorGroupSizeMismatch},
      {"n % 64", [](GemmArgs& a) { a.n = 96; }, Status::kErrorUnsupportedShape},
      {"k % 128 (per-channel)",
       [](GemmArgs& a) {
         a.k = 192;
         a.group_size = -1;
       },
       Status::kErrorUnsupportedShape},
      {"k * n >= 2^31",
       [](GemmArgs& a) {
         a.k = 65536;
         a.n = 32768;
       },
       Status::kErrorProblemTooLarge},
      {"m * k >= 2^31",
       [](GemmArgs& a) {
         a.m = 1 << 20;
         a.k = 4096;
       },
       Status::kErrorProblemTooLarge},
      {"null a", [](GemmArgs& a) { a.a = nullptr; }, Status::kErrorNullPointer},
      {"null b", [](GemmArgs& a) { a.b = nullptr; }, Status::kErrorNullPointer},
      {"null scales", [](GemmArgs& a) { a.scales = nullptr; }, Status::kErrorNullPointer},
      {"null c", [](GemmArgs& a) { a.c = nullptr; }, Status::kErrorNullPointer},
      {"a + 8", [](GemmArgs& a) { a.a = kA + 8; }, Status::kErrorMisalignedPointer},
      {"b + 4", [](GemmArgs& a) { a.b = kB + 4; }, Status::kErrorMisalignedPointer},
      {"scales + 2", [](GemmArgs& a) { a.scales = kScales + 2; },
       Status::kErrorMisalignedPointer},
      {"c + 1", [](GemmArgs& a) { a.c = kC + 1; }, Status::kErrorMisalignedPointer},
      {"c == a", [](GemmArgs& a) { a.c = kA; }, Status::kErrorOverlappingOperands},
      // c's last 16 bytes on a's first (c spans 16 x 256 x 2 = 8192 bytes)
      {"c ends in a", [](GemmArgs& a) { a.c = kA - 8192 + 16; },
       Status::kErrorOverlappingOperands},
      // c's first 16 bytes on b's last (b spans 512 x 256 / 2 = 65536 bytes)
      {"c starts in b", [](GemmArgs& a) { a.c = kB + 65536 - 16; },
       Status::kErrorOverlappingOperands},
      // the scales (4 groups x 256 x 2 = 2048 bytes) inside c
      {"scales in c", [](GemmArgs& a) { a.scales = kC + 4096; },
       Status::kErrorOverlappingOperands},
      // per-channel scales span one row (512 bytes): 512 bytes before c they end where c starts
      {"per-channel scales in c",
       [](GemmArgs& a) {
         a.group_size = -1;
         a.scales = kC - 512 + 16;
       },
       Status::kErrorOverlappingOperands},
  };
  for (const Case& c : cases) {
    GemmArgs args = valid_args();
    c.mutate(args);
    EXPECT_EQ(check_args(args), c.want) << c.what << ": got " << marlin::to_string(check_args(args));
  }
}

TEST(Validate, OperandsThatOnlyTouchOrShareReadOnlyBytesAreAccepted) {
  struct Case {
    const char* what;
    void (*mutate)(GemmArgs&);
  };
  const Case cases[] = {
      {"c right after a", [](GemmArgs& a) { a.c = kA + 16384; }},
      {"c right before a", [](GemmArgs& a) { a.c = kA - 8192; }},
      {"c right after b", [](GemmArgs& a) { a.c = kB + 65536; }},
      {"scales right after c", [](GemmArgs& a) { a.scales = kC + 8192; }},
      {"per-channel scales right before c",
       [](GemmArgs& a) {
         a.group_size = -1;
         a.scales = kC - 512;
       }},
      // a, b and the scales are only read: they may share bytes
      {"a, b and scales at one address",
       [](GemmArgs& a) {
         a.b = kA;
         a.scales = kA;
       }},
  };
  for (const Case& c : cases) {
    GemmArgs args = valid_args();
    c.mutate(args);
    EXPECT_EQ(check_args(args), Status::kSuccess)
        << c.what << ": got " << marlin::to_string(check_args(args));
  }
}

TEST(Validate, WorkspaceOverlappingAnOperandIsFound) {
  using marlin::detail::workspace_overlaps;
  const GemmArgs args = valid_args();
  EXPECT_FALSE(workspace_overlaps(args, fake_address(0x50000000), 1 << 20));
  EXPECT_FALSE(workspace_overlaps(args, kC + 8192, 1 << 20));        // right after c
  EXPECT_FALSE(workspace_overlaps(args, kA - 4096, 4096));           // right before a
  EXPECT_TRUE(workspace_overlaps(args, kA - 4096, 4096 + 16));       // into a
  EXPECT_TRUE(workspace_overlaps(args, kB + 65536 - 16, 1 << 20));   // from b's last bytes
  EXPECT_TRUE(workspace_overlaps(args, kScales - 16, 1 << 20));      // over the scales
  EXPECT_TRUE(workspace_overlaps(args, kC + 4096, 16));              // inside c
  EXPECT_FALSE(workspace_overlaps(args, kC + 4096, 0));              // an empty workspace
}

TEST(Validate, EmptyProblemSucceedsWithoutOperands) {
  GemmArgs args;
  args.m = 0;
  args.n = 256;
  args.k = 256;
  EXPECT_EQ(check_args(args), Status::kSuccess);
  args.n = 100;  // the shape is still checked
  EXPECT_EQ(check_args(args), Status::kErrorUnsupportedShape);
}

TEST(StatusStrings, EveryStatusHasADistinctDescription) {
  std::set<std::string> seen;
  for (int s = 0; s <= static_cast<int>(Status::kErrorOverlappingOperands); ++s) {
    const std::string text = marlin::to_string(static_cast<Status>(s));
    EXPECT_NE(text, "unknown status") << s;
    EXPECT_TRUE(seen.insert(text).second) << "duplicate description: " << text;
  }
  EXPECT_STREQ(marlin::to_string(Status::kSuccess), "success");
}

TEST(Version, MatchesMacros) {
  EXPECT_EQ(marlin::kVersion.major, MARLIN_VERSION_MAJOR);
  EXPECT_EQ(marlin::kVersion.minor, MARLIN_VERSION_MINOR);
  EXPECT_EQ(marlin::kVersion.patch, MARLIN_VERSION_PATCH);
}

// ---- configuration choice -------------------------------------------------------------------

TEST(Heuristics, MBlocksCoverMUpTo64AndCapAt4) {
  EXPECT_EQ(marlin::detail::select_m_blocks(1), 1);
  EXPECT_EQ(marlin::detail::select_m_blocks(16), 1);
  EXPECT_EQ(marlin::detail::select_m_blocks(17), 2);
  EXPECT_EQ(marlin::detail::select_m_blocks(48), 3);
  EXPECT_EQ(marlin::detail::select_m_blocks(49), 4);
  EXPECT_EQ(marlin::detail::select_m_blocks(64), 4);
  EXPECT_EQ(marlin::detail::select_m_blocks(5000), 4);
  EXPECT_EQ(marlin::detail::m_groups_for(64, 4), 1);
  EXPECT_EQ(marlin::detail::m_groups_for(65, 4), 2);
  EXPECT_EQ(marlin::detail::m_groups_for(1500, 4), 24);
}

TEST(Heuristics, EightRowKernelForAtMostEightRowsOfTheSixteenRowTile) {
  using marlin::detail::select_m_blocks;
  using marlin::detail::use_eight_row_kernel;
  static_assert(use_eight_row_kernel(1, 1) && use_eight_row_kernel(8, 1));
  for (int m = 1; m <= 8; ++m) EXPECT_TRUE(use_eight_row_kernel(m, select_m_blocks(m))) << m;
  for (int m = 9; m <= 16; ++m) EXPECT_FALSE(use_eight_row_kernel(m, select_m_blocks(m))) << m;
  // Only the 16-row tile has one: a 32-row tile with few rows keeps its own kernel.
  EXPECT_FALSE(use_eight_row_kernel(8, 2));
  EXPECT_FALSE(use_eight_row_kernel(17, select_m_blocks(17)));
}

// The decode kernels' pipeline by partition (select_decode_pipeline): warp-private where the
// CTAs read different K ranges of A at once (striped runs, splits of 3 or more; in the 16-row
// kernels only on the 128 x 128 tile); where they read the same rows together (whole slices,
// splits of 2) CTA-wide, or 128-byte K groups or the warp-private form where those measured
// faster. Every form the rule picks, and the planning form, is compiled, and every compiled form
// is picked by some call or is the planning form.
TEST(Heuristics, DecodePipelineFollowsThePartition) {
  using marlin::DecodePipeline;
  using marlin::detail::decode_pipeline_compiled;
  using marlin::detail::decode_planning_pipeline;
  using marlin::detail::make_partition;
  using marlin::detail::make_split_partition;
  using marlin::detail::Partition;
  using marlin::detail::select_decode_pipeline;
  constexpr int kNarrow = marlin::detail::kNarrowDecodeConfig;
  constexpr int kWide = marlin::detail::kWideDecodeConfig;
  constexpr DecodePipeline kWarp = DecodePipeline::kWarpPrivate;
  constexpr DecodePipeline kA128 = DecodePipeline::kWarpPrivateA128;
  constexpr DecodePipeline kCta = DecodePipeline::kCtaWide;
  const Partition whole = make_partition(32, 200, 1, 200);        // one CTA per slice
  const Partition short_runs = make_partition(64, 64, 1, 256);    // 16 tiles per CTA
  const Partition long_runs = make_partition(224, 64, 1, 261);    // 55 tiles per CTA
  const Partition split2 = make_split_partition(32, 48, 1, 2, 0);
  const Partition split4 = make_split_partition(32, 48, 1, 4, 0);  // 8 tiles per CTA
  const Partition long_split = make_split_partition(224, 8, 1, 5, 0);  // 45 tiles per CTA
  ASSERT_EQ(whole.iters, whole.k_tiles);
  ASSERT_NE(short_runs.iters, short_runs.k_tiles);
  ASSERT_NE(long_runs.iters, long_runs.k_tiles);
  const std::vector<Partition> apart{short_runs, long_runs, split4, long_split};
  const std::vector<Partition> together{whole, split2};
  if (marlin::kDecodeWarpPrivateMode == 1) {
    for (bool grouped : {false, true}) {
      // The eight-row kernels: warp-private; where the CTAs read A together, 128-byte K groups
      // per-channel at M >= 2 on the 128 x 128 tile (and at M = 1 on its whole slices) and on
      // the 64-wide tile, whose grouped kernel is CTA-wide there.
      for (int m = 1; m <= 8; ++m) {
        for (const Partition& p : apart) {
          EXPECT_EQ(select_decode_pipeline(0, true, grouped, m, p), kWarp);
          EXPECT_EQ(select_decode_pipeline(kNarrow, true, grouped, m, p), kWarp);
          EXPECT_EQ(select_decode_pipeline(kWide, true, grouped, m, p), kWarp);
        }
        for (const Partition& p : together) {
          EXPECT_EQ(select_decode_pipeline(0, true, grouped, m, p),
                    grouped || (m == 1 && p.split == 2) ? kWarp : kA128)
              << m;
          EXPECT_EQ(select_decode_pipeline(kNarrow, true, grouped, m, p),
                    grouped ? kCta : (m == 1 ? kWarp : kA128))
              << m;
          EXPECT_EQ(select_decode_pipeline(kWide, true, grouped, m, p), kWarp);
        }
      }
      // The 16-row kernels: per-channel with 128-byte K groups where the CTAs read A together
      // on the 128 x 128 and the 64-wide tiles; otherwise warp-private on the 128 x 128 tile
      // (striped runs and splits of 3 or more of any length, and every partition with group
      // scales) and CTA-wide on the others.
      for (int m = 9; m <= 16; ++m) {
        for (const Partition& p : apart) {
          EXPECT_EQ(select_decode_pipeline(0, false, grouped, m, p), kWarp);
        }
        for (const Partition& p : together) {
          EXPECT_EQ(select_decode_pipeline(0, false, grouped, m, p), grouped ? kWarp : kA128);
        }
        for (const Partition& p : apart) {
          EXPECT_EQ(select_decode_pipeline(kNarrow, false, grouped, m, p), kCta);
        }
        for (const Partition& p : together) {
          EXPECT_EQ(select_decode_pipeline(kNarrow, false, grouped, m, p), grouped ? kCta : kA128);
        }
        for (const Partition& p : {whole, short_runs, long_runs, split2, split4, long_split}) {
          EXPECT_EQ(select_decode_pipeline(kWide, false, grouped, m, p), kCta);
        }
      }
    }
  }
  // Picked forms are compiled, and compiled forms are picked, but for the planning forms that
  // only make_plan's fallback runs (where the picked form would lose the partition's
  // residency): the 128 x 128 tile's 16-row kernels CTA-wide, of both scale modes.
  int compiled = 0;
  int unpicked = 0;
  for (int config = 0; config < marlin::kNumTileConfigs; ++config) {
    for (bool grouped : {false, true}) {
      for (bool eight_rows : {false, true}) {
        EXPECT_TRUE(decode_pipeline_compiled(config, grouped, eight_rows,
                                             decode_planning_pipeline(eight_rows)));
        std::set<DecodePipeline> picked;
        for (int m = eight_rows ? 1 : 9; m <= (eight_rows ? 8 : 16); ++m) {
          for (const Partition& p : {whole, short_runs, long_runs, split2, split4, long_split}) {
            const DecodePipeline pipeline =
                select_decode_pipeline(config, eight_rows, grouped, m, p);
            EXPECT_TRUE(decode_pipeline_compiled(config, grouped, eight_rows, pipeline))
                << "config " << config << " grouped " << grouped << " m " << m;
            picked.insert(pipeline);
          }
        }
        for (DecodePipeline pipeline : {kCta, kWarp, kA128}) {
          if (decode_pipeline_compiled(config, grouped, eight_rows, pipeline)) {
            ++compiled;
            if (picked.count(pipeline) == 1) continue;
            ++unpicked;
            EXPECT_TRUE(config == 0 && !eight_rows && pipeline == kCta &&
                        pipeline == decode_planning_pipeline(eight_rows))
                << "config " << config << " grouped " << grouped << " eight_rows "
                << eight_rows << " pipeline " << static_cast<int>(pipeline);
          }
        }
      }
    }
  }
  // Two kernels per (tile, scale mode) in builds of one form; seven more with the rule: the
  // 128 x 128 tile's 16-row kernels warp-private (2), its per-channel 16-row and eight-row
  // kernels with 128-byte K groups (2), the 64-wide tile's per-channel 16-row and eight-row
  // kernels with 128-byte K groups (2) and its grouped eight-row kernel CTA-wide (1).
  EXPECT_EQ(compiled, 4 * marlin::kNumTileConfigs + (marlin::kDecodeWarpPrivateMode == 1 ? 7 : 0));
  EXPECT_EQ(unpicked, marlin::kDecodeWarpPrivateMode == 1 ? 2 : 0);
}

TEST(Heuristics, DecodeWholeSlicesWhereTheIdleCtasWouldStreamFewBytes) {
  using marlin::detail::kDecodeWholeSlices;
  using marlin::detail::use_decode_whole_slices;
  if (kDecodeWholeSlices != 1) GTEST_SKIP() << "built with another whole-slice rule";
  // 132 SMs at two CTAs each: 264 resident CTAs; 128-wide slices of the 16-row tile. The
  // bytes the idle CTAs would have streamed: (264 - slices) x K x 64.
  constexpr int kCapacity = 264;
  const auto whole = [](int slices, int k, bool grouped) {
    return use_decode_whole_slices(1, slices, kCapacity, k, 128, grouped, false);
  };
  for (bool grouped : {true, false}) {
    SCOPED_TRACE(grouped ? "group scales" : "per-channel");
    EXPECT_TRUE(whole(28672 / 128, 4096, grouped));   // 224 slices: 10 MiB idle
    EXPECT_TRUE(whole(18944 / 128, 2048, grouped));   // 148 slices (56 %): 14.5 MiB
    EXPECT_TRUE(whole(31744 / 128, 16384, grouped));  // 248: exactly 16 MiB
    EXPECT_TRUE(whole(kCapacity, 65536, grouped));    // exactly one wave: nothing idle
    EXPECT_FALSE(whole(57344 / 128, 8192, grouped));  // 448: more than a wave
    EXPECT_FALSE(whole(kCapacity + 1, 1024, grouped));
    EXPECT_FALSE(whole(22528 / 128, 8192, grouped));  // 176: 44 MiB
    EXPECT_FALSE(whole(131, 128, grouped));           // fewer slices than half the CTAs
    // Only the decode tiles (m_blocks 1); the 32-64-row mma.sync tiles keep striped runs.
    EXPECT_FALSE(use_decode_whole_slices(2, 224, kCapacity, 2048, 128, grouped, false));
    EXPECT_FALSE(use_decode_whole_slices(4, 224, kCapacity, 2048, 128, grouped, false));
  }
  // Group scales: at most 16 MiB (exactly 16 MiB holds, a K tile more does not).
  EXPECT_TRUE(whole(25600 / 128, 4096, true));     // 200 slices: 16 MiB
  EXPECT_FALSE(whole(25600 / 128, 4224, true));    // 16.5 MiB
  EXPECT_FALSE(whole(24576 / 128, 4096, true));    // 192: 18 MiB
  EXPECT_FALSE(whole(27136 / 128, 8192, true));    // 212 (80 %): 26 MiB
  EXPECT_FALSE(whole(29696 / 128, 14336, true));   // 232 (88 %): 28 MiB
  // Per-channel: at most 24 MiB, or at least 80 % of the CTAs.
  EXPECT_TRUE(whole(24576 / 128, 4096, false));    // 18 MiB
  EXPECT_TRUE(whole(25600 / 128, 6144, false));    // 200 slices: 24 MiB
  EXPECT_FALSE(whole(25600 / 128, 6272, false));   // 24.5 MiB, 76 %
  EXPECT_FALSE(whole(26624 / 128, 8192, false));   // 208 (79 %): 28 MiB
  EXPECT_TRUE(whole(27136 / 128, 8192, false));    // 212 (80.3 %): 26 MiB
  EXPECT_TRUE(whole(29696 / 128, 16384, false));   // 232: 32 MiB
  EXPECT_FALSE(whole(211, 16384, false));          // 79.9 %: 53 MiB
  // The idle bytes of a 64-wide tile count its own width; these take the same whole slices
  // for the eight-row kernels.
  for (bool eight_rows : {false, true}) {
    EXPECT_TRUE(use_decode_whole_slices(1, 200, kCapacity, 8192, 64, true, eight_rows));  // 16 MiB
    EXPECT_FALSE(use_decode_whole_slices(1, 200, kCapacity, 8192, 128, true, eight_rows));
    EXPECT_TRUE(use_decode_whole_slices(1, 212, kCapacity, 8192, 128, false, eight_rows));
    EXPECT_FALSE(use_decode_whole_slices(1, 211, kCapacity, 16384, 128, false, eight_rows));
  }
  // The 128-wide tile's eight-row kernels from 70 % of the CTAs: at most 20 MiB with group
  // scales and 32 MiB per-channel (change 111); below 70 % and on the 64-wide tile 16 and 24.
  const auto whole8 = [](int slices, int k, bool grouped) {
    return use_decode_whole_slices(1, slices, kCapacity, k, 128, grouped, true);
  };
  EXPECT_TRUE(whole8(24576 / 128, 4096, true));    // 192 slices: 18 MiB
  EXPECT_TRUE(whole8(28672 / 128, 8192, true));    // 224: exactly 20 MiB
  EXPECT_FALSE(whole8(28672 / 128, 8320, true));   // 20.3 MiB
  EXPECT_FALSE(whole8(24576 / 128, 5120, true));   // 22.5 MiB
  EXPECT_FALSE(whole8(20480 / 128, 4096, false));  // 160 (61 %): 26 MiB
  EXPECT_FALSE(whole8(17920 / 128, 2560, true));   // 140 (53 %): 19.4 MiB
  EXPECT_TRUE(whole8(185, 4096, true));            // 70.1 %: 19.75 MiB
  EXPECT_FALSE(whole8(184, 4096, true));           // 69.7 %: 20 MiB
  EXPECT_TRUE(whole8(184, 3200, true));            // 69.7 %: 15.6 MiB, the general limit
  EXPECT_TRUE(whole8(24576 / 128, 7168, false));   // 31.5 MiB
  EXPECT_TRUE(whole8(25600 / 128, 8192, false));   // 200: exactly 32 MiB
  EXPECT_FALSE(whole8(25600 / 128, 8320, false));  // 32.5 MiB, 76 %
  EXPECT_FALSE(whole8(24576 / 128, 8192, false));  // 36 MiB
  EXPECT_FALSE(use_decode_whole_slices(1, 192, kCapacity, 8192, 64, true, true));   // 18 MiB
  EXPECT_FALSE(use_decode_whole_slices(1, 192, kCapacity, 14336, 64, false, true));  // 31.5
  // The 256-wide tile (make_plan's wide whole slices): the bytes alone with group scales and
  // for the 16-row kernels; per-channel eight-row kernels also from 84 % of the CTAs.
  const auto wide = [](int n, int k, bool grouped, bool eight_rows) {
    return use_decode_whole_slices(1, n / 256, kCapacity, k, 256, grouped, eight_rows);
  };
  for (bool grouped : {true, false}) {
    for (bool eight_rows : {false, true}) {
      EXPECT_TRUE(wide(57344, 2048, grouped, eight_rows));  // 224 slices: 10 MiB
      EXPECT_TRUE(wide(65536, 8192, grouped, eight_rows));  // 256: 8 MiB
    }
    EXPECT_FALSE(wide(57344, 8192, grouped, false));  // 40 MiB
    EXPECT_EQ(wide(57344, 8192, grouped, true), !grouped);  // 85 %
    EXPECT_EQ(wide(61440, 16384, grouped, true), !grouped);  // 240 slices (91 %): 48 MiB
    EXPECT_FALSE(wide(55296, 12288, grouped, true));  // 216 (81.8 %): 72 MiB
    EXPECT_FALSE(wide(54272, 4096, grouped, true));   // 212 (80.3 %): 26 MiB
    EXPECT_FALSE(wide(53248, 16384, grouped, true));  // 208 (79 %): 112 MiB
    EXPECT_FALSE(wide(67840, 1024, grouped, true));   // 265: more than a wave
  }
  EXPECT_FALSE(wide(57344, 4096, true, false));  // 20 MiB
  EXPECT_TRUE(wide(57344, 4096, false, false));
  EXPECT_FALSE(wide(61440, 16384, false, false));  // 91 %, 16 rows
}

TEST(Heuristics, ChosenTileAlwaysDividesN) {
  for (int n = 64; n <= 20480; n += 64) {
    for (int m : {1, 16, 17, 64, 65, 1000}) {
      const int config = marlin::detail::select_tile_config(m, n);
      ASSERT_TRUE(marlin::detail::tile_divides(config, n)) << "m=" << m << " n=" << n;
    }
  }
  // The deep 128x128 tile for decode and for the narrower layers at small batches, the
  // 256-wide one for wide layers (H200 measurements, bench/NOTES.md change 9), the 64-wide one
  // for N that only 64 divides.
  using marlin::detail::select_tile_config;
  static_assert(select_tile_config(1, 57344) == 0);
  static_assert(select_tile_config(32, 8192) == 0 && select_tile_config(64, 10240) == 0);
  static_assert(select_tile_config(32, 16384) == 1 && select_tile_config(17, 57344) == 1);
  static_assert(select_tile_config(96, 4096) == 0 && select_tile_config(96, 8192) == 1);
  static_assert(select_tile_config(64, 16512) == 0);  // 256 does not divide N
  static_assert(select_tile_config(64, 384) == 0);
  static_assert(select_tile_config(8, 192) == 2);
}

TEST(TileConfigs, AllFitTheSharedMemoryOfSm80AndSm86) {
  constexpr int kSm86OptinBytes = 99 * 1024;
  for (int i = 0; i < marlin::kNumTileConfigs; ++i) {
    EXPECT_TRUE(marlin::is_valid(marlin::kTileConfigs[i]));
    for (int m_blocks = 1; m_blocks <= marlin::kMaxMBlocks; ++m_blocks) {
      for (bool grouped : {false, true}) {
        // the decode kernels' warp-private pipelines too (their scale rows)
        for (bool warp_private : {false, m_blocks == 1}) {
          const int smem =
              marlin::smem_bytes(marlin::kTileConfigs[i], m_blocks, grouped, false, warp_private);
          EXPECT_LE(smem, kSm86OptinBytes) << "config " << i << " m_blocks " << m_blocks;
          // the pipeline and the fp32 reduction tile that reuses it both fit
          EXPECT_GE(smem,
                    marlin::stages_for(marlin::kTileConfigs[i], m_blocks, false, grouped) *
                        marlin::stage_bytes(marlin::kTileConfigs[i], m_blocks, grouped,
                                            warp_private));
          EXPECT_GE(smem, 16 * m_blocks * (marlin::kTileConfigs[i].tile_n() + 8) * 4);
        }
      }
    }
  }
  // Decode: two CTAs of 16 x 128 x 128 fit an SM of an A100 (164 KB, of which the driver
  // reserves 1 KB per CTA: cudaDevAttrReservedSharedMemoryPerBlock). On sm_86 and sm_89 (100 KB
  // per SM) the grouped decode CTA with that reserve needs more than half an SM, so one fits;
  // the host asks the occupancy API, so the plan follows whatever the device reports.
  constexpr int kReservedPerCta = 1024;
  static_assert(2 * (marlin::smem_bytes(marlin::kTileConfigs[0], 1, true, false) +
                     kReservedPerCta) <= 164 * 1024);
  static_assert(2 * (marlin::smem_bytes(marlin::kTileConfigs[0], 1, true, false) +
                     kReservedPerCta) > 100 * 1024);
  static_assert(2 * (marlin::smem_bytes(marlin::kTileConfigs[0], 1, true, false, true) +
                     kReservedPerCta) <= 164 * 1024);
  // A 16 x 128 x 128 stage: A (4 KB), B (8 KB) and the scales, in a warp-private pipeline
  // every warp's 64 (1 KB) instead of the tile's row (256 bytes); per-channel none. Only the
  // decode kernels (m_blocks 1) have warp-private pipelines.
  constexpr int kDecodeAB = 16 * 128 * 2 + 128 * 128 / 2;
  static_assert(marlin::stage_bytes(marlin::kTileConfigs[0], 1, true, true) == kDecodeAB + 1024);
  static_assert(marlin::stage_bytes(marlin::kTileConfigs[0], 1, true, false) == kDecodeAB + 256);
  static_assert(marlin::stage_bytes(marlin::kTileConfigs[0], 1, false, true) == kDecodeAB);
  static_assert(marlin::stage_bytes(marlin::kTileConfigs[0], 2, true, true) ==
                marlin::stage_bytes(marlin::kTileConfigs[0], 2, true, false));
}

TEST(TileConfigs, PipelineDepthAndTilesPerBarrier) {
  using marlin::kTileConfigs;
  using marlin::stages_for;
  using marlin::tiles_per_sync;
  // Decode (m_blocks 1) and the warpgroup kernels: one barrier per tile; the mma.sync kernels
  // of 17-64 rows: one per two tiles (the build's default).
  static_assert(tiles_per_sync(false, 1) == 1 && tiles_per_sync(true, 4) == 1 &&
                tiles_per_sync(true, 8) == 1 && tiles_per_sync(true, 16) == 1 &&
                tiles_per_sync(true, 2) == 1);
  static_assert(tiles_per_sync(false, 2) == marlin::kTilesPerSync &&
                tiles_per_sync(false, 4) == marlin::kTilesPerSync);
  static_assert(stages_for(kTileConfigs[0], 1, false, true) == marlin::kStages);
  static_assert(stages_for(kTileConfigs[0], 8, true, true) == marlin::kWgmmaStages);
  static_assert(stages_for(kTileConfigs[0], 8, true, false) == marlin::kWgmmaStages);
  static_assert(stages_for(kTileConfigs[1], marlin::kWgmmaMBlocksTiny, true, true) ==
                marlin::kWgmmaTinyStages);
  // The 64-row warpgroup tile's depth by scale mode; the mma.sync kernel of 64 rows has its own.
  static_assert(stages_for(kTileConfigs[1], marlin::kWgmmaMBlocksSmall, true, true) ==
                marlin::kWgmmaSmallStages);
  static_assert(stages_for(kTileConfigs[1], marlin::kWgmmaMBlocksSmall, true, false) ==
                marlin::kWgmmaSmallChannelStages);
  static_assert(stages_for(kTileConfigs[1], marlin::kWgmmaMBlocksSmall, false, true) ==
                marlin::kStages);
  if (marlin::kTilesPerSync == 2) {  // not static: A/B builds change it
    // Six stages where they fit the portable 99 KB: every 32-row tile; 4 where they do not
    // (the 48- and 64-row 128 x 128 tiles). The same in both scale modes.
    for (bool grouped : {false, true}) {
      EXPECT_EQ(stages_for(kTileConfigs[0], 2, false, grouped), marlin::kPairedStages);
      EXPECT_EQ(stages_for(kTileConfigs[1], 2, false, grouped), marlin::kPairedStages);
      EXPECT_EQ(stages_for(kTileConfigs[2], 2, false, grouped), marlin::kPairedStages);
      EXPECT_EQ(stages_for(kTileConfigs[0], 3, false, grouped), marlin::kStages);
      EXPECT_EQ(stages_for(kTileConfigs[0], 4, false, grouped), marlin::kStages);
    }
  }
  for (int i = 0; i < marlin::kNumTileConfigs; ++i) {
    for (int m_blocks = 1; m_blocks <= marlin::kMaxMBlocks; ++m_blocks) {
      const int depth = stages_for(kTileConfigs[i], m_blocks, false, true);
      const int per_sync = tiles_per_sync(false, m_blocks);
      // whole groups of tiles per trip of the unrolled loop, and a group in flight; one depth
      // for both scale modes
      EXPECT_EQ(depth % per_sync, 0) << i << " " << m_blocks;
      EXPECT_GE(depth, 2 * per_sync) << i << " " << m_blocks;
      EXPECT_EQ(stages_for(kTileConfigs[i], m_blocks, false, false), depth)
          << i << " " << m_blocks;
    }
  }
}

TEST(TileConfigs, ClusterExchangeBufferFitsBesideThePipelineOnSm90) {
  constexpr int kSm90OptinBytes = 227 * 1024;
  constexpr int kSm90SmBytes = 228 * 1024;
  for (int i = 0; i < marlin::kNumTileConfigs; ++i) {
    const marlin::TileConfig c = marlin::kTileConfigs[i];
    for (int m_blocks = 1; m_blocks <= marlin::kMaxMBlocks; ++m_blocks) {
      for (bool grouped : {false, true}) {
        for (bool warp_private : {false, m_blocks == 1}) {
          const int base = marlin::smem_bytes(c, m_blocks, grouped, false, warp_private);
          const int offset = marlin::exchange_offset(c, m_blocks, grouped, warp_private);
          const int exchange = marlin::exchange_bytes(c, m_blocks);
          // after the pipeline and the reduction tile, inside what the host launches with
          const int depth = marlin::stages_for(c, m_blocks, false, grouped);
          EXPECT_GE(offset, depth * marlin::stage_bytes(c, m_blocks, grouped, warp_private));
          EXPECT_GE(offset, 16 * m_blocks * (c.tile_n() + 8) * 4);
          EXPECT_LE(offset + marlin::kSmemAlign, base);
          EXPECT_EQ(offset % 16, 0);
          EXPECT_LE(base + exchange, kSm90OptinBytes) << "config " << i << " m_blocks " << m_blocks;
          // every rank's slots: ceil(vectors / ranks) each, for every split the host may choose
          const int vectors = 16 * m_blocks * c.tile_n() / 8;
          for (int ranks = 2; ranks <= marlin::kMaxClusterSplit; ++ranks) {
            EXPECT_LE(ranks * ((vectors + ranks - 1) / ranks) * 32, exchange) << ranks;
          }
        }
      }
    }
  }
  // Decode keeps two CTAs per SM with the buffer (8.25 KB more per CTA), with the warp-private
  // pipeline too.
  static_assert(2 * (marlin::smem_bytes(marlin::kTileConfigs[0], 1, true, false) +
                     marlin::exchange_bytes(marlin::kTileConfigs[0], 1)) <=
                kSm90SmBytes);
  static_assert(2 * (marlin::smem_bytes(marlin::kTileConfigs[0], 1, true, false, true) +
                     marlin::exchange_bytes(marlin::kTileConfigs[0], 1)) <=
                kSm90SmBytes);
}

// The warp-specialized tiles whose cluster splits of 3 or more push their vectors to the rank
// that sums them (gemm_kernel_ws's kPush, launch.cuh ws_push_kernel_for): those of at most 16
// accumulator vectors per computing thread, never a split of 2 (change 36's exchange) or
// less. Every slot the kernel writes lies in the receive region, for every split and number of
// rows below M, and with it every split fits the 227 KB of shared memory that sm_90 gives a
// block. (The default build: the 32- and 64-row tiles compute with four warpgroups, the
// others with two; MARLIN_WS_WIDE_COMPUTE.)
TEST(TileConfigs, WarpSpecializedSplitsPushWhereTheVectorsAreFewAndFitSm90) {
  using marlin::ws_split_pushes;
  if (marlin::kWsWideCompute != 2) GTEST_SKIP() << "the literals below are the default build's";
  constexpr int kSm90OptinBytes = 227 * 1024;
  const marlin::TileConfig wide = marlin::kTileConfigs[marlin::kWgmmaConfig];
  const marlin::TileConfig narrow = marlin::kWgmmaNarrowTile;
  struct Tile {
    marlin::TileConfig config;
    int m_blocks;
    int warpgroups;  // computing warpgroups of 128 threads
    int vectors;     // accumulator vectors per computing thread: 8 rows x 8 columns each
    bool pushes;
  };
  for (const Tile t : {Tile{wide, marlin::kWgmmaMBlocksTiny, 4, 4, true},
                       Tile{wide, marlin::kWgmmaMBlocksSmall, 4, 8, true},
                       Tile{narrow, marlin::kWgmmaMBlocks, 2, 16, true},
                       Tile{wide, marlin::kWgmmaMBlocks, 2, 32, false},
                       Tile{narrow, marlin::kWgmmaMBlocksTall, 2, 32, false}}) {
    SCOPED_TRACE(std::to_string(16 * t.m_blocks) + " x " + std::to_string(t.config.tile_n()));
    ASSERT_EQ(marlin::ws_compute_warpgroups(t.config, t.m_blocks), t.warpgroups);
    ASSERT_EQ(marlin::ws_threads(t.config, t.m_blocks), 128 + 128 * t.warpgroups);
    ASSERT_EQ(marlin::ws_accumulator_vectors(t.config, t.m_blocks), t.vectors);
    const int computing_threads = 128 * t.warpgroups;
    for (int split = 0; split <= 2; ++split) {
      EXPECT_FALSE(ws_split_pushes(t.config, t.m_blocks, split)) << split;
    }
    // 64-column strips per computing warpgroup
    const int strips = t.config.tile_n() / 64 / t.warpgroups;
    const int row_vecs = 2 * t.m_blocks;  // vectors per strip (8 rows each)
    ASSERT_EQ(strips * row_vecs, t.vectors);
    int most = 0;
    for (int split = 3; split <= marlin::kMaxClusterSplit; ++split) {
      SCOPED_TRACE("split " + std::to_string(split));
      EXPECT_EQ(ws_split_pushes(t.config, t.m_blocks, split), t.pushes);
      const int received = marlin::ws_push_receive_bytes(t.config, t.m_blocks, split);
      most = received > most ? received : most;
      // The kernel's indexing (gemm_kernel_ws, kPush): with `live` vectors per strip holding
      // rows below M, rank p stores owned vector j of rank o at float4
      // (slot * per + j) * threads + thread, slot <= split - 2, j < per.
      for (int live = 1; live <= row_vecs; ++live) {
        const int per = (strips * live + split - 1) / split;
        const int last_float4 = ((split - 2) * per + per - 1) * computing_threads +
                                computing_threads - 1;
        EXPECT_LE(16 * (last_float4 + 1), received) << "live " << live;
        // Each rank's owned vectors wait for the sum in the pipeline's memory (change 52).
        for (bool grouped : {false, true}) {
          EXPECT_LE(per * computing_threads * 16,
                    marlin::pipeline_bytes(t.config, t.m_blocks, grouped, true));
        }
      }
    }
    EXPECT_EQ(marlin::ws_push_receive_max_bytes(t.config, t.m_blocks), most);
    if (t.pushes) {
      for (bool grouped : {false, true}) {
        EXPECT_LE(marlin::ws_smem_bytes(t.config, t.m_blocks, grouped) + most, kSm90OptinBytes)
            << grouped;
        // As the kernel asserts: all of a thread's vectors fit the pipeline's memory.
        EXPECT_LE(t.vectors * computing_threads * 16,
                  marlin::pipeline_bytes(t.config, t.m_blocks, grouped, true))
            << grouped;
      }
    }
  }
  EXPECT_FALSE(ws_split_pushes(narrow, marlin::kWgmmaMBlocks, marlin::kMaxClusterSplit + 1));
}

TEST(Heuristics, WarpgroupTileWhereItMeasuredFaster) {
  using marlin::kWgmmaMBlocks;
  using marlin::kWgmmaMBlocksSmall;
  using marlin::kWgmmaMBlocksTall;
  using marlin::detail::kWgmmaTallMinRows;
  using marlin::detail::wgmma_m_blocks;
  // From 128 rows, the 128-row tile on every layer whose N is a multiple of 256; from
  // kWgmmaTallMinRows rows (the build's default: 129), the 256-row tile where it makes at
  // least kWgmmaTallMinSlices (33) slices of 128 columns.
  static_assert(wgmma_m_blocks(128, 256, 128) == kWgmmaMBlocks);
  static_assert(wgmma_m_blocks(128, 57344, 8192) == kWgmmaMBlocks);
  static_assert(wgmma_m_blocks(256, 4096, 4096) == kWgmmaMBlocks);  // 32 slices
  static_assert(wgmma_m_blocks(4096, 256, 128) == kWgmmaMBlocks);   // 32 slices
  if (kWgmmaTallMinRows == 129) {  // not static: A/B builds change it
    EXPECT_EQ(wgmma_m_blocks(129, 6144, 4096), kWgmmaMBlocksTall);  // 48 slices
    EXPECT_EQ(wgmma_m_blocks(257, 4096, 4096), kWgmmaMBlocksTall);  // 64 slices
    EXPECT_EQ(wgmma_m_blocks(4096, 57344, 8192), kWgmmaMBlocksTall);
    EXPECT_EQ(wgmma_m_blocks(4352, 256, 128), kWgmmaMBlocksTall);   // 34 slices
  }
  static_assert(wgmma_m_blocks(512, 192, 4096) == 0);  // N not a multiple of 256
  // Below 128 rows: the 64-row tile from 33 to 64 rows on layers larger than 4096 x 4096 (on
  // 4096 x 4096 through wgmma_m_blocks_beside_split), one 128-row tile (the weights streamed
  // once) for 65-127 on layers of at least 4096 x 4096 (run 77: x0.84-0.93 there against
  // mma.sync).
  if (marlin::detail::kWgmmaMinRows == 33) {  // not static: A/B builds change it
    EXPECT_EQ(wgmma_m_blocks(32, 4096, 8192), 0);
    EXPECT_EQ(wgmma_m_blocks(33, 4096, 8192), kWgmmaMBlocksSmall);  // 8192 x 4096 (change 67)
    EXPECT_EQ(wgmma_m_blocks(48, 8192, 28672), kWgmmaMBlocksSmall);  // 28672 x 8192
    EXPECT_EQ(wgmma_m_blocks(40, 6144, 4096), kWgmmaMBlocksSmall);   // 4096 x 6144
    EXPECT_EQ(wgmma_m_blocks(33, 16384, 4096), kWgmmaMBlocksSmall);
  }
  static_assert(wgmma_m_blocks(64, 57344, 8192) == kWgmmaMBlocksSmall);
  static_assert(wgmma_m_blocks(65, 6144, 4096) == kWgmmaMBlocks);
  static_assert(wgmma_m_blocks(127, 4096, 14336) == kWgmmaMBlocks);
  static_assert(wgmma_m_blocks(64, 4096, 4096) == 0);
  static_assert(wgmma_m_blocks(65, 4096, 4096) == kWgmmaMBlocks);
  static_assert(wgmma_m_blocks(127, 4096, 4096) == kWgmmaMBlocks);
  static_assert(wgmma_m_blocks(64, 2048, 2048) == 0 && wgmma_m_blocks(127, 4096, 2048) == 0);
  // 17-32 rows on layers of at least kWgmmaTinyMinN (the build's default: 16384) columns,
  // larger than 4096 x 4096: the 32-row tile.
  if (marlin::detail::kWgmmaTinyMinN == 16384) {  // not static: A/B builds change it
    EXPECT_EQ(wgmma_m_blocks(32, 28672, 4096), marlin::kWgmmaMBlocksTiny);
    EXPECT_EQ(wgmma_m_blocks(17, 16384, 16384), marlin::kWgmmaMBlocksTiny);
    EXPECT_EQ(wgmma_m_blocks(16, 28672, 4096), 0);
    EXPECT_EQ(wgmma_m_blocks(32, 8192, 8192), 0);
    EXPECT_EQ(wgmma_m_blocks(24, 16384, 1024), 0);  // 16384 x 1024 = 4096 x 4096
    EXPECT_EQ(wgmma_m_blocks(32, 57344, 8192), marlin::kWgmmaMBlocksTiny);  // 8192 x 57344
  }
  for (int m = 1; m <= 300; ++m) {
    for (auto [n, k] : {std::pair{4096, 4096}, std::pair{6144, 4096}, std::pair{192, 8192},
                        std::pair{28672, 4096}}) {
      const int m_blocks = wgmma_m_blocks(m, n, k);
      if (m_blocks == 0) continue;
      EXPECT_TRUE(marlin::is_wgmma_m_blocks(m_blocks)) << m;
      // the 32- and 64-row tiles hold M (the 128- and 256-row tiles also run as several row
      // groups), and no smaller tile would
      EXPECT_TRUE(16 * m_blocks >= m || m_blocks > kWgmmaMBlocksSmall) << m;
      EXPECT_TRUE(m_blocks <= kWgmmaMBlocksSmall || m > 16 * kWgmmaMBlocksSmall) << m;
      EXPECT_TRUE(m_blocks != kWgmmaMBlocksSmall || m > 16 * marlin::kWgmmaMBlocksTiny) << m;
      EXPECT_TRUE(m_blocks != marlin::kWgmmaMBlocksTiny || m > 16) << m;
      const int tall_slices = n / 128 * ((m + 255) / 256);
      EXPECT_EQ(m_blocks == kWgmmaMBlocksTall,
                kWgmmaTallMinRows > 0 && m >= kWgmmaTallMinRows &&
                    tall_slices >= marlin::detail::kWgmmaTallMinSlices)
          << m;
    }
  }
  // Every warpgroup tile's pipeline and reduction tile (and the warp-specialized kernel's
  // output tile) fit an sm_90 block (227 KB): the 64- and 128-row tiles at both widths, the
  // 256-row tile narrow (its only width).
  for (const marlin::TileConfig tile :
       {marlin::kTileConfigs[marlin::kWgmmaConfig], marlin::kWgmmaNarrowTile}) {
    for (int m_blocks :
         {marlin::kWgmmaMBlocksTiny, kWgmmaMBlocksSmall, kWgmmaMBlocks, kWgmmaMBlocksTall}) {
      if (m_blocks == kWgmmaMBlocksTall && tile.tile_n() != marlin::kWgmmaNarrowTile.tile_n()) {
        continue;
      }
      for (bool grouped : {false, true}) {
        const int smem = marlin::smem_bytes(tile, m_blocks, grouped, true);
        EXPECT_LE(smem, 227 * 1024) << m_blocks;
        EXPECT_GE(smem, marlin::stages_for(tile, m_blocks, true, grouped) *
                            marlin::stage_bytes(tile, m_blocks, grouped));
        EXPECT_GE(smem, 16 * m_blocks * (tile.tile_n() + 8) * 4);
        // The warp-specialized kernel adds its fp16 output tile after all of that.
        const int ws_smem = marlin::ws_smem_bytes(tile, m_blocks, grouped);
        EXPECT_EQ(ws_smem, smem + 16 * m_blocks * (tile.tile_n() + 8) * 2) << m_blocks;
        EXPECT_LE(ws_smem, 227 * 1024) << m_blocks;
      }
    }
  }
  static_assert(marlin::kWgmmaNarrowTile.tile_k() == marlin::kWgmmaTileK);
}

TEST(Heuristics, WarpgroupTilesBesideTheMmaSyncSplitOfTwo) {
  using marlin::detail::kWgmmaBesideSplit;
  using marlin::detail::wgmma_beats_mma_split;
  using marlin::detail::wgmma_m_blocks_beside_split;
  // Not a split of 2 (none: striped runs; 3 or more): the warpgroup tile runs. Beside a split
  // of 2, only the 32-row tile, and only on layers of at least kWgmmaTinyBesideSplit2Layer
  // weights (the build's default: 0, every layer; change 63).
  constexpr long long k8192sq = 8192LL * 8192;
  constexpr int tiny = marlin::kWgmmaMBlocksTiny, small = marlin::kWgmmaMBlocksSmall;
  static_assert(wgmma_beats_mma_split(0, tiny, k8192sq) && wgmma_beats_mma_split(3, small, k8192sq));
  static_assert(!wgmma_beats_mma_split(2, small, 4 * k8192sq));
  if (marlin::detail::kWgmmaTinyBesideSplit2Layer == 0) {  // A/B builds change it
    EXPECT_TRUE(wgmma_beats_mma_split(2, tiny, 28672LL * 8192));
    EXPECT_TRUE(wgmma_beats_mma_split(2, tiny, k8192sq));
    EXPECT_TRUE(wgmma_beats_mma_split(2, tiny, 4096LL * 6144));
  }
  if (!kWgmmaBesideSplit) {  // not static: A/B builds turn it off
    EXPECT_EQ(wgmma_m_blocks_beside_split(24, 4096, 14336), 0);
    return;
  }
  // 14336 x 4096 and 8192 x 10240 (bench layers, N < 16384): 17-32 rows the 32-row tile, and
  // so on 4096 x 4096 (change 64), which also takes the 64-row tile at 33-64 rows (changes 64
  // and 66); where wgmma_m_blocks already gives a tile (the 64-row tile from 33 rows on larger
  // layers, change 67), or below 17 rows, above 64, on layers smaller than 4096 x 4096 or N
  // not a multiple of 256: none.
  EXPECT_EQ(wgmma_m_blocks_beside_split(17, 4096, 14336), marlin::kWgmmaMBlocksTiny);
  EXPECT_EQ(wgmma_m_blocks_beside_split(32, 10240, 8192), marlin::kWgmmaMBlocksTiny);
  EXPECT_EQ(wgmma_m_blocks_beside_split(16, 4096, 14336), 0);
  EXPECT_EQ(wgmma_m_blocks_beside_split(24, 16384, 16384), 0);  // wgmma_m_blocks: 32-row
  EXPECT_EQ(wgmma_m_blocks_beside_split(24, 4096, 4096), marlin::kWgmmaMBlocksTiny);
  EXPECT_EQ(wgmma_m_blocks_beside_split(40, 4096, 4096), marlin::kWgmmaMBlocksSmall);
  EXPECT_EQ(wgmma_m_blocks_beside_split(64, 4096, 4096), marlin::kWgmmaMBlocksSmall);
  EXPECT_EQ(wgmma_m_blocks_beside_split(65, 4096, 4096), 0);  // wgmma_m_blocks: 128-row
  if (marlin::detail::kWgmmaMinRows == 33) {  // not static: A/B builds change it
    EXPECT_EQ(wgmma_m_blocks_beside_split(33, 10240, 8192), 0);  // wgmma_m_blocks: 64-row
    EXPECT_EQ(wgmma_m_blocks_beside_split(48, 4096, 14336), 0);
  }
  EXPECT_EQ(wgmma_m_blocks_beside_split(24, 4096, 2048), 0);   // 2048 x 4096
  EXPECT_EQ(wgmma_m_blocks_beside_split(24, 16384, 1016), 0);  // 1016 x 16384 < 4096 x 4096
  EXPECT_EQ(wgmma_m_blocks_beside_split(24, 6016, 8192), 0);  // 6016 % 256 != 0
  for (int m = 1; m <= 200; ++m) {
    for (auto [n, k] : {std::pair{4096, 14336}, std::pair{10240, 8192}, std::pair{8192, 28672},
                        std::pair{28672, 4096}, std::pair{4096, 4096}}) {
      const int beside = wgmma_m_blocks_beside_split(m, n, k);
      if (beside == 0) continue;
      EXPECT_EQ(marlin::detail::wgmma_m_blocks(m, n, k), 0) << m << " " << n << " " << k;
      EXPECT_GE(16 * beside, m);
      EXPECT_TRUE(marlin::is_wgmma_m_blocks(beside));
    }
  }
}

TEST(Heuristics, NarrowWarpgroupTileWhereWideTilesAreFew) {
  using marlin::detail::kWgmmaTallMinRows;
  using marlin::detail::use_narrow_wgmma_tile;
  // 128-row tiles, at most 40 slices of 256 columns: 4096^2 and 14336 x 4096 at M = 128-256,
  // 8192^2, 28672 x 8192 and 8192 x 10240 at M = 96 and 128.
  static_assert(use_narrow_wgmma_tile(128, 4096, 4096) && use_narrow_wgmma_tile(256, 4096, 14336));
  static_assert(use_narrow_wgmma_tile(96, 8192, 8192) && use_narrow_wgmma_tile(255, 4096, 4096));
  static_assert(use_narrow_wgmma_tile(96, 8192, 28672) && use_narrow_wgmma_tile(128, 8192, 28672));
  static_assert(!use_narrow_wgmma_tile(128, 16384, 4096));  // 64 slices
  static_assert(use_narrow_wgmma_tile(96, 10240, 8192) && use_narrow_wgmma_tile(128, 10240, 8192));
  static_assert(!use_narrow_wgmma_tile(128, 12288, 8192));  // 48 slices
  static_assert(!use_narrow_wgmma_tile(64, 4096, 8192));    // the 64-row tile stays wide
  static_assert(use_narrow_wgmma_tile(100, 4096, 4096));    // 16 slices (change 29)
  static_assert(!use_narrow_wgmma_tile(100, 4096, 2048));   // the mma.sync kernel runs
  // The 256-row tile is always narrow.
  if (kWgmmaTallMinRows == 129) {  // not static: A/B builds change it
    EXPECT_TRUE(use_narrow_wgmma_tile(256, 8192, 8192));
    EXPECT_TRUE(use_narrow_wgmma_tile(4096, 57344, 8192));
  }
  for (int m = 1; m <= 2048; m += 7) {
    for (auto [n, k] : {std::pair{4096, 4096}, std::pair{6144, 4096}, std::pair{768, 2048}}) {
      const int m_blocks = marlin::detail::wgmma_m_blocks(m, n, k);
      if (m_blocks == marlin::kWgmmaMBlocksTall) {
        EXPECT_TRUE(use_narrow_wgmma_tile(m, n, k)) << m;
        continue;
      }
      if (!use_narrow_wgmma_tile(m, n, k)) continue;
      EXPECT_EQ(m_blocks, marlin::kWgmmaMBlocks) << m;
      EXPECT_LE((n / 256) * ((m + 127) / 128), marlin::detail::kWgmmaNarrowMaxSlices)
          << m << " " << n;
    }
  }
}

TEST(Heuristics, WarpgroupPartitionByWaves) {
  using marlin::detail::ClusterCapacity;
  using marlin::detail::select_wgmma_split;
  // The H200's capacity for the warpgroup kernel (136 KB of shared memory, one CTA per SM), as
  // cudaOccupancyMaxActiveClusters reported it: 132 SMs, 66 clusters of 2, 39 of 3, ...
  static constexpr ClusterCapacity kH200{{0, 132, 66, 39, 30, 22, 17, 15, 15}};
  // 4096 x 4096, M = 512 (64 slices of 64 K tiles): a split of 2, all clusters resident.
  static_assert(select_wgmma_split(64, 64, kH200) == 2);
  // M = 128 (16 slices): the largest split whose 16 clusters fit at once is 6.
  static_assert(select_wgmma_split(16, 64, kH200) == 6);
  // M = 1024 (128 slices): one wave of whole slices beats 63 striped tiles plus the reduction;
  // so do 96 slices (4096 x 6144, M = 512), which no split of 2 or more fits at once.
  static_assert(select_wgmma_split(128, 64, kH200) == 1);
  static_assert(select_wgmma_split(96, 64, kH200) == 1);
  // 28672 x 8192, M = 128 (32 slices of 448): a split of 3 (150 tiles) beats striped (109 +
  // 6 + 40) by the model; measured 119 against 140 us.
  static_assert(select_wgmma_split(32, 448, kH200) == 3);
  // 8192 x 10240, M = 512 (160 slices of 128): two waves of whole slices (256) lose to striped
  // runs (156 + 9 + 40).
  static_assert(select_wgmma_split(160, 128, kH200) == 0);
  // 16384 x 16384, M = 4096 (2048 slices of 256): 16 waves of whole slices (4096) beat striped
  // runs (3972 + 248 + 40).
  static_assert(select_wgmma_split(2048, 256, kH200) == 1);
  // No split beyond the K tiles; whole slices where no clusters fit; the A/B policies.
  static_assert(select_wgmma_split(2, 4, kH200) == 4);
  constexpr ClusterCapacity kNoClusters{{0, 132}};
  static_assert(select_wgmma_split(64, 64, kNoClusters) == 1);
  static_assert(select_wgmma_split(128, 64, kH200, 2) == 0);
  static_assert(select_wgmma_split(160, 128, kH200, 1) == 1);
  // select_wgmma_partition: whole waves, then one wave of split slices, where the model finds
  // that cheaper. 4096 x 6144, M = 1024 (192 slices of 64): 132 whole slices, then 60 split
  // over 2 CTAs (64 + 32 + 2 = 98 against two waves, 128).
  using marlin::detail::select_wgmma_partition;
  static_assert(select_wgmma_partition(192, 64, kH200).split == 2 &&
                select_wgmma_partition(192, 64, kH200).whole == 132);
  // 8192 x 10240, M = 512 (160 slices of 128): 132 whole, 28 split over 2 (128 + 64 + 2 = 194)
  // against striped runs (205).
  static_assert(select_wgmma_partition(160, 128, kH200).split == 2 &&
                select_wgmma_partition(160, 128, kH200).whole == 132);
  // The warp-specialized 256-row tile's cheaper striped runs (kWgmmaWsTallStripedCost,
  // measured x0.92 against the hybrid in run 75): there 156 + 9 + 26 = 191 beats 194.
  constexpr auto tall = [](int slices, int k_tiles) {
    return select_wgmma_partition(slices, k_tiles, kH200, 0, marlin::detail::kMaxGrid,
                                  marlin::detail::kWgmmaWsTallStripedCost);
  };
  static_assert(tall(160, 128).split == 0);
  // ... but not where run 75 measured striped runs of that tile slower or even: one wave of whole
  // slices (4096 x 28672, M = 256: 224 slices of 64, 128 against 109 + 6 + 26; 4096 x 6144,
  // M = 512: 96 slices of 64), a split of 2 (8192 x 8192, M = 256: 64 slices of 128), a
  // hybrid (8192 x 10240, M = 1024: 320 slices of 128, 322 against 311 + 19 + 26), and many
  // waves (28672 x 8192, M = 4096: 1024 slices of 448, 3584 against 3476 + 217 + 26).
  static_assert(tall(224, 64).split == 1 && tall(96, 64).split == 1 && tall(64, 128).split == 2);
  static_assert(tall(320, 128).whole == 264 && tall(1024, 448).split == 1);
  // The warp-specialized 32-, 64- and 128-row tiles, whose partials are summed in registers
  // (kWgmmaWs*StripedCost, change 34, run 88; the 32-row tile's grows with the CTAs that share
  // a slice, change 68, run 170). Striped where runs 88 and 170 measured striped runs faster:
  // 8192 x 57344 at M = 17-32 (224 slices of 128, one CTA per slice: 218 + 13 + 10 = 241
  // against two waves of whole slices, 256), 8192 x 8192 at M = 17-32 (32 of 128, 4 per slice:
  // 32 + 2 + 10 = 44 against a split of 3, 45; ×0.90-0.98 against it); 8192 x 10240 at
  // M = 33-128 (40 slices of 128: 39 + 2 + 12 or 20 against a split of 2, 66; ×0.86-0.93) and
  // 8192 x 57344 at M = 33-128 (224 of 128: 231 + 12 or 20 against 256; ×0.93-0.98).
  using marlin::detail::kMaxGrid;
  constexpr auto with = [](int cost) {
    return [cost](int slices, int k_tiles) {
      return select_wgmma_partition(slices, k_tiles, kH200, 0, kMaxGrid, cost);
    };
  };
  constexpr auto tiny = [](int slices, int k_tiles) {
    return select_wgmma_partition(
        slices, k_tiles, kH200, 0, kMaxGrid,
        marlin::detail::wgmma_striped_cost(marlin::kWgmmaMBlocksTiny, true, slices, k_tiles, 132));
  };
  constexpr auto small = with(marlin::detail::kWgmmaWsSmallStripedCost);
  constexpr auto rows = with(marlin::detail::kWgmmaWsRowsStripedCost);
  static_assert(tiny(224, 128).split == 0 && select_wgmma_partition(224, 128, kH200).split == 1);
  static_assert(tiny(32, 128).split == 0);
  // 14336 x 4096 at M = 17-32 (16 of 224, 8 CTAs per slice): a split of 6 (40 against
  // 28 + 1 + 14 = 43), measured ×0.89-0.98 against striped runs (run 170; ×0.92-0.985 the other
  // way in run 88, before the splits of 3 or more pushed their vectors, change 49).
  static_assert(tiny(16, 224).split == 6 && select_wgmma_partition(16, 224, kH200).split == 6);
  static_assert(small(40, 128).split == 0 && rows(40, 128).split == 0);
  static_assert(small(224, 128).split == 0 && rows(224, 128).split == 0);
  // ... and not where run 88 measured them slower or even: 16384 x 16384 (64 slices of 256)
  // stays split over 2 (130 against 125 + 7 + 10-20), 4096 x 28672 (112 slices of 64) whole
  // (64 against 55 + 3 + 10-20: striped ×1.06-1.14 slower), the 64-row tile on 14336 x 4096
  // (16 of 224) split over 6 and on 8192 x 8192 (32 of 128) over 3 (even at 11 by the model;
  // measured ×0.98-1.04 and ×0.92-0.97), the 128-row tile 128 wide on 14336 x 4096 (32 of
  // 224) split over 3 (77 against 55 + 3 + 20; ×0.99-1.07) and on 8192 x 8192 (64 of 128)
  // over 2 (×1.13-1.16).
  static_assert(tiny(64, 256).split == 2 && small(64, 256).split == 2 && rows(64, 256).split == 2);
  static_assert(tiny(112, 64).split == 1 && small(112, 64).split == 1 && rows(112, 64).split == 1);
  static_assert(small(16, 224).split == 6 && small(32, 128).split == 3);
  static_assert(rows(32, 224).split == 3 && rows(64, 128).split == 2);
  // Which cost a plan uses: the warp-specialized tiles' own, the model's default otherwise.
  using marlin::detail::wgmma_striped_cost;
  static_assert(wgmma_striped_cost(marlin::kWgmmaMBlocksTall, true) ==
                marlin::detail::kWgmmaWsTallStripedCost);
  static_assert(wgmma_striped_cost(marlin::kWgmmaMBlocksTiny, true) ==
                marlin::detail::kWgmmaWsTinyStripedCost);
  // The 32-row tile's, by the CTAs that share a slice: 1 (8192 x 57344), 4 (8192 x 8192),
  // 8 (14336 x 4096), at M = 17-32 on 132 SMs.
  using marlin::detail::striped_sharers;
  static_assert(striped_sharers(224, 128, 132) == 1 && striped_sharers(32, 128, 132) == 4 &&
                striped_sharers(16, 224, 132) == 8 && striped_sharers(0, 128, 132) == 1);
  static_assert(wgmma_striped_cost(marlin::kWgmmaMBlocksTiny, true, 16, 224, 132) ==
                marlin::detail::kWgmmaWsTinyStripedCost +
                    4 * marlin::detail::kWgmmaWsTinySharerCost);
  static_assert(wgmma_striped_cost(marlin::kWgmmaMBlocksTiny, true, 32, 128, 132) ==
                marlin::detail::kWgmmaWsTinyStripedCost);
  static_assert(wgmma_striped_cost(marlin::kWgmmaMBlocksSmall, true, 16, 224, 132) ==
                marlin::detail::kWgmmaWsSmallStripedCost);
  static_assert(wgmma_striped_cost(marlin::kWgmmaMBlocksSmall, true) ==
                marlin::detail::kWgmmaWsSmallStripedCost);
  static_assert(wgmma_striped_cost(marlin::kWgmmaMBlocks, true) ==
                marlin::detail::kWgmmaWsRowsStripedCost);
  static_assert(wgmma_striped_cost(marlin::kWgmmaMBlocksTall, false) ==
                marlin::detail::kWgmmaStripedCost);
  static_assert(wgmma_striped_cost(marlin::kWgmmaMBlocks, false) ==
                marlin::detail::kWgmmaStripedCost);
  // Whole waves only (128 slices), a plain split (64), and the A/B policies: no hybrid.
  static_assert(select_wgmma_partition(128, 64, kH200).split == 1 &&
                select_wgmma_partition(128, 64, kH200).whole == 0);
  static_assert(select_wgmma_partition(64, 64, kH200).split == 2 &&
                select_wgmma_partition(64, 64, kH200).whole == 0);
  static_assert(select_wgmma_partition(192, 64, kH200, 1).whole == 0);
  // A hybrid grid past the launch's limit (132 + 60 x 2 = 252 CTAs > 250) is not a candidate.
  static_assert(select_wgmma_partition(192, 64, kH200, 0, 252).whole == 132);
  static_assert(select_wgmma_partition(192, 64, kH200, 0, 250).split == 1 &&
                select_wgmma_partition(192, 64, kH200, 0, 250).whole == 0);
  static_assert(select_wgmma_partition(192, 64, kNoClusters).whole == 0);
  for (int slices = 1; slices <= 600; ++slices) {
    for (int k_tiles : {1, 2, 16, 64, 256}) {
      const auto hybrid = select_wgmma_partition(slices, k_tiles, kH200);
      if (hybrid.whole > 0) {
        EXPECT_GE(hybrid.split, 2);
        EXPECT_LE(hybrid.split, k_tiles);
        EXPECT_EQ(hybrid.whole % (hybrid.split * kH200.clusters[hybrid.split]), 0);
        EXPECT_LT(hybrid.whole, slices);
        EXPECT_LE(slices - hybrid.whole, kH200.clusters[hybrid.split]) << slices;
      } else {
        EXPECT_EQ(hybrid.split, select_wgmma_split(slices, k_tiles, kH200));
      }
      const int split = select_wgmma_split(slices, k_tiles, kH200);
      EXPECT_TRUE(split >= 0 && split <= 8 && split <= k_tiles) << slices << " " << k_tiles;
      // a split is only chosen when all of its clusters are resident at once
      if (split >= 2) {
        EXPECT_LE(slices, kH200.clusters[split]) << slices << " " << k_tiles;
      }
    }
  }
}

TEST(Heuristics, RowsOf128WhereTheTallTileMeasuredSlower) {
  using marlin::detail::ClusterCapacity;
  using marlin::detail::RowsTile;
  using marlin::detail::wgmma_rows_tile;
  static constexpr ClusterCapacity kH200{{0, 132, 66, 39, 30, 22, 17, 15, 15}};
  // The striped costs make_plan passes where the warp-specialized kernels run striped runs;
  // `rows` with group scales, `channel` per-channel.
  constexpr auto plan_tile = [](int m, int n, int k, bool grouped) {
    using marlin::detail::wgmma_striped_cost;
    return wgmma_rows_tile(m, n, k, grouped, kH200,
                           wgmma_striped_cost(marlin::kWgmmaMBlocksTall, true),
                           wgmma_striped_cost(marlin::kWgmmaMBlocks, true));
  };
  constexpr auto rows = [plan_tile](int m, int n, int k) { return plan_tile(m, n, k, true); };
  constexpr auto channel = [plan_tile](int m, int n, int k) { return plan_tile(m, n, k, false); };
  if (!marlin::detail::kWgmmaRows128) {
    EXPECT_EQ(rows(384, 8192, 8192), RowsTile::kTall);
    return;
  }
  // Runs 82-83 (session 18): the 128-row tile measured faster (x0.79-0.99) where it is taken:
  // M = 384 on seven layers (the 256-row tile pads 128 rows), 4096 x 6144 at M = 256-512 (the
  // 256-row tile's split of 2 at 256, 96 whole slices for 132 SMs at 512), 4096^2 at 384-768.
  for (auto [k, n] : {std::pair{4096, 6144}, std::pair{4096, 4096}, std::pair{8192, 8192}}) {
    EXPECT_EQ(rows(384, n, k), RowsTile::kNarrow) << k << "x" << n;
  }
  EXPECT_EQ(rows(256, 6144, 4096), RowsTile::kNarrow);
  EXPECT_EQ(rows(512, 6144, 4096), RowsTile::kNarrow);
  EXPECT_EQ(rows(512, 4096, 4096), RowsTile::kNarrow);
  EXPECT_EQ(rows(768, 4096, 4096), RowsTile::kNarrow);
  // Run 174 (session 31, change 70): 256 wide where the 256-row tile pads 128 rows, x0.82-0.99
  // against the tile planned before (128-row 128 wide, or 256-row) on the larger layers at
  // M = 384, 640, 896 and 1152, 4096 x 6144 at 640 and 8192^2 at 640.
  for (auto [k, n] : {std::pair{8192, 10240}, std::pair{28672, 8192}, std::pair{16384, 16384},
                      std::pair{4096, 28672}, std::pair{8192, 57344}, std::pair{14336, 4096}}) {
    if (!marlin::detail::kWgmmaRowsWide) break;
    EXPECT_EQ(rows(384, n, k), RowsTile::kWide) << k << "x" << n;
    EXPECT_EQ(rows(640, n, k), RowsTile::kWide) << k << "x" << n;
    EXPECT_EQ(rows(1152, n, k), RowsTile::kWide) << k << "x" << n;
  }
  if (marlin::detail::kWgmmaRowsWide) {
    EXPECT_EQ(rows(640, 6144, 4096), RowsTile::kWide);
    EXPECT_EQ(rows(640, 8192, 8192), RowsTile::kWide);
    EXPECT_EQ(rows(896, 10240, 8192), RowsTile::kWide);
  }
  // ... and not where it makes as many slices as the 256-row tile (an even number of 128-row
  // groups: the same partitions, where the wide tile measured even or slower, x0.98-1.17 the
  // 256-row tile's time on 8192 x 10240 at M = 256, run 173).
  for (int m : {256, 512, 1024, 2048, 4096}) {
    EXPECT_NE(rows(m, 10240, 8192), RowsTile::kWide) << m;
    EXPECT_NE(rows(m, 57344, 8192), RowsTile::kWide) << m;
  }
  // The narrow tile stays slower or even where it is not taken: M = 256 and 512 on the larger
  // layers (x1.02-1.18; 8192^2 at M = 256 x0.93-0.99, where the model keeps the 256-row tile by
  // a small margin), 14336 x 4096 at 512-1024 (x0.95-1.15), 4096 x 6144 at 768-1024, 4096^2 at
  // 1024, and 8192 x 10240 at 256 (a hybrid, which realized less than the model's gain).
  for (auto [k, n] : {std::pair{8192, 8192}, std::pair{8192, 10240}, std::pair{28672, 8192},
                      std::pair{16384, 16384}, std::pair{4096, 28672}}) {
    EXPECT_EQ(rows(256, n, k), RowsTile::kTall) << k << "x" << n;
    EXPECT_EQ(rows(512, n, k), RowsTile::kTall) << k << "x" << n;
  }
  for (int m : {512, 768, 1024}) EXPECT_EQ(rows(m, 4096, 14336), RowsTile::kTall) << m;
  EXPECT_EQ(rows(768, 6144, 4096), RowsTile::kTall);
  EXPECT_EQ(rows(1024, 6144, 4096), RowsTile::kTall);
  EXPECT_EQ(rows(1024, 4096, 4096), RowsTile::kTall);
  // Many waves: the 256-row tile (not measured against the 128-row tile in runs 82-84; change
  // 18 measured it x0.94-0.97 against the 128-row tile from M = 512).
  for (int m : {2048, 4096}) {
    EXPECT_EQ(rows(m, 6144, 4096), RowsTile::kTall) << m;
    EXPECT_EQ(rows(m, 8192, 8192), RowsTile::kTall) << m;
  }
  // Per-channel the narrow tile's time per K tile is kWgmmaRowsChannelCostNum percent of the
  // 256-row tile's (run 177, change 71: x0.94-0.99 on 7 of the 8 cases it moves, x1.02 on
  // 8192 x 10240 at M = 192), so it also runs where it did not with group scales ...
  if (marlin::detail::kWgmmaRowsChannelCostNum == 58) {
    for (int m : {192, 256, 512}) {
      EXPECT_EQ(channel(m, 10240, 8192), RowsTile::kNarrow) << m;
      EXPECT_EQ(rows(m, 10240, 8192), RowsTile::kTall) << m;
    }
    EXPECT_EQ(channel(1152, 4096, 4096), RowsTile::kNarrow);
    EXPECT_EQ(channel(1536, 6144, 4096), RowsTile::kNarrow);
    EXPECT_EQ(channel(384, 4096, 14336), RowsTile::kNarrow);
    EXPECT_EQ(channel(768, 4096, 14336), RowsTile::kNarrow);
    EXPECT_EQ(channel(640, 8192, 8192), RowsTile::kNarrow);
    // ... but not where 0.55 measured it slower per-channel (run 176: x1.04-1.16).
    EXPECT_EQ(channel(192, 28672, 4096), RowsTile::kTall);
    EXPECT_EQ(channel(896, 10240, 8192), RowsTile::kWide);
    EXPECT_EQ(channel(640, 8192, 28672), RowsTile::kWide);
  }
  // Without SMs in the capacity, never.
  constexpr ClusterCapacity kEmpty{};
  EXPECT_EQ(wgmma_rows_tile(384, 8192, 8192, true, kEmpty, 26, 40), RowsTile::kTall);
  EXPECT_EQ(wgmma_rows_tile(384, 8192, 8192, false, kEmpty, 26, 40), RowsTile::kTall);
  // The plan cost of a hybrid: whole waves plus its split wave (4096 x 6144, M = 1024: 98).
  static_assert(marlin::detail::wgmma_plan_cost(192, 64, kH200,
                                                marlin::detail::WgmmaPartition{2, 132}) == 98);
  static_assert(marlin::detail::wgmma_plan_cost(96, 64, kH200,
                                                marlin::detail::WgmmaPartition{1, 0}) == 64);
}

TEST(Heuristics, ClusterSplitOnlyWhereItMeasuredFaster) {
  using marlin::detail::select_split;
  // H200 decode (2 CTAs per SM, 132 SMs): 32 slices of 4096 x 4096 split 8 ways, 48 slices 5
  // ways and 128 of 16384 x 16384 2 ways; 64 slices of 8192 x 8192 (4 ways) and 80 of
  // 8192 x 10240 (3 ways) stay striped; 200 slices (1 way) too.
  static_assert(select_split(32, 32, 2, 132, 8) == 8);
  static_assert(select_split(48, 32, 2, 132, 8) == 5);
  static_assert(select_split(64, 64, 2, 132, 8) == 0);
  static_assert(select_split(80, 64, 2, 132, 8) == 0);
  static_assert(select_split(128, 128, 2, 132, 8) == 2);
  static_assert(select_split(200, 32, 2, 132, 8) == 0);
  // One CTA per SM (M > 16): any split of 2 or more.
  static_assert(select_split(64, 256, 1, 132, 8) == 2);
  static_assert(select_split(16, 64, 1, 132, 8) == 8);
  // Never more CTAs per slice than K tiles or than the cluster limit; none for many slices.
  static_assert(select_split(1, 3, 1, 132, 8) == 3);
  static_assert(select_split(1, 64, 2, 132, 8) == 8);
  static_assert(select_split(200, 64, 1, 132, 8) == 0);
  for (int slices = 1; slices <= 300; ++slices) {
    for (int ctas : {1, 2}) {
      const int split = select_split(slices, 16, ctas, 132, 8);
      EXPECT_TRUE(split == 0 || (split >= 2 && split <= 8 && slices * split <= ctas * 132));
    }
  }
}

TEST(Heuristics, NarrowDecodeTileWhereTheWideOneLeavesSmsIdle) {
  using marlin::detail::narrow_decode_candidate;
  using marlin::detail::use_narrow_decode_tile;
  // H200 (132 SMs), the splits make_plan finds there (bench/NOTES.md, change 78); shapes are
  // K x N. Striped runs of the wide tile on short slices, a split of 2 of the narrow one:
  // 2048 x 8192 (16 K tiles) to 5120 x 8192 (40); not 6144 x 8192 (48) or the bench's
  // 8192 x 8192 (64).
  static_assert(use_narrow_decode_tile(8192, 2048, 132, 0, 2));
  static_assert(use_narrow_decode_tile(7168, 4096, 132, 0, 2));
  static_assert(use_narrow_decode_tile(8192, 5120, 132, 0, 2));
  static_assert(!narrow_decode_candidate(8192, 6144, 132, 0));
  static_assert(!narrow_decode_candidate(8192, 8192, 132, 0));
  // The narrow tile striped too (4096 x 28672: 448 slices): no.
  static_assert(narrow_decode_candidate(28672, 4096, 132, 0));
  static_assert(!use_narrow_decode_tile(28672, 4096, 132, 0, 0));
  // Wide splits of 8 over 64 and 96 CTAs (N = 1024, 1536) on at least 4096 x 1024 weights.
  static_assert(use_narrow_decode_tile(1024, 4096, 132, 8, 8));
  static_assert(use_narrow_decode_tile(1024, 16384, 132, 8, 8));
  static_assert(use_narrow_decode_tile(1536, 8192, 132, 8, 8));
  static_assert(!narrow_decode_candidate(1024, 2048, 132, 8));  // 2^21 weights
  static_assert(!narrow_decode_candidate(512, 4096, 132, 8));
  // Splits that cover more than 3/4 of the SMs: 2048 x 2048 and 4096 x 2048 (128 CTAs), the
  // bench's 4096 x 4096 (224), 4096 x 6144 (192), 14336 x 4096 (224), 16384 x 16384 (256).
  static_assert(!narrow_decode_candidate(2048, 2048, 132, 8));
  static_assert(!narrow_decode_candidate(2048, 4096, 132, 8));
  static_assert(!narrow_decode_candidate(4096, 4096, 132, 7));
  static_assert(!narrow_decode_candidate(6144, 4096, 132, 4));
  static_assert(!narrow_decode_candidate(4096, 14336, 132, 7));
  static_assert(!narrow_decode_candidate(16384, 16384, 132, 2));
  // N that 128 does not divide keeps the narrow tile anyway (select_tile_config).
  static_assert(!narrow_decode_candidate(960, 4096, 132, 8));
  // The boundary of 3/4 of the SMs: 99 of 132.
  static_assert(narrow_decode_candidate(2048 + 384, 8192, 132, 4));   // 19 x 4 = 76
  static_assert(!narrow_decode_candidate(3200, 8192, 132, 4));        // 25 x 4 = 100
  // No bench layer moves: with select_split's splits for both tiles at two CTAs per SM (the
  // cluster capacity, which can only lower a split, left out), the wide tile everywhere.
  using marlin::detail::select_split;
  for (const auto& [k, n, layer] : marlin_bench::kShapes) {
    const int wide = select_split(n / 128, k / 128, 2, 132, 8);
    const int narrow = select_split(n / 64, k / 128, 2, 132, 8);
    EXPECT_FALSE(use_narrow_decode_tile(n, k, 132, wide, narrow)) << k << " x " << n;
  }
}

TEST(Heuristics, NarrowDecodeShortSplitBelowTheMidRows) {
  using marlin::detail::narrow_decode_short_candidate;
  using marlin::detail::select_split;
  using marlin::detail::use_narrow_decode_short_split;
  // Short slices (K <= 4608) on a 128-wide split, whatever the rows.
  static_assert(narrow_decode_short_candidate(3840, 4096, 7));
  static_assert(narrow_decode_short_candidate(4096, 4608, 6));
  static_assert(!narrow_decode_short_candidate(3840, 6144, 7));
  static_assert(!narrow_decode_short_candidate(8192, 2048, 0));
  static_assert(!narrow_decode_short_candidate(4032, 4096, 8));
  // H200 splits (bench/NOTES.md run 278): N = 3840's 4 ranks of 8 (K = 4096) or 6 (3072) K
  // tiles against the wide tile's 7 of at most 5 or 4 take the 64-wide tile; N = 4096's 3
  // against 6 (K = 2048-4608), N = 3584's 4 against 8 (K = 2048-4096) and 3584 x 3584's 4 of 7
  // against 8 of 4 do not, nor a narrow split other than 4.
  static_assert(use_narrow_decode_short_split(32, 7, 4));
  static_assert(use_narrow_decode_short_split(24, 7, 4));
  static_assert(use_narrow_decode_short_split(36, 7, 4));
  static_assert(use_narrow_decode_short_split(16, 7, 4));
  for (int k_tiles : {16, 24, 32, 36}) {
    EXPECT_FALSE(use_narrow_decode_short_split(k_tiles, 6, 3)) << k_tiles;
  }
  static_assert(!use_narrow_decode_short_split(32, 8, 4));
  static_assert(!use_narrow_decode_short_split(16, 8, 4));
  static_assert(!use_narrow_decode_short_split(28, 8, 4));
  static_assert(!use_narrow_decode_short_split(32, 7, 2));
  static_assert(!use_narrow_decode_short_split(32, 7, 0));
  // Only a split of 4: 2048 x 2048's 6 against 8 (ranks of 3 against 2) keeps the wide tile.
  static_assert(!use_narrow_decode_short_split(16, 8, 6));
  static_assert(!use_narrow_decode_short_split(32, 0, 4));
  // No bench layer moves (select_split's splits at two CTAs per SM, the cluster capacity left
  // out: 4096 x 4096 then plans 8 against 4, on the H200 6 against 3).
  for (const auto& [k, n, layer] : marlin_bench::kShapes) {
    const int wide = select_split(n / 128, k / 128, 2, 132, 8);
    const int narrow = select_split(n / 64, k / 128, 2, 132, 8, true);
    EXPECT_FALSE(narrow_decode_short_candidate(n, k, wide) &&
                 use_narrow_decode_short_split(k / 128, wide, narrow))
        << k << " x " << n;
  }
}

TEST(Heuristics, NarrowDecodeMidSplitOnShortSlices) {
  using marlin::detail::narrow_decode_mid_candidate;
  using marlin::detail::select_split;
  using marlin::detail::use_narrow_decode_mid_split;
  // H200 (132 SMs, two CTAs per SM), shapes K x N (bench/NOTES.md, change 79). The narrow
  // tile's 64 slices of N = 4096 and 56 of N = 3584 get a split of 4 only with mid splits
  // allowed (the cluster capacity lowers N = 4096's to 3); the 128-wide tile's stay 8.
  static_assert(select_split(64, 32, 2, 132, 8, true) == 4);
  static_assert(select_split(64, 32, 2, 132, 8) == 0);
  static_assert(select_split(56, 28, 2, 132, 8, true) == 4);
  static_assert(select_split(32, 32, 2, 132, 8, true) == select_split(32, 32, 2, 132, 8));
  // At one CTA per SM select_split takes any split anyway.
  static_assert(select_split(64, 32, 1, 132, 8, true) == select_split(64, 32, 1, 132, 8));
  // Short slices (K = 1024-4608) on a wide split: with group scales from 8 rows, per-channel
  // from 9.
  static_assert(narrow_decode_mid_candidate(8, 4096, 4096, true, 6));
  static_assert(!narrow_decode_mid_candidate(7, 4096, 4096, true, 6));
  static_assert(!narrow_decode_mid_candidate(1, 3584, 3584, true, 8));
  static_assert(narrow_decode_mid_candidate(16, 4096, 1024, true, 6));
  static_assert(narrow_decode_mid_candidate(8, 3584, 3584, true, 8));
  static_assert(!narrow_decode_mid_candidate(8, 4096, 4096, false, 6));
  static_assert(narrow_decode_mid_candidate(9, 4096, 4096, false, 6));
  static_assert(narrow_decode_mid_candidate(16, 4096, 2048, false, 6));
  // Slices of up to 36 K tiles (K = 4608), not longer: K = 4736 (37), 6144, 14336 (the bench's
  // 14336 x 4096).
  static_assert(narrow_decode_mid_candidate(8, 4096, 4608, true, 6));
  static_assert(!narrow_decode_mid_candidate(8, 4096, 4736, true, 6));
  static_assert(!narrow_decode_mid_candidate(16, 4096, 6144, true, 6));
  static_assert(!narrow_decode_mid_candidate(16, 4096, 14336, true, 7));
  // The wide tile striped (use_narrow_decode_tile's case) or N that 128 does not divide.
  static_assert(!narrow_decode_mid_candidate(8, 8192, 2048, true, 0));
  static_assert(!narrow_decode_mid_candidate(8, 4032, 4096, true, 8));
  // The narrow split of 4 (N = 3584 and 3840) from the candidates' 8 rows, that of 3 (N = 4096
  // and 4608) from 12; a split of 2 (N = 5120 and 6144 after the capacity check), none, or
  // splits of 5 or more (which select_split gives without mid splits) keep the wide tile.
  static_assert(use_narrow_decode_mid_split(8, 4) && use_narrow_decode_mid_split(16, 4));
  static_assert(!use_narrow_decode_mid_split(8, 3) && !use_narrow_decode_mid_split(11, 3));
  static_assert(use_narrow_decode_mid_split(12, 3) && use_narrow_decode_mid_split(16, 3));
  for (int split : {0, 2, 5, 8}) EXPECT_FALSE(use_narrow_decode_mid_split(16, split)) << split;
  // On the bench layers (select_split's splits at two CTAs per SM, the cluster capacity left
  // out), only 4096 x 4096 moves, and never where use_narrow_decode_tile's rule applies.
  for (const auto& [k, n, layer] : marlin_bench::kShapes) {
    const int wide = select_split(n / 128, k / 128, 2, 132, 8);
    const int narrow = select_split(n / 64, k / 128, 2, 132, 8, true);
    const bool moves = narrow_decode_mid_candidate(16, n, k, true, wide) &&
                       use_narrow_decode_mid_split(16, narrow);
    EXPECT_EQ(moves, k == 4096 && n == 4096) << k << " x " << n;
    if (moves) {
      EXPECT_FALSE(marlin::detail::narrow_decode_candidate(n, k, 132, wide));
    }
  }
}

TEST(Heuristics, DecodeSplitsKeepAClusterFreeOnShortSlices) {
  using marlin::detail::decode_spare_clusters;
  // Decode tiles (one 16-row block) on slices of up to 72 K tiles with group scales (K = 9216),
  // 48 per-channel (K = 6144); none for longer slices or more rows (bench/NOTES.md, changes 80
  // and 81).
  static_assert(decode_spare_clusters(1, 16, true) == 1);
  static_assert(decode_spare_clusters(1, 16, false) == 1);
  static_assert(decode_spare_clusters(1, 72, true) == 1 && decode_spare_clusters(1, 73, true) == 0);
  static_assert(decode_spare_clusters(1, 48, false) == 1);
  static_assert(decode_spare_clusters(1, 49, false) == 0);
  static_assert(decode_spare_clusters(1, 112, true) == 0);  // 14336 x 4096 keeps its split of 7
  for (int m_blocks : {2, 3, 4}) {
    EXPECT_EQ(decode_spare_clusters(m_blocks, 16, true), 0) << m_blocks;
    EXPECT_EQ(decode_spare_clusters(m_blocks, 16, false), 0) << m_blocks;
  }
  // The H200's capacity for the decode kernels at two CTAs per SM (run 212): 30 clusters of 8,
  // 32 of 7, 39 of 6, 47 of 5. With the spare cluster, N = 3840 (30 slices of 128 columns)
  // lowers its split of 8 to 7, N = 4096 (32) 7 to 6; N = 3584 (28) keeps 8, N = 4608 (36) 6,
  // N = 5120 (40) 5; without it (longer slices) N = 4096 keeps 7.
  using marlin::detail::resident_cluster_split;
  marlin::detail::ClusterCapacity cap;
  const int clusters[] = {0, 0, 132, 79, 62, 47, 39, 32, 30};
  for (int s = 0; s <= marlin::kMaxClusterSplit; ++s) cap.clusters[s] = clusters[s];
  const int spare = decode_spare_clusters(1, 32, true);
  EXPECT_EQ(resident_cluster_split(8, 30, spare, cap), 7);
  EXPECT_EQ(resident_cluster_split(7, 32, spare, cap), 6);
  EXPECT_EQ(resident_cluster_split(8, 28, spare, cap), 8);
  EXPECT_EQ(resident_cluster_split(6, 36, spare, cap), 6);
  EXPECT_EQ(resident_cluster_split(5, 40, spare, cap), 5);
  EXPECT_EQ(resident_cluster_split(7, 32, decode_spare_clusters(1, 112, true), cap), 7);
  // Without a spare cluster the split fills the capacity exactly; more slices than any size
  // fits leave no split.
  EXPECT_EQ(resident_cluster_split(8, 30, 0, cap), 8);
  EXPECT_EQ(resident_cluster_split(8, 133, 0, cap), 0);
  EXPECT_EQ(resident_cluster_split(2, 132, 1, cap), 0);
}

// ---- striped partition --------------------------------------------------------------------

// Walks every CTA's run (and, in hybrid runs, its tail) as the kernel does and checks: each
// tile is covered exactly once; the participants of a slice are exactly the CTAs from
// first_cta to last_cta (striped), the slice's cluster (split), or the one CTA whose run
// holds it whole; partial slots and counters are unique per (slice, CTA) and in range;
// needs_reduction tells whether any slice is shared through the workspace.
void check_partition(const marlin::detail::Partition& p) {
  using namespace marlin::detail;
  SCOPED_TRACE("k_tiles=" + std::to_string(p.k_tiles) + " n_tiles=" + std::to_string(p.n_tiles) +
               " m_groups=" + std::to_string(p.m_groups) + " grid=" + std::to_string(p.grid) +
               " split=" + std::to_string(p.split) + " whole=" + std::to_string(p.whole) +
               " runs=" + std::to_string(p.runs));
  ASSERT_GE(p.grid, 1);
  if (p.split > 0 && p.runs > 0) {  // hybrid runs
    ASSERT_EQ(p.grid % p.split, 0);
    ASSERT_EQ(p.whole, p.runs * p.grid);
    ASSERT_GT(p.slices, p.whole) << "no split slice";
    ASSERT_LE(p.slices - p.whole, p.grid / p.split) << "split slices beyond one per cluster";
  } else if (p.split == 0) {
    ASSERT_GE(static_cast<long>(p.grid) * p.iters, p.total);
    ASSERT_LT(static_cast<long>(p.grid - 1) * p.iters, p.total) << "an idle CTA was launched";
  } else {
    ASSERT_EQ(p.whole % p.split, 0) << "whole=" << p.whole;
    ASSERT_EQ(p.grid, p.whole + (p.slices - p.whole) * p.split) << "whole=" << p.whole;
  }
  std::vector<int> covered(static_cast<size_t>(p.total), 0);
  std::vector<std::set<int>> participants(static_cast<size_t>(p.slices));
  std::set<int> slots_used;
  std::set<int> shared_slices;
  bool shared = false;
  for (int cta = 0; cta < p.grid; ++cta) {
    int begin = 0, end = 0, tail_begin = 0, tail_end = 0;
    cta_runs(p, cta, begin, end, tail_begin, tail_end);
    ASSERT_LT(begin, end) << "CTA " << cta << " has no tile";
    if (p.runs == 0) {  // cta_run's partitions: the same run
      int run_begin = 0, run_end = 0;
      cta_run(p, cta, run_begin, run_end);
      ASSERT_EQ(run_begin, begin);
      ASSERT_EQ(run_end, end);
    }
    if (p.split > 0 && p.runs > 0) {
      ASSERT_EQ(begin, cta * p.runs * p.k_tiles) << "CTA " << cta << " runs its whole slices";
      ASSERT_EQ(end, begin + p.runs * p.k_tiles);
      if (cta / p.split < p.slices - p.whole) {
        ASSERT_LT(tail_begin, tail_end) << "CTA " << cta << " has no split share";
        ASSERT_EQ(tail_begin / p.k_tiles, (tail_end - 1) / p.k_tiles);
        ASSERT_EQ(tail_begin / p.k_tiles, p.whole + cta / p.split);
        ASSERT_EQ(tail_begin % p.k_tiles, (cta % p.split) * p.k_tiles / p.split);
      } else {
        ASSERT_EQ(tail_begin, tail_end) << "CTA " << cta << " has a share beyond the slices";
      }
    } else if (p.split > 0 && cta < p.whole) {
      ASSERT_EQ(begin, cta * p.k_tiles) << "CTA " << cta << " owns slice " << cta << " whole";
      ASSERT_EQ(end, begin + p.k_tiles);
    } else if (p.split > 0) {
      ASSERT_EQ(begin / p.k_tiles, (end - 1) / p.k_tiles) << "a split CTA spans two slices";
      ASSERT_EQ(begin / p.k_tiles, p.whole + (cta - p.whole) / p.split);
      // the kernel takes a CTA's rank from its cluster rank, cta % split
      ASSERT_EQ(begin % p.k_tiles, (cta % p.split) * p.k_tiles / p.split);
    }
    if (p.runs == 0) {
      ASSERT_EQ(tail_begin, tail_end) << "a tail outside hybrid runs";
    }
    for (int idx = begin; idx < end;) {
      const int slice = idx / p.k_tiles;
      const int k_begin = idx - slice * p.k_tiles;
      const int k_end = std::min(p.k_tiles, k_begin + (end - idx));
      for (int t = k_begin; t < k_end; ++t) covered[static_cast<size_t>(slice * p.k_tiles + t)]++;
      participants[static_cast<size_t>(slice)].insert(cta);
      if (!(k_begin == 0 && k_end == p.k_tiles)) {
        shared = true;
        if (p.split == 0) {  // a cluster split reduces in shared memory: no slots, no counters
          const int slot = partial_slot(p, cta, slice);
          ASSERT_GE(slot, 0);
          ASSERT_LT(slot, num_partial_slots(p));
          ASSERT_TRUE(slots_used.insert(slot).second) << "slot " << slot << " used twice";
          shared_slices.insert(slice);
        }
      }
      idx += k_end - k_begin;
      continue_with_tail(idx, end, tail_begin, tail_end);
    }
  }
  for (int c : covered) ASSERT_EQ(c, 1);
  // Each shared slice has its own arrival counter, inside the workspace's counter region.
  std::set<int> counters_used;
  for (int slice : shared_slices) {
    const int counter = counter_index(p, slice);
    ASSERT_GE(counter, 0);
    ASSERT_LT(counter, p.grid);
    ASSERT_LT(counter, kMaxGrid);
    ASSERT_TRUE(counters_used.insert(counter).second) << "counter " << counter << " shared";
  }
  for (int s = 0; s < p.slices; ++s) {
    const auto& who = participants[static_cast<size_t>(s)];
    const int runs = p.runs > 0 ? p.runs : 1;  // whole slices per CTA
    const int first = p.split == 0   ? first_cta(p, s)
                      : s < p.whole  ? s / runs
                      : p.runs > 0   ? (s - p.whole) * p.split
                                     : p.whole + (s - p.whole) * p.split;
    const int last = p.split == 0 ? last_cta(p, s) : s < p.whole ? s / runs : first + p.split - 1;
    ASSERT_EQ(*who.begin(), first);
    ASSERT_EQ(*who.rbegin(), last);
    ASSERT_EQ(static_cast<int>(who.size()), last - first + 1);
  }
  EXPECT_EQ(needs_reduction(p), shared && p.split == 0);
}

TEST(Partition, CoversEveryTileOnceWithUniqueSlots) {
  int hybrid_runs = 0;
  for (int k_tiles : {1, 2, 3, 8, 32, 112, 224}) {
    for (int n_tiles : {1, 2, 7, 32, 224}) {
      for (int m_groups : {1, 3}) {
        for (int max_ctas : {1, 2, 5, 132, 264}) {
          const auto p = marlin::detail::make_partition(k_tiles, n_tiles, m_groups, max_ctas);
          ASSERT_LE(p.grid, max_ctas);
          check_partition(p);
          if (HasFatalFailure()) return;
        }
        for (int split = 1; split <= std::min(k_tiles, 8); ++split) {
          check_partition(marlin::detail::make_split_partition(k_tiles, n_tiles, m_groups, split));
          if (HasFatalFailure()) return;
          // whole waves of whole slices, then the rest split (the warpgroup kernel's hybrid)
          for (int whole = split; whole < n_tiles * m_groups; whole += 3 * split) {
            check_partition(
                marlin::detail::make_split_partition(k_tiles, n_tiles, m_groups, split, whole));
            if (HasFatalFailure()) return;
          }
          // hybrid runs over CTA counts whose split wave fits one cluster per slice
          const int slices = n_tiles * m_groups;
          for (int clusters : {1, 2, 3, 5, 16, 66}) {
            const int ctas = clusters * split;
            if (ctas > slices || slices % ctas == 0 || slices % ctas > clusters) continue;
            check_partition(
                marlin::detail::make_hybrid_runs(k_tiles, n_tiles, m_groups, split, ctas));
            if (HasFatalFailure()) return;
            ++hybrid_runs;
          }
        }
      }
    }
  }
  EXPECT_GT(hybrid_runs, 100);  // hybrid runs occur, with and without idle clusters at the end
}

// slice_local_runs (where the warp-specialized kernel may run) holds for every cluster split
// and, among striped partitions, exactly for those in which every CTA's run is one whole slice.
TEST(Partition, SliceLocalRunsExactlyForWholeSlicesAndClusterSplits) {
  int whole_cases = 0, other_cases = 0;
  for (int k_tiles : {1, 3, 32, 112}) {
    for (int n_tiles : {1, 7, 64}) {
      for (int m_groups : {1, 3}) {
        for (int max_ctas : {1, 5, 21, 132, 192, 264}) {
          const auto p = marlin::detail::make_partition(k_tiles, n_tiles, m_groups, max_ctas);
          bool whole = true;
          for (int cta = 0; cta < p.grid; ++cta) {
            int begin = 0, end = 0;
            marlin::detail::cta_run(p, cta, begin, end);
            whole = whole && begin == cta * k_tiles && end == begin + k_tiles;
          }
          whole = whole && p.grid == p.slices;
          EXPECT_EQ(marlin::detail::slice_local_runs(p), whole)
              << k_tiles << " x " << n_tiles << " x " << m_groups << ", " << max_ctas;
          whole_cases += whole;
          other_cases += !whole;
        }
        for (int split = 1; split <= std::min(k_tiles, 4); ++split) {
          EXPECT_TRUE(marlin::detail::slice_local_runs(
              marlin::detail::make_split_partition(k_tiles, n_tiles, m_groups, split)));
        }
      }
    }
  }
  EXPECT_GT(whole_cases, 10);  // both answers occur
  EXPECT_GT(other_cases, 10);
}

// run_segment walks every CTA's run (striped, cluster split or hybrid) in pieces that each lie
// in one slice, start where the previous one ended, never end before the slice or the run does,
// and together cover the run; a run holds more than one segment only where it crosses slices.
TEST(Partition, RunSegmentsCoverEachRunSliceBySlice) {
  int multi_segment_runs = 0;
  auto check = [&](const marlin::detail::Partition& p) {
    for (int cta = 0; cta < p.grid; ++cta) {
      int begin = 0, end = 0;
      marlin::detail::cta_run(p, cta, begin, end);
      int segments = 0;
      for (int idx = begin; idx < end;) {
        const marlin::detail::Segment s = marlin::detail::run_segment(p, idx, end);
        ASSERT_GE(s.n_k, 1);
        EXPECT_EQ(s.slice * p.k_tiles + s.k_begin, idx);
        EXPECT_GE(s.k_begin, 0);
        EXPECT_LE(s.k_begin + s.n_k, p.k_tiles);
        // The segment stops at the slice's end or at the run's, never before both.
        EXPECT_TRUE(s.k_begin + s.n_k == p.k_tiles || idx + s.n_k == end);
        idx += s.n_k;
        ++segments;
      }
      const int first_slice = begin / p.k_tiles, last_slice = (end - 1) / p.k_tiles;
      EXPECT_EQ(segments, last_slice - first_slice + 1) << "cta " << cta;
      multi_segment_runs += segments > 1;
    }
  };
  for (int k_tiles : {1, 3, 32, 128}) {
    for (int n_tiles : {1, 7, 80}) {
      for (int max_ctas : {1, 5, 132, 1000}) {
        check(marlin::detail::make_partition(k_tiles, n_tiles, 2, max_ctas));
      }
      for (int split = 1; split <= std::min(k_tiles, 4); ++split) {
        check(marlin::detail::make_split_partition(k_tiles, n_tiles, 2, split));
      }
    }
  }
  EXPECT_GT(multi_segment_runs, 100);  // striped runs that cross slices occur
}

// Whole slices beyond the grid limit (kMaxGrid bounds only the slice counters of partitions
// that reduce through the workspace): one CTA per slice, no reduction.
TEST(Partition, WholeSlicesMayExceedTheGridLimit) {
  const int n_tiles = 448, m_groups = 16;  // 8192 x 57344, M = 4096, on the 256-row tile
  const auto p = marlin::detail::make_partition(128, n_tiles, m_groups, n_tiles * m_groups);
  EXPECT_GT(p.grid, marlin::detail::kMaxGrid);
  EXPECT_EQ(p.grid, p.slices);
  EXPECT_TRUE(marlin::detail::slice_local_runs(p));
  EXPECT_FALSE(marlin::detail::needs_reduction(p));
}

// Runs of whole slices (make_whole_runs): every CTA's run starts and ends on slice boundaries
// and holds ceil(slices / min(max_ctas, slices)) slices (the last CTA's at least one), no CTA
// is idle, the runs cover every tile once, the grid never exceeds max_ctas, the rounds are as
// many as one CTA per slice would take waves on max_ctas SMs, and no workspace is needed.
TEST(Partition, WholeRunsHoldWholeSlicesInAsManyRoundsAsWaves) {
  int multi_slice = 0;
  for (int k_tiles : {1, 3, 64, 128}) {
    for (int n_tiles : {1, 7, 32, 448}) {
      for (int m_groups : {1, 2, 16}) {
        for (int max_ctas : {1, 5, 128, 132}) {
          const auto p = marlin::detail::make_whole_runs(k_tiles, n_tiles, m_groups, max_ctas);
          SCOPED_TRACE(std::to_string(k_tiles) + " x " + std::to_string(n_tiles) + " x " +
                       std::to_string(m_groups) + ", " + std::to_string(max_ctas));
          const int slices = n_tiles * m_groups;
          const int per = p.iters / k_tiles;
          ASSERT_EQ(p.iters % k_tiles, 0);
          EXPECT_EQ(per, (slices + max_ctas - 1) / max_ctas);  // rounds = waves
          EXPECT_LE(p.grid, max_ctas);
          EXPECT_FALSE(marlin::detail::needs_reduction(p));
          EXPECT_EQ(p.split, 0);
          int covered = 0;
          for (int cta = 0; cta < p.grid; ++cta) {
            int begin = 0, end = 0;
            marlin::detail::cta_run(p, cta, begin, end);
            ASSERT_EQ(begin, covered) << "cta " << cta;
            ASSERT_GT(end, begin) << "cta " << cta;
            EXPECT_EQ(begin % k_tiles, 0);
            EXPECT_EQ(end % k_tiles, 0);
            EXPECT_LE(end - begin, p.iters);
            covered = end;
          }
          EXPECT_EQ(covered, p.total);
          multi_slice += per > 1;
        }
      }
    }
  }
  EXPECT_GT(multi_slice, 50);  // runs of several slices occur
}

TEST(Partition, SmallProblemsUseOneCtaPerTile) {
  const auto p = marlin::detail::make_partition(2, 2, 1, 132);
  EXPECT_EQ(p.grid, 4);
  EXPECT_EQ(p.iters, 1);
  EXPECT_TRUE(marlin::detail::needs_reduction(p));
  const auto whole = marlin::detail::make_partition(4, 264, 1, 132);
  EXPECT_EQ(whole.iters, 8);
  EXPECT_FALSE(marlin::detail::needs_reduction(whole));
}

}  // namespace
