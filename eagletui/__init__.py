"""eagletui: a terminal UI for tuning SGLang + EAGLE-3 servers."""

__version__ = "0.1.0"
