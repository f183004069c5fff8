#include "trainer/run/train_checkpoint.h"

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "common/file_io.h"
#include "models/rng_state.h"
#include "models/safetensors.h"

namespace citeforge::trainer {
namespace fs = std::filesystem;
namespace {

void fsync_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) fail_at(path, "", "cannot open to fsync");
  ::fsync(fd);
  ::close(fd);
}

nlohmann::json state_to_json(const TrainingState& s) {
  return {{"stage", s.stage},
          {"epoch", s.epoch},
          {"batches_done", s.batches_done},
          {"global_step", s.global_step},
          {"epoch_complete", s.epoch_complete},
          {"extra", s.extra}};
}

// The accelerators the trained tensors live on, each once: dropout there draws from that
// device's own generator, which a checkpoint keeps beside the CPU's.
std::vector<torch::Device> accelerators(const NamedTensors& tensors) {
  std::vector<torch::Device> devices;
  for (const auto& [name, t] : tensors)
    if (!t.device().is_cpu() &&
        std::find(devices.begin(), devices.end(), t.device()) == devices.end())
      devices.push_back(t.device());
  return devices;
}

// "rng.pt" for the CPU, "rng_cuda0.pt" for the first GPU.
std::string rng_file(const torch::Device& device) {
  if (device.is_cpu()) return "rng.pt";
  return "rng_" + c10::DeviceTypeName(device.type(), /*lower_case=*/true) +
         std::to_string(std::max<int>(device.index(), 0)) + ".pt";
}

TrainingState state_from_json(const nlohmann::json& j, const std::string& file) {
  TrainingState s;
  try {
    s.stage = j.at("stage").get<std::string>();
    s.epoch = j.at("epoch").get<int64_t>();
    s.batches_done = j.at("batches_done").get<int64_t>();
    s.global_step = j.at("global_step").get<int64_t>();
    s.epoch_complete = j.at("epoch_complete").get<bool>();
    s.extra = j.value("extra", nlohmann::json::object());
  } catch (const nlohmann::json::exception& e) {
    fail_at(file, "", std::string("bad training state: ") + e.what());
  }
  return s;
}

torch::optim::AdamW& as_adamw(torch::optim::Optimizer& optimizer) {
  auto* adamw = dynamic_cast<torch::optim::AdamW*>(&optimizer);
  if (!adamw) throw Error("checkpoints store AdamW optimiser state only");
  return *adamw;
}

}  // namespace

NamedTensors adamw_state(torch::optim::Optimizer& optimizer, const NamedTensors& params) {
  auto& state = as_adamw(optimizer).state();
  NamedTensors out;
  for (const auto& [name, param] : params) {
    auto it = state.find(param.unsafeGetTensorImpl());
    if (it == state.end()) continue;  // no step taken yet
    auto& s = static_cast<torch::optim::AdamWParamState&>(*it->second);
    out.emplace_back(name + ".step", torch::tensor({s.step()}, torch::kInt64));
    out.emplace_back(name + ".exp_avg", s.exp_avg().detach().cpu());
    out.emplace_back(name + ".exp_avg_sq", s.exp_avg_sq().detach().cpu());
  }
  return out;
}

void load_adamw_state(torch::optim::Optimizer& optimizer, const NamedTensors& params,
                      const models::SafetensorsCheckpoint& saved) {
  auto& state = as_adamw(optimizer).state();
  state.clear();
  for (const auto& [name, param] : params) {
    if (!saved.contains(name + ".step")) continue;
    for (const char* part : {".exp_avg", ".exp_avg_sq"})
      if (!saved.contains(name + part) || saved.get(name + part).sizes() != param.sizes())
        fail_at(saved.location, "tensor '" + name + part + "'", "missing or misshaped");
    auto s = std::make_unique<torch::optim::AdamWParamState>();
    s->step(saved.get(name + ".step").item<int64_t>());
    s->exp_avg(saved.get(name + ".exp_avg").to(param.device(), param.scalar_type()).clone());
    s->exp_avg_sq(saved.get(name + ".exp_avg_sq").to(param.device(), param.scalar_type()).clone());
    state[param.unsafeGetTensorImpl()] = std::move(s);
  }
}

std::string file_crc32(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail_at(path, "", "cannot open for reading");
  uLong crc = crc32(0L, Z_NULL, 0);
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), std::streamsize(buffer.size()));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(buffer.data()), uInt(in.gcount()));
  }
  char hex[9];
  std::snprintf(hex, sizeof hex, "%08lx", static_cast<unsigned long>(crc));
  return hex;
}

void save_checkpoint(const std::string& dir, const CheckpointContents& contents,
                     const std::vector<std::pair<std::string, std::string>>& extra_files) {
  const fs::path target(dir);
  const fs::path tmp = target.string() + ".tmp";
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  std::vector<std::string> files;
  auto add = [&](const std::string& name) { files.push_back(name); };

  NamedTensors tensors;
  for (const auto& [name, t] : contents.tensors) tensors.emplace_back(name, t.detach().cpu());
  models::write_safetensors((tmp / "trainable.safetensors").string(), tensors);
  add("trainable.safetensors");
  if (contents.optimizer) {
    models::write_safetensors((tmp / "optimizer.safetensors").string(),
                              adamw_state(*contents.optimizer, contents.tensors));
    add("optimizer.safetensors");
  }
  std::vector<torch::Device> devices{torch::kCPU};
  for (const auto& device : accelerators(contents.tensors)) devices.push_back(device);
  for (const auto& device : devices) {
    torch::save(models::generator_state(device), (tmp / rng_file(device)).string());
    add(rng_file(device));
  }
  write_file_atomically((tmp / "state.json").string(), state_to_json(contents.state).dump(2));
  add("state.json");
  for (const auto& [name, bytes] : extra_files) {
    write_file_atomically((tmp / name).string(), bytes);
    add(name);
  }
  nlohmann::json sums = nlohmann::json::object();
  for (const auto& name : files) {
    fsync_file((tmp / name).string());
    sums[name] = file_crc32((tmp / name).string());
  }
  write_file_atomically((tmp / "checksums.json").string(), sums.dump(2));
  fsync_directory(tmp.string());
  // Swap in: the old checkpoint stays whole until the new one has its final name.
  const fs::path old = target.string() + ".old";
  fs::remove_all(old);
  if (fs::exists(target)) fs::rename(target, old);
  fs::rename(tmp, target);
  if (target.has_parent_path()) fsync_directory(target.parent_path().string());
  fs::remove_all(old);
}

void verify_checkpoint(const std::string& dir) {
  const fs::path root(dir);
  const std::string sums_path = (root / "checksums.json").string();
  if (!fs::exists(sums_path)) fail_at(dir, "", "not a checkpoint (no checksums.json)");
  nlohmann::json sums;
  try {
    sums = nlohmann::json::parse(read_file(sums_path));
  } catch (const nlohmann::json::exception& e) {
    fail_at(sums_path, "", std::string("corrupted checkpoint: ") + e.what());
  }
  for (auto& [name, crc] : sums.items()) {
    const std::string path = (root / name).string();
    if (!fs::exists(path)) fail_at(path, "", "corrupted checkpoint: file is missing");
    if (file_crc32(path) != crc.get<std::string>())
      fail_at(path, "",
              "corrupted checkpoint: checksum mismatch (expected " + crc.get<std::string>() +
                  ", found " + file_crc32(path) + ")");
  }
}

TrainingState load_checkpoint(const std::string& dir, CheckpointContents& contents) {
  verify_checkpoint(dir);
  const fs::path root(dir);
  auto saved = models::open_safetensors((root / "trainable.safetensors").string());
  torch::NoGradGuard no_grad;
  for (auto& [name, tensor] : contents.tensors) {
    if (!saved.contains(name))
      fail_at((root / "trainable.safetensors").string(), "tensor '" + name + "'",
              "missing from the checkpoint");
    auto value = saved.get(name);
    if (value.sizes() != tensor.sizes())
      fail_at((root / "trainable.safetensors").string(), "tensor '" + name + "'",
              "shape does not match the model");
    tensor.copy_(value);
  }
  if (contents.optimizer) {
    const std::string path = (root / "optimizer.safetensors").string();
    if (!fs::exists(path)) fail_at(path, "", "missing optimizer state");
    load_adamw_state(*contents.optimizer, contents.tensors, models::open_safetensors(path));
  }
  std::vector<torch::Device> devices{torch::kCPU};
  for (const auto& device : accelerators(contents.tensors)) devices.push_back(device);
  for (const auto& device : devices) {
    const fs::path path = root / rng_file(device);
    if (!fs::exists(path)) {  // written before GPU generators were kept
      std::fprintf(stderr,
                   "[checkpoint] warning: %s has no %s: dropout on %s continues from a fresh "
                   "random state, so this resume will not repeat an uninterrupted run\n",
                   dir.c_str(), rng_file(device).c_str(), device.str().c_str());
      continue;
    }
    torch::Tensor rng;
    torch::load(rng, path.string());
    models::set_generator_state(rng, device);
  }
  const std::string state_path = (root / "state.json").string();
  contents.state = state_from_json(nlohmann::json::parse(read_file(state_path)), state_path);
  return contents.state;
}

}  // namespace citeforge::trainer
