"""What the host's own tools report: ``nvidia-smi topo -m``, GPU memory holders, ``NCCL_DEBUG=INFO``.
"""
