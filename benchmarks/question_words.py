"""Does "a name (or a word) of the question that no document holds" tell an absent question from an answerable one?

The evidence ledger answers "Not in the documents" at once when a *name* of the question is in no document. This
script counts, per set of questions, those where a name is in no document (within the question's scope): the
ledger's rule, its false refusals where the questions are answerable; and those where a word of what is asked is in
no document: whether the same rule over the question's other words would be safe. A question counted among the
answerable ones is a false refusal; among the absent ones, a refusal gained. No model is asked.

    python benchmarks/question_words.py --datasets ../shared/datasets [--lemmas]

The words checked: three or more letters, not a stopword, not a word of the question's frame (wh-words,
auxiliaries) nor one naming the kind of answer (``ANSWER_KINDS``); the head after "which"/"what" (the answer's
category: "Which charity …") and after "how many" (the unit: "How many kilograms …") are left out, and so is the
last word after an auxiliary (the verb: "When did the office open?"). A word is held when a word of the documents
shares a prefix of at least max(4, the shorter's length − 3) letters with it ("funds" / "funding"). ``--lemmas``
(needs ``pip install lemminflect``) also compares lemmas ("wrote" / "writer") and leaves out words that can only
be verbs.
"""

from __future__ import annotations

import argparse
import contextlib
import fnmatch
import io
import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from arag.corpus.readers import read_source
from arag.eval.absent import absent_corpus, passage_text, read_corpus
from arag.eval.datasets import Dataset, load_dataset
from arag.eval.metrics import KeyTerms
from arag.eval.runner import select_questions
from arag.harness.text import question_names
from arag.text import STOPWORDS, normalize_answer

HERE = Path(__file__).resolve().parent
WORD = re.compile(r"[^\W\d_]+")
PREFIX = 4
AUXILIARIES = frozenset(
    [
        "did",
        "does",
        "do",
        "was",
        "were",
        "is",
        "are",
        "has",
        "have",
        "had",
        "can",
        "could",
        "will",
        "would",
        "should",
        "may",
        "might",
    ]
)
FRAME = AUXILIARIES | frozenset(
    "what which who whom whose when where why how many much the a an of in on for to and or".split()  # noqa: SIM905
)
ANSWER_KINDS = frozenset(
    [
        "type",
        "types",
        "kind",
        "kinds",
        "name",
        "named",
        "called",
        "known",
        "main",
        "primary",
        "used",
        "use",
        "mentioned",
        "described",
        "discussed",
        "according",
        "document",
        "documents",
        "text",
        "mean",
        "means",
        "meaning",
        "role",
        "purpose",
        "example",
        "examples",
        "include",
        "included",
        "includes",
        "including",
        "common",
        "commonly",
        "most",
        "least",
        "first",
        "last",
        "later",
        "earlier",
        "same",
        "different",
        "other",
        "another",
        "job",
        "title",
        "position",
        "person",
        "people",
        "thing",
        "place",
        "date",
        "year",
        "day",
        "time",
        "number",
    ]
)

Lemmas = Callable[[str], dict[str, tuple[str, ...]]]


def lemma_table(use: bool) -> Lemmas | None:
    if not use:
        return None
    import lemminflect

    return lemminflect.getAllLemmas


def forms(word: str, lemmas: Lemmas | None) -> set[str]:
    found = {word}
    if lemmas is not None:
        for group in lemmas(word).values():
            found.update(group)
    return found


class Vocabulary:
    """The words of some texts, by their first ``PREFIX`` letters."""

    def __init__(self, texts: Iterable[str], lemmas: Lemmas | None) -> None:
        self.lemmas = lemmas
        self.by_prefix: dict[str, set[str]] = {}
        texts = list(texts)
        self.normalized = " " + " ".join(normalize_answer(text) for text in texts) + " "
        for text in texts:
            for word in set(WORD.findall(text.casefold())):
                for form in forms(word, lemmas):
                    self.by_prefix.setdefault(form[:PREFIX], set()).add(form)

    def holds(self, word: str) -> bool:
        return any(self._holds(form) for form in forms(word, self.lemmas))

    def _holds(self, word: str) -> bool:
        for other in self.by_prefix.get(word[:PREFIX], ()):
            shared = len(_common_prefix(word, other))
            if word == other or (len(word) >= PREFIX and shared >= max(PREFIX, min(len(word), len(other)) - 3)):
                return True
        return False


def _common_prefix(a: str, b: str) -> str:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return a[:n]


def asked_words(question: str, lemmas: Lemmas | None) -> list[str]:
    words = WORD.findall(question.casefold())
    left_out = set()
    for i, word in enumerate(words[:-1]):
        if word in ("which", "what") and words[i + 1] not in AUXILIARIES:
            left_out.add(i + 1)
        if word == "how" and words[i + 1] == "many" and i + 2 < len(words):
            left_out.add(i + 2)
    if words and any(w in AUXILIARIES for w in words[:-1]):
        left_out.add(len(words) - 1)
    asked = []
    for i, word in enumerate(words):
        if i in left_out or len(word) < 3 or word in FRAME or word in STOPWORDS or word in ANSWER_KINDS:
            continue
        if lemmas is not None:
            kinds = set(lemmas(word))
            if kinds and kinds <= {"VERB"}:
                continue
        asked.append(word)
    return asked


def unheld(question: str, vocabulary: Vocabulary) -> list[str]:
    return [w for w in asked_words(question, vocabulary.lemmas) if not vocabulary.holds(w)]


def unheld_names(question: str, vocabulary: Vocabulary) -> list[str]:
    """The evidence ledger's rule: a name of the question (``question_names``) no document names (case,
    punctuation and articles aside)."""
    return [n for n in question_names(question) if f" {normalize_answer(n)} " not in vocabulary.normalized]


def corpus_vocabulary(dataset: Dataset, lemmas: Lemmas | None) -> Vocabulary:
    return Vocabulary((passage_text(item) for item in read_corpus(dataset.corpus)), lemmas)


def share(hits: int, n: int) -> str:
    return f"{hits} ({100 * hits / max(n, 1):.1f} %)"


class Tally:
    def __init__(self) -> None:
        self.rows: list[tuple[str, str, int, int, int, list[str]]] = []

    def add(self, name: str, kind: str, questions: list[tuple[str, Vocabulary]], show: int) -> None:
        names = [(found, q) for q, v in questions if (found := unheld_names(q, v))]
        words = [(found, q) for q, v in questions if (found := unheld(q, v))]
        examples = [f"name {found} | {q[:90]}" for found, q in names[:show]]
        examples += [f"word {found} | {q[:90]}" for found, q in words[:show]]
        self.rows.append((name, kind, len(questions), len(names), len(words), examples))

    def print(self) -> None:
        print("| questions | kind | n | a name no document holds (the ledger) | a word asked that no document holds |")
        print("|---|---|---|---|---|")
        for name, kind, n, names, words, _ in self.rows:
            print(f"| {name} | {kind} | {n} | {share(names, n)} | {share(words, n)} |")
        for name, kind, _, _, _, examples in self.rows:
            if examples:
                print(f"\n{name}, {kind}:")
                print("\n".join(f"  {e}" for e in examples))


def benchmark_sets(datasets: Path, key_terms: KeyTerms, lemmas: Lemmas | None, tally: Tally, show: int) -> None:
    wiki = load_dataset(datasets / "2wikimultihopqa", corpus="corpus")
    medical = load_dataset(datasets / "graphrag-bench-medical")
    for name, dataset in (("2Wiki, all", wiki), ("Medical, all", medical)):
        vocabulary = corpus_vocabulary(dataset, lemmas)
        tally.add(name, "answerable", [(q.question, vocabulary) for q in dataset.questions], show)
    dev = {
        "2Wiki dev": (wiki, select_questions(wiki.questions, 100, 0)[:40], None),
        "Medical dev": (medical, select_questions(medical.questions, 40, 0, "Fact Retrieval"), key_terms),
    }
    for name, (dataset, questions, terms) in dev.items():
        with contextlib.redirect_stdout(io.StringIO()):
            absent = absent_corpus(dataset, questions, terms)
        vocabulary = corpus_vocabulary(absent.dataset, lemmas)
        tally.add(name, "absent", [(q.question, vocabulary) for q in absent.dataset.questions], show)
    tatqa = json.loads((datasets / "tat-qa" / "tatqa_dataset_dev.json").read_text("utf-8"))
    asked: list[tuple[str, Vocabulary]] = []
    for extract in tatqa:
        table = " ".join(" ".join(map(str, row)) for row in extract["table"]["table"])
        vocabulary = Vocabulary([table, *(p["text"] for p in extract["paragraphs"])], lemmas)
        asked += [(q["question"], vocabulary) for q in extract["questions"]]
    tally.add("TAT-QA dev, each in its extract", "answerable", asked, show)


def own_folders(lemmas: Lemmas | None, tally: Tally, show: int) -> None:
    folders = {"handbook": "questions.json", "lab": "lab-questions.json", "orchard": "orchard-questions.json"}
    for folder, questions_file in folders.items():
        texts = {
            path.name: " ".join(f"{d.title or ''} {d.text}" for d in read_source(path))
            for path in sorted((HERE / "own_folder" / folder).iterdir())
        }
        everything = Vocabulary(texts.values(), lemmas)
        by_kind: dict[str, list[tuple[str, Vocabulary]]] = {}
        for question in json.loads((HERE / "own_folder" / questions_file).read_text("utf-8")):
            vocabulary = everything
            if question.get("where"):
                pattern = question["where"].split("=", 1)[1]
                vocabulary = Vocabulary((t for n, t in texts.items() if fnmatch.fnmatch(n, pattern)), lemmas)
            kind = question["kind"] if question["kind"] in ("absent", "out_of_scope") else "answerable"
            by_kind.setdefault(kind, []).append((question["question"], vocabulary))
        for kind, asked in by_kind.items():
            tally.add(f"own folder: {folder}", kind, asked, show)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", type=Path, default=HERE.parent.parent / "shared" / "datasets")
    parser.add_argument("--key-terms", type=Path, default=HERE / "key_terms" / "graphrag-bench-medical.json")
    parser.add_argument("--lemmas", action="store_true", help="compare lemmas, leave out verbs (lemminflect)")
    parser.add_argument("--show", type=int, default=8, help="examples listed per row")
    args = parser.parse_args()
    lemmas = lemma_table(args.lemmas)
    tally = Tally()
    benchmark_sets(args.datasets, KeyTerms.load(args.key_terms), lemmas, tally, args.show)
    own_folders(lemmas, tally, args.show)
    tally.print()


if __name__ == "__main__":
    main()
