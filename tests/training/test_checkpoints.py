"""Checkpoints on disk (codegrpo.training.checkpoints): which dirs count as complete, staging and publishing, rotation,
the saved state, and the refusal to resume a checkpoint of another setup."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codegrpo.errors import UsageError
from codegrpo.training import checkpoints


def checkpoint(run_dir: Path, step: int, complete: bool = True) -> Path:
    """A checkpoint-<step> dir, with its trainer state (written last) where ``complete``."""
    path = run_dir / f"checkpoint-{step}"
    path.mkdir(parents=True)
    (path / "model.safetensors").write_text(f"weights {step}")
    if complete:
        (path / "trainer_state.json").write_text("{}")
    return path


@pytest.mark.parametrize(
    ("name", "step"),
    [
        ("checkpoint-0", 0),
        ("checkpoint-12", 12),
        ("checkpoint-007", 7),
        ("checkpoint-", -1),
        ("checkpoint-x", -1),
        ("checkpoint-3-old", -1),
        ("old-checkpoint-3", -1),
        ("Checkpoint-3", -1),
        (".saving", -1),
    ],
)
def test_the_step_is_read_from_a_checkpoint_name_and_is_minus_one_for_any_other(name, step):
    assert checkpoints.step_of(Path("/runs/a") / name) == step


def test_a_checkpoint_is_complete_only_once_its_trainer_state_is_written(tmp_path):
    assert checkpoints.is_complete(checkpoint(tmp_path, 0))
    assert checkpoints.is_complete(checkpoint(tmp_path, 1))
    assert not checkpoints.is_complete(checkpoint(tmp_path, 2, complete=False))
    (tmp_path / "checkpoint-3").write_text("a file, not a dir")
    assert not checkpoints.is_complete(tmp_path / "checkpoint-3")
    (tmp_path / "checkpoint-4" / "trainer_state.json").mkdir(parents=True)  # a dir, not the state file
    assert not checkpoints.is_complete(tmp_path / "checkpoint-4")
    (tmp_path / "final").mkdir()
    (tmp_path / "final" / "trainer_state.json").write_text("{}")  # not a checkpoint-N name
    assert not checkpoints.is_complete(tmp_path / "final")
    assert not checkpoints.is_complete(tmp_path / "checkpoint-5")  # not there


def test_complete_lists_the_complete_checkpoints_by_step_not_by_name(tmp_path):
    for step in (10, 9, 100, 2):
        checkpoint(tmp_path, step)
    checkpoint(tmp_path, 50, complete=False)
    (tmp_path / "checkpoint-7").write_text("")
    assert [p.name for p in checkpoints.complete(tmp_path)] == [
        "checkpoint-2",
        "checkpoint-9",
        "checkpoint-10",
        "checkpoint-100",
    ]


def test_a_run_dir_that_is_not_there_has_no_checkpoints(tmp_path):
    assert checkpoints.complete(tmp_path / "missing") == []
    assert checkpoints.newest(tmp_path / "missing") is None
    assert checkpoints.newest(tmp_path) is None


def test_a_half_written_checkpoint_is_never_the_newest(tmp_path):
    checkpoint(tmp_path, 9)
    older = checkpoint(tmp_path, 10)
    checkpoint(tmp_path, 11, complete=False)
    checkpoint(checkpoints.staging_dir(tmp_path), 12)  # a complete one still in the staging dir
    assert checkpoints.newest(tmp_path) == older


def test_discarding_the_staging_dir_removes_what_a_save_left_and_is_safe_without_one(tmp_path):
    staged = checkpoint(checkpoints.staging_dir(tmp_path), 3, complete=False)
    assert staged == tmp_path / ".saving" / "checkpoint-3"
    checkpoints.discard_staging(tmp_path)
    assert not (tmp_path / ".saving").exists()
    checkpoints.discard_staging(tmp_path)  # nothing to discard
    checkpoints.discard_staging(tmp_path / "missing")


def test_publish_moves_the_staged_checkpoint_into_the_run_dir_and_clears_the_staging(tmp_path):
    staging = checkpoints.staging_dir(tmp_path)
    staged = checkpoint(staging, 4)
    (staged / "rng").mkdir()
    (staged / "rng" / "rank0.pth").write_text("seed")
    (staging / "leftover").write_text("from a save that failed")
    target = checkpoints.publish(staged, tmp_path)
    assert target == tmp_path / "checkpoint-4"
    assert (target / "model.safetensors").read_text() == "weights 4" and (target / "rng" / "rank0.pth").is_file()
    assert not staging.exists()
    assert checkpoints.newest(tmp_path) == target


def test_publishing_a_step_saved_again_replaces_the_old_checkpoint_whole(tmp_path):
    old = checkpoint(tmp_path, 5)
    (old / "optimizer.pt").write_text("old optimizer")
    staged = checkpoint(checkpoints.staging_dir(tmp_path), 5)
    (staged / "model.safetensors").write_text("new weights")
    target = checkpoints.publish(staged, tmp_path)
    assert target == old
    assert sorted(p.name for p in target.iterdir()) == ["model.safetensors", "trainer_state.json"]
    assert (target / "model.safetensors").read_text() == "new weights"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint-5"]  # no old- copy, no staging dir


def test_rotate_keeps_the_newest_complete_checkpoints(tmp_path):
    for step in (1, 2, 10, 20):
        checkpoint(tmp_path, step)
    half = checkpoint(tmp_path, 30, complete=False)
    deleted = checkpoints.rotate(tmp_path, 2)
    assert [p.name for p in deleted] == ["checkpoint-1", "checkpoint-2"]
    assert [p.name for p in checkpoints.complete(tmp_path)] == ["checkpoint-10", "checkpoint-20"]
    assert half.is_dir()  # a half-written one is neither counted nor deleted
    assert checkpoints.rotate(tmp_path, 2) == []
    assert checkpoints.rotate(tmp_path, 5) == []


@pytest.mark.parametrize("keep", [None, 0, -1])
def test_rotate_without_a_positive_limit_keeps_every_checkpoint(tmp_path, keep):
    for step in (1, 2, 3):
        checkpoint(tmp_path, step)
    assert checkpoints.rotate(tmp_path, keep) == []
    assert len(checkpoints.complete(tmp_path)) == 3


def test_the_state_is_written_without_secrets_and_read_back(tmp_path):
    path = checkpoint(tmp_path, 1)
    config = {"trainer": {"learning_rate": 1e-6, "hub_token": "not-for-disk"}, "seed": 3, "tags": ("a", "b")}
    checkpoints.write_state(path, config, "ab" * 32, "run-123")
    assert "not-for-disk" not in (path / "codegrpo_state.json").read_text()
    assert checkpoints.read_state(path) == {
        "config": {"trainer": {"learning_rate": 1e-6}, "seed": 3, "tags": ["a", "b"]},
        "problems_sha256": "ab" * 32,
        "wandb_run_id": "run-123",
    }


def test_a_checkpoint_without_a_state_reads_none(tmp_path):
    assert checkpoints.read_state(checkpoint(tmp_path, 1)) is None


def test_differences_name_each_changed_setting_with_both_values():
    saved = {"trainer": {"learning_rate": 1e-6, "beta": 0.0}, "seed": 3, "model": {"name": "a"}}
    current = {"trainer": {"learning_rate": 2e-6, "beta": 0.0}, "seed": 3, "model": {"name": "b", "dtype": "bf16"}}
    assert checkpoints.differences(saved, current) == [
        "model.dtype ('<unset>' -> 'bf16')",
        "model.name ('a' -> 'b')",
        "trainer.learning_rate (1e-06 -> 2e-06)",
    ]
    assert checkpoints.differences(current, saved)[0] == "model.dtype ('bf16' -> '<unset>')"


def test_settings_free_on_resume_are_no_difference_but_their_namesakes_are():
    saved = {"trainer": {"max_steps": 10, "save_steps": 5, "max_steps_per_epoch": 1}, "logger": {"project": "a"}}
    current = {"trainer": {"max_steps": 20, "save_steps": 1, "max_steps_per_epoch": 2}, "logger": {"project": "b"}}
    saved |= {"resume": "auto", "run_dir": "/a", "recipe": {"paper": "x"}, "resumed": 1}
    current |= {"resume": "/a/checkpoint-1", "run_dir": "/b", "recipe": {"paper": "y"}, "resumed": 2}
    assert checkpoints.differences(saved, current) == [
        "resumed (1 -> 2)",
        "trainer.max_steps_per_epoch (1 -> 2)",
    ]


def test_differences_compare_as_json_holds_them():
    saved = json.loads(json.dumps({"stop": ["a", "b"], "path": "/x"}))
    assert checkpoints.differences(saved, {"stop": ("a", "b"), "path": Path("/x")}) == []
    assert checkpoints.differences(saved, {"stop": ("a",), "path": "/x"}) == ["stop (['a', 'b'] -> ['a'])"]


def test_a_key_older_states_left_out_for_its_name_is_no_difference_only_when_absent():
    current = {"trainer": {"average_tokens_across_devices": True}, "evaluation_max_new_tokens": 64}
    assert checkpoints.differences({"trainer": {}}, current) == []
    assert checkpoints.differences({"trainer": {"average_tokens_across_devices": False}}, current) == [
        "trainer.average_tokens_across_devices (False -> True)"
    ]
    assert checkpoints.differences({}, {"trainer": {"average_steps": 2}}) == ["trainer.average_steps ('<unset>' -> 2)"]


def test_resuming_the_same_setup_is_allowed_though_the_saved_state_is_masked(tmp_path):
    path = checkpoint(tmp_path, 1)
    # A token pasted into a setting is saved as *** and compared masked: no difference.
    config = {"trainer": {"learning_rate": 1e-6}, "model": {"note": "hf_" + "a" * 34}, "seed": 3}
    checkpoints.write_state(path, config, "ab" * 32, None)
    assert checkpoints.read_state(path)["config"]["model"] == {"note": "***"}
    checkpoints.check_resume(path, config, "ab" * 32, force=False)


def test_resuming_another_problem_set_or_config_is_refused_in_one_line(tmp_path):
    path = checkpoint(tmp_path, 1)
    checkpoints.write_state(path, {"seed": 3, "lr": 1}, "ab" * 32, None)
    with pytest.raises(UsageError) as refused:
        checkpoints.check_resume(path, {"seed": 4, "lr": 1}, "cd" * 32, force=False)
    assert str(refused.value) == (
        f"resume: {path} was trained with a different setup: the problem set (sha256 abababababab -> cdcdcdcdcdcd); "
        "seed (3 -> 4). Resume with the run's own overrides, or set resume_force=true to continue anyway"
    )
    with pytest.raises(UsageError, match=r"setup: the problem set \(sha256 abababababab -> cdcdcdcdcdcd\)\. "):
        checkpoints.check_resume(path, {"seed": 3, "lr": 1}, "cd" * 32, force=False)


def test_a_refusal_shows_five_differences_and_counts_the_rest(tmp_path):
    path = checkpoint(tmp_path, 1)
    checkpoints.write_state(path, {f"k{n}": 0 for n in range(7)}, "ab" * 32, None)
    with pytest.raises(UsageError) as refused:
        checkpoints.check_resume(path, {f"k{n}": 1 for n in range(7)}, "ab" * 32, force=False)
    assert "setup: k0 (0 -> 1); k1 (0 -> 1); k2 (0 -> 1); k3 (0 -> 1); k4 (0 -> 1); and 2 more. " in str(refused.value)
    with pytest.raises(UsageError, match=r"k4 \(0 -> 1\); and 1 more\. Resume"):
        checkpoints.check_resume(path, {f"k{n}": 1 for n in range(6)} | {"k6": 0}, "ab" * 32, force=False)
    with pytest.raises(UsageError, match=r"k4 \(0 -> 1\)\. Resume"):
        checkpoints.check_resume(path, {f"k{n}": 1 for n in range(5)} | {"k5": 0, "k6": 0}, "ab" * 32, force=False)


def test_a_forced_resume_or_a_checkpoint_without_state_is_never_refused(tmp_path):
    path = checkpoint(tmp_path, 1)
    checkpoints.check_resume(path, {"seed": 4}, "cd" * 32, force=False)  # another tool's checkpoint
    checkpoints.write_state(path, {"seed": 3}, "ab" * 32, None)
    checkpoints.check_resume(path, {"seed": 4}, "cd" * 32, force=True)
