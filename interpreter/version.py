"""The one place the version is written: pyproject.toml reads it (`dynamic = ["version"]`),
`jinjamark.__version__` and `jinjamark --version` show it."""

__version__ = "0.1.0"
