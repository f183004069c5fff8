// A run's examples (docs/design.md §2): the training set with data.holdout drawn out of it, the
// test sets with their seeded samples and retrieval scenarios, and the reading split a built
// model pre-trains on. The synthetic world is generated into the run directory once; every
// rank draws the same splits from the seed.
#pragma once

#include "trainer/run/run_context.h"

namespace citeforge::trainer {

// Fills the training set, the test sets and the pre-training reading split, and says their
// sizes.
void load_data(const RunSetup& setup, RunData& run_data);

}  // namespace citeforge::trainer
