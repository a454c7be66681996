"""`python -m jinjamark.playground`: the playground server without the `jinjamark` command."""
from . import main

raise SystemExit(main())
