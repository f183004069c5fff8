// Drawing the next token of each row of a batch: the distribution (temperature, top-p) and an
// exact inverse-CDF draw that runs on the logits' device, one uniform per row from that row's
// own CPU generator. A row's random numbers so depend only on its seed, never on the batch
// around it, and a step costs a cumulative sum per row instead of a random number per
// vocabulary entry (torch::multinomial draws an exponential for every one of them, 49k on
// SmolLM2, on the host, after the probabilities are copied there).
#pragma once

#include <ATen/core/Generator.h>
#include <torch/torch.h>

#include <vector>

namespace citeforge::models {

// softmax(logits / temperature) over the last dimension, in fp32, with the tokens outside the
// top-p nucleus set to 0 and the rest renormalised (top_p >= 1 keeps every token).
torch::Tensor sampling_probs(const torch::Tensor& logits, double temperature, double top_p);

// A uniform number in [0, 1) with 53 random bits, from a CPU generator.
double next_uniform(at::Generator& cpu_generator);

// One token per row of `probs` ([rows, vocab], any device, non-negative): the first index whose
// cumulative probability (fp64) exceeds uniforms[row] x the row's total. Token i is drawn with
// probability probs[i] / total and a token of probability 0 never is. Throws an Error when a
// row's total is not finite and positive (non-finite logits). Returns int64 ids on probs' device.
torch::Tensor draw_by_inverse_cdf(const torch::Tensor& probs, const std::vector<double>& uniforms);

}  // namespace citeforge::models
