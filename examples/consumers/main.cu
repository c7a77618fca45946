// The program of all three consumer projects (find_package, add_subdirectory, FetchContent),
// written only against the public API. It runs a GEMM on null operands, which marlin must
// refuse with a readable Status; no GPU is needed.
// Exit code: 0 iff marlin::gemm<> did not return Status::kSuccess.
#include <marlin/marlin.cuh>

#include <cstddef>
#include <cstdio>

int main() {
  marlin::GemmArgs args;
  args.m = 16;
  args.n = 256;
  args.k = 256;
  args.group_size = -1;  // one scale per output column; a, b, scales and c stay null

  const marlin::Status check = marlin::can_implement(args);
  const std::size_t bytes = marlin::workspace_bytes(args);
  const marlin::Status status = marlin::gemm<>(args, nullptr, 0, /*stream=*/nullptr);

  std::printf("can_implement: %s\n", marlin::to_string(check));
  std::printf("workspace_bytes: %zu\n", bytes);
  std::printf("gemm<> on null operands: %s\n", marlin::to_string(status));
  return status == marlin::Status::kSuccess ? 1 : 0;
}
