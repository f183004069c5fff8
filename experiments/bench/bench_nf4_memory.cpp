// Memory of a Llama-2-7B-shaped model with an NF4 base, built the way a QLoRA run loads one:
// the decoder is created without its projection weights and each projection is quantised from
// a dense fp32 matrix that exists only while it is being quantised (random weights stand in
// for a checkpoint). Reports NF4 bytes per quantised parameter, the whole model's bytes per
// parameter (embeddings, norms and LM head stay dense in bf16, as in QLoRA) and peak RSS.
//
//   build/bench_nf4_memory [--layers N] [--out experiments/bench/results/nf4_memory.md]
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "bench_flags.h"
#include "models/lora.h"

using namespace citeforge;

namespace {

double peak_rss_gib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / (1024.0 * 1024.0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  bench::require_flag_pairs(argc, argv);
  int64_t layers = 32;
  std::string out;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--layers")
      layers = std::stoll(argv[i + 1]);
    else if (flag == "--out")
      out = argv[i + 1];
  }
  models::ModelConfig c;  // meta-llama/Llama-2-7b-hf's config.json
  c.architecture = "LlamaForCausalLM";
  c.hidden_size = 4096;
  c.intermediate_size = 11008;
  c.num_layers = layers;
  c.num_heads = 32;
  c.num_kv_heads = 32;
  c.head_dim = 128;
  c.vocab_size = 32000;
  c.max_positions = 4096;
  auto start = std::chrono::steady_clock::now();
  models::LlamaForCausalLM model(c, /*allocate_block_linears=*/false);
  model->to(torch::kBFloat16);
  torch::manual_seed(0);
  int64_t nf4_params = 0, nf4_bytes = 0;
  for (auto& [name, linear] : models::named_linears(model)) {
    if (linear->weight.defined()) continue;  // the dense LM head
    auto dense = torch::randn({linear->out_features, linear->in_features}) * 0.02;
    linear->set_nf4(models::nf4_quantize(dense));
    nf4_params += dense.numel();
    nf4_bytes += linear->nf4->bytes();
  }
  int64_t dense_params = 0, dense_bytes = 0;
  for (auto& p : model->parameters()) {
    dense_params += p.numel();
    dense_bytes += int64_t(p.nbytes());
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double total_params = double(nf4_params + dense_params);
  std::ostringstream md;
  char buf[2048];
  std::snprintf(buf, sizeof buf,
                "# NF4 memory of a Llama-2-7B-shaped model\n\n"
                "Command: `build/bench_nf4_memory --layers %lld%s`. Random N(0, 0.02^2) weights "
                "quantised projection by projection (blocksize 64, double-quantised absmax); "
                "embeddings, norms and LM head dense in bf16.\n\n"
                "| quantity | value |\n|---|---|\n"
                "| decoder layers | %lld |\n"
                "| NF4 parameters | %.3f B |\n"
                "| NF4 bytes | %.3f GiB |\n"
                "| NF4 bits per parameter | %.4f |\n"
                "| dense (bf16) parameters | %.3f B |\n"
                "| whole model bytes | %.3f GiB |\n"
                "| whole model bytes per parameter | %.4f |\n"
                "| peak RSS | %.2f GiB |\n"
                "| time to build and quantise | %.0f s |\n",
                (long long)layers, out.empty() ? "" : (" --out " + out).c_str(), (long long)layers,
                nf4_params / 1e9, nf4_bytes / double(1 << 30), 8.0 * nf4_bytes / nf4_params,
                dense_params / 1e9, (nf4_bytes + dense_bytes) / double(1 << 30),
                (nf4_bytes + dense_bytes) / total_params, peak_rss_gib(), seconds);
  md << buf;
  std::printf("%s", md.str().c_str());
  if (!out.empty()) std::ofstream(out) << md.str();
  return 0;
}
