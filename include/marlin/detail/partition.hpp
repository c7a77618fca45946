// Striped partitioning of the tile space across CTAs, and the slots of the cross-CTA fp32
// reduction. Host and device; compiles without nvcc (and is tested on the host).
//
// Tiles are ordered K-first within each slice (one tile_n column strip of one tile_m-row
// group of M): tile index = slice * k_tiles + k_tile, slice = n_tile * m_groups + m_group, so
// CTAs working at the same time on neighbouring slices read the same B strip and share it in
// L2.
// CTA b takes the contiguous run [b * iters, (b + 1) * iters): a run may span several slices
// and a slice may be shared by several CTAs. A CTA that covers only part of a slice writes its
// fp32 partial to its own slot and arrives on the slice's counter; the last to arrive sums the
// partials of all participants in CTA order (so the result is bitwise deterministic) and
// writes C. No CTA ever waits for another, so the reduction cannot deadlock however many CTAs
// are resident.
#pragma once

#if defined(__CUDACC__)
#define MARLIN_HOST_DEVICE __host__ __device__
#else
#define MARLIN_HOST_DEVICE
#endif

namespace marlin::detail {

/// Most CTAs one launch may use; the workspace holds this many slice counters.
inline constexpr int kMaxGrid = 4096;

/// Shape of the tile space and its split over the grid.
struct Partition {
  int k_tiles = 0;   ///< tiles along K
  int n_tiles = 0;   ///< tiles along N
  int m_groups = 0;  ///< tile_m-row groups of M (tile_m = 16 m_blocks)
  int slices = 0;    ///< n_tiles * m_groups
  int total = 0;     ///< slices * k_tiles
  int iters = 0;     ///< tiles per CTA (the last CTA may get fewer); striped runs only
  int grid = 0;      ///< CTAs launched; every CTA gets at least one tile
  /// 0: striped runs (above). S >= 1: cluster split, sm_90+ only: S CTAs, one cluster, per
  /// slice; CTA b works on slice b / S, K tiles [r k_tiles / S, (r + 1) k_tiles / S) for its
  /// rank r = b % S, and the cluster sums its partials through distributed shared memory.
  int split = 0;
  /// With split >= 2: the first `whole` slices (a multiple of split) are each one CTA's whole
  /// K run, CTAs 0 .. whole - 1, and only slices whole .. slices - 1 are split, CTA whole + b
  /// taking slice whole + b / S at rank b % S (= its cluster rank, as whole % S == 0). Whole
  /// waves of whole slices, then one wave of split slices (the warpgroup kernel's hybrid).
  int whole = 0;
  /// With split >= 2 and whole > 0: 0, the hybrid above (one CTA per whole slice); R >= 1,
  /// hybrid runs: `grid` CTAs (a multiple of split, grid * R = whole) each run R whole slices,
  /// CTA b slices [b R, (b + 1) R), and then, where b / split < slices - whole, its rank's
  /// share (rank b % split) of split slice whole + b / split (cta_runs). Only the
  /// warp-specialized kernel runs them.
  int runs = 0;
};

/// The tile space of `k_tiles x n_tiles x m_groups` tiles, not yet split over CTAs.
constexpr Partition tile_space(int k_tiles, int n_tiles, int m_groups) {
  Partition p;
  p.k_tiles = k_tiles;
  p.n_tiles = n_tiles;
  p.m_groups = m_groups;
  p.slices = n_tiles * m_groups;
  p.total = p.slices * k_tiles;
  return p;
}

/// Splits `k_tiles x n_tiles x m_groups` tiles over at most `max_ctas` CTAs (itself at most
/// kMaxGrid). Preconditions: all arguments >= 1.
constexpr Partition make_partition(int k_tiles, int n_tiles, int m_groups, int max_ctas) {
  Partition p = tile_space(k_tiles, n_tiles, m_groups);
  const int ctas = max_ctas < p.total ? max_ctas : p.total;
  p.iters = (p.total + ctas - 1) / ctas;
  p.grid = (p.total + p.iters - 1) / p.iters;
  return p;
}

/// Runs of whole slices: each CTA's run is `per` consecutive whole slices (the last CTA's may
/// hold fewer), per = ceil(slices / max_ctas), over ceil(slices / per) <= max_ctas CTAs. A
/// striped partition whose run boundaries are all slice boundaries, so it needs no workspace
/// (needs_reduction); it takes as many rounds as one CTA per slice takes waves, and the
/// warp-specialized kernel fills the stages with a slice's copies while it writes the previous
/// slice to C. Preconditions: all arguments >= 1.
constexpr Partition make_whole_runs(int k_tiles, int n_tiles, int m_groups, int max_ctas) {
  Partition p = tile_space(k_tiles, n_tiles, m_groups);
  const int ctas = max_ctas < p.slices ? max_ctas : p.slices;
  const int per = (p.slices + ctas - 1) / ctas;
  p.iters = per * k_tiles;
  p.grid = (p.slices + per - 1) / per;
  return p;
}

/// The cluster-split partition: `split` CTAs per slice (1 <= split <= k_tiles), slices * split
/// CTAs in all; or, with `whole` > 0 (a multiple of split, less than the slices), the first
/// `whole` slices one CTA each and the others `split` CTAs each. Needs no workspace.
/// Preconditions: k_tiles, n_tiles, m_groups, split >= 1.
constexpr Partition make_split_partition(int k_tiles, int n_tiles, int m_groups, int split,
                                         int whole = 0) {
  Partition p = tile_space(k_tiles, n_tiles, m_groups);
  p.grid = whole + (p.slices - whole) * split;
  p.split = split;
  p.whole = whole;
  return p;
}

/// Hybrid runs (Partition::runs): `ctas` CTAs (a multiple of split) run R = slices / ctas
/// whole slices each, then the other slices (at most ctas / split of them) are split over
/// `split` CTAs each, clusters 0, 1, ... in order: the hybrid's whole waves and split wave
/// without a CTA per slice, so no CTA starts after the first wave. Needs no workspace.
/// Preconditions: k_tiles, n_tiles, m_groups, split >= 1; ctas a multiple of split;
/// ctas <= slices <= ctas + ctas / split, slices % ctas != 0 (a split wave follows).
constexpr Partition make_hybrid_runs(int k_tiles, int n_tiles, int m_groups, int split,
                                     int ctas) {
  Partition p = tile_space(k_tiles, n_tiles, m_groups);
  p.split = split;
  p.runs = p.slices / ctas;
  p.whole = p.runs * ctas;
  p.grid = ctas;
  return p;
}

/// Whether every CTA's run of `p` lies in one slice and needs no workspace: one whole slice per
/// CTA (striped runs of k_tiles tiles), or a cluster split (with or without whole slices first;
/// in hybrid runs a CTA's run is several whole slices and then its share of a split slice,
/// which needs no workspace either). The only partitions the warp-specialized kernel runs when
/// built with -DMARLIN_WGMMA_WS_STRIPED=0 (by default it runs striped runs of several slices
/// too; the planner makes hybrid runs only then).
MARLIN_HOST_DEVICE constexpr bool slice_local_runs(const Partition& p) {
  return p.split > 0 || p.iters == p.k_tiles;
}

/// The tiles [begin, end) of the whole index space that CTA `cta` works on: its striped
/// run, or in a cluster split its rank's share of its slice. Not for hybrid runs (runs > 0,
/// which only the warp-specialized kernel runs): cta_runs covers every partition.
MARLIN_HOST_DEVICE constexpr void cta_run(const Partition& p, int cta, int& begin, int& end) {
  if (p.split > 0 && cta < p.whole) {
    begin = cta * p.k_tiles;
    end = begin + p.k_tiles;
  } else if (p.split > 0) {
    const int slice = p.whole + (cta - p.whole) / p.split;
    const int rank = (cta - p.whole) % p.split;
    begin = slice * p.k_tiles + rank * p.k_tiles / p.split;
    end = slice * p.k_tiles + (rank + 1) * p.k_tiles / p.split;
  } else {
    begin = cta * p.iters;
    end = begin + p.iters < p.total ? begin + p.iters : p.total;
  }
}

/// The tiles that CTA `cta` works on, for any partition: [begin, end) as cta_run's, and then
/// [tail_begin, tail_end), which is empty (tail_begin == tail_end) except in hybrid runs: there
/// [begin, end) are the CTA's whole slices, and the tail is its rank's share of its cluster's
/// split slice, if it has one.
MARLIN_HOST_DEVICE constexpr void cta_runs(const Partition& p, int cta, int& begin, int& end,
                                           int& tail_begin, int& tail_end) {
  tail_begin = tail_end = 0;
  if (p.split == 0 || p.runs == 0) {
    cta_run(p, cta, begin, end);
    return;
  }
  begin = cta * p.runs * p.k_tiles;
  end = begin + p.runs * p.k_tiles;
  if (cta / p.split < p.slices - p.whole) {
    const int slice = p.whole + cta / p.split;
    const int rank = cta % p.split;
    tail_begin = slice * p.k_tiles + rank * p.k_tiles / p.split;
    tail_end = slice * p.k_tiles + (rank + 1) * p.k_tiles / p.split;
  }
}

/// The part of a CTA's run that starts at tile `idx` and stays in one slice: the slice, its
/// first K tile and its length (to the slice's end or to `run_end`, whichever comes first).
/// A run is walked segment by segment: idx += n_k. (gemm_kernel computes the same through
/// min(k_tiles, k_begin + run_end - idx); with this function its SASS changed, so it keeps its
/// own lines until an A/B says otherwise.)
struct Segment {
  int slice = 0;
  int k_begin = 0;
  int n_k = 0;
};
MARLIN_HOST_DEVICE constexpr Segment run_segment(const Partition& p, int idx, int run_end) {
  Segment s;
  s.slice = idx / p.k_tiles;
  s.k_begin = idx - s.slice * p.k_tiles;
  s.n_k = p.k_tiles - s.k_begin < run_end - idx ? p.k_tiles - s.k_begin : run_end - idx;
  return s;
}

/// After a segment of a CTA's run: once `idx` reaches `end`, continues with the CTA's tail
/// [tail_begin, tail_end) if it has one (hybrid runs, cta_runs), which is then used up. A
/// run is walked as: idx = begin; while idx < end: segment = run_segment(p, idx, end),
/// idx += segment.n_k, continue_with_tail(idx, end, tail_begin, tail_end).
MARLIN_HOST_DEVICE constexpr void continue_with_tail(int& idx, int& end, int& tail_begin,
                                                     int tail_end) {
  if (idx == end && tail_begin < tail_end) {
    idx = tail_begin;
    end = tail_end;
    tail_begin = tail_end;
  }
}

/// First CTA whose run touches `slice`.
MARLIN_HOST_DEVICE constexpr int first_cta(const Partition& p, int slice) {
  return slice * p.k_tiles / p.iters;
}

/// Last CTA whose run touches `slice`.
MARLIN_HOST_DEVICE constexpr int last_cta(const Partition& p, int slice) {
  return ((slice + 1) * p.k_tiles - 1) / p.iters;
}

/// Partial-sum slot of CTA `cta` for `slice`: each CTA has two, one for the slice its run
/// starts in and one for the slice it ends in (the only slices it can share).
MARLIN_HOST_DEVICE constexpr int partial_slot(const Partition& p, int cta, int slice) {
  return (cta * p.iters) / p.k_tiles == slice ? 2 * cta : 2 * cta + 1;
}

/// Arrival counter of a shared slice: the index of its first participant. Unique among the
/// shared slices of a launch: a CTA's run holds the first tile of slices s_a..s_b, and every
/// slice before s_b lies wholly inside that run, so only s_b can be shared. Always < grid.
MARLIN_HOST_DEVICE constexpr int counter_index(const Partition& p, int slice) {
  return first_cta(p, slice);
}

/// Number of partial slots a launch may use.
constexpr int num_partial_slots(const Partition& p) { return 2 * p.grid; }

/// Whether any slice is shared by more than one CTA (only then is a workspace needed).
constexpr bool needs_reduction(const Partition& p) {
  if (p.split > 0) return false;  // the cluster reduces in shared memory
  // A run boundary falls strictly inside a slice unless every boundary is a slice boundary.
  return p.grid > 1 && p.iters % p.k_tiles != 0;
}

}  // namespace marlin::detail
