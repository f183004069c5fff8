// The tensors a config implies, checked as a whole against what a file holds before anything is
// allocated or written (HF directories and GGUF imports alike): a checkpoint from a stranger
// whose config contradicts its tensors (a layer count far beyond them, another width, a missing
// or misshaped tensor) is one error naming the file and the tensor, not a huge allocation or a
// broken model written out.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/hf_config.h"
#include "models/non_finite_weights.h"

namespace citeforge::models {

// HF name -> shape of every parameter a model of `config` has (no LoRA).
std::map<std::string, std::vector<int64_t>> expected_tensor_shapes(const ModelConfig& config);

// Fails with one line naming `location` unless `present` (HF name -> shape, as the file says)
// holds exactly the tensors `config` implies, each once with its shape. Names for which
// `ignorable` says true are skipped. The layer count is bounded by the tensors present first, so
// an absurd count costs nothing; `layer_field` names where the count came from.
void check_model_tensors(const ModelConfig& config,
                         const std::map<std::string, std::vector<int64_t>>& present,
                         const std::string& location,
                         bool (*ignorable)(const std::string& name) = nullptr,
                         const std::string& layer_field = "config.json's num_hidden_layers");

// "[a, b]", as the shape errors print it.
std::string shape_text(torch::IntArrayRef shape);

// Why a tensor the config does not imply is refused (a head that the config ties, or a tensor of
// no parameter), for the loader's and the import's errors alike.
std::string unexpected_tensor_reason(const ModelConfig& config, const std::string& name);

// Fails (or, with `warn`, prints) one line naming the tensor and how many of its values are NaN
// or infinite.
void check_finite(const std::string& location, const std::string& name, const torch::Tensor& t,
                  NonFiniteWeights policy = NonFiniteWeights::error);

// The parts of check_finite, for a tensor checked piece by piece: the count (in slices of 16M
// values, so that the test's temporaries stay small beside a 7B model's tensors) and the verdict
// on `bad` of `count` values.
int64_t count_non_finite(const torch::Tensor& t);
void report_non_finite(const std::string& location, const std::string& name, int64_t bad,
                       int64_t count, NonFiniteWeights policy);

}  // namespace citeforge::models
