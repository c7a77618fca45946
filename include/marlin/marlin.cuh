// marlin: fp16 x int4 (W4A16) GEMM for LLM inference. Include this header for everything.
#pragma once

#include "gemm.cuh"
#include "pack.hpp"
#include "status.hpp"
#include "types.hpp"
#include "version.hpp"
