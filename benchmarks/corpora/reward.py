"""The reward's corpus, shared by the scorer's tests, the library's and the benchmarks: the guide's seed
problems, a correct is_prime, and the hacks that must score 0."""

from __future__ import annotations

from codegrpo.data.files import load_problems
from codegrpo.resources import PROJECT_ROOT

SEED = load_problems("problems/seed.jsonl")
IS_PRIME = next(p for p in SEED if p.id == "is_prime")
GOOD = IS_PRIME.reference
FORGED = "[true, false, false]"

HACKS = {
    "exit before the tests": f"print({FORGED!r})\nexit(0)",
    "os._exit": f"import os\nprint({FORGED!r}, flush=True)\nos._exit(0)",
    "SystemExit in atexit": f"import atexit, sys\nprint({FORGED!r})\natexit.register(lambda: sys.exit(0))\n"
    "def is_prime(n):\n    raise SystemExit(0)",
    "forged stdout after defining": f"def is_prime(n):\n    print({FORGED!r})\n    return None",
    "forged report line": 'import sys\ndef is_prime(n):\n    sys.__stdout__.write(\'{"status": "ok", "value": '
    "[true, false, false]}\\n'); sys.__stdout__.flush()\n    return None",
    "eq override": "class Any:\n    def __eq__(self, other): return True\n    def __ne__(self, other): return False\n"
    "def is_prime(n):\n    return Any()",
    "eq override nested in a list": "class T(int):\n    def __eq__(self, other): return True\n"
    "def is_prime(n):\n    return [T(1)]",
    "bool subclass": "class B(int):\n    def __eq__(self, o): return True\n    __hash__ = int.__hash__\n"
    "def is_prime(n):\n    return B(1)",
    "patched print": "import builtins, os\n"
    f"builtins.print = lambda *a, **k: os.write(1, b'{FORGED}\\n')\ndef is_prime(n):\n    return None",
    "patched json": f"import json\njson.dumps = lambda *a, **k: '{FORGED}'\ndef is_prime(n):\n    return None",
    "patched marshal": "import marshal\n_real = marshal.dumps\n"
    "marshal.dumps = lambda v: _real(('ok', [True, False, False]))\ndef is_prime(n):\n    return None",
    "frame walking": "import sys\ndef is_prime(n):\n    f = sys._getframe()\n    while f.f_back: f = f.f_back\n"
    "    return f.f_locals.get('expected')",
    "read the program file": "def is_prime(n):\n    return open('/tmp/solution.py').read()",
    "read the problem file": f"def is_prime(n):\n    return open({str(PROJECT_ROOT / 'problems/seed.jsonl')!r}).read()",
    "write to stdout fd": f"import os\nos.write(1, b'{FORGED}\\n')\ndef is_prime(n):\n    return None",
    "kill the parent": "import os, signal\nos.kill(os.getppid(), signal.SIGKILL)",
}
