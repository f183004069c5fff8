// Generation throughput on CPU: prompt processing (prefill) and decode tokens/s for stories260K
// and a random ~110M-parameter Llama shape, at batch 1 and 16.
//
//   build/bench_generate [--stories tests/fixtures/models/stories260K]
//                        [--out experiments/bench/results/generate_cpu.md]
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "bench_flags.h"
#include "bench_stats.h"
#include "common/clock.h"
#include "common/file_io.h"
#include "models/checkpoint_io.h"
#include "models/generate.h"

using namespace citeforge;

namespace {
struct Row {
  std::string model;
  int64_t params, batch, prompt, new_tokens;
  double prefill_tps, decode_tps;
};

// Prefill is timed as one forward pass over the prompts; decode as the rest of generate().
Row measure(const std::string& name, models::LlamaForCausalLM& model, int64_t batch,
            int64_t prompt_len, int64_t new_tokens) {
  torch::manual_seed(0);
  auto ids = torch::randint(3, model->config.vocab_size, {batch, prompt_len}, torch::kInt64);
  ids.select(1, 0).fill_(1);
  std::vector<std::vector<int64_t>> prompts;
  for (int64_t b = 0; b < batch; ++b)
    prompts.emplace_back(ids[b].data_ptr<int64_t>(), ids[b].data_ptr<int64_t>() + prompt_len);
  models::SamplingOptions o;
  o.max_new_tokens = new_tokens;
  o.eos_ids = {-1};
  models::generate(model, prompts, o);  // warm-up

  torch::NoGradGuard no_grad;
  auto start = std::chrono::steady_clock::now();
  model->forward(ids);
  double prefill = seconds_since(start);
  start = std::chrono::steady_clock::now();
  models::generate(model, prompts, o);
  double total = seconds_since(start);
  double decode = std::max(total - prefill, 1e-9);
  int64_t params = 0;
  for (const auto& p : model->parameters()) params += p.numel();
  return {name,
          params,
          batch,
          prompt_len,
          new_tokens,
          batch * prompt_len / prefill,
          batch * (new_tokens - 1) / decode};
}

}  // namespace

int main(int argc, char** argv) {
  bench::require_flag_pairs(argc, argv);
  std::string stories_dir = "tests/fixtures/models/stories260K", out;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--stories")
      stories_dir = argv[i + 1];
    else if (flag == "--out")
      out = argv[i + 1];
  }
  std::vector<Row> rows;
  auto stories = models::load_model(stories_dir);
  for (int64_t batch : {1, 16}) rows.push_back(measure("stories260K", stories, batch, 128, 128));

  models::ModelConfig shape;  // a GPT-2-small-sized Llama with the Llama 2 vocabulary
  shape.architecture = "LlamaForCausalLM";
  shape.hidden_size = 768;
  shape.intermediate_size = 2048;
  shape.num_layers = 12;
  shape.num_heads = 12;
  shape.num_kv_heads = 12;
  shape.head_dim = 64;
  shape.vocab_size = 32000;
  shape.tie_word_embeddings = true;
  shape.max_positions = 1024;
  torch::manual_seed(0);
  models::LlamaForCausalLM random_llama(shape);
  random_llama->eval();
  for (int64_t batch : {1, 16})
    rows.push_back(measure("random Llama", random_llama, batch, 128, 32));

  std::ostringstream table;
  table << "| model | parameters | batch | prompt tokens | new tokens | prefill tokens/s | decode "
           "tokens/s |\n"
        << "|---|---|---|---|---|---|---|\n";
  for (const auto& r : rows) {
    char line[256];
    std::snprintf(line, sizeof line, "| %s | %.1fM | %ld | %ld | %ld | %.0f | %.1f |\n",
                  r.model.c_str(), r.params / 1e6, r.batch, r.prompt, r.new_tokens, r.prefill_tps,
                  r.decode_tps);
    table << line;
  }
  std::ostringstream report;
  report << "# Generation throughput on CPU\n\n"
         << "Command: `build/bench_generate --out experiments/bench/results/generate_cpu.md` "
         << "(fp32, greedy, KV cache; decode excludes the first token, which prefill produces).\n\n"
         << "Machine: " << bench::cpu_name() << ", " << std::thread::hardware_concurrency()
         << " hardware threads, LibTorch intra-op threads " << at::get_num_threads() << ".\n\n"
         << table.str();
  std::printf("%s", report.str().c_str());
  if (!out.empty()) write_file_atomically(out, report.str());
  return 0;
}
