// libFuzzer target for run configs: any bytes are parsed as a run config's YAML and validated
// (without the checks that files exist, as a run directory's resolved config is read back). A
// defect must be a citeforge::Error; a config that validates must write itself out as YAML that
// parses back to the same YAML (the resolved config a run keeps and a resume compares).
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/error.h"
#include "tests/fuzz/fuzz_support.h"
#include "trainer/config/run_config.h"

using namespace citeforge;

using fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto config = trainer::parse_run_config(text, "fuzz.yaml", {}, trainer::FileChecks::off);
    const std::string yaml = trainer::run_config_to_yaml(config);
    const auto again =
        trainer::parse_run_config(yaml, "resolved.yaml", {}, trainer::FileChecks::off);
    require(trainer::run_config_to_yaml(again) == yaml);
  } catch (const Error&) {
  }
  return 0;
}
