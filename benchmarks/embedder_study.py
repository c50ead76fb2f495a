"""The embedder study: recall of gold passages per embedder on the dev sets (no LLM), one table.

    python benchmarks/embedder_study.py --dataset ../shared/datasets/2wikimultihopqa --corpus corpus \\
        --embedder minilm --embedder minilm-f32 --embedder wordllama [--embedder st:Qwen/Qwen3-Embedding-0.6B] -k 5
    # an OpenAI-compatible /embeddings endpoint, e.g. `arag serve` over any index built with the embedder to serve:
    ARAG_EMBED_BASE_URL=http://127.0.0.1:8765/api/v1 python benchmarks/embedder_study.py ... \
        --embedder openai:sentence-transformers/all-MiniLM-L6-v2

Each embedder gets its own cached evaluation index (built on first use, as ``arag eval retrieval`` builds it);
the semantic-search recall@k is the embedder's own figure, the keyword row (the same for all) is the baseline
measured in the same run. Answer accuracy per embedder is ``arag eval run`` with ``ARAG_INDEX__EMBEDDER`` set.
The paper's embedder, Qwen3-Embedding-0.6B, runs as ``st:Qwen/Qwen3-Embedding-0.6B`` (extra ``st``) where the
model can be downloaded; this machine has no model hub.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from arag.eval.runner import DatasetChoice, index_for, retrieval_metrics, select_questions
from arag.settings import load_settings


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", type=Path, action="append", required=True, help="a dev set (repeatable)")
    parser.add_argument("--corpus", default="auto", help="auto, chunks or corpus (as for arag eval run)")
    parser.add_argument("--embedder", action="append", required=True, help="an embedder spec (repeatable)")
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    head = "| dataset | embedder | questions with gold | semantic recall@k | keyword recall | index build s |"
    print(head.replace("@k", f"@{args.k}"))
    print("|---|---|---|---|---|---|")
    for dataset in args.dataset:
        data = DatasetChoice(dataset, args.corpus).load()
        data.questions = select_questions(data.questions, args.limit, None)
        for spec in args.embedder:
            settings = load_settings(None, {"index": {"embedder": spec, "threads": args.threads}}).index
            started = time.perf_counter()
            index = index_for(data, settings, None)
            built = time.perf_counter() - started
            metrics = retrieval_metrics(data, index, args.k, args.k)
            semantic = metrics.get(f"recall@{args.k}_semantic")
            keyword = metrics.get(f"recall@{args.k}_keyword_entities")
            cells = [
                data.name,
                spec,
                str(metrics["questions_with_gold_in_corpus"]),
                f"{100 * semantic:.1f}" if semantic is not None else "–",
                f"{100 * keyword:.1f}" if keyword is not None else "–",
                f"{built:.0f}",
            ]
            print("| " + " | ".join(cells) + " |", flush=True)
            index.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
