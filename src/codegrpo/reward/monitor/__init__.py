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

The modules, in the order the evidence flows:

- categories.py: CATEGORIES, and the tables of which names are evidence of which category;
- harness_names.py: the harnesses' own names, the Python ones read from the harness itself;
- literals.py: the tests' inputs and expected values, what hardcoded answers are compared with;
- text_rules.py: what a string literal of either language shows;
- python_rules.py: the Python rules (an ast visitor);
- javascript_tree.py and javascript_rules.py: esprima's tree, and the JavaScript rules over it;
- run_evidence.py: the runs' evidence (the audit tokens, what the runner saw printed);
- flags.py: all of it together (``static_flags``, ``flags_of``);
- trend.py: the flagged rates per batch (``hack_metrics``) and the warning when they rise (``HackTrend``).

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
