// citeforge export --checkpoint DIR --format peft|merged --out DIR [--model BASE_DIR]
//   peft:   the checkpoint's adapter as Python peft loads it (adapter_model.safetensors +
//           adapter_config.json).
//   merged: the base model with the adapter folded into its weights, a plain HF checkpoint
//           (config.json, model.safetensors, and the base's tokenizer.model when it has one).
// Both get a README.md, the model card (trainer/report/model_card.h).
//   gguf:   the merged model as one GGUF file for llama.cpp and Ollama (--out FILE.gguf,
//           --gguf-type f16|bf16|q8_0).
#include <cstdio>
#include <filesystem>

#include "common/error.h"
#include "common/file_io.h"
#include "common/work_folder.h"
#include "models/checkpoint_io.h"
#include "models/gguf_export.h"
#include "models/peft_adapter.h"
#include "trainer/cli/cli_args.h"
#include "trainer/cli/cli_model.h"
#include "trainer/cli/commands.h"
#include "trainer/report/model_card.h"
#include "trainer/run/policy.h"
#include "trainer/run/run_checkpoint.h"
#include "trainer/run/train_checkpoint.h"

namespace citeforge::trainer {
namespace fs = std::filesystem;

const CliCommand& export_cli() {
  static const CliCommand command{
      "export",
      "export a checkpoint's adapter (peft) or a merged model",
      "",
      "",
      {{"checkpoint", "DIR", "a checkpoint directory of a run (required)"},
       {"format", "peft|merged|gguf",
        "the adapter alone, the base with the adapter folded in, or that as one GGUF file "
        "(required)"},
       {"out", "DIR|FILE.gguf", "the directory (or, for gguf, the file) to write (required)"},
       {"gguf-type", "f16|bf16|q8_0", "the GGUF's weight type", "f16"},
       {"model", "BASE_DIR",
        "the base model (default: the adapter config's base_model_name_or_path)"},
       non_finite_weights_option()}};
  return command;
}

int command_export(const Args& raw) {
  auto args = parse_cli(export_cli(), raw);
  args.no_positional();
  const std::string checkpoint = verified_adapter_dir(args.require("checkpoint"));
  const std::string format = args.require("format");
  const fs::path out = args.require("out");
  if (format != "peft" && format != "merged" && format != "gguf")
    throw Error("export: --format must be peft, merged or gguf");
  const auto gguf_type = models::gguf_export_type(args.require("gguf-type"));

  const std::string base = args.get_or("model", adapter_base_model(checkpoint));
  if (base.empty() || !fs::is_directory(base))
    fail_at(checkpoint + "/adapter_config.json", "field 'base_model_name_or_path'",
            "base model directory '" + base + "' does not exist; pass --model BASE_DIR");

  auto model = load_base(base, Dtype::float32, Quantization::none, torch::kCPU,
                         non_finite_weights(args, "export"));
  auto adapter = models::load_peft_adapter(model, checkpoint);
  if (format == "gguf") {
    models::merge_adapters(model);
    models::export_gguf(model, base, out.string(), gguf_type);
    std::fprintf(stderr, "[export] gguf (%s) of %s -> %s\n", args.require("gguf-type").c_str(),
                 checkpoint.c_str(), out.c_str());
    return 0;
  }
  // The directory is made in a work folder beside --out and renamed into place when complete,
  // so a killed export leaves no half-made model where --out points; the work folder of a killed
  // export goes at the next export to the same place.
  make_directory_atomically(
      out.string(), "exporting",
      [&](const std::string& work_dir) {
        const fs::path work = work_dir;
        if (format == "peft") {
          models::save_peft_adapter(model, adapter.config, fs::absolute(base).string(),
                                    work.string());
        } else {
          models::merge_adapters(model);
          models::save_model(model, work.string());
          // The base's tokenizer files come along, so the merged model loads as it is
          // (transformers' AutoTokenizer reads tokenizer_config.json with tokenizer.model or
          // tokenizer.json).
          for (const char* name : {"tokenizer.model", "tokenizer.json", "tokenizer_config.json",
                                   "generation_config.json"}) {
            const fs::path file = fs::path(base) / name;
            if (fs::exists(file))
              fs::copy_file(file, work / name, fs::copy_options::overwrite_existing);
          }
        }
        // The model card: what it is built on, how it was trained and scored, how to reproduce it.
        const auto card =
            gather_model_card_facts(checkpoint, base, format == "merged", adapter.config.spec.r,
                                    adapter.config.spec.alpha, adapter.adapted.size());
        write_file_atomically((work / "README.md").string(), model_card(card));
      },
      [](const std::string& line) { std::fprintf(stderr, "[export] %s\n", line.c_str()); });
  std::fprintf(stderr, "[export] %s adapter of %s (r %lld, %zu layers) -> %s\n", format.c_str(),
               checkpoint.c_str(), (long long)adapter.config.spec.r, adapter.adapted.size(),
               out.c_str());
  return 0;
}

}  // namespace citeforge::trainer
