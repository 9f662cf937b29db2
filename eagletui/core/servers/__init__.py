"""What a server program is and which flags it takes: server kinds, the speculative flags, flag spellings by
release and the real flag tables.
"""
