#include "common/version.h"

#include <torch/version.h>

// Generated at every build by scripts/version_header.cmake (the commit, "-dirty" when the
// sources differ from it).
#include "common/citeforge_version.h"

#ifdef CITEFORGE_WITH_CUDA
#include <cuda_runtime_api.h>
#endif

namespace citeforge {

std::string version_text() {
  std::string text = std::string("citeforge ") + kCiteforgeVersion + " (commit " +
                     kCiteforgeCommit + "), LibTorch " + TORCH_VERSION;
#ifdef CITEFORGE_WITH_CUDA
  text += ", CUDA " + std::to_string(CUDART_VERSION / 1000) + "." +
          std::to_string(CUDART_VERSION % 1000 / 10);
#endif
  return text;
}

}  // namespace citeforge
