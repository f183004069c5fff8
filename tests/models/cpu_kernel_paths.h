// What the CPU decoding kernels' tests share (models/cpu_matvec.*, models/cpu_attention.*): the
// instruction-set paths this CPU can run, to force each in turn, and a guard that puts the
// detected path and fused decoding back when a test ends.
#pragma once

#include <optional>
#include <vector>

#include "models/cpu_matvec.h"
#include "models/fused_matmul.h"

namespace citeforge::testing {

struct KernelSettings {
  ~KernelSettings() {
    models::force_cpu_isa(std::nullopt);
    models::set_fused_decoding(true);
  }
};

inline std::vector<models::CpuIsa> runnable_paths() {
  using models::CpuIsa;
  std::vector<CpuIsa> paths{CpuIsa::portable};
  for (CpuIsa isa : {CpuIsa::sse41, CpuIsa::avx2, CpuIsa::avx512})
    if (int(models::detected_cpu_isa()) >= int(isa)) paths.push_back(isa);
  return paths;
}

}  // namespace citeforge::testing
