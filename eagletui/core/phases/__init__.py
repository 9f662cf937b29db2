"""Log records to launch events: the interpreter, the multi-rank phase machine, failure folding, start-up
arithmetic and the phase-duration history behind the ETA.
"""
