"""Writes the sample files of the public code-RL datasets, each in its dataset's own schema and format,
and checks them: ``python tests/data/code_datasets/make_samples.py [--check]``.

The rows are written for this project (small problems, not copied from the datasets) and carry each
schema's quirks: call-based outputs wrapped in a one-element list, tests given as lists of lines,
empty test lists, an empty input_output, Python 2 and C++ solutions before the Python 3 one,
LiveCodeBench's compressed private tests (base64 + zlib + pickle of the JSON text, as
code_generation_lite ships them), LeetCode's class Solution, contest dates on both sides of a window.

``--check`` loads every file through codegrpo.data.public_datasets and runs the solution of each problem,
with plain python3, on every test input it produced, comparing the output token by token (numbers
within 1e-6) or the returned value with == : the datasets without a reference column (livecodebench,
deepcoder) are checked with the solutions kept here.
"""

from __future__ import annotations

import base64
import json
import pickle
import subprocess
import sys
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent

# stdin/stdout solutions, by key
SUM = "a, b = map(int, input().split())\nprint(a + b)\n"
REVERSE = "print(input()[::-1])\n"
VOWELS = "s = input()\nprint(sum(c in 'aeiouAEIOU' for c in s))\n"
MAXIMUM = "input()\nprint(max(map(int, input().split())))\n"
FACTORIAL = "import math\nprint(math.factorial(int(input())))\n"
FIZZBUZZ = (
    "for i in range(1, int(input()) + 1):\n"
    "    print('FizzBuzz' if i % 15 == 0 else 'Fizz' if i % 3 == 0 else 'Buzz' if i % 5 == 0 else i)\n"
)
SORTED = "import sys\nnums = sorted(map(int, sys.stdin.read().split()[1:]))\nprint(*nums)\n"
PALINDROME = "s = input().strip()\nprint('YES' if s == s[::-1] else 'NO')\n"
GCD = "import math\na, b = map(int, input().split())\nprint(math.gcd(a, b))\n"
DIGITS = "print(sum(int(d) for d in input().strip()))\n"
SQUARES = "for i in range(1, int(input()) + 1):\n    print(i * i)\n"
AVERAGE = "import sys\nxs = list(map(float, sys.stdin.read().split()[1:]))\nprint(f'{sum(xs) / len(xs):.6f}')\n"
PY2_SUM = "a, b = map(int, raw_input().split())\nprint a + b\n"  # a Python 2 solution: not a reference
CPP_SUM = '#include <cstdio>\nint main(){long long a,b;scanf("%lld %lld",&a,&b);printf("%lld\\n",a+b);}\n'

# call-based solutions, by key
ADD = "def add(a, b):\n    return a + b\n"
IS_EVEN = "def is_even(n):\n    return n % 2 == 0\n"
REVERSE_LIST = "def reverse_list(items):\n    return items[::-1]\n"
COUNT_WORDS = "def count_words(text):\n    return len(text.split())\n"
MIN_MAX = "def min_max(items):\n    return [min(items), max(items)]\n"
TWO_SUM = (
    "class Solution:\n"
    "    def twoSum(self, nums, target):\n"
    "        seen = {}\n"
    "        for i, x in enumerate(nums):\n"
    "            if target - x in seen:\n"
    "                return [seen[target - x], i]\n"
    "            seen[x] = i\n"
)
CLIMB = (
    "class Solution:\n"
    "    def climbStairs(self, n):\n"
    "        a, b = 1, 1\n"
    "        for _ in range(n):\n"
    "            a, b = b, a + b\n"
    "        return a\n"
)

SUM_TESTS = (["1 2\n", "-5 5\n", "100 23\n", "7 8\n", "0 0\n"], ["3\n", "0\n", "123\n", "15\n", "0\n"])
REVERSE_TESTS = (["abc\n", "racecar\n", "ab\n"], ["cba\n", "racecar\n", "ba\n"])
VOWEL_TESTS = (
    ["hello\n", "AEIOU xyz\n", "rhythm\n", "banana\n", "Queue\n", "a\n"],
    ["2\n", "5\n", "0\n", "3\n", "4\n", "1\n"],
)
MAX_TESTS = (
    ["3\n1 5 2\n", "1\n-7\n", "4\n9 9 1 0\n", "5\n1 2 3 4 5\n", "2\n-1 -2\n"],
    ["5\n", "-7\n", "9\n", "5\n", "-1\n"],
)
FACT_TESTS = (["0\n", "5\n", "10\n", "20\n", "3\n"], ["1\n", "120\n", "3628800\n", "2432902008176640000\n", "6\n"])
FIZZ_TESTS = (
    ["3\n", "5\n", "15\n"],
    [
        "1\n2\nFizz\n",
        "1\n2\nFizz\n4\nBuzz\n",
        "1\n2\nFizz\n4\nBuzz\nFizz\n7\n8\nFizz\nBuzz\n11\nFizz\n13\n14\nFizzBuzz\n",
    ],
)
SORT_TESTS = (
    ["3\n3 1 2\n", "1\n5\n", "5\n5 4 3 2 1\n", "4\n0 -1 1 0\n", "2\n2 2\n", "3\n10 9 8\n"],
    ["1 2 3\n", "5\n", "1 2 3 4 5\n", "-1 0 0 1\n", "2 2\n", "8 9 10\n"],
)
PAL_TESTS = (["abba\n", "abc\n", "x\n", "noon\n", "ab\n"], ["YES\n", "NO\n", "YES\n", "YES\n", "NO\n"])
GCD_TESTS = (
    ["12 18\n", "7 13\n", "100 10\n", "0 5\n", "48 36\n", "17 17\n"],
    ["6\n", "1\n", "10\n", "5\n", "12\n", "17\n"],
)
DIGIT_TESTS = (["123\n", "0\n", "99999\n", "1000001\n", "55\n"], ["6\n", "0\n", "45\n", "2\n", "10\n"])
SQUARE_TESTS = (["1\n", "3\n", "5\n"], ["1\n", "1\n4\n9\n", "1\n4\n9\n16\n25\n"])
AVG_TESTS = (
    ["2\n1 2\n", "3\n1 1 2\n", "1\n0.5\n", "4\n1 2 3 4\n", "2\n-1 1\n"],
    ["1.500000\n", "1.333333\n", "0.500000\n", "2.500000\n", "0.000000\n"],
)

ADD_TESTS = ([[1, 2], [-1, 1], [10, 20], [0, 0], [2, 2]], [3, 0, 30, 0, 4])
EVEN_TESTS = ([[2], [3], [0], [-4], [7]], [True, False, True, True, False])
REVLIST_TESTS = ([[[1, 2, 3]], [[]], [["a", "b"]], [[5]], [[1, 1, 2]]], [[3, 2, 1], [], ["b", "a"], [5], [2, 1, 1]])
WORDS_TESTS = ([["hello world"], [""], ["a b  c"], ["one"], ["x y z w"]], [2, 0, 3, 1, 4])
MINMAX_TESTS = ([[[3, 1, 2]], [[5]], [[-1, 4, 0]], [[2, 2]], [[9, -9]]], [[1, 3], [5, 5], [-1, 4], [2, 2], [-9, 9]])


def wrap(outputs: list) -> list:
    """APPS's and TACO's call-based convention: each output wrapped in a one-element list."""
    return [[o] for o in outputs]


def in_outs(tests: tuple[list, list], fn_name: str | None = None, wrapped: bool = False) -> str:
    inputs, outputs = tests
    value = {"inputs": inputs, "outputs": wrap(outputs) if wrapped else outputs}
    if fn_name:
        value["fn_name"] = fn_name
    return json.dumps(value)


def lines(tests: tuple[list, list]) -> tuple[list, list]:
    """The same tests with each input and output given as a list of lines (a TACO quirk)."""
    return [t.rstrip("\n").split("\n") for t in tests[0]], [t.rstrip("\n").split("\n") for t in tests[1]]


# -- APPS (codeparrot/apps train.jsonl) ---------------------------------------------------------------


def apps_rows() -> list[dict]:
    def row(problem_id, question, solutions, io, starter="", difficulty="introductory"):
        return {
            "problem_id": problem_id,
            "question": question,
            "solutions": json.dumps(solutions) if solutions else "",
            "input_output": io,
            "difficulty": difficulty,
            "url": f"https://example.org/apps/{problem_id}",
            "starter_code": starter,
        }

    return [
        row(
            0,
            "Read two integers a and b and print a + b.\n\n-----Example-----\nInput\n1 2\nOutput\n3",
            [PY2_SUM, SUM],
            in_outs(SUM_TESTS),
        ),
        row(1, "Print the line you read, reversed.", [REVERSE], in_outs(REVERSE_TESTS)),
        row(2, "Count the vowels of a line.", [VOWELS], in_outs(VOWEL_TESTS)),
        row(3, "The first line holds n, the second n integers: print the largest.", [MAXIMUM], in_outs(MAX_TESTS)),
        row(4, "Print n! for the n you read.", [FACTORIAL], in_outs(FACT_TESTS)),
        row(5, "Print FizzBuzz from 1 to n, one value a line.", [FIZZBUZZ], in_outs(FIZZ_TESTS)),
        row(6, "Write add(a, b) returning a + b.", [ADD], in_outs(ADD_TESTS, "add", wrapped=True), "def add(a, b):\n"),
        row(7, "Write is_even(n).", [IS_EVEN], in_outs(EVEN_TESTS, "is_even", wrapped=True), "def is_even(n):\n"),
        # outputs wrapped: each is the one-element list holding the returned list
        row(
            8,
            "Write reverse_list(items) returning the items in reverse order.",
            [REVERSE_LIST],
            in_outs(REVLIST_TESTS, "reverse_list", wrapped=True),
            "def reverse_list(items):\n",
        ),
        # not wrapped (some outputs are not one-element lists): kept as they are
        row(
            9,
            "Write min_max(items) returning [smallest, largest].",
            [MIN_MAX],
            in_outs(MINMAX_TESTS, "min_max"),
            "def min_max(items):\n",
        ),
        row(10, "A problem whose tests were lost.", [SUM], ""),  # empty input_output: skipped
        row(11, "A problem with no test cases.", [SUM], json.dumps({"inputs": [], "outputs": []})),  # skipped
        row(
            12,
            "Read two integers a and b and print a + b.\n\n-----Example-----\nInput\n1 2\nOutput\n3",
            [SUM],
            in_outs(SUM_TESTS),
        ),  # the same prompt as problem 0: a duplicate
    ]


# -- TACO (BAAI/TACO train/*.arrow) ---------------------------------------------------------------------


def taco_rows() -> list[dict]:
    def row(question, solutions, io, starter="", time_limit=None, source="codeforces"):
        return {
            "question": question,
            "solutions": json.dumps(solutions),
            "starter_code": starter,
            "input_output": io,
            "difficulty": "EASY",
            "raw_tags": "[]",
            "name": None,
            "source": source,
            "tags": "[]",
            "skill_types": "[]",
            "url": "https://example.org/taco",
            "Expected Auxiliary Space": None,
            "time_limit": time_limit,
            "date": None,
            "picture_num": None,
            "memory_limit": None,
            "Expected Time Complexity": None,
        }

    return [
        row("Print the gcd of the two integers you read.", [GCD], in_outs(GCD_TESTS), time_limit="2 seconds"),
        row("Print the sum of the digits of n.", [DIGITS], in_outs(DIGIT_TESTS), time_limit="1.5 seconds"),
        # tests given as lists of lines
        row("Print 1, 4, 9, ... up to n squared, one a line.", [SQUARES], in_outs(lines(SQUARE_TESTS))),
        row("Read n and n integers; print them sorted.", [PY2_SUM, SORTED], in_outs(SORT_TESTS)),
        row("Print YES if the word is a palindrome, else NO.", [PALINDROME], in_outs(PAL_TESTS)),
        row("Print the average of n numbers with 6 decimals.", [AVERAGE], in_outs(AVG_TESTS)),
        row("Write add(a, b).", [ADD], in_outs(ADD_TESTS, "add", wrapped=True), "def add(a, b):\n", source="codewars"),
        row(
            "Write count_words(text): how many words.",
            [COUNT_WORDS],
            in_outs(WORDS_TESTS, "count_words", wrapped=True),
            "def count_words(text):\n",
            source="codewars",
        ),
        row(
            "Write reverse_list(items).",
            [REVERSE_LIST],
            in_outs(REVLIST_TESTS, "reverse_list", wrapped=True),
            "def reverse_list(items):\n",
            source="codewars",
        ),
        row(
            "Write is_even(n).",
            [IS_EVEN],
            in_outs(EVEN_TESTS, "is_even", wrapped=True),
            "def is_even(n):\n",
            source="codewars",
        ),
        row("A problem with no test cases.", [SUM], json.dumps({"inputs": [], "outputs": []})),  # skipped
        row("Read two integers and print their sum.", [SUM], in_outs(SUM_TESTS), time_limit="1 second"),
    ]


# -- CodeContests (deepmind/code_contests data/train-*.parquet) --------------------------------------------


def code_contests_rows() -> list[dict]:
    def split(tests):
        return {"input": list(tests[0]), "output": list(tests[1])}

    def row(name, description, public, private, generated, solutions, seconds=2, input_file=""):
        languages, sources = zip(*solutions, strict=True) if solutions else ((), ())
        return {
            "name": name,
            "description": description,
            "public_tests": split(public),
            "private_tests": split(private),
            "generated_tests": split(generated),
            "source": 2,
            "difficulty": 7,
            "solutions": {"language": list(languages), "solution": list(sources)},
            "incorrect_solutions": {"language": [3], "solution": ["print(0)\n"]},
            "cf_contest_id": 1,
            "cf_index": "A",
            "cf_points": 500.0,
            "cf_rating": 800,
            "cf_tags": ["math"],
            "is_description_translated": False,
            "untranslated_description": "",
            "time_limit": {"seconds": seconds, "nanos": 500000000 if seconds == 1 else 0},
            "memory_limit_bytes": 256000000,
            "input_file": input_file,
            "output_file": "",
        }

    def cut(tests, start, stop):
        return tests[0][start:stop], tests[1][start:stop]

    return [
        row(
            "1_A. Sum",
            "Print a + b.\n\nExamples\n\nInput\n\n1 2\n\nOutput\n\n3",
            cut(SUM_TESTS, 0, 1),
            cut(SUM_TESTS, 1, 3),
            cut(SUM_TESTS, 3, 5),
            [(2, CPP_SUM), (1, PY2_SUM), (3, SUM)],
        ),
        row(
            "2_A. Reverse",
            "Reverse the line.",
            cut(REVERSE_TESTS, 0, 1),
            cut(REVERSE_TESTS, 1, 3),
            ([], []),
            [(3, REVERSE)],
            seconds=1,
        ),
        row(
            "3_A. Vowels",
            "Count vowels.",
            cut(VOWEL_TESTS, 0, 2),
            cut(VOWEL_TESTS, 2, 4),
            cut(VOWEL_TESTS, 4, 6),
            [(3, VOWELS)],
        ),
        row("4_A. Max", "Largest of n integers.", cut(MAX_TESTS, 0, 1), cut(MAX_TESTS, 1, 5), ([], []), [(3, MAXIMUM)]),
        row(
            "5_A. Factorial",
            "Print n!.",
            cut(FACT_TESTS, 0, 2),
            cut(FACT_TESTS, 2, 5),
            ([], []),
            [(4, "class Main {}"), (3, FACTORIAL)],
        ),
        row("6_A. FizzBuzz", "FizzBuzz to n.", cut(FIZZ_TESTS, 0, 1), cut(FIZZ_TESTS, 1, 3), ([], []), [(3, FIZZBUZZ)]),
        row("7_A. Sort", "Sort n integers.", cut(SORT_TESTS, 0, 2), ([], []), cut(SORT_TESTS, 2, 6), [(3, SORTED)]),
        row("8_A. Palindrome", "YES or NO.", cut(PAL_TESTS, 0, 1), cut(PAL_TESTS, 1, 5), ([], []), [(3, PALINDROME)]),
        row("9_A. Gcd", "Print gcd(a, b).", cut(GCD_TESTS, 0, 2), cut(GCD_TESTS, 2, 6), ([], []), [(3, GCD)]),
        row("10_A. Digits", "Digit sum.", cut(DIGIT_TESTS, 0, 1), cut(DIGIT_TESTS, 1, 5), ([], []), [(3, DIGITS)]),
        row("11_A. Empty", "No tests at all.", ([], []), ([], []), ([], []), [(3, SUM)]),  # skipped: no tests
        row(
            "12_A. File",
            "Reads input.txt.",
            cut(SUM_TESTS, 0, 1),
            ([], []),
            ([], []),
            [(3, SUM)],
            input_file="input.txt",
        ),  # skipped: reads a file
    ]


# -- LiveCodeBench (livecodebench/code_generation_lite test*.jsonl) ------------------------------------------


def compress(cases: list[dict]) -> str:
    """How code_generation_lite stores private tests: base64(zlib(pickle(json text)))."""
    return base64.b64encode(zlib.compress(pickle.dumps(json.dumps(cases)))).decode()


def stdin_cases(tests) -> list[dict]:
    return [{"input": i, "output": o, "testtype": "stdin"} for i, o in zip(*tests, strict=True)]


def functional_cases(tests) -> list[dict]:
    return [
        {"input": "\n".join(json.dumps(a) for a in args), "output": json.dumps(out), "testtype": "functional"}
        for args, out in zip(*tests, strict=True)
    ]


TWO_SUM_TESTS = (
    [[[2, 7, 11, 15], 9], [[3, 2, 4], 6], [[3, 3], 6], [[1, 5, 9], 14], [[0, 4, 3, 0], 0]],
    [[0, 1], [1, 2], [0, 1], [1, 2], [0, 3]],
)
CLIMB_TESTS = ([[1], [2], [3], [5], [10]], [1, 2, 3, 8, 89])


def livecodebench_rows() -> list[dict]:
    def row(qid, title, content, platform, date, cases, starter="", func_name=None, compressed=True):
        public, private = cases[:1], cases[1:]
        return {
            "question_title": title,
            "question_content": content,
            "platform": platform,
            "question_id": qid,
            "contest_id": f"contest-{qid}",
            "contest_date": date,
            "starter_code": starter,
            "difficulty": "easy",
            "public_test_cases": json.dumps(public),
            "private_test_cases": compress(private) if compressed else json.dumps(private),
            "metadata": json.dumps({"func_name": func_name} if func_name else {}),
        }

    return [
        row(
            "abc001_a",
            "Sum",
            "Print A + B.\n\nSample Input 1\n\n1 2\n\nSample Output 1\n\n3",
            "atcoder",
            "2023-05-06T00:00:00",
            stdin_cases(SUM_TESTS),
        ),
        row("abc002_a", "Reverse", "Print S reversed.", "atcoder", "2023-07-01T00:00:00", stdin_cases(REVERSE_TESTS)),
        row(
            "abc003_a",
            "Vowels",
            "Count the vowels of S.",
            "atcoder",
            "2023-09-02T00:00:00",
            stdin_cases(VOWEL_TESTS),
            compressed=False,
        ),  # private tests as plain JSON
        row(
            "1900A",
            "Max",
            "Print the largest of N integers.",
            "codeforces",
            "2023-11-20T00:00:00",
            stdin_cases(MAX_TESTS),
        ),
        row("1910A", "Factorial", "Print N!.", "codeforces", "2024-01-15T00:00:00", stdin_cases(FACT_TESTS)),
        row(
            "two-sum",
            "Two Sum",
            "Return the indices of the two numbers that add up to target.",
            "leetcode",
            "2024-03-02T00:00:00",
            functional_cases(TWO_SUM_TESTS),
            "class Solution:\n    def twoSum(self, nums: List[int], target: int) -> List[int]:\n        ",
            "twoSum",
        ),
        row(
            "climbing-stairs",
            "Climbing Stairs",
            "In how many ways can you climb n stairs by 1 or 2?",
            "leetcode",
            "2024-05-11T00:00:00",
            functional_cases(CLIMB_TESTS),
            "class Solution:\n    def climbStairs(self, n: int) -> int:\n        ",
            "climbStairs",
        ),
        row(
            "abc350_a",
            "Palindrome",
            "Print YES if S is a palindrome.",
            "atcoder",
            "2024-06-08T00:00:00",
            stdin_cases(PAL_TESTS),
        ),
        row("abc360_a", "Gcd", "Print gcd(A, B).", "atcoder", "2024-08-10T00:00:00", stdin_cases(GCD_TESTS)),
        row(
            "1990A",
            "Digits",
            "Print the digit sum of N.",
            "codeforces",
            "2024-09-01T00:00:00",
            stdin_cases(DIGIT_TESTS),
        ),
        row(
            "abc370_a",
            "Squares",
            "Print the squares of 1..N.",
            "atcoder",
            "2024-10-05T00:00:00",
            stdin_cases(SQUARE_TESTS),
        ),
        row(
            "abc380_a",
            "Sort",
            "Print the N integers sorted.",
            "atcoder",
            "2025-01-11T00:00:00",
            stdin_cases(SORT_TESTS),
        ),
    ]


LCB_SOLUTIONS = {
    "abc001_a": SUM,
    "abc002_a": REVERSE,
    "abc003_a": VOWELS,
    "1900A": MAXIMUM,
    "1910A": FACTORIAL,
    "two-sum": TWO_SUM,
    "climbing-stairs": CLIMB,
    "abc350_a": PALINDROME,
    "abc360_a": GCD,
    "1990A": DIGITS,
    "abc370_a": SQUARES,
    "abc380_a": SORTED,
}


# -- DeepCoder (agentica-org/DeepCoder-Preview-Dataset <config>/train-*.parquet) ----------------------------


def deepcoder_rows() -> list[tuple[dict, str]]:
    def row(problem, tests, solution, func_name=None, starter=""):
        return {
            "problem": problem,
            "tests": json.dumps(tests),
            "metadata": {"func_name": func_name},
            "starter_code": starter,
        }, solution

    def stdio(tests, key="type"):  # primeintellect / codeforces
        return [{"input": i, "output": o, key: "stdin_stdout"} for i, o in zip(*tests, strict=True)]

    return [
        row("Print a + b.", json.loads(in_outs(SUM_TESTS)), SUM),  # taco config: {"inputs", "outputs"}
        row("Write add(a, b).", json.loads(in_outs(ADD_TESTS, "add", wrapped=True)), ADD),  # taco call-based
        row("Reverse the line.", stdio(REVERSE_TESTS), REVERSE),  # primeintellect
        row("Count vowels.", stdio(VOWEL_TESTS), VOWELS),
        # primeintellect call-based: fn_name on the tests, TACO's wrapped outputs
        row(
            "Write is_even(n).",
            [
                {"input": i, "output": [o], "fn_name": "is_even", "type": "function_call"}
                for i, o in zip(*EVEN_TESTS, strict=True)
            ],
            IS_EVEN,
        ),
        row("Largest of n integers.", stdin_cases(MAX_TESTS), MAXIMUM),  # lcbv5 stdin
        row(
            "Return the indices of two numbers adding up to target.",
            functional_cases(TWO_SUM_TESTS),
            TWO_SUM,
            "twoSum",
            "class Solution:\n    def twoSum(self, nums: List[int], target: int) -> List[int]:\n        ",
        ),
        row(
            "Ways to climb n stairs.",
            functional_cases(CLIMB_TESTS),
            CLIMB,
            "climbStairs",
            "class Solution:\n    def climbStairs(self, n: int) -> int:\n        ",
        ),
        row("Print n!.", stdio(FACT_TESTS, "testtype"), FACTORIAL),  # codeforces
        row("Print gcd(a, b).", stdio(GCD_TESTS), GCD),
        row("Digit sum of n.", stdio(DIGIT_TESTS), DIGITS),
        row("A problem with no tests.", [], SUM),  # skipped
    ]


# -- open-r1/verifiable-coding-problems-python (data/train-*.parquet) ----------------------------------------


def verifiable_coding_rows() -> list[dict]:
    def row(problem_id, statement, tests, solution, language="python", time_limit="2 seconds"):
        cases = [
            {"fn_name": None, "input": i, "output": o, "type": "stdin_stdout"} for i, o in zip(*tests, strict=True)
        ]
        return {
            "source": "codeforces",
            "task_type": "verifiable_code",
            "in_source_id": problem_id,
            "problem_statement": statement,
            "gold_standard_solution": f"```python\n{solution}```",
            "verification_info": {"language": language, "test_cases": cases},
            "metadata": {"difficulty": 5, "memory_limit": "256 megabytes", "time_limit": time_limit},
            "problem_id": f"vfc_{problem_id}",
        }

    function_call = row("fc", "Write add(a, b).", ([], []), ADD)
    function_call["verification_info"]["test_cases"] = [
        {"fn_name": "add", "input": "[1, 2]", "output": "[3]", "type": "function_call"}
    ]  # skipped
    return [
        row(
            "1",
            "Solve the following coding problem using the programming language python:\n\nPrint a + b.",
            SUM_TESTS,
            SUM,
        ),
        row("2", "Reverse the line.", REVERSE_TESTS, REVERSE),
        row("3", "Count vowels.", VOWEL_TESTS, VOWELS, time_limit=None),
        row("4", "Largest of n integers.", MAX_TESTS, MAXIMUM),
        row("5", "Print n!.", FACT_TESTS, FACTORIAL),
        row("6", "FizzBuzz.", FIZZ_TESTS, FIZZBUZZ),
        row("7", "Sort.", SORT_TESTS, SORTED),
        row("8", "Palindrome.", PAL_TESTS, PALINDROME),
        row("9", "Gcd.", GCD_TESTS, GCD),
        row("10", "Average with 6 decimals.", AVG_TESTS, AVERAGE),
        row("11", "No tests.", ([], []), SUM),  # skipped: no tests
        row("12", "Sum in JavaScript.", SUM_TESTS, SUM, language="javascript"),  # skipped: not Python
        function_call,
    ]


# -- evalplus/humanevalplus (EvalPlus's compatible_humaneval_plus_*.jsonl) -----------------------------------

# The shape of EvalPlus's checks: an assertion that imports numpy for assert_allclose (reached when a float answer
# is not exactly equal), a check over inputs and expected outputs, a poly-style check of its own helper, and a
# cross-check against a reference for answers too large to store.
PLUS_ASSERTION = """import numpy as np

def is_floats(x) -> bool:
    if isinstance(x, float):
        return True
    if isinstance(x, (list, tuple)) and x:
        return all(isinstance(i, float) for i in x)
    if isinstance(x, np.ndarray):
        return x.dtype == np.float64 or x.dtype == np.float32
    return False

def assertion(out, exp, atol):
    exact_match = out == exp
    if atol == 0 and is_floats(exp):
        atol = 1e-6
    if not exact_match and atol != 0:
        np.testing.assert_allclose(out, exp, atol=atol)
    else:
        assert exact_match
"""


def plus_check(inputs: list, results: list, atol: float = 0) -> str:
    return (
        f"\n\n{PLUS_ASSERTION}\n\ndef check(candidate):\n    inputs = {inputs!r}\n    results = {results!r}\n"
        f"    for i, (inp, exp) in enumerate(zip(inputs, results)):\n        assertion(candidate(*inp), exp, {atol})\n"
    )


HALVES = "    return [x / 2 for x in xs]\n"
SECOND_ROOT = (
    "    lo, hi = 0.0, max(1.0, c)\n    for _ in range(200):\n        mid = (lo + hi) / 2\n"
    "        if mid * mid < c:\n            lo = mid\n        else:\n            hi = mid\n    return (lo,)\n"
)
TRIANGLE = "    return [i * (i + 1) // 2 for i in range(n + 1)]\n"


def humaneval_plus_rows() -> list[dict]:
    def row(n, signature, doc, solution, entry_point, test):
        prompt = f'{signature}\n    """{doc}"""\n'
        return {
            "task_id": f"HumanEval/{n}",
            "prompt": prompt,
            "canonical_solution": solution,
            "entry_point": entry_point,
            "test": test,
        }

    means = [[[1.0, 2.0]], [[0.1, 0.2, 0.3]], [[-4.5]], [[1e-9, 3e-9]]]
    roots = "\n".join(
        [
            "import math",
            "",
            "def _root_error(root, c):",
            "    return abs(root * root - c)",
            "",
            "def check(candidate):",
            f"    inputs = {[[2.0], [9.0], [0.25], [1e6]]!r}",
            "    for i, inp in enumerate(inputs):",
            "        assert _root_error(*candidate(*inp), *inp) <= 1e-06 * max(1.0, inp[0])",
            "",
        ]
    )
    triangle_reference = "def ref_func(n: int) -> list:\n" + TRIANGLE
    triangles = (
        f"\n{PLUS_ASSERTION}\n\n{triangle_reference}\n\ndef check(candidate):\n"
        f"    inputs = {[[0], [1], [5], [300]]!r}\n"
        "    for i, inp in enumerate(inputs):\n        assertion(candidate(*inp), ref_func(*inp), 0)\n"
    )
    return [
        row(
            0,
            "def add(a: int, b: int) -> int:",
            "The sum of a and b.",
            "    return a + b\n",
            "add",
            plus_check([[1, 2], [-5, 5], [10**20, 1], [0, 0]], [3, 0, 10**20 + 1, 0]),
        ),
        row(
            1,
            "def mean(xs: list) -> float:",
            "The mean of xs.",
            "    return sum(xs) / len(xs)\n",
            "mean",
            plus_check(means, [sum(x[0]) / len(x[0]) for x in means]),
        ),
        row(
            2,
            "def halves(xs: list) -> list:",
            "Each of xs halved.",
            HALVES,
            "halves",
            plus_check([[[1.0, 3.0]], [[0.3, 0.1]], [[]]], [[0.5, 1.5], [0.15, 0.05], []], 1e-09),
        ),
        row(
            3,
            "def words(s: str) -> list:",
            "The words of s.",
            "    return s.split()\n",
            "words",
            plus_check([["a b"], [""], ["  x  y z "]], [["a", "b"], [], ["x", "y", "z"]]),
        ),
        row(
            4,
            "def second_root(c: float) -> tuple:",
            "A root of x * x - c, as a 1-tuple.",
            SECOND_ROOT,
            "second_root",
            roots,
        ),
        row(5, "def triangle(n: int) -> list:", "The triangular numbers 0..n.", TRIANGLE, "triangle", triangles),
    ]


# -- newfacade/LeetCodeDataset (its v0.3 files' layout, and one row of v1/v2's, meta nested) -----------------------

LEETCODE_IMPORTS = (  # the shape of the dataset's prompt field: the judge's imports and, in v0.3, node helpers
    "import random\nimport functools\nimport collections\nimport string\nimport math\nimport datetime\n\n"
    "from typing import *\nfrom functools import *\nfrom collections import *\nfrom itertools import *\n"
    "from heapq import *\nfrom bisect import *\nfrom string import *\nfrom operator import *\nfrom math import *\n\n"
    "inf = float('inf')\n\nclass ListNode:\n    def __init__(self, val=0, next=None):\n        self.val = val\n"
    "        self.next = next\n\ndef list_node(values: list):\n    head = ListNode()\n    p = head\n"
    "    for val in values:\n        p.next = ListNode(val)\n        p = p.next\n    return head.next\n\n"
    "def is_same_list(p1, p2):\n    while p1 and p2:\n        if p1.val != p2.val:\n            return False\n"
    "        p1, p2 = p1.next, p2.next\n    return p1 is None and p2 is None\n"
)


def leetcode_rows() -> list[dict]:
    def row(slug, number, difficulty, description, starter, completion, entry, asserts, date):
        query = f"{description}\n\n### Format: Use the starter code.\n```python\n{starter}\n```"
        return {
            "task_id": slug,
            "question_id": number,
            "difficulty": difficulty,
            "tags": ["Array"],
            "problem_description": description,
            "starter_code": starter,
            "estimated_date": date,
            "prompt": LEETCODE_IMPORTS,
            "completion": completion,
            "entry_point": entry,
            "test": "def check(candidate):\n" + "".join(f"    assert {a}\n" for a in asserts),
            "query": query,
            "response": f"```python\n{completion}```",
        }

    two_sum = (
        "class Solution:\n    def twoSum(self, nums: List[int], target: int) -> List[int]:\n"
        "        seen = {}\n        for i, x in enumerate(nums):\n            if target - x in seen:\n"
        "                return [seen[target - x], i]\n            seen[x] = i\n"
    )
    prefix = (
        "class Solution:\n    def longestCommonPrefix(self, strs: List[str]) -> str:\n"
        "        first = strs[0]\n        for i, c in enumerate(first):\n"
        "            if any(i >= len(s) or s[i] != c for s in strs):\n                return first[:i]\n"
        "        return first\n"
    )
    subarray = (  # inf is the judge's import, not the completion's
        "class Solution:\n    def maxSubArray(self, nums: List[int]) -> int:\n        best, run = -inf, 0\n"
        "        for x in nums:\n            run = max(run + x, x)\n            best = max(best, run)\n"
        "        return best\n"
    )
    pairs = (
        "class Solution:\n    def countPairs(self, nums: List[int], k: int) -> int:\n        seen = Counter()\n"
        "        total = 0\n        for x in nums:\n            total += seen[k - x]\n            seen[x] += 1\n"
        "        return total\n"
    )
    average = (
        "class Solution:\n    def average(self, salary: List[int]) -> float:\n"
        "        return (sum(salary) - max(salary) - min(salary)) / (len(salary) - 2)\n"
    )
    reverse = (
        "class Solution:\n    def reverseList(self, head: Optional[ListNode]) -> Optional[ListNode]:\n"
        "        prev = None\n        while head:\n            head.next, prev, head = prev, head, head.next\n"
        "        return prev\n"
    )
    stack = "class MinStack:\n    def __init__(self):\n        self.items = []\n"
    rows = [
        row(
            "two-sum",
            1,
            "Easy",
            "Given nums and target, return the indices of the two numbers that add up to target.",
            "class Solution:\n    def twoSum(self, nums: List[int], target: int) -> List[int]:\n        ",
            two_sum,
            "Solution().twoSum",
            [
                "candidate(nums = [2,7,11,15], target = 9) == [0,1]",
                "candidate(nums = [3,2,4], target = 6) == [1,2]",
                "candidate(target = 6, nums = [3,3]) == [0,1]",
            ],
            "2015-08-07T00:00:00",
        ),
        row(
            "longest-common-prefix",
            14,
            "Easy",
            "Return the longest common prefix of the strings.",
            "class Solution:\n    def longestCommonPrefix(self, strs: List[str]) -> str:\n        ",
            prefix,
            "Solution().longestCommonPrefix",
            [
                'candidate(["flower","flow","flight"]) == "fl"',
                'candidate(strs = ["dog","racecar","car"]) == ""',
                'candidate(strs = ["a"]) == "a"',
            ],
            "2015-08-07T00:00:00",
        ),
        row(
            "maximum-subarray",
            53,
            "Medium",
            "Return the largest sum of a non-empty subarray.",
            "class Solution:\n    def maxSubArray(self, nums: List[int]) -> int:\n        ",
            subarray,
            "Solution().maxSubArray",
            [
                "candidate(nums = [-2,1,-3,4,-1,2,1,-5,4]) == 6",
                "candidate(nums = [1]) == 1",
                "candidate(nums = [-3,-1,-2]) == -1",
            ],
            "2015-08-07T00:00:00",
        ),
        row(
            "count-pairs-summing-to-k",
            3200,
            "Medium",
            "Return the number of pairs i < j with nums[i] + nums[j] == k.",
            "class Solution:\n    def countPairs(self, nums: List[int], k: int) -> int:\n        ",
            pairs,
            "Solution().countPairs",
            [
                "candidate(nums = [1,2,3,4], k = 5) == 2",
                "candidate(nums = [1,1,1], k = 2) == 3",
                "candidate(nums = [5], k = 10) == 0",
            ],
            "2024-08-15T00:00:00",
        ),
        row(
            "average-salary-excluding-the-minimum-and-maximum-salary",
            1491,
            "Easy",
            "Return the average salary without the minimum and the maximum.",
            "class Solution:\n    def average(self, salary: List[int]) -> float:\n        ",
            average,
            "Solution().average",
            ["candidate(salary = [4000,3000,1000,2000]) == 2500.0", "candidate(salary = [1000,2000,3000]) == 2000.0"],
            "2020-06-27T00:00:00",
        ),
        row(  # skipped: its checks build linked lists with the prompt's helpers
            "reverse-linked-list",
            206,
            "Easy",
            "Reverse a singly linked list.",
            "class Solution:\n    def reverseList(self, head: Optional[ListNode]) -> Optional[ListNode]:\n        ",
            reverse,
            "Solution().reverseList",
            ["is_same_list(candidate(head = list_node([1,2,3])), list_node([3,2,1]))"],
            "2015-08-07T00:00:00",
        ),
        row(  # skipped: a design problem, no method of class Solution
            "min-stack",
            155,
            "Medium",
            "Design a stack that returns its minimum.",
            "class MinStack:\n    def __init__(self):\n        ",
            stack,
            "MinStack",
            ["candidate() is not None"],
            "2015-08-07T00:00:00",
        ),
    ]
    valid = (
        "class Solution:\n    def isValid(self, s: str) -> bool:\n        pairs = {')': '(', ']': '[', '}': '{'}\n"
        "        stack = []\n        for c in s:\n            if c in pairs:\n"
        "                if not stack or stack.pop() != pairs[c]:\n                    return False\n"
        "            else:\n                stack.append(c)\n        return not stack\n"
    )
    rows.append(  # v1/v2's layout: the query (description and starter code) and difficulty under meta
        {
            "task_id": "valid-parentheses",
            "prompt": LEETCODE_IMPORTS.split("class ListNode")[0],
            "entry_point": "Solution().isValid",
            "test": "def check(candidate):\n    assert candidate(s = '()[]{}') == True\n"
            "    assert candidate(s = '(]') == False\n    assert candidate(s = '([])') == True\n",
            "completion": valid,
            "meta": {
                "question_id": 20,
                "difficulty": "Easy",
                "lang_code": "class Solution:\n    def isValid(self, s: str) -> bool:",
                "question_title": "Valid Parentheses",
                "query": "Given a string s of brackets, say whether it is valid.\n\n```python\nclass Solution:\n"
                "    def isValid(self, s: str) -> bool:\n```",
                "response": f"```python\n{valid}```",
            },
        }
    )
    return rows


def write() -> None:
    from datasets import Dataset

    HERE.mkdir(parents=True, exist_ok=True)
    (HERE / "apps.jsonl").write_text("".join(json.dumps(r) + "\n" for r in apps_rows()))
    (HERE / "livecodebench.jsonl").write_text("".join(json.dumps(r) + "\n" for r in livecodebench_rows()))
    import pyarrow as pa

    table = pa.Table.from_pylist(taco_rows())
    with pa.OSFile(str(HERE / "taco.arrow"), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)  # the Arrow stream format of TACO's data-*.arrow files
    Dataset.from_list(code_contests_rows()).to_parquet(HERE / "code_contests.parquet")
    Dataset.from_list([r for r, _ in deepcoder_rows()]).to_parquet(HERE / "deepcoder.parquet")
    Dataset.from_list(verifiable_coding_rows()).to_parquet(HERE / "verifiable_coding.parquet")
    (HERE / "humaneval_plus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in humaneval_plus_rows()))
    (HERE / "leetcode.jsonl").write_text("".join(json.dumps(r) + "\n" for r in leetcode_rows()))


# Each loader's sample: its datasets builder and file (samples.json, which the tests and the bench read too).
SAMPLES = json.loads((HERE / "samples.json").read_text())


def _tokens_equal(got: str, expected: str) -> bool:
    a, b = got.split(), expected.split()
    if len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):
        if x == y:
            continue
        try:
            if abs(float(x) - float(y)) > 1e-6 * max(1.0, abs(float(y))):
                return False
        except ValueError:
            return False
    return True


CALL_RUNNER = """
import json, sys
source, fn_name, args = json.loads(sys.stdin.read())
space = {}
exec(source, space)
target = getattr(space["Solution"](), fn_name) if "Solution" in space else space[fn_name]
value = target(*args)
print(json.dumps(list(value) if isinstance(value, tuple) else value))
"""


def check() -> int:
    """Every problem's solution against every test the loader produced, with plain python3."""
    sys.path.insert(0, str(HERE.parents[2] / "src"))
    from codegrpo.config.problem_set import ProblemsConfig
    from codegrpo.data.problems import PREAMBLES
    from codegrpo.data.public_datasets import read_dataset

    extra = {f"livecodebench/{k}": v for k, v in LCB_SOLUTIONS.items()}
    extra |= {f"deepcoder/{n}": s for n, (_, s) in enumerate(deepcoder_rows())}
    failures = 0
    for loader, (builder, name) in SAMPLES.items():
        cfg = ProblemsConfig(name=loader, path="", loader=loader, hub_path=builder, data_files=str(HERE / name))
        loaded = read_dataset(cfg)
        for problem in loaded.problems:
            source = problem.reference or extra.get(problem.id, "")
            if not source:
                print(f"NO SOLUTION {problem.id}")
                failures += 1
                continue
            if problem.form == "humaneval":  # the mapped check, numpy made plain Python
                program = f"{problem.prompt}{source}\n{problem.test}\ncheck({problem.entry_point})\n"
                run = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=20)
                if run.returncode != 0:
                    failures += 1
                    print(f"FAIL {problem.id}: {run.stderr[-300:]!r}")
            for number, test in enumerate(problem.tests):
                if problem.form == "stdio":
                    run = subprocess.run(
                        [sys.executable, "-c", source], input=test.input, capture_output=True, text=True, timeout=20
                    )
                    ok = run.returncode == 0 and _tokens_equal(run.stdout, test.output)
                else:
                    preamble = PREAMBLES[problem.preamble][problem.form] if problem.preamble else ""
                    payload = json.dumps([preamble + source, problem.fn_name, json.loads(test.input)])
                    run = subprocess.run(
                        [sys.executable, "-c", CALL_RUNNER], input=payload, capture_output=True, text=True, timeout=20
                    )
                    ok = run.returncode == 0 and json.loads(run.stdout) == json.loads(test.output)
                if not ok:
                    failures += 1
                    print(
                        f"FAIL {problem.id} test {number}: got {run.stdout!r} {run.stderr[-200:]!r}, "
                        f"expected {test.output!r}"
                    )
        print(
            f"{loader}: {len(loaded.problems)} problems of {loaded.rows} rows checked; skipped {dict(loaded.skipped)}"
        )
    return 1 if failures else 0


if __name__ == "__main__":
    if "--check" in sys.argv:
        sys.exit(check())
    write()
