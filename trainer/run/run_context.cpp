#include "trainer/run/run_context.h"

#include <filesystem>

namespace citeforge::trainer {
namespace fs = std::filesystem;

std::string RunContext::path(const std::string& relative) const {
  return (fs::path(run_dir) / relative).string();
}

}  // namespace citeforge::trainer
