"""A sweep's pure logic: its plan, its decisions and how sure they are, and what helped.
"""
