// The trained settings of a run (docs/design.md §5): `sft`, `ppo` (from the base) and `sft+ppo`
// (PPO continuing from the selected SFT checkpoint), each evaluated after every epoch.
#pragma once

#include <string>

#include "trainer/run/run_context.h"

namespace citeforge::trainer {

void run_setting(RunContext& run, const std::string& setting);

}  // namespace citeforge::trainer
