"""The maps check themselves: every module is on docs/architecture.md and the README's Layout, every config
option is in `--help`, the package's top level stays small, no module or test forms an import circle, and the
tests mirror the modules."""

from __future__ import annotations

import ast
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

from codegrpo.resources import PROJECT_ROOT

PACKAGE = PROJECT_ROOT / "src" / "codegrpo"
CONF = PROJECT_ROOT / "conf"
MODULES = sorted(p.relative_to(PACKAGE) for p in PACKAGE.rglob("*.py") if p.name != "__init__.py")


def _readme_layout() -> str:
    readme = (PROJECT_ROOT / "README.md").read_text()
    return readme[readme.index("## Layout") :].split("\n## ", 1)[0]


@pytest.mark.parametrize("doc", ["docs/architecture.md", "README.md"])
def test_every_module_is_on_the_maps(doc):
    text = (PROJECT_ROOT / doc).read_text() if doc != "README.md" else _readme_layout()
    missing = [str(m) for m in MODULES if m.name not in text or any(f"{part}/" not in text for part in m.parts[:-1])]
    assert not missing, f"{doc} does not name: {', '.join(missing)}"


@pytest.mark.parametrize("doc", ["docs/architecture.md", "README.md"])
def test_the_maps_name_no_file_that_is_gone(doc):
    """A map drawn from the code: every ``name.py`` it names is a file of this checkout (a module moved or
    renamed leaves no stale name behind)."""
    text = (PROJECT_ROOT / doc).read_text() if doc != "README.md" else _readme_layout()
    files = {p.name for p in PROJECT_ROOT.rglob("*.py") if not {".venv", ".git", "outputs"} & set(p.parts)}
    stale = sorted(set(re.findall(r"\b([a-z_0-9]+\.py)\b", text)) - files)
    assert not stale, f"{doc} names files that do not exist: {', '.join(stale)}"


def test_each_command_is_a_shim_over_its_task():
    """commands/<name>.py holds its Hydra entry point and nothing else: the work is tasks/'s."""
    for path in sorted((PACKAGE / "commands").glob("*.py")):
        if path.name == "__init__.py":
            continue
        defined = {node.name for node in ast.parse(path.read_text()).body if isinstance(node, ast.FunctionDef)}
        assert defined <= {f"{path.stem}_command", "main"}, f"{path.name} defines {sorted(defined)}"


def test_every_problem_file_is_on_the_readmes_layout():
    layout = _readme_layout()
    missing = [
        p.name for p in (PROJECT_ROOT / "problems").iterdir() if p.suffix in (".jsonl", ".py") and p.name not in layout
    ]
    assert not missing, f"README.md's Layout does not name problems/{', problems/'.join(missing)}"


def test_every_config_option_is_in_help():
    help_text = (CONF / "hydra" / "help" / "codegrpo.yaml").read_text()
    groups = [d for d in CONF.iterdir() if d.is_dir() and d.name not in ("hydra", "local")]
    missing = [
        f"{g.name}={o.stem}"
        for g in groups
        for o in g.glob("*.yaml")
        if not re.search(rf"^\s+{g.name}\s", help_text, re.M) or not re.search(rf"\b{re.escape(o.stem)}\b", help_text)
    ]
    assert not missing, f"--help does not list: {', '.join(missing)}"


def test_the_top_level_holds_at_most_six_modules():
    top = [p.name for p in PACKAGE.glob("*.py")]
    assert len(top) <= 6, top


def _imports(path: Path, package: str) -> set[str]:
    """The codegrpo modules ``path`` imports, at any depth (lazy imports count: they still form a circle)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(package):
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith(package)}
    return found


def _module_graph() -> dict[str, set[str]]:
    names = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return {name: {m for m in _imports(path, "codegrpo") if m in names and m != name} for name, path in names.items()}


def test_no_import_circle():
    graph = _module_graph()
    # A package's __init__ re-exporting its own modules is not a circle through the package.
    edges = {a: {b for b in bs if not a.startswith(b + ".")} for a, bs in graph.items()}
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycle = [*path[path.index(nxt) :], nxt] if nxt in path else [node, nxt]
                pytest.fail("import circle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])


# The floors of the package, lowest first (docs/architecture.md draws them): a package or top-level module
# imports only its own floor's and lower ones, lazy imports included. The package root (codegrpo/__init__.py,
# the library's names, each loaded on first use) stands on every floor.
LAYERS = (
    "errors",
    "resources",
    "config",
    "data",
    "harness",
    "sandbox",
    "reward",
    "rollout",
    "agents",
    "tracking",
    "models",
    "evaluation",
    "training",
    "build",
    "tasks",
    "commands",
    "env_report",
)


def _upward_imports() -> list[str]:
    floor = {name: level for level, name in enumerate(LAYERS)}
    found = []
    for module, imported in _module_graph().items():
        here = module.split(".")[1:2]
        for target in imported:
            there = target.split(".")[1:2]
            if here and there and here != there and floor[there[0]] > floor[here[0]]:
                found.append(f"{module} imports {target}")
    return sorted(found)


def test_architecture_md_draws_the_floors_in_order_and_names_every_command():
    text = (PROJECT_ROOT / "docs" / "architecture.md").read_text()
    drawing = text.split("**Floors.**", 1)[1].split("```", 2)[1]
    drawn = [name.strip() for floor in " ".join(drawing.split()).split("->") for name in floor.split(",")]
    assert tuple(drawn) == LAYERS
    commands = {p.stem for p in (PACKAGE / "commands").glob("*.py") if p.stem != "__init__"}
    assert {name for name in commands if f"`{name}`" not in text} == set()


def test_every_package_is_on_a_floor():
    names = {
        p.stem
        for p in PACKAGE.iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()
    }
    assert names == set(LAYERS)


def test_no_package_imports_a_higher_floor():
    assert _upward_imports() == []


def test_the_floor_check_sees_an_upward_import(tmp_path, monkeypatch):
    package = tmp_path / "codegrpo"
    for name in ("reward", "training"):
        (package / name).mkdir(parents=True)
        (package / name / "__init__.py").write_text("")
    (package / "__init__.py").write_text("")
    (package / "training" / "steps.py").write_text("from codegrpo.reward import scorer\n")  # down: allowed
    (package / "reward" / "scorer.py").write_text("def f():\n    from codegrpo.training.steps import g\n")  # up
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    assert _upward_imports() == ["codegrpo.reward.scorer imports codegrpo.training.steps"]


def test_no_test_module_imports_another():
    offenders = []
    for path in (PROJECT_ROOT / "tests").rglob("test_*.py"):
        for module in _imports(path, "tests."):
            if re.search(r"(^|\.)test_[^.]*$", module) or ".test_" in module:
                offenders.append(f"{path.relative_to(PROJECT_ROOT)} imports {module}")
    assert not offenders, offenders


def test_the_circle_check_sees_a_circle(tmp_path, monkeypatch):
    # The check above can fail: two modules that import each other are found.
    package = tmp_path / "codegrpo"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from codegrpo.b import x\n")
    (package / "b.py").write_text("def f():\n    from codegrpo.a import y\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    with pytest.raises(pytest.fail.Exception, match="import circle"):
        test_no_import_circle()


TESTS = PROJECT_ROOT / "tests"


def _has_behaviour(module: Path) -> bool:
    tree = ast.parse(module.read_text())
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) for node in tree.body)


def _own_test_files(module: Path) -> list[Path]:
    """tests/<package>/test_<module>.py, or test_<package>_<module>.py where another package has a module of that
    name (test modules' names are unique); a package's __init__.py is tested beside its package's folder."""
    if module.name != "__init__.py":
        folder = TESTS / module.parent
        return [folder / f"test_{module.stem}.py", folder / f"test_{module.parent.name}_{module.stem}.py"]
    name = module.parent.name or "codegrpo"
    return [TESTS / module.parent.parent / f"test_{name}.py"]


def _modules_without_their_own_tests(package: Path) -> set[str]:
    modules = (p for p in package.rglob("*.py") if _has_behaviour(p))
    relative = (p.relative_to(package) for p in modules)
    return {str(p) for p in relative if not any(file.is_file() for file in _own_test_files(p))}


def test_each_module_with_behaviour_has_its_own_test_file():
    assert _modules_without_their_own_tests(PACKAGE) == set(), "give each its tests/<package>/test_<module>.py"


def test_the_mirror_check_sees_a_module_without_its_file(tmp_path):
    package = tmp_path / "codegrpo"
    (package / "reward").mkdir(parents=True)
    (package / "reward" / "gadget.py").write_text("def score():\n    return 1\n")
    (package / "reward" / "names.py").write_text("KEY = 'reward'\n")  # no behaviour: no file needed
    (package / "reward" / "scorer.py").write_text("def score():\n    return 1\n")  # tests/reward/test_scorer.py
    (package / "harness").mkdir()
    (package / "harness" / "protocol.py").write_text("def send():\n    return 1\n")  # tests/harness/test_protocol.py
    assert _modules_without_their_own_tests(package) == {"reward/gadget.py"}


def test_no_two_test_modules_share_a_name():
    names = Counter(path.name for path in TESTS.rglob("test_*.py"))
    assert [name for name, count in names.items() if count > 1] == []


def test_a_function_longer_than_a_screen_says_why_it_is_one():
    """No function over 60 lines unless its docstring says why it cannot be split ("past 60 lines")."""
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if node.end_lineno - node.lineno >= 60 and "past 60 lines" not in (ast.get_docstring(node) or ""):
                long.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}")
    assert not long, long
