"""The global functions every template sees: range, dict, lipsum, cycler, joiner, namespace."""
from __future__ import annotations

from typing import Any

from .. import limits, metering
from ..errors import LimitExceeded
from ..values.markup import Markup, escape_text
from ..values.numbers import InputRange, is_input_number
from ..values.runtime import Cycler, Function, Joiner, Namespace

class RangeTooBig(LimitExceeded, OverflowError):
    """A `range()` past `Limits.max_range`: also an OverflowError, as Jinja2's sandbox raises."""


def safe_range(*args: int) -> Any:
    """`range(...)`, refused beyond `Limits.max_range` items (100,000 by default, as Jinja2's
    sandbox refuses it)."""
    numbers = range(*args)
    most = limits.current().max_range
    if len(numbers) > most:
        raise RangeTooBig("Range too big. The sandbox blocks ranges larger than"
                            f" MAX_RANGE ({most}).")
    if any(is_input_number(arg) for arg in args):  # numbers counted from input are input
        return InputRange(numbers)
    return numbers


# The vocabulary of Jinja2's lipsum(), in its order, so that a seeded `random` gives both
# engines the same text.
LOREM_IPSUM_WORDS = tuple("""
a ac accumsan ad adipiscing aenean aliquam aliquet amet ante aptent arcu at auctor augue
bibendum blandit class commodo condimentum congue consectetuer consequat conubia convallis cras
cubilia cum curabitur curae cursus dapibus diam dictum dictumst dignissim dis dolor donec dui
duis egestas eget eleifend elementum elit enim erat eros est et etiam eu euismod facilisi
facilisis fames faucibus felis fermentum feugiat fringilla fusce gravida habitant habitasse hac
hendrerit hymenaeos iaculis id imperdiet in inceptos integer interdum ipsum justo lacinia lacus
laoreet lectus leo libero ligula litora lobortis lorem luctus maecenas magna magnis malesuada
massa mattis mauris metus mi molestie mollis montes morbi mus nam nascetur natoque nec neque
netus nibh nisi nisl non nonummy nostra nulla nullam nunc odio orci ornare parturient pede
pellentesque penatibus per pharetra phasellus placerat platea porta porttitor posuere potenti
praesent pretium primis proin pulvinar purus quam quis quisque rhoncus ridiculus risus rutrum
sagittis sapien scelerisque sed sem semper senectus sit sociis sociosqu sodales sollicitudin
suscipit suspendisse taciti tellus tempor tempus tincidunt torquent tortor tristique turpis
ullamcorper ultrices ultricies urna ut varius vehicula vel velit venenatis vestibulum vitae
vivamus viverra volutpat vulputate
""".split())


def lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:
    """`n` paragraphs of lorem ipsum of `min` to `max` words; in <p> elements when `html`.
    Refused when the words could pass the output limit; each word charged (metering.py)."""
    if isinstance(n, int) and isinstance(max, int) and n * max * 8 > limits.current().max_output:
        raise LimitExceeded(f"lipsum({n}, max={max}) could pass the output limit "
                            f"({limits.current().max_output} characters)")
    paragraphs = []
    for _ in range(n):
        metering.charge(max * metering.CALL)  # words are drawn one by one, in Python
        paragraphs.append(_lorem_paragraph(min, max))
    if not html:
        return "\n\n".join(paragraphs)
    return Markup("\n".join(f"<p>{escape_text(p)}</p>" for p in paragraphs))


def _lorem_paragraph(min_words: int, max_words: int) -> str:
    """Random words, no word twice in a row, with commas and full stops now and then. The calls
    to `random` are Jinja2's, one for one."""
    import random  # here: a millisecond at every start, for a global chat templates never use
    words: list[str] = []
    capitalize, last_comma, last_fullstop, last = True, 0, 0, None
    for idx in range(random.randrange(min_words, max_words)):
        word = random.choice(LOREM_IPSUM_WORDS)
        while word == last:
            word = random.choice(LOREM_IPSUM_WORDS)
        last = word
        if capitalize:
            word, capitalize = word.capitalize(), False
        if idx - random.randrange(3, 8) > last_comma:
            last_comma, last_fullstop, word = idx, last_fullstop + 2, word + ","
        if idx - random.randrange(10, 20) > last_fullstop:
            last_comma = last_fullstop = idx
            word, capitalize = word + ".", True
        words.append(word)
    text = " ".join(words)
    if text.endswith(","):
        return text[:-1] + "."
    return text if text.endswith(".") else text + "."


GLOBALS: dict[str, Any] = {
    name: Function(name, fn) for name, fn in (
        ("range", safe_range), ("dict", metering.metered(dict, metering.ITEM, 0)),  # hashes keys
        ("lipsum", lipsum), ("cycler", Cycler),
        ("joiner", Joiner), ("namespace", Namespace))
}
