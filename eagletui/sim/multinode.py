"""A multi-node launch of the simulator: ``--nnodes N --node-rank R --dist-init-addr HOST:PORT``.

What SGLang (0.5.17 and 0.5.23 alike) does with these flags, as far as anything outside can see:

* node R runs the tensor-parallel ranks ``R·tp/N … (R+1)·tp/N − 1`` (``_calculate_rank_ranges`` in
  ``sglang/srt/entrypoints/engine.py``), so its log lines carry ``TP4``…``TP7`` on the second of two
  nodes at ``--tp 8``; ``tp`` must divide by ``N`` (``tp_size must be divisible by number of nodes``);
* every rank joins ``torch.distributed`` at ``tcp://HOST:PORT`` (rank 0's TCP store, on node 0):
  ``Init parallel`` ends on every node only once all nodes have joined;
* tqdm bars (weight shards, graph capture) come from global rank 0 only, i.e. from node 0;
* only node 0 runs the tokenizer and the HTTP server; a node R > 0 logs ``Dummy health check server
  started in background thread at HOST:PORT`` (it serves ``/health`` on the same port on its own
  host) and then blocks until rank 0's shutdown reaches its schedulers; SIGTERM there logs
  ``SIGTERM received on node_rank R; waiting for the rank-0 ShutdownReq broadcast…`` (0.5.23).

The simulator's rendezvous is a plain TCP listener on node 0 (``Rendezvous``): each other node
connects, says its rank, waits for "go", and keeps the connection: when node 0 goes away the others
follow (as SGLang's non-zero ranks do when the ShutdownReq or a dead NCCL peer ends their schedulers).
The health server of a node R > 0 is logged but not bound: on the emulated cluster every node is
127.0.0.1 and it would take node 0's port.
"""

from __future__ import annotations

import asyncio
import contextlib
import time


class RendezvousError(RuntimeError):
    pass


def parse_addr(text: str | None) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` too) → (host, port); RendezvousError on anything else."""
    if not text:
        raise RendezvousError("--dist-init-addr is required when --nnodes > 1")
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise RendezvousError(f"--dist-init-addr must be HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def local_ranks(tp: int, nnodes: int, node_rank: int) -> list[int]:
    per = max(1, tp // max(1, nnodes))
    return list(range(per * node_rank, per * (node_rank + 1)))


class Rendezvous:
    """Node 0 listens at the dist-init address; nodes 1..N-1 connect and wait for all to be there."""

    def __init__(self, host: str, port: int, nnodes: int, node_rank: int, timeout: float) -> None:
        self.host, self.port, self.nnodes, self.node_rank = host, port, nnodes, node_rank
        self.timeout = timeout
        self.lost = asyncio.Event()  # the other side went away (node 0 for a peer; any peer for node 0)
        self._peers: list[asyncio.StreamWriter] = []
        self._joined = asyncio.Event()
        self._server: asyncio.AbstractServer | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def join(self) -> None:
        if self.node_rank == 0:
            await self._lead()
        else:
            await self._follow()

    async def _lead(self) -> None:
        async def on_peer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(reader.readline(), 10)
            self._peers.append(writer)
            if len(self._peers) >= self.nnodes - 1:
                self._joined.set()
            with contextlib.suppress(Exception):
                await reader.read()  # EOF: that node is gone
            self.lost.set()

        bind = self.host if self.host.replace(".", "").isdigit() else "0.0.0.0"
        self._server = await asyncio.start_server(on_peer, bind, self.port, reuse_address=True)
        try:
            await asyncio.wait_for(self._joined.wait(), self.timeout)
        except TimeoutError:
            raise RendezvousError(
                f"only {len(self._peers) + 1} of {self.nnodes} nodes joined {self.host}:{self.port} "
                f"within {self.timeout:.0f} s"
            ) from None
        for w in self._peers:
            w.write(b"go\n")
            with contextlib.suppress(Exception):
                await w.drain()

    async def _follow(self) -> None:
        deadline = time.monotonic() + self.timeout
        last = ""
        while True:
            try:
                reader, writer = await asyncio.open_connection(self.host, self.port)
                break
            except OSError as exc:
                last = str(exc)
                if time.monotonic() > deadline:
                    raise RendezvousError(
                        f"cannot reach node 0 at {self.host}:{self.port} within {self.timeout:.0f} s: {last}"
                    ) from None
                await asyncio.sleep(0.1)
        self._writer = writer
        writer.write(f"{self.node_rank}\n".encode())
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), max(1.0, deadline - time.monotonic()))
        if line.strip() != b"go":
            raise RendezvousError(f"node 0 at {self.host}:{self.port} went away before all nodes joined")

        async def watch() -> None:
            with contextlib.suppress(Exception):
                await reader.read()
            self.lost.set()

        asyncio.get_running_loop().create_task(watch())

    def close(self) -> None:
        """Node 0's shutdown reaching the other nodes (their connection closes)."""
        for w in self._peers:
            with contextlib.suppress(Exception):
                w.close()
        if self._server is not None:
            self._server.close()
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
