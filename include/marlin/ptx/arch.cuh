// Architecture guard shared by every PTX wrapper. The instructions used by marlin (cp.async,
// ldmatrix, mma.sync m16n8k16, lop3) need sm_80 or newer. Device code compiled for an older
// target still builds, but a wrapper reached there traps: the host API refuses such devices
// (Status::kErrorUnsupportedDevice) before any launch, so the trap marks a library bug.
#pragma once

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 800)
#define MARLIN_SM80_ENABLED 1
#endif

#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
#define MARLIN_SM90_ENABLED 1
#endif

// Hopper's arch-specific instructions (wgmma) exist only in sm_90a code.
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define MARLIN_SM90A_ENABLED 1
#endif

#if defined(__CUDA_ARCH__) && !defined(MARLIN_SM80_ENABLED)
#define MARLIN_UNSUPPORTED_ARCH() __trap()
#else
#define MARLIN_UNSUPPORTED_ARCH() ((void)0)
#endif
