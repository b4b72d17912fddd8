"""The scorer's version: the bottom layer, so that any module can name it without importing
the package's top (`scorer/__init__` imports the API, which imports nearly everything)."""

__version__ = "0.2.0"
