// Decoding on a CPU measured against the machine's own limit: SmolLM2-135M-Instruct with its
// NF4 base, greedy (or, with --temperature, sampled) decode at batch 1, 4, 8, 16 and 32 with the
// fused kernels on and off, in fp32
// and bf16, the bytes of weights a token reads and the GB/s that achieves, next to the
// machine's bandwidth measured here by a STREAM-style triad (arrays far larger than the
// last-level cache, and arrays that fit in it) and, when given, llama.cpp's decode on the same
// GGUF (the JSON of experiments/bench/side_by_side_python.py --part llamacpp).
//
//   build/bench_decode [--model weights/SmolLM2-135M-Instruct.Q4_1.gguf] [--threads 2]
//                      [--reps 5] [--llamacpp FILE.json] [--temperature 0]
//                      [--part all|kernels|decode] [--batches 1,4,8,16,32] [--dtypes
//                      float32,bfloat16] [--lora-rank 0]
//                      [--out experiments/bench/results/decode_cpu.md]
//
// --temperature T > 0 samples at T, as PPO's rollouts do (the demo's 0.7), so a step also draws
// each row's token; --part decode leaves out the kernel sweep. --batches and --dtypes narrow the
// decode sweep (batch 1 alone, taken in turns with llama.cpp's, is the comparison a noisy machine
// needs repeated). --lora-rank R > 0 decodes with LoRA adapters of rank R (alpha 2R) on every
// projection, their B drawn as bench_ppo_precision's trained adapters are (N(0, 0.01)), as a PPO
// rollout or an evaluation of a trained checkpoint decodes.
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "bench_flags.h"
#include "bench_stats.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/file_io.h"
#include "models/checkpoint_io.h"
#include "models/cpu_attention.h"
#include "models/cpu_matvec.h"
#include "models/fused_matmul.h"
#include "models/generate.h"
#include "models/gguf_import.h"
#include "models/llama.h"
#include "models/lora.h"

using namespace citeforge;
using nlohmann::json;

namespace {

constexpr int64_t kPromptTokens = 64, kNewTokens = 33;

template <class F>
double seconds(F&& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return seconds_since(start);
}

// a[i] = b[i] + s * c[i] over `n` floats, split over the intra-op threads: 12 bytes moved per
// element (two reads, one write). The best of `reps`, as STREAM reports.
double triad_gb_per_s(int64_t n, int reps) {
  std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n), 1.0f),
      c(static_cast<size_t>(n), 2.0f);
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const double t = seconds([&] {
      at::parallel_for(0, n, 1 << 16, [&](int64_t begin, int64_t end) {
        for (int64_t j = begin; j < end; ++j) a[size_t(j)] = b[size_t(j)] + 3.0f * c[size_t(j)];
      });
    });
    best = std::min(best, t);
  }
  if (a[size_t(n / 2)] != 7.0f) throw Error("triad: wrong result");
  return 12.0 * double(n) / best / 1e9;
}

// Bytes of weight one decoding step reads: the decoder's NF4 blocks and the output layer
// (its decoding copy on the fused path, 8-bit where exact and 16-bit otherwise, which a decoding
// step has made by now; its dense bytes otherwise).
double step_weight_bytes(models::LlamaForCausalLM& model, torch::Dtype dtype, bool fused,
                         int64_t rows) {
  // The path each layer takes, by the rule the layers themselves follow (models/fused_matmul.h).
  const bool kernels = fused && models::fused_kernel_applies(rows, dtype);
  double bytes = 0;
  for (const auto& m : model->modules(/*include_self=*/false))
    if (auto* linear = m->as<models::LinearImpl>())
      if (!linear->nf4)
        bytes += double(linear->weight.nbytes());
      else if (kernels && models::cpu_matvec_supports(*linear->nf4))  // with its fp32 scales
        bytes += double(linear->nf4->packed.nbytes() + linear->nf4->cpu_block_scales.nbytes());
      else
        bytes += double(linear->nf4->bytes());
  const auto& head = model->model->embed_tokens->weight;
  bytes += kernels && models::cpu_matvec_supports(head)
               ? double(model->decoding_head.bytes())
               : double(head.numel()) * 4.0;  // the fp32 head (a bf16 model keeps an fp32 copy)
  return bytes;
}

// SmolLM2 with its NF4 base, its other weights in `dtype`, and adapters of `lora_rank` (none
// at 0) on every projection.
models::LlamaForCausalLM load_nf4(const std::string& dir, torch::Dtype dtype, int64_t lora_rank) {
  models::LoadOptions options;
  options.nf4 = true;
  options.dtype = dtype;
  auto model = models::load_model(dir, options);
  if (lora_rank > 0) {
    models::LoraConfig lora;
    lora.spec = {lora_rank, 2.0 * double(lora_rank), 0.0};
    models::attach_lora(model, lora);
    torch::NoGradGuard no_grad;
    torch::manual_seed(0);
    for (auto& [name, p] : models::lora_parameters(model))
      if (name.ends_with("lora_B")) p.normal_(0.0, 0.01);
  }
  model->eval();
  return model;
}

// The fused kernels alone over every layer of one decoding step (no attention, norms or
// sampling): what the kernels take of a step, and the GB/s they read weights at. The output
// layer goes through the decoding copy the model itself makes (models/fused_matmul.h).
json kernel_rows(models::LlamaForCausalLM& model, int reps) {
  // Each layer's projections grouped as the model calls them (models::linears_of_one_input in
  // AttentionImpl and MlpImpl::forward), and the same weights one by one.
  std::vector<std::vector<const models::Nf4Weight*>> calls_of_one_input;
  for (const auto& block : *model->model->layers) {
    const auto& attention = *block->as<models::DecoderLayerImpl>()->self_attn;
    const auto& mlp = *block->as<models::DecoderLayerImpl>()->mlp;
    calls_of_one_input.push_back(
        {&*attention.q_proj->nf4, &*attention.k_proj->nf4, &*attention.v_proj->nf4});
    calls_of_one_input.push_back({&*attention.o_proj->nf4});
    calls_of_one_input.push_back({&*mlp.gate_proj->nf4, &*mlp.up_proj->nf4});
    calls_of_one_input.push_back({&*mlp.down_proj->nf4});
  }
  std::vector<const models::Nf4Weight*> layers;
  for (const auto& call : calls_of_one_input) layers.insert(layers.end(), call.begin(), call.end());
  const auto& head_weight = model->model->embed_tokens->weight;
  models::DecodingHead head;
  json rows = json::array();
  for (int64_t batch : {1, 4, 8}) {
    torch::manual_seed(0);
    const int64_t hidden = model->config.hidden_size;
    auto x_hidden = torch::randn({batch, hidden});
    auto x_mlp = torch::randn({batch, model->config.intermediate_size});
    double nf4_bytes = 0;
    for (const auto* w : layers) nf4_bytes += double(w->bytes());
    auto run_head = [&] {
      torch::NoGradGuard no_grad;
      if (!models::fused_output_layer(x_hidden, head_weight, head))
        throw Error("the output layer takes no fused path");
    };
    run_head();  // makes the copy
    const double head_bytes = double(head.bytes());
    auto sweep = [&] {
      for (const auto* w : layers)
        models::nf4_matvec_cpu(w->shape[1] == hidden ? x_hidden : x_mlp, *w);
    };
    // The same weights as the model calls them: a layer's q, k and v in one kernel call and its
    // gate and up in another, o and down alone. Timed in turns with the sweep above, so that the
    // two share the machine's minute.
    auto together = [&] {
      for (const auto& call : calls_of_one_input)
        models::nf4_matvec_cpu(call.front()->shape[1] == hidden ? x_hidden : x_mlp, call);
    };
    sweep();
    together();
    std::vector<double> t_layers, t_together, t_head;
    for (int i = 0; i < 4 * reps; ++i) {
      t_layers.push_back(seconds(sweep));
      t_together.push_back(seconds(together));
      t_head.push_back(seconds(run_head));
    }
    const double a = bench::median(t_layers), b = bench::median(t_head);
    const double c = bench::median(t_together);
    rows.push_back({{"batch", batch},
                    {"nf4_layers_ms", 1e3 * a},
                    {"nf4_layers_together_ms", 1e3 * c},
                    {"nf4_gb_per_s", nf4_bytes / a / 1e9},
                    {"head_copy", head.q8 ? "Q8 (exact)" : "Q16"},
                    {"head_ms", 1e3 * b},
                    {"head_gb_per_s", head_bytes / b / 1e9}});
    std::fprintf(
        stderr,
        "kernels batch %lld: NF4 layers %.2f ms (%.1f GB/s; %.2f ms with the projections of one "
        "input together), %s head %.2f ms (%.1f GB/s)\n",
        (long long)batch, 1e3 * a, nf4_bytes / a / 1e9, 1e3 * c, head.q8 ? "Q8" : "Q16", 1e3 * b,
        head_bytes / b / 1e9);
  }
  return rows;
}

// Seconds a call of `f` takes, the median over 4 x reps runs of 100 calls after one warm-up
// call: for calls of a few µs, which one clock reading each would not resolve.
double median_per_call(int reps, const std::function<void()>& f) {
  f();
  std::vector<double> t;
  for (int i = 0; i < 4 * reps; ++i)
    t.push_back(seconds([&] {
                  for (int j = 0; j < 100; ++j) f();
                }) /
                100);
  return bench::median(t);
}

// One layer's attention at a decoding step of the model's shape in bf16 (a cache of the prompt
// and the new tokens so far): the decoding kernel (models/cpu_attention.h) against the exact
// path's operators it replaced (two batched bf16 matmuls around the fp32 softmax).
json attention_rows(const models::ModelConfig& c, int reps) {
  const int64_t groups = c.num_heads / c.num_kv_heads, D = c.head_dim;
  const int64_t slots = kPromptTokens + kNewTokens;
  json rows = json::array();
  torch::InferenceMode inference;
  for (int64_t batch : {1, 8, 32}) {
    torch::manual_seed(0);
    const auto bf16 = torch::kBFloat16;
    auto q = torch::randn({batch, c.num_heads, 1, D}).to(bf16);
    auto k = torch::randn({batch, c.num_kv_heads, slots, D}).to(bf16);
    auto v = torch::randn({batch, c.num_kv_heads, slots, D}).to(bf16);
    auto bias = torch::zeros({batch, 1, 1, slots});
    auto kernel = [&] { models::decode_attention_cpu(q, k, v, bias, groups); };
    auto exact = [&] { models::exact_attention(q, k, v, bias, groups); };
    // fp32: the decoding kernel against ATen's fused kernel, which it replaced at decoding steps.
    auto q32 = q.to(torch::kFloat32), k32 = k.to(torch::kFloat32), v32 = v.to(torch::kFloat32);
    auto kernel32 = [&] { models::decode_attention_cpu(q32, k32, v32, bias, groups); };
    auto fused32 = [&] {
      torch::scaled_dot_product_attention(q32, k32, v32, bias, 0.0, false, std::nullopt,
                                          /*enable_gqa=*/true);
    };
    const double a = median_per_call(reps, kernel), b = median_per_call(reps, exact);
    const double a32 = median_per_call(reps, kernel32), b32 = median_per_call(reps, fused32);
    rows.push_back({{"batch", batch},
                    {"slots", slots},
                    {"kernel_us", 1e6 * a},
                    {"exact_us", 1e6 * b},
                    {"fp32_kernel_us", 1e6 * a32},
                    {"fp32_fused_us", 1e6 * b32}});
    std::fprintf(stderr,
                 "attention batch %lld: bf16 kernel %.1f us, exact path %.1f us; fp32 kernel "
                 "%.1f us, ATen fused %.1f us\n",
                 (long long)batch, 1e6 * a, 1e6 * b, 1e6 * a32, 1e6 * b32);
  }
  return rows;
}

// What a decoding step builds once for all its layers, at SmolLM2's shape (a cache of the prompt
// and the new tokens so far, left-padded rows): RoPE's tables by rope_tables' operators and as
// rows of the model's cache of them, and the attention bias by the operators and by its loop.
json step_table_rows(const models::ModelConfig& c, int reps) {
  const int64_t past = kPromptTokens + kNewTokens - 1;
  json rows = json::array();
  torch::InferenceMode inference;
  for (int64_t batch : {1, 8}) {
    auto positions = torch::full({batch, 1}, past, torch::kInt64);
    auto key_mask = torch::ones({batch, past + 1}, torch::kBool);
    models::RopeTableCache cache;
    auto rope_ops = [&] { models::rope_tables(positions, c); };
    auto rope_cached = [&] { models::rope_tables(positions, c, cache); };
    auto bias_ops = [&] {
      models::attention_bias(
          models::attention_allowed(key_mask, batch, past, 1, std::nullopt, torch::kCPU),
          torch::kFloat32);
    };
    auto bias_loop = [&] {
      models::attention_bias_of(key_mask, batch, past, 1, std::nullopt, torch::kCPU,
                                torch::kFloat32);
    };
    const double a = median_per_call(reps, rope_ops), b = median_per_call(reps, rope_cached);
    const double d = median_per_call(reps, bias_ops), e = median_per_call(reps, bias_loop);
    rows.push_back({{"batch", batch},
                    {"slots", past + 1},
                    {"rope_ops_us", 1e6 * a},
                    {"rope_cached_us", 1e6 * b},
                    {"bias_ops_us", 1e6 * d},
                    {"bias_loop_us", 1e6 * e}});
    std::fprintf(stderr,
                 "step tables batch %lld: RoPE %.1f us by operators, %.1f from the cache; bias "
                 "%.1f us by operators, %.1f by the loop\n",
                 (long long)batch, 1e6 * a, 1e6 * b, 1e6 * d, 1e6 * e);
  }
  return rows;
}

json decode_rows(models::LlamaForCausalLM& model, torch::Dtype dtype, int reps, double temperature,
                 const std::vector<int64_t>& batches) {
  json rows = json::array();
  for (int64_t batch : batches) {
    torch::manual_seed(0);
    std::vector<std::vector<int64_t>> prompts;
    for (int64_t b = 0; b < batch; ++b) {
      auto ids = torch::randint(3, model->config.vocab_size, {kPromptTokens}, torch::kInt64);
      prompts.emplace_back(ids.data_ptr<int64_t>(), ids.data_ptr<int64_t>() + kPromptTokens);
    }
    for (bool fused : {false, true}) {
      models::set_fused_decoding(fused);
      models::SamplingOptions o;
      o.eos_ids = {-1};
      o.greedy = temperature <= 0;
      if (!o.greedy) o.temperature = temperature;
      auto run = [&](int64_t n) {
        o.max_new_tokens = n;
        torch::NoGradGuard no_grad;
        models::generate(model, prompts, o);
      };
      run(2);  // warm-up (and the output layer's decoding copy)
      std::vector<double> first, all;
      for (int i = 0; i < reps; ++i) {
        first.push_back(seconds([&] { run(1); }));
        all.push_back(seconds([&] { run(kNewTokens); }));
      }
      const double step_s = (bench::median(all) - bench::median(first)) / double(kNewTokens - 1);
      const double bytes = step_weight_bytes(model, dtype, fused, batch);
      rows.push_back({{"dtype", dtype == torch::kFloat32 ? "float32" : "bfloat16"},
                      {"batch", batch},
                      {"fused", fused},
                      {"temperature", temperature},
                      {"tokens_per_s", double(batch) / step_s},
                      {"weight_bytes_per_step", bytes},
                      {"weight_bytes_per_token", bytes / double(batch)},
                      {"weight_gb_per_s", bytes / step_s / 1e9}});
      std::fprintf(stderr, "decode %s batch %lld %s: %.1f tokens/s\n",
                   dtype == torch::kFloat32 ? "fp32" : "bf16", (long long)batch,
                   fused ? "fused" : "dense", double(batch) / step_s);
    }
  }
  models::set_fused_decoding(true);
  return rows;
}

// "1,4,8" as numbers; anything else is an Error naming the flag.
std::vector<int64_t> number_list(const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ','))
    if (item.empty() || item.find_first_not_of("0123456789") != std::string::npos ||
        std::stoll(item) < 1)
      throw Error("--batches takes positive whole numbers, got " + text);
    else
      out.push_back(std::stoll(item));
  if (out.empty()) throw Error("--batches is empty");
  return out;
}

// "float32,bfloat16" as the dtypes the decode sweep runs, in the sweep's order.
std::vector<torch::Dtype> dtype_list(const std::string& text) {
  std::vector<std::string> names;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    if (item != "float32" && item != "bfloat16")
      throw Error("--dtypes takes float32 and bfloat16, got " + text);
    names.push_back(item);
  }
  std::vector<torch::Dtype> out;
  for (auto [name, dtype] : {std::pair{"float32", torch::kFloat32}, {"bfloat16", torch::kBFloat16}})
    if (std::find(names.begin(), names.end(), name) != names.end()) out.push_back(dtype);
  if (out.empty()) throw Error("--dtypes is empty");
  return out;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string table(const json& r, const std::string& command) {
  std::ostringstream s;
  s << "# Decoding on a CPU against the memory limit\n\n"
    << "Command: `" << command << "`. Model: SmolLM2-135M-Instruct (the GGUF of the embedded "
    << "default) with its NF4 base, "
    << (r["temperature"].get<double>() > 0
            ? "sampled at temperature " + fixed(r["temperature"], 2) +
                  " (each step draws a token per row)"
            : std::string("greedy"))
    << ", prompts of " << kPromptTokens << " random tokens, " << kNewTokens - 1
    << " decoding steps timed (the first token, which the prompt's forward "
    << "pass makes, excluded); median of " << r["reps"] << " repetitions after a warm-up.\n\n"
    << "Machine: " << r["cpu"].get<std::string>() << ", " << r["threads"]
    << " threads; kernel path `" << r["isa"].get<std::string>() << "`.\n\n"
    << "| memory bandwidth (STREAM-style triad, fp32, best of " << r["reps"] << ") | GB/s |\n"
    << "|---|---|\n"
    << "| arrays of 3 x " << r["triad_large_mib"] << " MiB (far beyond the last-level cache) | "
    << fixed(r["triad_large_gb_s"], 1) << " |\n"
    << "| arrays of 3 x " << r["triad_small_mib"] << " MiB (in cache) | "
    << fixed(r["triad_small_gb_s"], 1) << " |\n\n"
    << "`fused` is the decoding kernel (NF4 blocks read directly, the output layer from its "
    << "decoding copy; at most " << models::fused_max_rows(torch::kFloat32) << " rows per layer "
    << "call in fp32 and " << models::fused_max_rows(torch::kBFloat16) << " in bf16, so batches "
    << "above that take the dense path either way); `dense` is dequantise-once-then-matmul, "
    << "the path before the kernel. Weight bytes are what one step reads (the NF4 blocks, and the "
    << "output layer's decoding copy on the fused path (8 bits where that is exact, as for the "
    << "GGUF's Q8_0 output layer in fp32, 16 otherwise) or fp32 on the dense one; the dense path's "
    << "dequantised copy of the NF4 blocks is counted as the NF4 bytes, so its GB/s is a lower "
    << "bound of what it moves).\n\n"
    << "| dtype | batch | path | tokens/s | weight MB per step | weight MB per token | GB/s of "
       "weights |\n"
    << "|---|---|---|---|---|---|---|\n";
  for (const auto& row : r["rows"])
    s << "| " << row["dtype"].get<std::string>() << " | " << row["batch"] << " | "
      << (row["fused"].get<bool>() ? "fused" : "dense") << " | " << fixed(row["tokens_per_s"], 1)
      << " | " << fixed(row["weight_bytes_per_step"].get<double>() / 1e6, 1) << " | "
      << fixed(row["weight_bytes_per_token"].get<double>() / 1e6, 2) << " | "
      << fixed(row["weight_gb_per_s"], 2) << " |\n";
  if (r.contains("kernels")) {
    s << "\nThe kernels alone over one decoding step's layers (the 210 NF4 projections, then the "
      << "output layer's decoding copy in fp32), no attention, norms or sampling; `together`: "
      << "the same projections as the model calls them, each layer's q, k and v in one kernel "
      << "call and its gate and up in another (timed in turns with the one-by-one sweep):\n\n"
      << "| rows | NF4 layers ms | their GB/s | together ms | output layer copy | its ms | its "
         "GB/s |\n|---|---|---|---|---|---|---|\n";
    for (const auto& k : r["kernels"])
      s << "| " << k["batch"] << " | " << fixed(k["nf4_layers_ms"], 2) << " | "
        << fixed(k["nf4_gb_per_s"], 1) << " | "
        << (k.contains("nf4_layers_together_ms") ? fixed(k["nf4_layers_together_ms"], 2)
                                                 : std::string("-"))
        << " | " << k["head_copy"].get<std::string>() << " | " << fixed(k["head_ms"], 2) << " | "
        << fixed(k["head_gb_per_s"], 1) << " |\n";
  }
  if (r.contains("attention")) {
    s << "\nOne layer's attention at a decoding step (SmolLM2's 9 query heads on 3 kv heads "
      << "of 64, a cache of " << kPromptTokens + kNewTokens << " slots; median of many calls): "
      << "the decoding kernel against the exact path's operators it replaced, and in fp32 "
      << "against ATen's fused kernel, which it replaced at decoding steps:\n\n"
      << "| batch | bf16 kernel µs | bf16 exact path µs | fp32 kernel µs | fp32 ATen fused µs "
         "|\n|---|---|---|---|---|\n";
    for (const auto& a : r["attention"])
      s << "| " << a["batch"] << " | " << fixed(a["kernel_us"], 1) << " | "
        << fixed(a["exact_us"], 1) << " | " << fixed(a["fp32_kernel_us"], 1) << " | "
        << fixed(a["fp32_fused_us"], 1) << " |\n";
  }
  if (r.contains("step_tables")) {
    s << "\nWhat a decoding step builds once for all its layers (a cache of "
      << kPromptTokens + kNewTokens << " slots; median of many calls): RoPE's tables by the "
      << "operators that make them and as rows copied from the model's cache of them, and the "
      << "fp32 attention bias by ATen's operators and by its loop (the same bits either way):\n\n"
      << "| batch | RoPE operators µs | RoPE cache µs | bias operators µs | bias loop µs "
         "|\n|---|---|---|---|---|\n";
    for (const auto& t : r["step_tables"])
      s << "| " << t["batch"] << " | " << fixed(t["rope_ops_us"], 1) << " | "
        << fixed(t["rope_cached_us"], 1) << " | " << fixed(t["bias_ops_us"], 1) << " | "
        << fixed(t["bias_loop_us"], 1) << " |\n";
  }
  if (r.contains("llama_cpp_decode_tokens_per_s"))
    s << "\nllama.cpp (llama-cpp-python " << r["llama_cpp_version"].get<std::string>()
      << ") on the same GGUF's own Q4_1 weights, same machine and threads, batch 1: "
      << fixed(r["llama_cpp_decode_tokens_per_s"], 1) << " tokens/s (from `"
      << r["llama_cpp_file"].get<std::string>() << "`).\n";
  return s.str();
}

}  // namespace

int main(int argc, char** argv) {
  bench::require_flag_pairs(argc, argv);
  std::string model = "weights/SmolLM2-135M-Instruct.Q4_1.gguf", out, llamacpp, part = "all", isa;
  std::string batches_text = "1,4,8,16,32", dtypes = "float32,bfloat16";
  int threads = 2, reps = 5;
  int64_t lora_rank = 0;
  double temperature = 0;
  std::string command = "build/bench_decode";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i], value = argv[i + 1];
    command += " " + flag + " " + value;
    if (flag == "--model")
      model = value;
    else if (flag == "--threads")
      threads = std::stoi(value);
    else if (flag == "--reps")
      reps = std::stoi(value);
    else if (flag == "--llamacpp")
      llamacpp = value;
    else if (flag == "--out")
      out = value;
    else if (flag == "--part")  // kernels: the kernel sweep alone (for profilers); decode: no sweep
      part = value;
    else if (flag == "--temperature")
      temperature = std::stod(value);
    else if (flag == "--batches")
      batches_text = value;
    else if (flag == "--dtypes")
      dtypes = value;
    else if (flag == "--isa")  // a kernel path other than the detected one, to compare paths
      isa = value;
    else if (flag == "--lora-rank")
      lora_rank = std::stoll(value);
    else {
      std::fprintf(stderr, "bench_decode: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  try {
    const std::vector<int64_t> batches = number_list(batches_text);
    const std::vector<torch::Dtype> decode_dtypes = dtype_list(dtypes);
    torch::set_num_threads(threads);
    if (!isa.empty()) {
      bool known = false;
      for (auto path : {models::CpuIsa::portable, models::CpuIsa::sse41, models::CpuIsa::avx2,
                        models::CpuIsa::avx512})
        if (models::cpu_isa_name(path) == isa) models::force_cpu_isa(path), known = true;
      if (!known) throw Error("unknown --isa " + isa);
    }
    const models::DequantizedWeights dense_base;  // as a run on a CPU holds it
    const std::string dir = models::is_gguf_path(model) ? models::gguf_model_dir(model) : model;
    json r{{"threads", threads},
           {"reps", reps},
           {"cpu", bench::cpu_name()},
           {"isa", models::cpu_isa_name(models::active_cpu_isa())},
           {"temperature", temperature}};
    const int64_t large = 64ll << 20, small = 1ll << 18;  // floats per array
    r["triad_large_mib"] = large * 4 >> 20;
    r["triad_small_mib"] = double(small * 4) / double(1 << 20);
    r["triad_large_gb_s"] = triad_gb_per_s(large, reps);
    r["triad_small_gb_s"] = triad_gb_per_s(small, 50 * reps);
    if (lora_rank < 0) throw Error("--lora-rank must be 0 or more");
    r["lora_rank"] = lora_rank;
    auto fp32_model = load_nf4(dir, torch::kFloat32, lora_rank);
    if (part != "decode") {
      r["kernels"] = kernel_rows(fp32_model, reps);
      r["attention"] = attention_rows(fp32_model->config, reps);
      r["step_tables"] = step_table_rows(fp32_model->config, reps);
    }
    r["rows"] = json::array();  // none with --part kernels, whose tables are still written
    for (auto dtype : part == "kernels" ? std::vector<torch::Dtype>{} : decode_dtypes) {
      auto model = dtype == torch::kFloat32 ? fp32_model : load_nf4(dir, dtype, lora_rank);
      for (auto& row : decode_rows(model, dtype, reps, temperature, batches))
        r["rows"].push_back(row);
    }
    if (!llamacpp.empty()) {
      const json l = json::parse(read_file(llamacpp));
      const json& batch1 = l["generate"]["llama_cpp"]["batches"]["batch_1"];
      r["llama_cpp_decode_tokens_per_s"] = batch1["decode_tokens_per_s"];
      r["llama_cpp_version"] = l["versions"]["llama_cpp"];
      r["llama_cpp_file"] = llamacpp;
    }
    const std::string text = table(r, command);
    if (!out.empty()) {
      write_file_atomically(out, text);
      write_file_atomically(out.substr(0, out.rfind('.')) + ".json", r.dump(1) + "\n");
    }
    std::printf("%s", text.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_decode: %s\n", e.what());
    return 1;
  }
}
