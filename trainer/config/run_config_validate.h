// Validation of a parsed run config (docs/design.md §5): run_config.cpp reads the YAML into the
// structs, then calls this. It also fills the defaults that depend on other keys (the
// tokenizer of a model directory, the test set selected on).
#pragma once

#include "trainer/config/run_config.h"

namespace citeforge::trainer {

void validate_run_config(RunConfig& config, FileChecks files);

}  // namespace citeforge::trainer
