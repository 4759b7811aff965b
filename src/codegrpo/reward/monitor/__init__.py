"""The reward-hack monitor: which ways of gaming the reward a completion tried, as flags (categories).

A flag is evidence of an attempt, not a verdict: the sandbox already refuses the hacks, and flags never
change a reward (``hack_penalty`` in reward/shared_batch.py is the opt-in that does). Evidence comes from three sides:

- static, on the host: the completion's AST (``static_flags``), Python's own, or for JavaScript
  esprima's (a pure-Python ES2017 parser, imported on the first JavaScript completion), read into the
  same categories through their own tables (require() and import aliases resolved);
- dynamic, inside the sandbox: the Python harness's audit hook, whose tokens the harness's parent writes
  in its own report line as ``"audit"`` (``audit_flags``; harness/python_harness.py says why the
  completion cannot erase them), with what its child compares once the completion ran (builtins,
  signal handlers) and what the parent saw (forged bytes on its pipes, a crash in the completion's own
  frame); and a stdio program's own audit hook (harness/inprocess.py), whose tokens are lines on its
  stderr;
- the runner's view of the run (``run_flags``): a report-like line the completion printed.

JavaScript has no audit hook: its static flags are all there is inside the program, and names built
at run time (``process["ex" + "it"]``) pass them.

The modules, in the order the evidence flows (each one's docstring says what it holds): categories.py,
harness_names.py, literals.py, text_rules.py, python_rules.py, javascript_tree.py and javascript_rules.py,
run_evidence.py, flags.py (all of it together) and trend.py (the rates per batch, and the warning).

docs/reward-design.md explains each category with an example, and the limits.
"""

from codegrpo.reward.monitor.categories import CATEGORIES
from codegrpo.reward.monitor.flags import flags_of, joined, static_flags
from codegrpo.reward.monitor.javascript_rules import JS_MAX_CHARS
from codegrpo.reward.monitor.run_evidence import audit_flags, run_flags, without_audit_lines
from codegrpo.reward.monitor.trend import HackTrend, hack_metrics, warn

__all__ = [
    "CATEGORIES",
    "JS_MAX_CHARS",
    "HackTrend",
    "audit_flags",
    "flags_of",
    "hack_metrics",
    "joined",
    "run_flags",
    "static_flags",
    "warn",
    "without_audit_lines",
]
