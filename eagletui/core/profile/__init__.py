"""The TOML profile: its model, loading and linting, the pasted launch command, staged toggles, secrets, and
the ``[slurm]`` and ``[sweep]`` sections.
"""
