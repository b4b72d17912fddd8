"""What the tests share: helpers, data makers and fixtures' machinery, imported by test
modules as `from support.serve_live import Live`; no test module imports another. `tests/`
is on the path (pyproject.toml's `pythonpath`), and a spawned worker inherits the path, so
a judge of `support.slow_judges` is found by its name there too."""
