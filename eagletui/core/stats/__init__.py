"""Statistics of benchmark numbers: sample moments, the one noise rule, confidence intervals.
"""
