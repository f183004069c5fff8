#include "models/grad_checkpoint.h"

#include <ATen/core/ivalue.h>

#include <optional>

#include "models/rng_state.h"

namespace citeforge::models {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// What the backward pass needs besides the saved input: the block itself and the random state
// the forward pass started from. It rides in the autograd context as a capsule.
// A block on a GPU draws its dropout masks from that device's generator, not the CPU's, so
// both states are kept: replaying only the CPU's would give the recomputation other masks.
struct Replay : torch::CustomClassHolder {
  BlockFunction block;
  torch::Tensor cpu_rng_state;
  std::optional<torch::Device> device;  // set when the block runs on an accelerator
  torch::Tensor device_rng_state;
};

struct CheckpointFunction : torch::autograd::Function<CheckpointFunction> {
  static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x,
                               const BlockFunction& block) {
    auto replay = c10::make_intrusive<Replay>();
    replay->block = block;
    replay->cpu_rng_state = generator_state();
    if (!x.device().is_cpu()) {
      replay->device = x.device();
      replay->device_rng_state = generator_state(*replay->device);
    }
    ctx->saved_data["replay"] = c10::IValue::make_capsule(replay);
    ctx->save_for_backward({x});
    torch::NoGradGuard no_grad;
    return block(x);
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    auto replay = c10::static_intrusive_pointer_cast<Replay>(ctx->saved_data["replay"].toCapsule());
    auto x = ctx->get_saved_variables()[0].detach().requires_grad_(true);
    // Replay the forward pass's random stream, then continue the current one unchanged.
    const auto now = generator_state();
    set_generator_state(replay->cpu_rng_state);
    torch::Tensor device_now;
    if (replay->device) {
      device_now = generator_state(*replay->device);
      set_generator_state(replay->device_rng_state, *replay->device);
    }
    torch::Tensor y;
    {
      torch::AutoGradMode enable(true);
      y = replay->block(x);
    }
    set_generator_state(now);
    if (replay->device) set_generator_state(device_now, *replay->device);
    torch::autograd::backward({y}, {grad_outputs[0]});
    return {x.grad(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor checkpointed(const BlockFunction& block, const torch::Tensor& x) {
  if (!torch::GradMode::is_enabled()) return block(x);
  // An autograd function whose inputs need no gradient gets no backward node, and the
  // parameters the block uses are not inputs. The first block's input (frozen embeddings)
  // is such a tensor, so it is made a leaf that asks for a (discarded) gradient.
  if (!x.requires_grad()) return CheckpointFunction::apply(x.detach().requires_grad_(true), block);
  return CheckpointFunction::apply(x, block);
}

}  // namespace citeforge::models
