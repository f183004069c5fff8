// What a run prints at its end: Table 2 of every test set (and of its corrected answers) and
// one line per selected checkpoint, after writing its tables and plots (run_tables.h).
#pragma once

#include "trainer/run/run_context.h"

namespace citeforge::trainer {

void print_run_tables(const RunSetup& setup, const RunData& run_data);

}  // namespace citeforge::trainer
