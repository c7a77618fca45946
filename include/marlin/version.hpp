// marlin version numbers. Host-only; compiles without nvcc.
#pragma once

#define MARLIN_VERSION_MAJOR 0
#define MARLIN_VERSION_MINOR 1
#define MARLIN_VERSION_PATCH 0

namespace marlin {

/// Library version as {major, minor, patch}.
struct Version {
  int major;
  int minor;
  int patch;
};

/// The version of the headers this translation unit was compiled against.
inline constexpr Version kVersion{MARLIN_VERSION_MAJOR, MARLIN_VERSION_MINOR,
                                  MARLIN_VERSION_PATCH};

}  // namespace marlin
