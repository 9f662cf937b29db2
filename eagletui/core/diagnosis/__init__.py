"""Why, with evidence: the diagnosis fold and its rules (launch, all-reduce, drafter, adaptive speculation).
"""
