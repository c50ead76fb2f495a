"""The paper's experiments: ``arag eval run|sweep|report|analyze|export|retrieval``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from arag.serve.cli.bundles import with_bundles
from arag.serve.cli.common import (
    ActionModeOpt,
    BaseUrlOpt,
    ConfigOpt,
    CorpusOpt,
    JsonOpt,
    LocalModelOpt,
    MaxStepsOpt,
    ModelOpt,
    PolicyOpt,
    ProfileOpt,
    err,
    eval_app,
    out,
    print_json,
    say,
    settings_with,
)
from arag.settings import IndexSettings, describe

if TYPE_CHECKING:
    from arag.eval.runner import DatasetChoice
    from arag.settings import Settings


EmbedderOpt = Annotated[
    str | None,
    typer.Option(
        "--embedder",
        help="Embedder of the evaluation index (its own cached index per embedder): "
        + describe(IndexSettings, "embedder", "ARAG_INDEX__EMBEDDER"),
    ),
]
EvalIndexOpt = Annotated[
    str | None,
    typer.Option(
        "--index",
        help="Use/build the index here (directory or postgresql:// URL). [default: a cache entry per corpus]",
    ),
]
DatasetOpt = Annotated[
    Path | None,
    typer.Option(
        "--dataset",
        help="Dataset folder as released (A-RAG, HippoRAG/LinearRAG, GraphRAG-Bench incl. its Datas tree) or "
        "hf:Ayanami0730/rag_test/NAME. [default: none: give --corpus-file and --questions-file]",
    ),
]
SubsetOpt = Annotated[
    str | None,
    typer.Option(help="Subset NAME where the folder holds several (GraphRAG-Bench medical, novel...). [default: none]"),
]
CorpusFileOpt = Annotated[
    Path | None, typer.Option("--corpus-file", help="Corpus file, instead of --dataset. [default: none]")
]
QuestionsFileOpt = Annotated[
    Path | None, typer.Option("--questions-file", help="Questions file, with --corpus-file. [default: none]")
]
JudgePromptOpt = Annotated[
    Path | None,
    typer.Option(
        "--judge-prompt-file",
        help="LLM-Acc judge prompt file ({question} {gold} {prediction}). [default: the packaged prompt; "
        "env ARAG_EVAL__JUDGE_PROMPT_FILE]",
    ),
]
QuestionTypeOpt = Annotated[
    str | None,
    typer.Option(
        "--question-type",
        help="Only questions of this type (GraphRAG-Bench: 'Fact Retrieval', 'Complex Reasoning'). [default: all]",
    ),
]
FirstOpt = Annotated[
    int | None,
    typer.Option(
        min=1, help="Answer only the first N of the selected questions (a prefix of a sample). [default: all]"
    ),
]
IdsFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--ids-file",
        help="Of the questions selected, answer only those whose id is in this file (one per line, or a JSON list). "
        "[default: all selected]",
    ),
]
KeyTermsOpt = Annotated[
    Path | None,
    typer.Option(
        "--key-terms",
        help="Also score answers by key terms (a file like benchmarks/key_terms/graphrag-bench-medical.json: for "
        "datasets whose gold answers are sentences). [default: none]",
    ),
]
AbsentOpt = Annotated[
    bool,
    typer.Option(
        "--absent",
        help="Ask the selected questions over the corpus with their evidence taken out (gold passages; key terms' "
        'sentences): the right answer is "not in the documents". Questions whose answer stays in the corpus are '
        "left out, with the reason, in the run's config. The evidence of every question selected is taken out; "
        "--ids-file only picks which are asked.",
    ),
]
SystemPromptOpt = Annotated[
    Path | None,
    typer.Option(
        "--system-prompt-file",
        help="Agent system prompt file. [default: the packaged prompt; env ARAG_AGENT__SYSTEM_PROMPT_FILE]",
    ),
]
LimitOpt = Annotated[int | None, typer.Option(min=1, help="Number of questions. [default: all]")]
SeedOpt = Annotated[
    int | None, typer.Option(help="Sample --limit questions at random with this seed. [default: the first --limit]")
]
WorkersOpt = Annotated[int, typer.Option(min=1, max=64, help="Questions answered concurrently.")]
JudgeOpt = Annotated[bool, typer.Option("--judge", help="Also compute LLM-Acc (ARAG_JUDGE__* or the agent model).")]
MethodOpt = Annotated[
    str,
    typer.Option(
        help="direct, naive-rag, arag-naive, arag-full, arag-tables (with the table tools), arag-documents (with "
        "list_documents, document_outline, section_read and grep), arag-extended (every tool), arag-fused (search "
        "and chunk_read), arag-search (the paper's three and search), arag-no-keyword, arag-no-semantic, arag-no-read."
    ),
]


@dataclass
class Questions:
    """Which questions a run answers: the dataset, and the selection from it."""

    dataset: DatasetOpt = None
    subset: SubsetOpt = None
    corpus_file: CorpusFileOpt = None
    questions_file: QuestionsFileOpt = None
    corpus: CorpusOpt = "auto"
    question_type: QuestionTypeOpt = None
    key_terms: KeyTermsOpt = None
    ids_file: IdsFileOpt = None
    limit: LimitOpt = None
    seed: SeedOpt = None
    first: FirstOpt = None

    def choice(self, absent: bool = False) -> DatasetChoice:
        from arag.eval.runner import DatasetChoice

        return DatasetChoice(
            self.dataset,
            self.corpus,
            self.subset,
            self.corpus_file,
            self.questions_file,
            self.question_type,
            self.key_terms,
            self.ids_file,
            absent,
        )


@dataclass
class AgentOptions:
    """Who answers them: the model, the agent's profile and policies, the embedder, the judge; and how many at once."""

    model: ModelOpt = None
    base_url: BaseUrlOpt = None
    local_model: LocalModelOpt = None
    profile: ProfileOpt = None
    policy: PolicyOpt = None
    system_prompt_file: SystemPromptOpt = None
    embedder: EmbedderOpt = None
    judge: JudgeOpt = False
    judge_prompt_file: JudgePromptOpt = None
    workers: WorkersOpt = 1
    config: ConfigOpt = None

    def settings(
        self, max_steps: int | None, action_mode: str | None = None, policies: list[str] | None = None
    ) -> Settings:
        """The run's settings: these options over ``--config``, ``ARAG_*`` and the defaults."""
        prompt, judge_prompt = self.system_prompt_file, self.judge_prompt_file
        return settings_with(
            self.config,
            {
                "index": {"embedder": self.embedder},
                "llm": {"model": self.model, "base_url": self.base_url},
                "agent": {
                    "max_steps": max_steps,
                    "action_mode": action_mode,
                    "profile": self.profile,
                    "policies": policies if policies is not None else self.policy,
                    "system_prompt_file": str(prompt) if prompt else None,
                },
                "eval": {"judge_prompt_file": str(judge_prompt) if judge_prompt else None},
            },
        )


def _run_one(
    choice: DatasetChoice,
    method: str,
    out_dir: Path,
    settings: Settings,
    *,
    questions: Questions,
    agent: AgentOptions,
    naive_top_k: int = 5,
    index_dir: str | None = None,
) -> dict[str, Any]:
    """``run_method`` with progress bars: the index build's stages, then the questions with a live Contain-Acc."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from arag.eval.runner import run_method

    correct = [0.0, 0]
    # started by the first bar: a run refused before any work (a bad option, another run's directory) prints its
    # one error line and nothing else
    bar = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=err
    )
    stages: list[Any] = []  # the index build's bars, removed when the questions start
    answering: list[Any] = []  # the questions' bar
    started: list[bool] = []

    def start() -> None:
        if not started:
            bar.start()
            started.append(True)

    def stage(name: str, total: int):
        start()
        stages.append(bar.add_task(f"indexing: {name}", total=total))
        return lambda n, task=stages[-1]: bar.advance(task, n)

    def on_start(label: str, total: int, done: int) -> None:
        start()
        for task in stages:
            bar.remove_task(task)
        answering.append(bar.add_task(label, total=total, completed=done))

    def on_result(record: dict[str, Any]) -> None:
        correct[0] += record["contain_acc"]
        correct[1] += 1
        label = bar.tasks[-1].description.split(" — ")[0]
        accuracy = f"Contain-Acc {100 * correct[0] / correct[1]:.1f}%"
        bar.update(answering[0], advance=1, description=f"{label} — {accuracy}")

    try:
        return run_method(
            choice,
            method,
            out_dir,
            settings,
            workers=agent.workers,
            limit=questions.limit,
            seed=questions.seed,
            first=questions.first,
            local_model=agent.local_model,
            judge=agent.judge,
            naive_top_k=naive_top_k,
            index_dir=index_dir,
            index_progress=stage,
            on_start=on_start,
            on_result=on_result,
        )
    finally:
        if started:  # a Progress never started still prints a line when stopped
            bar.stop()


@eval_app.command("run")
@with_bundles(questions=Questions, agent=AgentOptions)
def eval_run(
    questions: Questions,
    agent: AgentOptions,
    method: MethodOpt,
    out: Annotated[Path, typer.Option("--out", help="Run directory (resumable).")],
    absent: AbsentOpt = False,
    max_steps: MaxStepsOpt = None,
    action_mode: ActionModeOpt = None,
    naive_top_k: Annotated[int, typer.Option(min=1, max=100, help="Chunks Naive RAG pastes into the prompt.")] = 5,
    index_dir: EvalIndexOpt = None,
) -> None:
    """Run one method on a dataset; writes OUT/results.jsonl and OUT/summary.json."""
    settings = agent.settings(max_steps, action_mode)
    choice = questions.choice(absent)
    summary = _run_one(
        choice, method, out, settings, questions=questions, agent=agent, naive_top_k=naive_top_k, index_dir=index_dir
    )
    print_json(summary)


@eval_app.command("sweep")
@with_bundles(questions=Questions, agent=AgentOptions)
def eval_sweep(
    questions: Questions,
    agent: AgentOptions,
    method: MethodOpt,
    out: Annotated[Path, typer.Option("--out", help="Parent directory; one run per value: OUT/steps-N.")],
    max_steps: Annotated[str, typer.Option("--max-steps", help="Comma-separated values.")] = "5,10,15,20",
    confidence: Annotated[
        str | None,
        typer.Option(
            "--confidence",
            help="Comma-separated thresholds of the confident_stop policy (added for these runs), each at every "
            "--max-steps value: the accuracy / steps curve of adaptive stopping. [default: none]",
        ),
    ] = None,
) -> None:
    """Test-time scaling: run a method at several max_steps values (the paper: 5, 10, 15, 20), and with
    --confidence at several thresholds of adaptive stopping (OUT/steps-N-confidence-C)."""
    from arag.errors import ConfigError

    try:
        values = [int(v) for v in max_steps.split(",") if v.strip()]
        thresholds: list[float | None] = (
            [float(v) for v in confidence.split(",") if v.strip()] if confidence is not None else [None]
        )
    except ValueError:
        raise ConfigError("--max-steps takes comma-separated integers, --confidence numbers from 0 to 1") from None
    if any(t is not None and not 0 <= t <= 1 for t in thresholds):
        raise ConfigError("--confidence thresholds are numbers from 0 to 1")
    choice = questions.choice()
    summaries = []
    for steps in values:
        for threshold in thresholds:
            policies = [*(agent.policy or []), "+confident_stop"] if threshold is not None else None
            settings = agent.settings(steps, policies=policies)
            name = f"steps-{steps}"
            if threshold is not None:
                settings.agent.policy.setdefault("confident_stop", {})["threshold"] = threshold
                name += f"-confidence-{threshold:g}"
            summaries.append(_run_one(choice, method, out / name, settings, questions=questions, agent=agent))
    print_json(summaries)


@eval_app.command("report")
def eval_report(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run directories.")],
    out: Annotated[Path | None, typer.Option("--out", help="Report folder (default: ./report).")] = None,
    key_terms: KeyTermsOpt = None,
) -> None:
    """Markdown tables (accuracy, efficiency) and PNG plots from finished runs."""
    from arag.eval.metrics import KeyTerms
    from arag.eval.report import write_report

    terms = KeyTerms.load(key_terms) if key_terms else None
    written, skipped = write_report(run_dirs, out or Path("report"), terms)
    for path in written:
        say("wrote", str(path))
    for note in skipped:
        say("[yellow]warning[/yellow]", note)


@eval_app.command("analyze")
def eval_analyze(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run directories (arag eval run --out).")],
    as_json: JsonOpt = False,
) -> None:
    """Tag every wrong answer by its cause (retrieval miss, seen but not read, reasoning, stall, budget, ...);
    writes RUN_DIR/analysis.jsonl and prints the breakdown per run."""
    from arag.eval.analyze import FAILURE_TAGS, analyze_run, breakdown_markdown

    analyses = [analyze_run(run_dir) for run_dir in run_dirs]
    if as_json:
        print_json(analyses)
        return
    out.print(breakdown_markdown(analyses), markup=False, highlight=False)
    for analysis in analyses:
        causes = ", ".join(f"{t} {analysis['tags'][t]}" for t in FAILURE_TAGS if analysis["tags"][t])
        say("wrote", f"{analysis['run_dir']}/analysis.jsonl ({analysis['wrong']} wrong: {causes or 'none'})")


@eval_app.command("export")
def eval_export(
    run_dirs: Annotated[list[Path], typer.Argument(help="Run folders written by arag eval run.")],
    out: Annotated[Path, typer.Option("--out", help="Folder for train.jsonl and heldout.jsonl.")],
    fmt: Annotated[str, typer.Option("--format", help="openai-chat or sharegpt (LLaMA-Factory).")] = "openai-chat",
    only_correct: Annotated[bool, typer.Option("--only-correct", help="Only correctly answered questions.")] = False,
    by: Annotated[
        str, typer.Option(help="What counts as correct: contain, llm, key-terms, or any of those the run has.")
    ] = "any",
    heldout: Annotated[
        float, typer.Option(min=0.0, max=0.99, help="Share of questions (by id) in heldout.jsonl.")
    ] = 0.1,
    key_terms: Annotated[
        Path | None, typer.Option("--key-terms", help="Score answers by these key terms first.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Write the runs' trajectories as fine-tuning data (system prompt, tool schemas, tool calls and observations,
    final answer), deduplicated, with a held-out split by question id."""
    from arag.eval.export import export_runs

    report = export_runs(run_dirs, out, fmt, only_correct, by, heldout, key_terms)  # type: ignore[arg-type]
    if as_json:
        from dataclasses import asdict

        print_json(asdict(report))
        return
    say(
        "exported",
        f"{report.examples} training and {report.heldout} held-out examples ({fmt}) → {', '.join(report.files)}; "
        f"left out: {report.skipped_unanswered} unanswered, {report.skipped_wrong} wrong, "
        f"{report.skipped_unscored} unscored, {report.duplicates} duplicates",
    )


@eval_app.command("retrieval")
@with_bundles(questions=Questions)
def eval_retrieval(
    questions: Questions,
    k: Annotated[int, typer.Option("-k", min=1, max=1000, help="Recall at this many chunks.")] = 5,
    naive_top_k: Annotated[int, typer.Option(min=1, max=100, help="Chunks Naive RAG would paste.")] = 5,
    index_dir: EvalIndexOpt = None,
    embedders: Annotated[
        list[str] | None,
        typer.Option(
            "--embedder",
            help="Embedder to measure (repeatable: one result per embedder, as a JSON list, each on its own cached "
            "index). [default: index.embedder; env ARAG_INDEX__EMBEDDER]",
        ),
    ] = None,
    config: ConfigOpt = None,
) -> None:
    """Recall@k of gold passages with no LLM: semantic search, Naive RAG's top-k, keyword search on entities."""
    from arag.errors import ConfigError
    from arag.eval.runner import index_for, retrieval_metrics

    if embedders and len(embedders) > 1 and index_dir:
        raise ConfigError("--index holds one embedder's index: give it with one --embedder, or leave it out")
    choice = questions.choice()
    data = choice.load()
    data.questions = choice.questions(data, questions.limit, questions.seed, questions.first)
    results = []
    specs: list[str | None] = list(embedders) if embedders else [None]  # None: index.embedder as configured
    for spec in specs:
        settings = settings_with(config, {"index": {"embedder": spec}}).index
        metrics = retrieval_metrics(data, index_for(data, settings, index_dir), k, naive_top_k)
        results.append({"embedder": settings.embedder, **metrics})
    print_json(results if embedders and len(embedders) > 1 else results[0])
