"""The sweep's session half: the queue written after every step (:mod:`.queue`, its file check
:mod:`.check`), the runner that launches and benchmarks (:mod:`.runner`, Slurm slots :mod:`.jobs`) and
the report (:mod:`.report`). The pure half (plan, decisions, effects) is :mod:`eagletui.core.sweep`;
the ``[sweep]`` section it runs is :mod:`eagletui.core.profile.sweep`.
"""
