// Uses one function of every library citeforge links from the GPU dependency folder, and
// includes the header-only ones, so scripts/check_gpu_deps.sh can prove the folder complete:
// it compiles, links and runs with the system's copies hidden.
#include <gloo/algorithm.h>  // header-only here: c10d's ProcessGroupGloo includes it
#include <hdf5.h>
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <yaml-cpp/yaml.h>
#include <zlib.h>

#include <catch2/catch.hpp>  // header-only: found is enough

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

int main(int argc, char** argv) {
  const char* h5_path = argc > 1 ? argv[1] : "/tmp/gpu_deps_probe.h5";
  int errors = 0;
  errors += YAML::Load("a: 1")["a"].as<int>() != 1;
  errors += nlohmann::json::parse("{\"a\": 2}")["a"] != 2;
  errors += crc32(0, reinterpret_cast<const Bytef*>("a"), 1) != 0xe8b7be43;
  int code = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* re = pcre2_compile(reinterpret_cast<PCRE2_SPTR>("\\p{L}+"), PCRE2_ZERO_TERMINATED,
                                 PCRE2_UTF | PCRE2_UCP, &code, &offset, nullptr);
  errors += re == nullptr;
  pcre2_code_free(re);
  // "e" + COMBINING ACUTE ACCENT composes to U+00E9 (NFC, as Qwen's tokenizer asks).
  utf8proc_uint8_t* nfc = utf8proc_NFC(reinterpret_cast<const utf8proc_uint8_t*>("e\xCC\x81"));
  errors += nfc == nullptr || std::string(reinterpret_cast<char*>(nfc)) != "\xC3\xA9";
  std::free(nfc);
  sentencepiece::SentencePieceProcessor sp;
  errors += sp.Load("/nonexistent").ok();  // a missing model is an error, not a crash
  auto trainer_status = sentencepiece::SentencePieceTrainer::Train("--input=/nonexistent");
  errors += trainer_status.ok();
  hid_t file = H5Fcreate(h5_path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  errors += file < 0;
  if (file >= 0) H5Fclose(file);
  unsigned major = 0, minor = 0, release = 0;
  H5get_libversion(&major, &minor, &release);
  std::printf(
      "gpu deps probe: HDF5 %u.%u.%u, yaml-cpp, sentencepiece, PCRE2, utf8proc, zlib, json: %s\n",
      major, minor, release, errors ? "FAILED" : "ok");
  return errors ? 1 : 0;
}
