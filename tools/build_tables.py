"""Build the parser tables shipped in grammar/tables/ (grammar/tables.py says why they are
shipped): the tables of the default grammars, written anew, the folder's old ones removed.

    python tools/build_tables.py

Run after changing the grammar (tests/test_startup.py fails until then)."""
from __future__ import annotations

import os

os.environ["JINJAMARK_CACHE_DIR"] = ""  # built here, not loaded from a user cache
os.environ["JINJAMARK_NO_SHIPPED_TABLES"] = "1"

import jinjamark  # noqa: E402 - after the environment it reads at import
from jinjamark.grammar.tables import FOLDER, PLAIN_SUFFIX, SUFFIX, save, save_plain  # noqa: E402


def main() -> None:
    """Ask the engine which grammars an embedder gets by default, and write their tables."""
    os.makedirs(FOLDER, exist_ok=True)
    for name in os.listdir(FOLDER):
        if name.endswith((SUFFIX, PLAIN_SUFFIX, ".plain.z")):  # .plain.z: the older, compressed
            os.remove(os.path.join(FOLDER, name))
    for env in (jinjamark.Environment(), jinjamark.chat_environment()):
        parser = env._parser
        print(save(parser.lark, parser.grammar, parser.lark_options))
        print(save_plain(parser.tables, parser.grammar, parser.lark_options))


if __name__ == "__main__":
    main()
