// libFuzzer target for a peft adapter's adapter_config.json: any bytes are read as one. A defect
// must be a citeforge::Error; a config that reads has a positive rank, a finite positive alpha
// and a dropout in [0, 1), the values the adapter is then shaped and scaled by.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/error.h"
#include "models/peft_adapter_config.h"
#include "tests/fuzz/fuzz_support.h"

using namespace citeforge;

using fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto c = models::parse_peft_adapter_config(text, "adapter_config.json");
    require(c.r > 0);
    require(std::isfinite(c.alpha) && c.alpha > 0);
    require(c.dropout >= 0 && c.dropout < 1);
  } catch (const Error&) {
  }
  return 0;
}
