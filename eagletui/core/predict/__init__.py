"""The next launch: predictions of neighbouring settings from measured runs, ranked.
"""
