"""Issue 32, finding 2: the harness's audit hook sees a completion take frames through the standard
library (inspect.currentframe(), traceback.walk_stack(None), ...) as it sees sys._getframe called
directly, and still takes the library's own events (namedtuple's sys._getframe, a formatted traceback's
tb_frame) for the library's. Through the real reward, warm and cold, and in Superserve chunks.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from codegrpo.reward.verdict import Status
from tests.helpers.run_if import run_if
from tests.helpers.sandbox import PROBLEMS, backends, score

pytestmark = run_if(bwrap=True)

CORRECT = PROBLEMS["is_prime"].reference
TOKEN = "introspection:sys._getframe"


backend = backends("warm", "cold", "superserve")


def audit(backend, code: str) -> list[str]:
    """The harness's audit tokens for a right is_prime that first runs ``code``."""
    scored, result = score(backend, "is_prime", textwrap.dedent(code) + "\n" + CORRECT)
    assert scored.verdict.status is Status.PASSED, (scored.verdict, result.stderr[-2000:])
    return json.loads(result.stdout.strip().splitlines()[-1]).get("audit", [])


TAKES_FRAMES = {
    "inspect.currentframe": "import inspect\n_frame = inspect.currentframe()\n",
    "traceback.walk_stack": "import traceback\n_frames = [f for f, _ in traceback.walk_stack(None)]\n",
    "StackSummary.extract": "import traceback\n_s = traceback.StackSummary.extract(traceback.walk_stack(None))\n",
    "traceback.extract_stack": "import traceback\n_s = traceback.extract_stack()\n",
    "inspect.stack": "import inspect\n_s = inspect.stack(0)\n",
    "in a function": "import inspect\ndef _up():\n    return inspect.currentframe().f_back\n_f = _up()\n",
    "sys._getframe": "import sys\n_frame = sys._getframe()\n",
}


@pytest.mark.parametrize("way", TAKES_FRAMES)
def test_frames_taken_through_the_library_are_evidence(backend, way):
    assert TOKEN in audit(backend, TAKES_FRAMES[way])


def test_the_librarys_own_frame_lookups_are_not_evidence(backend):
    honest = """
        import collections, dataclasses, enum, logging, traceback, typing
        P = collections.namedtuple("P", "x y")
        Color = enum.Enum("Color", "RED GREEN")
        class Q(typing.NamedTuple):
            x: int
        @dataclasses.dataclass
        class D:
            x: int = 0
        logging.getLogger("quiet").debug("nothing")
        try:
            1 / 0
        except ZeroDivisionError:
            _text = traceback.format_exc()
    """
    assert not [token for token in audit(backend, honest) if token.startswith("introspection:")]
