// What loading a NaN or infinite weight does, a choice the models' loaders take and the run
// config and commands name (`model.non_finite_weights`, `--non-finite-weights`).
#pragma once

namespace citeforge::models {

// error: one line naming the file, the tensor and the count, and nothing is loaded (the
// default); warn: the same line on stderr, and the weights are loaded as they are.
enum class NonFiniteWeights { error, warn };

}  // namespace citeforge::models
