"""How long every public parser and decoder takes, on typical answers and on hostile ones.

    python benchmarks/parsers.py [--sizes 250000,500000,1000000,2000000] [--repeat 3]

Prints, per parser: the median time of a typical answer (microseconds), then for each hostile
input shape the seconds at each size and the ratio of the largest to the smallest time over the
ratio of the sizes (1.0 = linear; quadratic would grow with the size). Model output and stored
payloads can be anything, so none of these may be slower than linear (tests/test_parsers_fuzz.py
asserts the 1 MB bound; this script shows the curve).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

from spatial_tasks.common.choice import read_choice
from spatial_tasks.common.samples import first_response
from spatial_tasks.common.yesno import decode_payload, parse_yes_no
from spatial_tasks.o3d.parse import parse_answer
from spatial_tasks.o3d.prompts import parse_prompt
from spatial_tasks.spatialtunnel.questions import resolve_template
from spatial_tasks.vague.parse import final_part

DORI_OPTIONS = ["90 degrees clockwise", "90 degrees counterclockwise", "a", "Cannot be determined"]
QUESTION = ("Is the object marked with a red circle closer to or farther away from the viewer than the objects "
            "marked with a blue square? A. Closer. B. Farther. Answer A or B.")
TYPICAL = ["B", "A. Closer.", "The answer is B.", "(Let's think step by step. It is lower.) A.", "Farther",
           "I would say:\n\nB", "It is closer to the camera than the others.", "Yes", "No, it is behind."]

# parser name -> (function of one input, hostile shapes: name -> input of about n characters or levels)
PARSERS: dict[str, tuple[Callable[[str], object], dict[str, Callable[[int], str]]]] = {
    "o3d parse_answer (answer)": (lambda text: parse_answer(text, QUESTION), {
        "letters": lambda n: "A" * n,
        "leading strings": lambda n: "Answer: " * (n // 8),
        "' A. word' runs": lambda n: " A. word" * (n // 8),
        "newlines": lambda n: "\n" * n,
        "CoT marker, no ')'": lambda n: "(Let's think step by step" + "x" * n,
        "phrase-like": lambda n: "closer to th" * (n // 12),
    }),
    "o3d parse_answer (question)": (lambda text: parse_answer("A", text), {
        "option-like runs": lambda n: "? A. xx" * (n // 7),
        "one long option": lambda n: "? A. " + "x" * n,
        "dots": lambda n: ". " * (n // 2),
    }),
    "o3d parse_prompt": (parse_prompt, {
        "spaces": lambda n: " \t" * (n // 2),
        "text": lambda n: "Is the object " * (n // 14),
    }),
    "yes/no parse_yes_no": (parse_yes_no, {
        "no word boundary": lambda n: "nonono" * (n // 6),
        "payload marker": lambda n: '{"spatial_tasks_yesno": 1, "x": "' + "y" * n + '"}',
    }),
    "yes/no decode_payload": (decode_payload, {
        "deep nesting": lambda n: '{"spatial_tasks_yesno": ' + "[" * n + "]" * n + "}",
        "huge number": lambda n: '{"spatial_tasks_yesno": 1, "logit_yes": 1' + "0" * min(n, 4000) + ', "logit_no": 0}',
        "long text": lambda n: json.dumps({"spatial_tasks_yesno": 1, "logit_yes": 1.0, "logit_no": 0.0, "text": "x" * n}),
    }),
    "spatialtunnel resolve_template": (lambda text: resolve_template(text, "Yes"), {
        "near miss": lambda n: "Is the " + "red " * (n // 4) + "closer to the camera than the cube",
    }),
    "read_choice (DORI options)": (lambda text: read_choice(text, DORI_OPTIONS), {
        "answer then spaces": lambda n: "answer" + " " * n,
        "short option everywhere": lambda n: "a " * (n // 2),
        "nested option texts": lambda n: "90 degrees counterclockwise " * (n // 28),
        "hedges": lambda n: "A or " * (n // 5),
    }),
    "read_choice (VAGUE options, CoT)": (lambda text: read_choice(final_part(text), ["Move the car.", "Stay.",
                                                                                   "Close the door.", "x"]), {
        "answer then spaces": lambda n: "Answer" + " " * n,
        "answer2 markers": lambda n: "answer2 " * (n // 8),
        "option text everywhere": lambda n: "x " * (n // 2),
        "tagged letters": lambda n: "(A) " * (n // 4),
    }),
    "samples first_response": (lambda value: first_response({"filtered_resps": value}), {
        "nested lists": lambda n: _nested(n),
    }),
}


def _nested(depth: int) -> list:
    value: object = "x"
    for _ in range(depth):
        value = [value]
    return value  # type: ignore[return-value]


def _time(fn: Callable[[str], object], text: str, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn(text)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="250000,500000,1000000,2000000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    for name, (fn, shapes) in PARSERS.items():
        typical = [_time(fn, text, 50) for text in TYPICAL]
        print(f"{name}: typical answer median {statistics.median(typical) * 1e6:.1f} us "
              f"(max {max(typical) * 1e6:.1f} us)")
        for shape, make in shapes.items():
            times = [_time(fn, make(n), args.repeat) for n in sizes]
            growth = (times[-1] / max(times[0], 1e-9)) / (sizes[-1] / sizes[0])
            cells = "  ".join(f"{n // 1000}k {t:.4f}s" for n, t in zip(sizes, times))
            print(f"    {shape:<22} {cells}   growth/size-ratio {growth:.2f}")


if __name__ == "__main__":
    main()
