"""Shared test set-up.

hypothesis is imported here, at collection time, on purpose: its pytest plugin otherwise imports it
lazily in the terminal summary, from deep inside pytest's hook stack, where CPython 3.11.7's AST
constructor can fail with "AST constructor recursion depth mismatch" while pytest rewrites asserts
(seen on runs that select no hypothesis test). Importing it early keeps that out of every run.
"""

import hypothesis  # noqa: F401
