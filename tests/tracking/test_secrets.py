"""The one secrets boundary (codegrpo.tracking.secrets): what a secret is, every writer masking it, and a
secret on the command line refused before Hydra writes anything, end to end through train.py: every file
a run writes, and what it prints, is searched for the secrets it was given."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf, open_dict

from codegrpo.commands import CONFIG_DIR, run
from codegrpo.config.runs import to_plain
from codegrpo.errors import UsageError
from codegrpo.resources import PROJECT_ROOT
from codegrpo.tracking import secrets
from codegrpo.tracking.runinfo import write_run_info
from codegrpo.training import checkpoints
from tests.helpers.commands import command, train

HF = "hf_" + "Zq8LmN3pR7sT1vW5xY9aB2cD4eF6gH0jK2"  # the shape of a real Hugging Face token
WANDB = "9c1e5f0a7b3d4e2f8a6c0b1d9e7f5a3c2b4d6e8f"  # a legacy W&B key: 40 hex digits
PASSWORD = "pa55-w0rd-kept-home"
URL = f"https://alice:{PASSWORD}@data.example.com/problems.jsonl"
COMMIT = "0123456789abcdef0123456789abcdef01234567"  # a commit's shape is a W&B key's


def test_a_secret_is_known_by_the_last_word_of_its_name():
    named = ["trainer.hub_token", "WANDB_API_KEY", "db_password", "apiKey", "hydra.job.env_set.HF_TOKEN"]
    assert all(secrets.secret_name(name) for name in named)
    # A variable's name, a length in tokens, a checker: the old redaction dropped the first three.
    plain = [
        "sandbox.api_key_env",
        "evaluation.max_new_tokens",
        "trainer.average_tokens_across_devices",
        "reward.checker",
        "trainer.hub_model_id",
    ]
    assert not any(map(secrets.secret_name, plain))


def test_text_is_masked_by_shape_and_by_name_but_a_commit_stays():
    text = (
        f"pushed with {HF}; trainer.hub_token=abc logger.group={WANDB} problems.path={URL} "
        f"key ss_live_do-not-log-this-0123456789, model.revision={COMMIT} at commit {COMMIT}"
    )
    masked = secrets.mask_text(text)
    assert masked == (
        "pushed with ***; trainer.hub_token=*** logger.group=*** "
        "problems.path=https://***@data.example.com/problems.jsonl key ***, "
        f"model.revision={COMMIT} at commit {COMMIT}"
    )
    assert secrets.mask_text("trainer.hub_token=null max_new_tokens=256") == "trainer.hub_token=null max_new_tokens=256"


def test_the_environments_secrets_are_masked_wherever_they_appear(monkeypatch):
    monkeypatch.setenv("MY_SERVICE_TOKEN", "any-shape-at-all-42")
    monkeypatch.setenv("SHORT_KEY", "1")  # too short to look for: it would mask every 1
    assert secrets.mask_text("sent any-shape-at-all-42 to 1 host") == "sent *** to 1 host"


def test_records_leave_secret_named_keys_out_and_mask_secret_shaped_values():
    record = {
        "git_commit": COMMIT,
        "problems_sha256": "ab" * 32,
        "group": WANDB,
        "trainer": {"hub_token": HF, "vllm_server_base_url": URL, "learning_rate": 1e-6},
        "command": ["train.py", f"trainer.hub_token={HF}", "seed=1"],
    }
    assert secrets.mask(record) == {
        "git_commit": COMMIT,
        "problems_sha256": "ab" * 32,
        "group": "***",
        "trainer": {"vllm_server_base_url": "https://***@data.example.com/problems.jsonl", "learning_rate": 1e-6},
        "command": ["train.py", "trainer.hub_token=***", "seed=1"],
    }


@pytest.mark.parametrize(
    ("override", "says"),
    [
        (
            f"trainer.hub_token={HF}",
            "trainer.hub_token would be written to the run dir, W&B and the model card: "
            "secrets stay off the command line; leave it unset and export HF_TOKEN",
        ),
        ("trainer.hub_token='${oc.env:HF_TOKEN}'", "export HF_TOKEN"),  # resolved into config.yaml and the pickles
        (f"+logger.wandb_api_key={WANDB}", "export WANDB_API_KEY"),
        (f"logger.group={WANDB}", "logger.group=... looks like a W&B API key"),
        (f"logger.group=a,{WANDB}", "logger.group=... looks like a W&B API key"),  # a sweep
        (f"+logger.group=wandb_v1_{'Q' * 77}", "looks like a W&B API key"),  # W&B's keys since wandb 0.22.3
        # Inside a dict, read as Hydra reads it (the issue 52 finding: it reached .hydra/ before the refusal).
        ("trainer.model_init_kwargs={token:abc123}", "trainer.model_init_kwargs.token would be written to"),
        ("trainer.model_init_kwargs={a:1},{b:{password:abc123}}", "trainer.model_init_kwargs.b.password would"),
        (f"+trainer.model_init_kwargs.{HF}=1", "an argument looks like a Hugging Face token"),  # in a key
        (f"logger.tags=[a,{HF}]", "looks like a Hugging Face token"),
        (
            f"problems.path={URL}",
            "looks like a URL with credentials, which would be written to the run dir, W&B and "
            "the model card: secrets stay off the command line; give the URL without "
            "user:password@ and put them in ~/.netrc",
        ),
        (f"hydra.job.env_set.HF_TOKEN={HF}", "export HF_TOKEN in the shell instead"),
    ],
)
def test_a_secret_override_is_refused_in_one_line_naming_where_it_belongs(override, says):
    with pytest.raises(UsageError) as refused:
        secrets.refuse_overrides(["hydra.run.dir=/tmp/run", override])
    message = str(refused.value)
    assert says in message and "\n" not in message
    assert HF not in message and WANDB not in message and PASSWORD not in message


def test_overrides_that_only_look_alike_are_not_refused():
    secrets.refuse_overrides(
        [
            "trainer.hub_token=null",
            f"model.revision={COMMIT}",
            "evaluation.max_new_tokens=64",
            "sandbox.api_key_env=MY_KEY",
            "--multirun",
            "logger.name=qwen05b_basics_lr1e5_seed42",
        ]
    )


def test_a_commit_or_a_digest_is_not_a_key_where_its_name_says_what_it_is():
    """Issue 52: tagging, naming or annotating a run with its commit was refused as a W&B key. A legacy key is
    40 hex digits too, so the rule is where it appears: under a key named tags, name, notes, revision, commit
    (and the like) it is what the name says, and a SHA-256 or SHA-512 digest is never a key."""
    described = [
        f"logger.tags=[recipe,{COMMIT}]",
        f"logger.name=exp-{COMMIT}",
        f"logger.notes='commit {COMMIT}'",
        f"+logger.tags=[a,b],[c,{COMMIT}]",  # a sweep of tags
        f"model.revision={COMMIT}",
        f"+trainer.hub_revision={COMMIT}",
        f"+problems.expected={'ab' * 32}",  # a SHA-256: no W&B key has its shape
    ]
    secrets.refuse_overrides(described)
    assert secrets.mask_argv(described) == described
    record = {"logger": {"tags": ["recipe", COMMIT], "name": f"exp-{COMMIT}", "notes": f"commit {COMMIT}"}}
    assert secrets.mask(record) == record
    # The same 40 hex digits where no name says what they are is still a key.
    assert secrets.mask({"group": [COMMIT]}) == {"group": ["***"]}
    assert (
        secrets.mask_text(f"logger.tags=[x,{COMMIT}] logger.group={COMMIT}")
        == f"logger.tags=[x,{COMMIT}] logger.group=***"
    )


def test_every_value_of_a_swept_or_structured_secret_is_masked():
    """Issue 52: `mask_text("db_password=abc,def")` kept `def`, and `{token:abc}` (a dict override) was kept."""
    assert secrets.mask_text("db_password=abc,def") == "db_password=***"
    assert secrets.mask_text("db_password=abc,def,seed=1 x") == "db_password=***,seed=1 x"  # override_dirname
    assert secrets.mask_text("db_password='a b',\"c\" then") == "db_password=*** then"
    assert secrets.mask_text("hub_token=abc, then seed=1") == "hub_token=***, then seed=1"
    assert secrets.mask_text("debug=fast,trainer.model_init_kwargs={token:abc123,dtype:auto}") == (
        "debug=fast,trainer.model_init_kwargs={token:***,dtype:auto}"
    )
    assert secrets.mask_text("+  password: pa55\n+  name: pa55\n") == "+  password: ***\n+  name: pa55\n"  # a diff
    assert secrets.mask_text(f"export WANDB_API_KEY=wandb_v1_{'Q' * 77}") == "export WANDB_API_KEY=***"
    assert secrets.mask_text(f"key wandb_v1_{'Q' * 77}.") == "key ***."


def test_a_refusal_carries_what_it_refused_and_hydras_files_are_scrubbed_of_it(tmp_path):
    """What a refusal names is taken out of Hydra's files in whatever shape it is there, even where no mask
    would know it (an override's text, override_dirname)."""
    with pytest.raises(secrets.Refused) as refused:
        secrets.refuse_overrides(["trainer.model_init_kwargs={token:s3cr3t-value}"])
    assert refused.value.values == ("s3cr3t-value",) and "s3cr3t-value" not in str(refused.value)
    hydra_dir = tmp_path / ".hydra"
    hydra_dir.mkdir()
    (hydra_dir / "hydra.yaml").write_text("hydra:\n  job:\n    override_dirname: seed=1,x=[s3cr3t-value]\n")
    (hydra_dir / "overrides.yaml").write_text("- seed=1\n")
    assert secrets.scrub_hydra_files(hydra_dir, refused.value.values) == [hydra_dir / "hydra.yaml"]
    assert "s3cr3t-value" not in (hydra_dir / "hydra.yaml").read_text()
    assert (hydra_dir / "overrides.yaml").read_text() == "- seed=1\n"


def _composed(*overrides: str):
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base="1.3"):
        cfg = compose(config_name="train", overrides=list(overrides))
    with open_dict(cfg):
        cfg.run_dir = "/nonexistent/run"
    return cfg


def test_a_secret_a_config_brings_is_refused_by_every_command(monkeypatch, capsys):
    """A config file or an ${oc.env:...} puts it past the command line; run() refuses it before the task,
    for every command (train, evaluate, score, ...)."""
    monkeypatch.setenv("MY_HUB_TOKEN", HF)
    for cfg in (_composed(f"trainer.hub_token={HF}"), _composed("trainer.hub_token=${oc.env:MY_HUB_TOKEN}")):
        with pytest.raises(SystemExit) as exited:
            run(lambda c: pytest.fail("the task ran"), cfg)
        assert exited.value.code == 2
        assert capsys.readouterr().err == (
            "error: trainer.hub_token in the config is set: secrets stay out of "
            "configs, which are copied to the run dir, W&B, every checkpoint and the "
            "model card; leave it unset and export HF_TOKEN (the Hub client reads it)\n"
        )
    secrets.refuse_config(to_plain(OmegaConf.to_object(_composed())))  # the defaults hold none


def test_hydras_files_are_scrubbed_and_the_others_left_as_hydra_wrote_them(tmp_path):
    hydra_dir = tmp_path / ".hydra"
    hydra_dir.mkdir()
    (hydra_dir / "overrides.yaml").write_text(f"- trainer.hub_token={HF}\n- problems.path={URL}\n- seed=1\n")
    (hydra_dir / "config.yaml").write_text(f"trainer:\n  hub_token: {HF}\n  learning_rate: 1.0e-06\n")
    hydra_yaml = "hydra:\n  job:\n    name: train\n    override_dirname: seed=1\n"
    (hydra_dir / "hydra.yaml").write_text(hydra_yaml)
    assert secrets.scrub_hydra_files(hydra_dir) == [hydra_dir / "config.yaml", hydra_dir / "overrides.yaml"]
    assert OmegaConf.load(hydra_dir / "overrides.yaml") == [
        "trainer.hub_token=***",
        "problems.path=https://***@data.example.com/problems.jsonl",
        "seed=1",
    ]
    assert OmegaConf.to_container(OmegaConf.load(hydra_dir / "config.yaml")) == {"trainer": {"learning_rate": 1e-06}}
    assert (hydra_dir / "hydra.yaml").read_text() == hydra_yaml


def test_the_console_and_the_job_log_are_masked():
    logger = logging.getLogger("tests.secrets")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger.addHandler(handler)
    root = logging.getLogger()
    root.addHandler(handler)  # as Hydra's console and train.log handlers sit on the root
    try:
        secrets.mask_logging()
        secrets.mask_logging()  # once per handler, however often run() is called
        assert sum(isinstance(f, secrets.MaskingFilter) for f in handler.filters) == 1
        logger.propagate = False
        logger.warning("uploading with %s to %s", HF, URL)
        try:
            raise RuntimeError(f"401 for token {HF}")
        except RuntimeError:
            logger.exception("push failed")
    finally:
        root.removeHandler(handler)
        logger.removeHandler(handler)
    logged = stream.getvalue()
    assert "uploading with *** to https://***@data.example.com" in logged
    assert "RuntimeError: 401 for token ***" in logged
    assert HF not in logged and PASSWORD not in logged


def test_run_info_records_the_command_masked_and_the_commit_as_it_is(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["train.py", f"trainer.hub_token={HF}", f"logger.group={WANDB}", "seed=3"])
    info = json.loads(write_run_info(tmp_path, 3, "ab" * 32, {"resumed_from": URL}).read_text())
    assert info["command"] == ["train.py", "trainer.hub_token=***", "logger.group=***", "seed=3"]
    assert info["resumed_from"] == "https://***@data.example.com/problems.jsonl"
    assert info["git_commit"] is None or len(info["git_commit"]) == 40  # a commit is not a key


def test_checkpoint_state_holds_no_secret_and_older_states_still_resume(compose_cfg, tmp_path):
    cfg = compose_cfg(f"trainer.hub_token={HF}", f"trainer.vllm_server_base_url={URL}")
    checkpoint = tmp_path / "checkpoint-1"
    checkpoint.mkdir()
    checkpoints.write_state(checkpoint, to_plain(cfg), "ab" * 32, None)
    state = (checkpoint / checkpoints.STATE_FILE).read_text()
    assert HF not in state and PASSWORD not in state and "hub_token" not in state
    checkpoints.check_resume(checkpoint, to_plain(cfg), "ab" * 32, force=False)
    # A state written before this module left out every key whose name held TOKEN or KEY.
    older = json.loads(state)
    del older["config"]["trainer"]["average_tokens_across_devices"], older["config"]["evaluation"]["max_new_tokens"]
    assert checkpoints.differences(older["config"], secrets.mask(to_plain(cfg))) == []


# train.py with the Hub's network boundary replaced (as tests/helpers/hub.py does in process): the card is kept
# in <card dir>, and the token the push would send is checked here, so no file of the test ever holds it.
PUSHING_TRAIN = r"""
import os, shutil, sys
from pathlib import Path
import huggingface_hub

card_dir = Path(sys.argv.pop(1))
def create_repo(repo_id, **kwargs):
    # token=None is the Hub client's own: HF_TOKEN, else `hf auth login`'s file.
    token = kwargs.get("token") or huggingface_hub.get_token()
    card_dir.mkdir(parents=True, exist_ok=True)
    (card_dir / "token_from").write_text("HF_TOKEN" if token and token == os.environ.get("HF_TOKEN") else "other")
    return "https://huggingface.co/" + repo_id
def upload_folder(*, repo_id, folder_path, **kwargs):
    shutil.copy(Path(folder_path) / "README.md", card_dir / "README.md")
huggingface_hub.create_repo, huggingface_hub.upload_folder = create_repo, upload_folder
sys.argv[0] = "train.py"
from codegrpo.commands.train import main
main()
"""
PUSH = ["debug=fast", "save_model=true", "trainer.push_to_hub=true", "trainer.hub_model_id=someone/secrets-e2e"]


def _train(tmp_path: Path, *overrides: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    """train.py into tmp_path/run, W&B offline with every file it writes under tmp_path, the card in tmp_path/card."""
    wandb_dirs = {
        f"WANDB_{name}_DIR": str(tmp_path / "wandb-home" / name.lower()) for name in ("CONFIG", "CACHE", "DATA")
    }
    environment = {k: v for k, v in os.environ.items() if not k.startswith(("WANDB_", "HF_TOKEN"))}
    environment |= {"WANDB_MODE": "offline", **wandb_dirs, **env}
    command = [
        sys.executable,
        "-c",
        PUSHING_TRAIN,
        str(tmp_path / "card"),
        f"hydra.run.dir={tmp_path / 'run'}",
        *overrides,
    ]
    return subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=900, env=environment)


def _leaks(root: Path, done: subprocess.CompletedProcess, planted: list[str]) -> list[str]:
    """Where any planted secret is: every file under root (run dir, .hydra/, W&B's files, checkpoints, the
    card), read in overlapping chunks (weights and optimizer states are large), and the captured output."""
    found = [
        f"{stream}: {s}"
        for stream, text in (("stdout", done.stdout), ("stderr", done.stderr))
        for s in planted
        if s in text
    ]
    needles = [s.encode() for s in planted]
    overlap = max(map(len, needles))
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        with path.open("rb") as file:
            tail = b""
            while chunk := file.read(1 << 24):
                window, tail = tail + chunk, (tail + chunk)[-overlap:]
                found += [f"{path.relative_to(root)}: {n.decode()}" for n in needles if n in window]
    return sorted(set(found))


def test_secrets_given_on_the_command_line_reach_no_file_and_no_output(tmp_path):
    """The finding of issue 39: `trainer.hub_token=hf_...` went into run_info.json's command, the card's
    Command: line, config.yaml, .hydra/ and W&B. Now the run is refused before Hydra writes anything."""
    done = _train(
        tmp_path,
        *PUSH,
        f"trainer.hub_token={HF}",
        f"logger.group={WANDB}",
        f"trainer.vllm_server_base_url={URL}",
        "logger=wandb",
        "trainer.save_strategy=steps",
        "trainer.save_steps=1",
        env={},
    )
    assert _leaks(tmp_path, done, [HF, WANDB, PASSWORD]) == []
    assert done.returncode == 2, done.stderr[-3000:]
    assert done.stderr.strip().splitlines() == [
        "error: trainer.hub_token would be written to the run dir, W&B and the model card: secrets stay off the "
        "command line; leave it unset and export HF_TOKEN (the Hub client reads it)"
    ]
    assert not (tmp_path / "run").exists() and not (tmp_path / "card").exists()


SECRET = "s3cr3t-of-no-known-shape"  # known as a secret only by the name of its key


@pytest.mark.parametrize(
    ("how", "says"),
    [
        # Issue 52: refused after Hydra wrote .hydra/overrides.yaml and hydra.yaml, which kept it.
        (["trainer.model_init_kwargs={token:" + SECRET + "}"], "error: trainer.model_init_kwargs.token would be"),
        (
            ["trainer.model_init_kwargs={a:1},{password:" + SECRET + "}", "--multirun"],
            "error: trainer.model_init_kwargs.password",
        ),
        ([f"db_password=x,{SECRET}", "--multirun"], "error: db_password would be written"),
        (["local=leak"], "error: trainer.model_init_kwargs.token in the config is set"),  # a config file
        (["logger.group=${oc.env:CODEGRPO_TEST_GROUP}"], "error: logger.group=... looks like a W&B"),
        # Shaped as a key only once resolved: no mask knows it in overrides.yaml's text, the refusal does.
        ([f"logger.group=${{oc.env:CODEGRPO_TEST_EMPTY}}{WANDB}"], "error: logger.group=... looks like a W&B"),
    ],
)
def test_a_refused_secret_leaves_no_file_holding_it_in_an_existing_run_dir(how, says, tmp_path):
    """However it reaches Hydra (an override's dict, a sweep, a config file, an environment resolver), a
    refused secret is in no file of a run dir that already exists (a fresh one is removed whole, above)."""
    run_dir, sweep_dir, config_dir = tmp_path / "run", tmp_path / "sweep", tmp_path / "conf"
    for earlier in (run_dir, sweep_dir):
        earlier.mkdir()
        (earlier / "earlier.txt").write_text("a run's own file\n")
    (config_dir / "local").mkdir(parents=True)
    leak = f"# @package _global_\ntrainer:\n  model_init_kwargs:\n    token: {SECRET}\n    dtype: {WANDB}\n"
    (config_dir / "local" / "leak.yaml").write_text(leak)
    flags = [f"--config-dir={config_dir}", *(arg for arg in how if arg.startswith("--"))]  # before the overrides
    overrides = [f"hydra.run.dir={run_dir}", f"hydra.sweep.dir={sweep_dir}", "debug=fast"]
    done = train(
        *flags,
        *overrides,
        *(arg for arg in how if not arg.startswith("--")),
        env={"CODEGRPO_TEST_GROUP": WANDB, "CODEGRPO_TEST_EMPTY": ""},
    )
    assert done.returncode == 2 and done.stderr.startswith(says), done.stderr[-3000:]
    assert len(done.stderr.splitlines()) == 1, done.stderr[-3000:]
    assert [line for line in _leaks(tmp_path, done, [SECRET, WANDB]) if not line.startswith("conf/")] == []
    assert (run_dir / "earlier.txt").is_file() and (sweep_dir / "earlier.txt").is_file()
    # Refused before the task: the earlier run is not marked FAILED, and nothing of this one is left behind.
    assert {p.name for p in run_dir.iterdir()} <= {"earlier.txt", ".hydra", "train.log"}


def test_a_run_tagged_with_its_commit_composes():
    """Issue 52's done-when: a commit among the tags was refused as a W&B key."""
    done = train(f"logger.tags=[x,{COMMIT}]", f"logger.name=exp-{COMMIT}", "--cfg", "job")
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"- {COMMIT}" in done.stdout and f"name: exp-{COMMIT}" in done.stdout


@pytest.mark.parametrize("name", ["evaluate", "score", "validate", "limits", "pass_rates"])
def test_every_command_refuses_a_secret_on_its_command_line_and_never_echoes_it(name, tmp_path):
    """Each companion command goes through the same boundary as train.py: a secret override is refused in one
    line before Hydra writes anything, and a misspelt key is one line, as train.py reports it."""
    refused = command(f"codegrpo.commands.{name}", f"hydra.run.dir={tmp_path / 'run'}", f"sandbox.api_key={HF}")
    assert refused.returncode == 2 and HF not in refused.stdout + refused.stderr, refused.stderr[-2000:]
    assert refused.stderr.startswith("error: sandbox.api_key would be written to") and "Traceback" not in refused.stderr
    misspelt = command(f"codegrpo.commands.{name}", f"hydra.run.dir={tmp_path / 'run'}", "sandbox.timout_s=5")
    assert misspelt.returncode == 2 and misspelt.stderr.startswith("error: Could not override 'sandbox.timout_s'")
    assert len(misspelt.stderr.strip().splitlines()) == 1, misspelt.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_secrets_in_the_environment_push_and_log_yet_reach_no_file_and_no_output(tmp_path, tiny_model):
    """The documented way: HF_TOKEN for the push, WANDB_API_KEY for W&B (offline here). The push still
    authenticates with HF_TOKEN, and no file of the run (W&B's offline files, a checkpoint, the final model,
    the card) nor its output holds either key. The tiny model: weights hold no key, and are read through."""
    superserve = "ss_live_" + "q" * 24
    done = _train(
        tmp_path,
        *PUSH,
        *tiny_model,
        "logger=wandb",
        "trainer.save_strategy=steps",
        "trainer.save_steps=1",
        env={"HF_TOKEN": HF, "WANDB_API_KEY": WANDB, "SUPERSERVE_API_KEY": superserve},
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "card" / "token_from").read_text() == "HF_TOKEN"
    card = (tmp_path / "card" / "README.md").read_text()
    assert "- **Command:** `train.py hydra.run.dir=" in card and "trainer.push_to_hub=true" in card
    run_dir = tmp_path / "run"
    assert (run_dir / "checkpoint-1" / checkpoints.STATE_FILE).is_file()
    assert list(run_dir.glob("wandb/offline-run-*/run-*.wandb"))
    assert _leaks(tmp_path, done, [HF, WANDB, superserve]) == []


def test_a_hydra_file_caught_half_written_by_another_rank_is_read_again_then_scrubbed(tmp_path):
    """The ranks of a distributed launch share one run dir, and each one's Hydra writes .hydra/ as it starts: a
    rank scrubbing the file another is writing read half a YAML (a ScannerError in CI's two-rank test)."""
    import threading

    hydra_dir = tmp_path / ".hydra"
    hydra_dir.mkdir()
    whole = f"trainer:\n  hub_token: {HF}\n  learning_rate: 1.0e-06\n"
    (hydra_dir / "config.yaml").write_text(whole[: whole.index("learning") + 3] + ":\n  - [")  # cut mid-write
    finish = threading.Timer(0.2, (hydra_dir / "config.yaml").write_text, [whole])
    finish.start()
    try:
        assert secrets.scrub_hydra_files(hydra_dir) == [hydra_dir / "config.yaml"]
    finally:
        finish.join()
    assert OmegaConf.to_container(OmegaConf.load(hydra_dir / "config.yaml")) == {"trainer": {"learning_rate": 1e-06}}
    assert [p.name for p in hydra_dir.iterdir()] == ["config.yaml"]  # the masked copy replaced it whole
