// A LoRA adapter's term for a decoding step's few rows on a CPU as two loops instead of ATen's
// operators (two matmuls, a scale, a cast and an add): each matmul is a few thousand
// multiply-adds, which the matmul library's set-up outweighs, and a SmolLM2 step has 210 adapted
// projections (an adapted step at 8 rows decodes 1.15-1.25x faster with the loops on a 2-core
// EPYC, experiments/bench/results/decode_cpu_avx2_lora.md).
#pragma once

#include <torch/torch.h>

namespace citeforge::models {

// y += ((x A^T) B^T) * scale, in y's dtype, as LinearImpl adds its adapter (the product in the
// adapters' fp32, the term cast to y's dtype before the add), in place: the caller's own fresh
// output. False, leaving y as it was, where the loops do not apply: under grad mode (so a
// forward pass's bits never depend on which weights are trainable), where the decoding kernels
// would not run (fused_kernel_applies for fp32: off the CPU, more rows than fused_max_rows, or
// fused decoding switched off), y not contiguous fp32 or bf16, or other than contiguous fp32
// adapters. The sums run in fp32 in a fixed order of their own, so the term may
// differ from ATen's in its last bits.
bool lora_rows_add_(torch::Tensor& y, const torch::Tensor& x, const torch::Tensor& A,
                    const torch::Tensor& B, double scale);

}  // namespace citeforge::models
