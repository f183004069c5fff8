// citeforge generate: decode a continuation of a prompt with a model directory in HF layout.
#include <chrono>
#include <cstdio>
#include <iostream>

#include "common/error.h"
#include "common/file_io.h"
#include "models/chat_format.h"
#include "models/generate.h"
#include "models/safetensors.h"
#include "models/tokenizer.h"
#include "trainer/cli/cli_args.h"
#include "trainer/cli/cli_model.h"
#include "trainer/cli/commands.h"
#include "trainer/config/config_choices.h"

namespace citeforge::trainer {

const CliCommand& generate_cli() {
  static const CliCommand command{
      "generate",
      "decode a continuation with a model (and adapter)",
      "",
      "Give --prompt or --prompt-file. Sampling (--temperature, --top-p, --seed) or --greedy\n"
      "(the default when neither --temperature nor --top-p is given).",
      {{"model", "DIR|FILE.gguf", "an HF model directory or a GGUF file (required)"},
       {"adapter", "DIR", "a peft adapter or a run's checkpoint"},
       {"tokenizer", "FILE", "the tokenizer (default: the model's)"},
       {"prompt", "TEXT", "the prompt"},
       {"prompt-file", "FILE", "read the prompt from a file"},
       {"chat", one_of(models::chat_template_names()), "the chat format to wrap the prompt in"},
       {"system", "TEXT", "the chat format's system message"},
       {"max-new-tokens", "N", "tokens to generate at most", "64"},
       {"greedy", "", "always take the most likely token"},
       {"temperature", "T", "sampling temperature", "1.0"},
       {"top-p", "P", "nucleus sampling's probability mass", "1.0"},
       {"seed", "S", "sampling seed", "0"},
       {"stop", "TEXT", "stop when the text appears", "", true},
       non_finite_weights_option(),
       {"device", choice_names<Device>(), "where to run (default: cuda when there is one)"},
       {"quantization", choice_names<Quantization>(),
        "the base's quantisation (default: the adapter's run's, else nf4 on a CPU, whose "
        "decoding kernels read the 4-bit codes, and none on a GPU)"},
       {"dtype", choice_names<Dtype>(),
        "the model's dtype (default: float32 on a CPU, "
        "bfloat16 on a GPU)"},
       {"logits-out", "F.safetensors",
        "also write the prompt's ids and logits, for cross-checks"}}};
  return command;
}

int command_generate(const Args& raw) {
  auto args = parse_cli(generate_cli(), raw);
  args.no_positional();
  if (args.has("prompt") == args.has("prompt-file"))
    throw Error("generate: give exactly one of --prompt and --prompt-file");
  if (args.has("greedy") && (args.has("temperature") || args.has("top-p") || args.has("seed")))
    throw Error("generate: --greedy cannot be combined with --temperature, --top-p or --seed");
  const std::string prompt =
      args.has("prompt") ? args.require("prompt") : read_file(args.require("prompt-file"));

  const std::string device_name =
      args.get_or("device", torch::cuda::is_available() ? "cuda" : "cpu");
  const Device where = parse_choice<Device>(device_name, "generate: --device");
  if (where == Device::cuda && !torch::cuda::is_available())
    throw Error("generate: --device cuda: no CUDA device available");
  // On a CPU an NF4 base in fp32, whose decoding kernels read the 4-bit codes; on a GPU a dense
  // bf16 base.
  CliModelDefaults defaults;
  defaults.device = torch::Device(where == Device::cuda ? torch::kCUDA : torch::kCPU);
  defaults.dtype = defaults.device.is_cuda() ? Dtype::bfloat16 : Dtype::float32;
  defaults.quantization = defaults.device.is_cpu() ? Quantization::nf4 : Quantization::none;
  const auto log = [](const std::string& line) {
    std::fprintf(stderr, "[generate] %s\n", line.c_str());
  };
  CliModel loaded = load_cli_model(args, "generate", log, defaults);
  auto& model = loaded.model;
  const torch::Device device = defaults.device;
  const models::Tokenizer& tokenizer = *loaded.tokenizer;
  if (tokenizer.vocab_size() > model->config.vocab_size)
    throw Error(tokenizer.path() + ": tokenizer has " + std::to_string(tokenizer.vocab_size()) +
                " pieces but the model only " + std::to_string(model->config.vocab_size));

  std::vector<int64_t> ids;
  if (auto chat = args.get("chat"))
    ids = models::encode_chat_prompt(tokenizer, models::chat_template(*chat), prompt,
                                     args.get_or("system", ""));
  else
    ids = tokenizer.encode(prompt, tokenizer.adds_bos());

  // For cross-checks against other implementations (scripts/check_peft_export.py): the prompt's
  // ids and the logits of one forward pass over it, in fp32.
  if (auto path = args.get("logits-out")) {
    torch::NoGradGuard no_grad;
    auto input = torch::tensor(ids, torch::kInt64).unsqueeze(0);
    auto logits = model->forward(input.to(device)).to(torch::kCPU, torch::kFloat32);
    models::write_safetensors(*path, {{"input_ids", input}, {"logits", logits}});
  }

  models::SamplingOptions options;
  options.max_new_tokens = args.integer("max-new-tokens");
  options.greedy = !args.has("temperature") && !args.has("top-p");
  options.temperature = args.number("temperature");
  options.top_p = args.number("top-p");
  options.seed = static_cast<uint64_t>(args.integer("seed"));
  options.stop_strings = args.all("stop");

  auto start = std::chrono::steady_clock::now();
  auto result = models::generate(
      model, {ids}, options, [&](const std::vector<int64_t>& t) { return tokenizer.decode(t); });
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::cout << result[0].text << std::endl;
  const auto generated = result[0].tokens.size();
  std::fprintf(stderr,
               "[generate] %zu prompt + %zu new tokens in %.3f s: %.1f tokens/s (%s, %s base, %s, "
               "finish: %s)\n",
               ids.size(), generated, seconds, generated / std::max(seconds, 1e-9),
               device_name.c_str(), loaded.quantization == Quantization::nf4 ? "NF4" : "dense",
               choice_name(loaded.dtype), result[0].finish_reason.c_str());
  return 0;
}

}  // namespace citeforge::trainer
