"""Jinja2's built-in filters, tests and globals, keeping marks."""
