"""The speculative cycle's arithmetic: what a draft+verify cycle costs and yields, break-even, and the
economics of a spec run against its no-spec reference.
"""
