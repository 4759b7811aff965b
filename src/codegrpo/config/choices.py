"""The closed choices: each a StrEnum, so a typo fails at compose time naming the allowed values, and each
value is still the plain string the YAML files and the problem files hold ("binary" == RewardKind.binary).
Free of Hydra, so the data and reward stages use them without importing the config machinery."""

from __future__ import annotations

import enum


class RewardKind(enum.StrEnum):
    binary = "binary"
    partial = "partial"


class Extract(enum.StrEnum):
    first = "first"
    last = "last"


class Protocol(enum.StrEnum):
    """recipe.protocol: how a paper evaluates its model (docs/recipes.md)."""

    livecodebench = "livecodebench"  # problems by release-date window, n samples each, pass@1 by difficulty
    humaneval_plus = "humaneval_plus"  # EvalPlus's HumanEval+ (HumanEval with its extra tests)
    codecontests = "codecontests"  # CodeContests' test split, the private tests scored


class ProblemAttribute(enum.StrEnum):
    """What a protocol reads of each problem beyond its tests (data.problems.Problem's fields of those names)."""

    released = "released"  # its release date: a contamination-free window
    difficulty = "difficulty"  # easy, medium, hard: pass@1 by difficulty


class RecipeScale(enum.StrEnum):
    """recipe.scale: the paper's own settings, or its CPU twin (the same algorithm at a scale that trains here)."""

    paper = "paper"
    cpu = "cpu"


class GenerationBackend(enum.StrEnum):
    """evaluation.backend: what samples an evaluation's completions (codegrpo.evaluation.evaluator)."""

    transformers = "transformers"  # the model's generate(), on any device
    vllm = "vllm"  # vLLM's engine (pip install vllm, on a GPU): many samples per problem, far faster


class SamplingFrom(enum.StrEnum):
    """evaluation.sampling_from: whose sampling settings an evaluation uses (codegrpo-evaluate)."""

    config = "config"  # evaluation.* as composed: the protocol's, then the command line's
    recipe = "recipe"  # the evaluated run's recipe: its saved config.yaml's evaluation block


class Split(enum.StrEnum):
    all = "all"
    train = "train"
    eval = "eval"


class Checker(enum.StrEnum):
    tokens = "tokens"  # whitespace-separated tokens in order; numbers within the tolerance
    lines = "lines"  # lines in order, each without trailing whitespace; trailing blank lines ignored
    exact = "exact"  # byte for byte


class TestSelection(enum.StrEnum):
    first = "first"  # the first max_tests tests, in the dataset's order
    shortest = "shortest"  # the max_tests tests with the shortest inputs (the cheapest to run)
    longest = "longest"  # the max_tests tests with the longest inputs (rLLM/DeepCoder's rule: the hardest)


class LoggerBackend(enum.StrEnum):
    wandb = "wandb"
    none = "none"


class WandbMode(enum.StrEnum):
    online = "online"
    offline = "offline"
    disabled = "disabled"
    shared = "shared"


class Dtype(enum.StrEnum):
    """model.dtype: auto is float32 weights, also under trainer.bf16 (codegrpo.models.loading.load_dtype)."""

    auto = "auto"
    float32 = "float32"
    bfloat16 = "bfloat16"
    float16 = "float16"


class SaveDtype(enum.StrEnum):
    auto = "auto"  # the dtype the weights trained in: saving rounds nothing away
    float32 = "float32"
    bfloat16 = "bfloat16"
    float16 = "float16"


class LanguageName(enum.StrEnum):
    """problems.language: a key of codegrpo.reward.programs.LANGUAGES."""

    python = "python"
    javascript = "javascript"


class SamplerKind(enum.StrEnum):
    uniform = "uniform"  # TRL's shuffled order, every problem once an epoch
    difficulty = "difficulty"  # weighted by each problem's recent pass rate (codegrpo.training.sampling)


class RolloutKind(enum.StrEnum):
    single = "single"  # one turn: the completion is the code (the default)
    feedback = "feedback"  # turns with the public tests' results as feedback (codegrpo.rollout.feedback)
    tools = "tools"  # an agent's episode in a workspace of a repository task (codegrpo.agents)


class Form(enum.StrEnum):
    """A problem's form: how its tests are written and how a completion is run against them."""

    expression = "expression"  # the guide's: a `test` expression compared with `expected`
    humaneval = "humaneval"  # HumanEval's check(candidate) on the completed function
    stdio = "stdio"  # one run per test: the input on stdin, the output compared by the checker
    call = "call"  # one run per test: fn_name(*input) compared with the expected value

    @property
    def per_test(self) -> bool:
        """One run per input/output test (stdio, call), not one program for all tests."""
        return self in (Form.stdio, Form.call)

    @property
    def harnessed(self) -> bool:
        """The completion runs inside the Python harness's checks rather than as a plain program."""
        return self is not Form.stdio


class Loader(enum.StrEnum):
    """problems.loader: the public code-RL dataset whose own schema the rows follow (data/public_datasets)."""

    apps = "apps"
    taco = "taco"
    code_contests = "code_contests"
    livecodebench = "livecodebench"
    deepcoder = "deepcoder"
    verifiable_coding = "verifiable_coding"
    humaneval_plus = "humaneval_plus"
    leetcode = "leetcode"
    repo_tasks = "repo_tasks"  # a folder of Harbor-style repository tasks (rollout=tools; data/repo_tasks.py)


class ChatTemplate(enum.StrEnum):
    """model.chat_template: the tokenizer's own, or one by name that renders tool calls (models/chat_templates.py)."""

    auto = "auto"  # the tokenizer's own, unless rollout=tools needs tool calls it cannot render: tool_chatml
    own = "own"
    tool_chatml = "tool_chatml"  # ChatML with Hermes-style tool calls, as Qwen2.5 writes them
