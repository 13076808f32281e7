"""Record the real token counts of the few-shot material (run after editing fewshot/).

For every excerpt of fewshot/excerpts.yaml (and every whole-trace example in
tests/fixtures/fewshot_mad/) this renders the block the prompt gains, counts it with
tiktoken's o200k_base and cl100k_base encodings, and writes the counts with a hash of the
text to tests/fixtures/tokens/fewshot_counts.json. The tests compare mast's tokenizer-free
estimate with these counts (it must stay within 10%), and fail when the hash shows that the
rendered text changed since the counts were taken.

Usage:   python scripts/fewshot_tokens.py [--check]
Needs:   pip install tiktoken, with its encodings downloadable or already cached
         (TIKTOKEN_CACHE_DIR). --check only compares and exits 1 on a stale or far-off count.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

from mast.judge.prompt.excerpts import load_pool
from mast.judge.prompt.fewshot import load_examples
from mast.judge.prompt.render import example_block
from mast.judge.prompt.tokens import count_tokens, estimate_tokens

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fixtures" / "tokens" / "fewshot_counts.json"


def main() -> int:
    shots = [*load_pool(), *load_examples(ROOT / "tests" / "fixtures" / "fewshot_mad")]
    counts = {}
    worst = 0.0
    for shot in shots:
        text = example_block(shot)
        real = {}
        for model, encoding in (("openai/gpt-4.1", "o200k_base"), ("openai/gpt-4", "cl100k_base")):
            count = count_tokens(text, model=model, allow_download=True)
            if count.method != "tiktoken":
                print(f"tiktoken's {encoding} is not available: cannot count", file=sys.stderr)
                return 2
            real[encoding] = count.tokens
        estimate = estimate_tokens(text)
        error = estimate / real["o200k_base"] - 1
        worst = max(worst, abs(error))
        counts[shot.id] = {"sha256": hashlib.sha256(text.encode()).hexdigest(), **real}
        print(
            f"{shot.id:40} o200k {real['o200k_base']:5}  cl100k {real['cl100k_base']:5}  "
            f"estimate {estimate:5} ({error:+.1%})"
        )
    print(f"largest estimate error: {worst:.1%} over {len(counts)} blocks")
    if "--check" in sys.argv:
        recorded = json.loads(OUT.read_text(encoding="utf-8"))
        stale = sorted(k for k in counts if recorded.get(k) != counts[k])
        if stale or worst > 0.10:
            print(f"stale or off: {stale}", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(json.dumps(counts, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
