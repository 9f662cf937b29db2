"""What a session shows: the screen's fold (:mod:`.screen`) and ``eagletui parse``'s (:mod:`.summary`).
"""
