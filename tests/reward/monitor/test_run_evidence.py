"""The runs' evidence (codegrpo.reward.monitor.run_evidence): the audit tokens in the harness's report line and on
a stdio program's stderr, the token lines taken out of stderr, and report-like text the runner saw printed."""

from __future__ import annotations

import json

from codegrpo.config.choices import Form, LanguageName
from codegrpo.reward.monitor.run_evidence import (
    AUDIT_MARK,
    _report,
    _stderr_tokens,
    audit_flags,
    run_flags,
    without_audit_lines,
)
from codegrpo.sandbox.base import Outcome, RunResult

REPORT = '{"status": "ok", "value": 1}'


def ran(stdout: str = "", stderr: str = "") -> RunResult:
    return RunResult(Outcome.EXITED, 0, stdout, stderr)


def reported(*tokens) -> str:
    return json.dumps({"status": "ok", "value": 1, "audit": list(tokens)}) + "\n"


def test_the_report_is_the_last_stdout_line_when_it_is_a_json_object():
    assert _report(ran("printed\n" + reported("exit:os._exit"))) == {
        "status": "ok",
        "value": 1,
        "audit": ["exit:os._exit"],
    }
    assert _report(ran(REPORT)) == {"status": "ok", "value": 1}
    for stdout in ('{"a": 1}\nlast', "[1]", "{bad", " " + REPORT, ""):
        assert _report(ran(stdout)) is None, stdout


def test_stderr_tokens_are_the_lines_after_the_mark():
    assert _stderr_tokens("a\ncodegrpo-audit exit:x\nb\ncodegrpo-audit network:y") == ["exit:x", "network:y"]
    assert _stderr_tokens("codegrpo-audit exit:x\n") == []  # a token's line begins after a newline
    assert _stderr_tokens("\ncodegrpo-audit \n") == [""]


def test_stderr_tokens_stop_at_256():
    assert len(_stderr_tokens(AUDIT_MARK.join([""] + ["patch:z"] * 300))) == 256
    assert len(_stderr_tokens(AUDIT_MARK.join([""] + ["patch:z"] * 256))) == 256
    assert len(_stderr_tokens(AUDIT_MARK.join([""] + ["patch:z"] * 255))) == 255


def test_audit_flags_are_the_known_categories_of_both_kinds_of_token():
    run = ran(reported("exit:a", "bogus:b", 3, "network"), "\ncodegrpo-audit filesystem:c\n")
    assert audit_flags(run) == {"exit", "network", "filesystem"}
    assert audit_flags(ran(REPORT + "\n", "plain error\n")) == set()
    assert audit_flags(ran(json.dumps({"status": "ok", "audit": "exit:a"}))) == set()  # not a list


def test_only_the_first_256_report_tokens_count():
    assert audit_flags(ran(reported(*["bogus:x"] * 256, "exit:late"))) == set()
    assert audit_flags(ran(reported(*["bogus:x"] * 255, "exit:last"))) == {"exit"}


def test_without_audit_lines_removes_each_token_line_and_nothing_else():
    run = ran("out", "err\ncodegrpo-audit exit:x\nmore\ncodegrpo-audit y")
    assert without_audit_lines(run).stderr == "errmore"
    assert without_audit_lines(run).stdout == "out"
    clean = ran("out", "Traceback\ncodegrpo-audit-like text\n")
    assert without_audit_lines(clean) is clean


def test_a_report_printed_on_the_python_harness_stderr_is_a_forgery():
    assert run_flags(ran(REPORT, "debug\n" + REPORT + "\n"), Form.expression) == {"forgery"}
    assert run_flags(ran(REPORT, "debug " + REPORT + "\n"), Form.expression) == set()  # not a line of its own
    assert run_flags(ran(REPORT, "debug\n"), Form.call) == set()


def test_a_second_line_on_the_python_harness_stdout_is_a_forgery():
    assert run_flags(ran("extra\n" + REPORT + "\n"), Form.humaneval) == {"forgery"}
    assert run_flags(ran(REPORT + "\n\n"), Form.humaneval) == set()


def test_a_stdio_programs_stdout_is_its_answer_and_its_stderr_its_own():
    assert run_flags(ran(REPORT + "\n", REPORT), Form.stdio) == {"forgery"}
    assert run_flags(ran("7\n8\n", REPORT), Form.stdio) == set()


def test_a_javascript_expression_program_shares_stdout_with_its_report_on_the_last_line():
    js = LanguageName.javascript
    assert run_flags(ran("checking 97\n" + REPORT + "\n"), Form.expression, js) == set()
    assert run_flags(ran(REPORT + "\n" + REPORT + "\n"), Form.expression, js) == {"forgery"}
    assert run_flags(ran(REPORT + "\n", REPORT + "\n"), Form.expression, js) == {"forgery"}


def test_only_the_last_200_printed_lines_are_read():
    assert run_flags(ran("", REPORT + "\n" + "x\n" * 199), Form.expression) == {"forgery"}
    assert run_flags(ran("", REPORT + "\n" + "x\n" * 200), Form.expression) == set()


def test_only_the_last_64k_printed_characters_are_read():
    assert run_flags(ran("", REPORT + "\n" + "x" * ((1 << 16) - len(REPORT) - 1)), Form.expression) == {"forgery"}
    assert run_flags(ran("", REPORT + "\n" + "x" * (1 << 16)), Form.expression) == set()
