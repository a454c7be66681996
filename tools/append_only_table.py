"""The corpus table of docs/serving.md: which chat templates are append-only, and why not.

    python tools/append_only_table.py           # print the table
    python tools/append_only_table.py --write   # write it into docs/serving.md

For every template of tests/corpus/templates, `analyze(source).append_only`: the probe
conversation of chat/prefixes.py (a system prompt, three questions, two answers with
reasoning) checked prompt by prompt, the causes of its breaks, and the keyword arguments that,
set on their own, make it append-only. tests/test_append_only.py checks that the docs hold
what this prints.
"""
from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DOC = ROOT / "docs" / "serving.md"
BEGIN, END = "<!-- append-only table: tools/append_only_table.py -->", "<!-- end of the append-only table -->"


def rows() -> list[tuple[str, str, str, str]]:
    import jinjamark
    out = []
    for path in sorted((ROOT / "tests" / "corpus" / "templates").glob("*.jinja")):
        found = jinjamark.analyze(path.read_text(encoding="utf-8")).append_only
        verdict = {True: "yes", False: "no", None: "cannot render the probe"}[found.append_only]
        settings = ", ".join(f"`{name}={str(value).lower()}`" for name, value in found.settings)
        out.append((path.stem, verdict, ", ".join(found.causes), settings))
    return out


def table(found: list[tuple[str, str, str, str]]) -> str:
    verdicts = Counter(verdict for _, verdict, _, _ in found)
    causes = Counter(cause for _, _, said, _ in found for cause in said.split(", ") if cause)
    fixable = sum(1 for *_, settings in found if settings)
    lines = [BEGIN, "",
             f"Of {len(found)} corpus templates, **{verdicts['yes']} are append-only** on the probe "
             f"conversation, {verdicts['no']} are not"
             + (f" and {verdicts['cannot render the probe']} cannot render it" if verdicts["cannot render the probe"] else "")
             + f"; {fixable} of those that are not become append-only with one keyword argument.", "",
             "| cause of a break | templates |", "|---|---|"]
    lines += [f"| {cause} | {count} |" for cause, count in causes.most_common()]
    lines += ["", "<details><summary>Every template</summary>", "",
              "| template | append-only | causes | append-only with |", "|---|---|---|---|"]
    lines += [f"| {name} | {verdict} | {said} | {settings} |" for name, verdict, said, settings in found]
    lines += ["", "</details>", "", END]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="write the table into docs/serving.md")
    args = parser.parse_args()
    text = table(rows())
    if not args.write:
        print(text)
        return
    doc = DOC.read_text(encoding="utf-8")
    start, end = doc.index(BEGIN), doc.index(END) + len(END)
    DOC.write_text(doc[:start] + text + doc[end:], encoding="utf-8")


if __name__ == "__main__":
    main()
