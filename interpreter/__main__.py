"""`python -m jinjamark`: the same command as the `jinjamark` console script."""
from .cli import main

raise SystemExit(main())
