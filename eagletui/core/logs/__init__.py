"""A server's log: the seam every log format implements (:mod:`.seam`), the registry, and the formats.
"""
