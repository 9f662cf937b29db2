"""Runs and their judgement: one run, the run book, validity, like for like and accept length.
"""
