"""Code extraction: which part of a completion is the program, or why there is none.

The rules (docs/reward-design.md, "Which part of a reply is the code"):

1. No fence: the whole reply is the code when it reads as code; otherwise there is no code.
2. A reply that starts as code and ends at a lone fence (the shape a prompt that prefills the opening
   fence produces: ``def f(): ...\\n```\\nThis adds...``): the text before the fence is the code, when it
   reads as code, and more so than the text after the fence up to the next one (``_Reading``).
3. Otherwise the fenced blocks: one tagged with the language and not blank, or untagged and reading as
   code; the first (``reward.extract=last``: the last) of them. A block cut off by the length limit counts.

"Reads as code" (``reads_as_code``) is deliberately generous: broken code must stay code, so that it
scores as the error it is; only text that neither parses nor starts with a line of code is prose.
"""

from __future__ import annotations

import ast
import enum
import keyword
import re
import textwrap
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from codegrpo.config.choices import Extract, LanguageName

FENCE = "```"
_TAG = re.compile(r"[ \t]*([A-Za-z0-9_+#.-]*)")


class Source(enum.Enum):
    """Where a completion's code was found."""

    REPLY = "reply"  # no fence: the whole reply (rule 1)
    BEFORE_FENCE = "before_fence"  # the text before a lone closing fence (rule 2)
    BLOCK = "block"  # a fenced block (rule 3)
    NONE = "none"  # no code; Extraction.reason says what was expected


@dataclass(frozen=True)
class Extraction:
    """The code of one completion ('' when there is none), where it was found, and, when there is none,
    why: a reason that starts 'no code: ' and says what was expected."""

    code: str
    source: Source
    reason: str = ""


@dataclass(frozen=True)
class _Dialect:
    """What extraction knows of a language: whether a text parses, and the look of a line of code."""

    name: str  # as a reason names it
    tag: str  # the fence tag a reason asks for
    parses: Callable[[str], bool]
    keywords: frozenset[str]
    comments: tuple[str, ...]  # what starts a comment line
    quotes: str  # what opens a string literal

    @cached_property
    def strings(self) -> re.Pattern[str]:
        # A string literal on one line; an unterminated one runs to the line's end. Each character has one
        # way to match: no backtracking on hostile input.
        return re.compile(rf"([{self.quotes}])(?:\\.|(?!\1)[^\\])*(?:\1|$)")


def _python_parses(text: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning on the model's invalid escapes: not ours to print
            ast.parse(textwrap.dedent(text))  # dedented: a HumanEval body continues an indented function
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _javascript_parses(text: str) -> bool:
    from codegrpo.reward.monitor.javascript_tree import _esprima  # the monitor's: imported once, memory trimmed

    esprima = _esprima()
    for parse in (esprima.parseScript, esprima.parseModule):
        try:
            parse(text)
            return True
        except Exception:  # esprima.Error, RecursionError, or whatever hostile text makes a pure-Python parser raise
            continue
    return False


# `print` with them: Python 2's `print x` is broken code (its error says so), not prose.
_PYTHON_KEYWORDS = frozenset([*keyword.kwlist, *keyword.softkwlist, "print"])
_PYTHON = _Dialect("Python", "python", _python_parses, _PYTHON_KEYWORDS, ("#",), "'\"")
_JAVASCRIPT_KEYWORDS = frozenset(
    {
        "as",
        "async",
        "await",
        "break",
        "case",
        "catch",
        "class",
        "const",
        "continue",
        "debugger",
        "default",
        "delete",
        "do",
        "else",
        "export",
        "extends",
        "false",
        "finally",
        "for",
        "from",
        "function",
        "get",
        "if",
        "import",
        "in",
        "instanceof",
        "let",
        "new",
        "null",
        "of",
        "return",
        "set",
        "static",
        "super",
        "switch",
        "this",
        "throw",
        "true",
        "try",
        "typeof",
        "undefined",
        "var",
        "void",
        "while",
        "with",
        "yield",
    }
)
_JAVASCRIPT = _Dialect("JavaScript", "javascript", _javascript_parses, _JAVASCRIPT_KEYWORDS, ("//", "/*"), "'\"`")


def _dialect(tags: frozenset[str]) -> _Dialect | None:
    # The language whose fence tags these are (each language's name is one of its tags); None for another
    # language, whose text always reads as code (no parser here to say otherwise).
    return _PYTHON if LanguageName.python in tags else _JAVASCRIPT if LanguageName.javascript in tags else None


# Two words side by side, with only spaces between them: prose ("This adds the numbers"), unless one of
# them is a keyword ("def add", "return x", "for x in xs", "function add", "new Map").
_WORD_PAIR = re.compile(r"(?<!\w)([^\W\d]\w*+)(?=[ \t]+([^\W\d]\w*+))")  # possessive: linear
_CODE_CHARS = frozenset("=()[]{}<>+-*/%;@")


def _is_code_line(line: str, dialect: _Dialect) -> bool:
    """A line of code, even a broken one: no two plain words side by side once its strings and its
    comment are removed, and something only code has: a leading keyword or quote, a bracket or an
    operator (so 'Explanation:' and 'Solution' are not code lines; 'def add(a, b)' and 'return a +' are)."""
    bare = dialect.strings.sub("", line)
    for marker in dialect.comments:
        bare = bare.split(marker, 1)[0]
    if any(a not in dialect.keywords and b not in dialect.keywords for a, b in _WORD_PAIR.findall(bare)):
        return False
    leading = re.match(r"[^\W\d]\w*", bare.lstrip())
    keyworded = leading is not None and leading.group() in dialect.keywords
    return keyworded or line.lstrip().startswith(tuple(dialect.quotes)) or any(char in _CODE_CHARS for char in bare)


class _Reading(enum.IntEnum):
    """How much a text reads as code, in order."""

    PROSE = 0
    CODE = 1  # it parses (`sorry` does), or its first line is a line of code (broken code is)
    PROGRAM = 2  # both: it parses and starts with a line of code


def _reading(text: str, tags: frozenset[str]) -> _Reading:
    if not text.strip():
        return _Reading.PROSE
    dialect = _dialect(tags)
    if dialect is None:
        return _Reading.PROGRAM
    line = next(
        (line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith(dialect.comments)),
        "",
    )
    return _Reading(int(dialect.parses(text)) + int(bool(line) and _is_code_line(line, dialect)))


def reads_as_code(text: str, tags: frozenset[str]) -> bool:
    """Whether ``text`` reads as code in the language of ``tags``: it parses (Python after removing the
    common indentation, JavaScript as a script or a module), or its first line that is neither blank nor a
    comment is a line of code (``_is_code_line``). Blank text never does."""
    return _reading(text, tags) >= _Reading.CODE


def _fenced_blocks(text: str, start: int = 0) -> list[tuple[str, str]]:
    """(tag, code) of each block from ``start``: an opening fence, an optional language tag and the rest of
    its line, then everything up to the closing fence or the end (a completion cut off at
    max_completion_length still has its code scored). One pass over the text: no pattern that backtracks
    on hostile input."""
    blocks, start = [], text.find(FENCE, start)
    while start != -1:
        line_end = text.find("\n", start)
        if line_end == -1:
            break
        tag_match = _TAG.match(text, start + len(FENCE), line_end)
        tag = tag_match.group(1) if tag_match else ""
        end = text.find(FENCE, line_end + 1)
        blocks.append((tag, text[line_end + 1 : len(text) if end == -1 else end]))
        start = -1 if end == -1 else text.find(FENCE, end + len(FENCE))
    return blocks


def _closes_code(text: str, fence: int, tags: frozenset[str]) -> int | None:
    """Where the blocks after the reply's first fence (at ``fence``) begin, when that fence closes code
    the reply started with (rule 2): a lone fence (nothing after it on its line), the text before it
    reading as code, and more so than the text after it, up to the next fence (``_Reading``: a program
    before prose or broken code, or broken code before prose). None when it opens a block."""
    line_end = text.find("\n", fence)
    line_end = len(text) if line_end == -1 else line_end
    if text[fence + len(FENCE) : line_end].strip():
        return None  # a tag (```python) or more backticks: an opening fence
    following = text.find(FENCE, line_end)
    after = text[line_end : len(text) if following == -1 else following]
    before = _reading(text[:fence], tags)
    return line_end if before >= _Reading.CODE and before > _reading(after, tags) else None


def extract(text: str, tags: frozenset[str], which: Extract | str = Extract.first) -> Extraction:
    """The code of a completion whose language's fence tags are ``tags``, by the module's three rules."""
    try:
        which = Extract(which)
    except ValueError:
        raise ValueError(f"reward.extract must be 'first' or 'last', not {which!r}") from None
    dialect = _dialect(tags)
    name, tag = (dialect.name, dialect.tag) if dialect else (min(tags, default="code"), min(tags, default=""))
    if not text.strip():
        return Extraction("", Source.NONE, "no code: the reply is empty")
    fence = text.find(FENCE)
    if fence == -1:
        if reads_as_code(text, tags):
            return Extraction(text, Source.REPLY)
        return Extraction("", Source.NONE, f"no code: no ```{tag} block, and the reply does not read as {name}")
    found: list[Extraction] = []
    after = _closes_code(text, fence, tags)
    if after is not None:
        found.append(Extraction(text[:fence], Source.BEFORE_FENCE))
    blocks = _fenced_blocks(text, fence if after is None else after)
    for block_tag, code in blocks:
        ours = block_tag.lower() in tags
        if (ours and code.strip()) or (not block_tag and reads_as_code(code, tags)):
            found.append(Extraction(code, Source.BLOCK))
    if found:
        return found[0] if which is Extract.first else found[-1]
    if any(block_tag.lower() in tags for block_tag, _ in blocks):
        return Extraction("", Source.NONE, f"no code: the ```{tag} block is empty")
    others = sorted({f"```{block_tag}" for block_tag, _ in blocks if block_tag})
    parts = ([f"its blocks are {', '.join(others)}"] if others else []) + (
        [f"its untagged blocks do not read as {name}"] if any(not block_tag for block_tag, _ in blocks) else []
    )
    return Extraction("", Source.NONE, "; ".join([f"no code: no ```{tag} block", *parts]))


def extract_code(text: str, tags: frozenset[str], which: Extract | str = Extract.first) -> str:
    """The code of ``extract``: '' when the completion holds none."""
    return extract(text, tags, which).code


def completion_text(completion: object) -> str:
    """The text of a TRL completion: a plain string, or chat messages (the assistant's turn). Total: any other
    shape (None, a number, a message without content) is the text it holds, or empty."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, dict):
        completion = [completion]
    if not isinstance(completion, (list, tuple)):
        return ""
    return "".join(
        str(m.get("content") or "") if isinstance(m, dict) else m if isinstance(m, str) else "" for m in completion
    )
