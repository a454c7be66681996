"""`jinjamark.marks`, the documented path of the marking helpers (`mark`, `concat`, `join`,
`taint`, ...): they live in values/marks.py."""
from .values.marks import *  # noqa: F401,F403
