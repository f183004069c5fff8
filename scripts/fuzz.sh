#!/usr/bin/env bash
# Builds the libFuzzer targets in tests/fuzz/ with clang++ (CMake's CITEFORGE_FUZZ: ASan + UBSan,
# the dependency-free parsers only, no LibTorch) into build-fuzz/, seeds them (the real SynSciQA
# files and run configs; a small valid GGUF, tokenizer.json, safetensors file and adapter
# config made here), and runs each for a bounded time or
# number of inputs. Exits non-zero when a target crashes or breaks an invariant; the last lines
# give each target's executions.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET]     (default 60; FUZZ_OUT, FUZZ_BUILD_DIR to override)
#   FUZZ_RUNS=N scripts/fuzz.sh 100000       at most N inputs per target (the seconds still cap)
#   FUZZ_TARGETS="fuzz_gguf" scripts/fuzz.sh  some targets only
set -euo pipefail

cd "$(dirname "$0")/.."
seconds="${1:-60}"
out="${FUZZ_OUT:-/tmp/citeforge-fuzz}"
build="${FUZZ_BUILD_DIR:-build-fuzz}"
cxx="$(command -v clang++-14 || command -v clang++)"
cc="$(command -v clang-14 || command -v clang)"
read -r -a targets <<<"${FUZZ_TARGETS:-fuzz_citations fuzz_synsciqa_instruction fuzz_gguf fuzz_tokenizer_json fuzz_data_files fuzz_safetensors_header fuzz_adapter_config fuzz_run_config}"

mkdir -p "$out"
echo "== building ${targets[*]} into $build"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCITEFORGE_FUZZ=ON \
  -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" >"$out/configure.log"
cmake --build "$build" --target "${targets[@]}"
# Undefined behaviour stops the fuzzer like a crash does.
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"

# Seeds: a few real instructions and teacher answers, so the fuzzer starts from valid shapes.
seeds="$out/seeds"
mkdir -p "$seeds/citations" "$seeds/instruction"
printf '\x01Smith et al., 2019, p. 54\nJones, 2020, p.3\nNational Aeronautics and Space Administration, 2010, p. 7\x00A (Smith et al., 2019). According to Jones (2020, p. 3), b. C (NASA, 2010, p. 7; Nobody, 2001).' \
  > "$seeds/citations/named"
printf '\x00a\nb\nc\x00A [1]. B [2, 3]. C [1-3][7]. D [2-1].' > "$seeds/citations/numeric"
if [ -f datasets/synsciqa/SynSciQA++.json ]; then
  python3 - datasets/synsciqa "$seeds" <<'PY' || true
import json, sys
src, seeds = sys.argv[1], sys.argv[2]
items = json.load(open(f"{src}/SynSciQA++.json"))
for i, item in enumerate(items[:20]):
    open(f"{seeds}/instruction/{i}", "w").write(item["instruction"])
    names = [line.split(": ", 1)[0] for line in
             item["instruction"].split("[BEGIN OF SOURCES]")[1].split("[END OF SOURCES]")[0].splitlines()
             if ": " in line]
    open(f"{seeds}/citations/{i}", "wb").write(b"\x01" + "\n".join(names).encode() + b"\x00" +
                                               item["response"].encode())
PY
fi

# A one-layer Llama GGUF (F32 and Q8_0 tensors, a few tokens) and a byte-level tokenizer.json
# with merges and added tokens: valid files for the fuzzer to mutate.
mkdir -p "$seeds/gguf" "$seeds/tokenizer_json"
python3 - "$seeds" <<'PY'
import json, struct, sys
seeds = sys.argv[1]
def s(x):
    b = x.encode()
    return struct.pack("<Q", len(b)) + b
kv = [(s("general.architecture"), 8, s("llama")), (s("llama.block_count"), 4, struct.pack("<I", 1)),
      (s("llama.embedding_length"), 4, struct.pack("<I", 32)), (s("llama.rope.freq_base"), 6, struct.pack("<f", 1e4)),
      (s("tokenizer.ggml.tokens"), 9, struct.pack("<IQ", 8, 3) + s("a") + s("b") + s("ab")),
      (s("tokenizer.ggml.token_type"), 9, struct.pack("<IQ", 5, 3) + struct.pack("<3i", 1, 1, 3)),
      (s("general.alignment"), 4, struct.pack("<I", 32))]
tensors = [("token_embd.weight", [32, 3], 0, struct.pack("<96f", *range(96))),
           ("blk.0.ffn_up.weight", [32, 2], 8, (struct.pack("<e", 0.5) + bytes(range(32))) * 2)]
head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kv))
for key, t, value in kv:
    head += key + struct.pack("<I", t) + value
data, offset = b"", 0
for name, dims, t, raw in tensors:
    head += s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
    head += struct.pack("<IQ", t, len(data))
    data += raw + b"\0" * ((32 - len(raw) % 32) % 32)
head += b"\0" * ((32 - len(head) % 32) % 32)
open(f"{seeds}/gguf/tiny.gguf", "wb").write(head + data)
# GPT-2's printable byte alphabet: printable Latin-1 bytes stand for themselves, the others are
# shifted past 255 in byte order.
keep = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
alphabet, extra = {}, 0
for b in range(256):
    if b in keep:
        alphabet[b] = chr(b)
    else:
        alphabet[b] = chr(256 + extra)
        extra += 1
vocab = {alphabet[b]: i for i, b in enumerate(range(256))}
vocab["\u0120t"] = 256
vocab["\u0120th"] = 257
tok = {"version": "1.0", "normalizer": None,
       "added_tokens": [{"id": 258, "content": "<|im_end|>", "special": True}],
       "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
       "decoder": {"type": "ByteLevel"},
       "model": {"type": "BPE", "vocab": vocab, "merges": ["\u0120 t", "\u0120t h"]}}
open(f"{seeds}/tokenizer_json/tiny.json", "w").write(json.dumps(tok))
# Qwen's normaliser and split, so the NFC path is fuzzed from the start.
tok["normalizer"] = {"type": "NFC"}
tok["pre_tokenizer"] = {"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": "\\p{N}| ?\\p{L}+|\\s+"}, "behavior": "Isolated",
     "invert": False},
    {"type": "ByteLevel", "add_prefix_space": False, "use_regex": False}]}
open(f"{seeds}/tokenizer_json/nfc.json", "w").write(json.dumps(tok))
PY
# The shipped run configs and the test suite's.
mkdir -p "$seeds/run_config"
cp configs/*.yaml configs/synsciqa/*.yaml tests/fixtures/configs/*.yaml "$seeds/run_config/"
# A safetensors file of two tensors, and a shard index; a peft adapter_config.json.
mkdir -p "$seeds/safetensors" "$seeds/adapter_config"
python3 - "$seeds" <<'PY'
import json, struct, sys
seeds = sys.argv[1]
header = json.dumps({"__metadata__": {"format": "pt"},
                     "a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]},
                     "b": {"dtype": "BF16", "shape": [3], "data_offsets": [16, 22]}}).encode()
open(f"{seeds}/safetensors/two.safetensors", "wb").write(
    struct.pack("<Q", len(header)) + header + bytes(22))
open(f"{seeds}/safetensors/index.json", "w").write(json.dumps(
    {"metadata": {"total_size": 22}, "weight_map": {"a": "model-00001-of-00002.safetensors",
                                                    "b": "model-00002-of-00002.safetensors"}}))
open(f"{seeds}/adapter_config/lora.json", "w").write(json.dumps(
    {"peft_type": "LORA", "r": 16, "lora_alpha": 32, "lora_dropout": 0.05, "bias": "none",
     "target_modules": ["q_proj", "v_proj"], "base_model_name_or_path": "x", "use_dora": False,
     "rank_pattern": {}, "alpha_pattern": {}, "modules_to_save": None}))
PY
# Data files, the reader picked by the first byte: an example, answers and a CSV with quoted
# fields.
mkdir -p "$seeds/data_files"
printf '\000%s\n' '{"id":"q1","origin":"synth","split":"test","question":"Where does the river flow?","sources":[{"key":1,"name":"A, 2000, p. 1","text":"The river flows to the sea.","label":"relevant"},{"key":2,"name":"B, 2001, p. 2","text":"Cats sleep.","label":"irrelevant"}],"citation_style":"numeric","labels":"gold","references":{"teacher":"It flows to the sea [1]."}}' > "$seeds/data_files/examples"
printf '\001{"id": "q1", "answer": "It is [1]."}\n{"id": "q2", "answer": ""}\n' > "$seeds/data_files/answers"
printf '\002question,answer,sources\n"a, b","x ""y""",1\r\nc,d,2\n' > "$seeds/data_files/csv"

status=0
for target in "${targets[@]}"; do
  corpus="$out/corpus-$target"
  mkdir -p "$corpus"
  case "$target" in
    fuzz_synsciqa_instruction) seed_dir="$seeds/instruction" ;;
    fuzz_gguf) seed_dir="$seeds/gguf" ;;
    fuzz_tokenizer_json) seed_dir="$seeds/tokenizer_json" ;;
    fuzz_data_files) seed_dir="$seeds/data_files" ;;
    fuzz_safetensors_header) seed_dir="$seeds/safetensors" ;;
    fuzz_adapter_config) seed_dir="$seeds/adapter_config" ;;
    fuzz_run_config) seed_dir="$seeds/run_config" ;;
    *) seed_dir="$seeds/citations" ;;
  esac
  echo "== running $target for ${seconds}s"
  if ! "$build/$target" -max_total_time="$seconds" ${FUZZ_RUNS:+-runs="$FUZZ_RUNS"} -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
       -artifact_prefix="$out/$target-" -print_final_stats=1 "$corpus" "$seed_dir" \
       > "$out/$target.log" 2>&1; then
    echo "!! $target failed; see $out/$target.log and $out/$target-*"
    tail -n 40 "$out/$target.log"
    status=1
  else
    grep -E "stat::number_of_executed_units|Done" "$out/$target.log" | tail -n 2 || true
  fi
done
exit $status
