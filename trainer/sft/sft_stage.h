// The SFT setting: fresh adapters trained on the configured reference answers (the prompt
// masked, the loss on the answer), evaluated after every epoch.
#pragma once

#include "trainer/run/run_context.h"

namespace citeforge::trainer {

void run_sft(RunContext& run);

}  // namespace citeforge::trainer
