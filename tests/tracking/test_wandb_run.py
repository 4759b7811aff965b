"""W&B mode resolution and offline silence, with the real wandb library against a local stub server.

Each run happens in a fresh subprocess with its own HOME: wandb caches its settings and credentials per
process, and its telemetry is sent when the process exits, so only a whole process shows what it sends.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from codegrpo.commands import CONFIG_DIR, prepare_hydra
from codegrpo.config.choices import LoggerBackend, WandbMode
from codegrpo.config.logger import LoggerConfig
from codegrpo.errors import UsageError
from codegrpo.tracking import wandb_run as tracking
from tests import wandb_offline
from tests.wandb_stub import StubServer

KEY = "k" * 40
NETRC_KEY = "n" * 40

RUN = r"""
import json, logging, sys
from pathlib import Path
from omegaconf import OmegaConf
from codegrpo.tracking import wandb_run as tracking
from codegrpo.config.logger import LoggerConfig

logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
args = json.loads(sys.argv[1])
cfg = OmegaConf.structured(LoggerConfig(backend="wandb", mode=args.get("mode")))
OmegaConf.set_struct(cfg, False)  # log_model: a key the schema may not have yet
cfg.log_model = bool(args.get("model_dir"))
mode, why = tracking.resolve_mode(cfg)
run = tracking.start_run(cfg, Path(args["run_dir"]), {"seed": 1, "wandb_api_key": "x"}, job_type=args["job_type"])
run.log({"reward": 0.5})
if args.get("model_dir"):
    tracking.log_model(run, cfg, Path(args["model_dir"]))
tracking.finish_run(run)
print(json.dumps({"mode": mode, "why": why}))
"""


@pytest.fixture
def stub():
    server = StubServer().start()
    yield server
    server.stop()


def run_tracking(
    tmp_path: Path, stub: StubServer, env: dict[str, str] | None = None, argv: tuple[str, ...] = (), **args
) -> dict:
    """Start, log to and finish one run in a clean process: no WANDB_* from the caller, a fresh HOME; ``argv``
    follows the arguments on the process's command line (wandb records them)."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("WANDB_") and k != "NETRC"}
    environment |= {"HOME": str(home), "WANDB_BASE_URL": stub.url} | (env or {})
    args = {"run_dir": str(tmp_path / "run"), "job_type": "train"} | args
    done = subprocess.run(
        [sys.executable, "-c", RUN, json.dumps(args), *argv],
        env=environment,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]) | {"stderr": done.stderr}


def write_netrc(tmp_path: Path, stub: StubServer) -> None:
    """What `wandb login --host <stub>` leaves behind: a netrc entry for the server's host:port."""
    netrc = tmp_path / "home" / ".netrc"
    netrc.parent.mkdir(exist_ok=True)
    netrc.write_text(f"machine {stub.netloc}\n  login user\n  password {NETRC_KEY}\n")
    netrc.chmod(0o600)


def offline_run_file(tmp_path: Path) -> Path:
    [run_file] = (tmp_path / "run").glob("wandb/offline-run-*/run-*.wandb")
    return run_file


def test_a_key_in_the_environment_logs_online_with_that_key(tmp_path, stub):
    result = run_tracking(tmp_path, stub, env={"WANDB_API_KEY": KEY})
    assert (result["mode"], result["why"]) == ("online", "credentials from WANDB_API_KEY")
    upserts = [r for r in stub.requests if "upsertBucket" in r.graphql().get("query", "")]
    assert upserts and {r.api_key() for r in upserts} == {KEY}
    assert upserts[0].graphql()["variables"]["jobType"] == "train"


def test_a_key_from_wandb_login_netrc_logs_online(tmp_path, stub):
    write_netrc(tmp_path, stub)
    result = run_tracking(tmp_path, stub)
    assert result["mode"] == "online"
    assert result["why"] == f"credentials from {tmp_path / 'home' / '.netrc'}"
    assert {r.api_key() for r in stub.requests if r.path == "/graphql"} == {NETRC_KEY}


def test_no_credentials_is_offline_with_one_line_and_sends_nothing(tmp_path, stub):
    result = run_tracking(tmp_path, stub, job_type="eval")
    assert (result["mode"], result["why"]) == ("offline", "no W&B credentials found")
    said = [line for line in result["stderr"].splitlines() if "W&B" in line or "wandb" in line.lower()]
    assert len(said) == 1 and "offline" in said[0] and "wandb login" in said[0] and "wandb sync" in said[0], said
    assert stub.requests == []
    run_file = offline_run_file(tmp_path)
    assert wandb_offline.run_record(run_file)["job_type"] == "eval"
    assert [row["reward"] for row in wandb_offline.history(run_file)] == [0.5]
    assert "wandb_api_key" not in wandb_offline.config(run_file)


def test_no_offline_file_holds_a_secret_of_the_config_or_of_the_arguments_wandb_records(tmp_path, stub):
    token, password = "hf_" + "Zq8LmN3pR7sT1vW5xY9aB2cD4eF6gH0jK2", "pw-kept-home"
    result = run_tracking(
        tmp_path,
        stub,
        argv=(f"trainer.hub_token={token}", "seed=1", f"problems.path=https://alice:{password}@example.com/p.jsonl"),
    )
    written = {p: p.read_bytes() for p in (tmp_path / "run").rglob("*") if p.is_file()}
    assert written and not [p for p, data in written.items() if token.encode() in data or password.encode() in data]
    assert token not in result["stderr"] and stub.requests == []
    # What wandb recorded (its run's `args`) is the command line masked, not nothing.
    run_file = offline_run_file(tmp_path).read_bytes()
    assert b"trainer.hub_token=***" in run_file and b"problems.path=https://***@example.com/p.jsonl" in run_file


def test_offline_sends_nothing_even_with_a_key_in_netrc(tmp_path, stub):
    # The regression: wandb's own telemetry used to POST /sdk/otel/v1/metrics with the netrc key.
    write_netrc(tmp_path, stub)
    result = run_tracking(tmp_path, stub, env={"WANDB_MODE": "offline"})
    assert (result["mode"], result["why"]) == ("offline", "WANDB_MODE")
    assert stub.requests == []


def test_wandb_mode_disabled_writes_and_sends_nothing(tmp_path, stub):
    result = run_tracking(tmp_path, stub, env={"WANDB_MODE": "disabled", "WANDB_API_KEY": KEY})
    assert result["mode"] == "disabled"
    assert stub.requests == []
    assert not list((tmp_path / "run").glob("wandb/*run-*"))


def test_logger_mode_beats_wandb_mode_and_wandb_variables_apply(tmp_path, stub):
    result = run_tracking(
        tmp_path,
        stub,
        mode="offline",
        env={"WANDB_MODE": "online", "WANDB_API_KEY": KEY, "WANDB_JOB_TYPE": "probe", "WANDB_TAGS": "a,b"},
    )
    assert (result["mode"], result["why"]) == ("offline", "logger.mode")
    assert stub.requests == []
    record = wandb_offline.run_record(offline_run_file(tmp_path))
    assert record["job_type"] == "probe" and record["tags"] == ["a", "b"]


def test_a_wandb_mode_wandb_does_not_know_is_one_line_naming_the_modes(monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offlin")
    with pytest.raises(UsageError, match="WANDB_MODE must be one of online, offline, disabled, shared, not 'offlin'"):
        tracking.resolve_mode(LoggerConfig(backend=LoggerBackend.wandb))
    monkeypatch.setenv("WANDB_MODE", "dryrun")  # wandb's old spelling
    assert tracking.resolve_mode(LoggerConfig(backend=LoggerBackend.wandb)) == (WandbMode.offline, "WANDB_MODE")


def test_log_model_logs_the_saved_dir_as_a_model_artifact(tmp_path, stub):
    model_dir = tmp_path / "final_model"
    model_dir.mkdir()
    (model_dir / "config.json").write_text("{}")
    (model_dir / "model.safetensors").write_bytes(b"\0" * 64)
    run_tracking(tmp_path, stub, model_dir=str(model_dir))
    [artifact] = wandb_offline.artifacts(offline_run_file(tmp_path))
    assert artifact["type"] == "model" and artifact["name"].startswith("model-")
    assert artifact["files"] == ["config.json", "model.safetensors"]
    assert stub.requests == []


def test_wandb_project_and_group_apply_unless_logger_sets_them(monkeypatch):
    prepare_hydra(trainer=True)
    monkeypatch.setenv("WANDB_PROJECT", "from-env")
    monkeypatch.setenv("WANDB_RUN_GROUP", "g1")
    with initialize_config_dir(CONFIG_DIR, version_base="1.3"):
        cfg = compose("train")
        assert (cfg.logger.project, cfg.logger.group, cfg.logger.entity) == ("from-env", "g1", None)
        assert compose("train", overrides=["logger.project=mine"]).logger.project == "mine"
    monkeypatch.delenv("WANDB_PROJECT")
    with initialize_config_dir(CONFIG_DIR, version_base="1.3"):
        assert compose("train").logger.project == "codegrpo"
