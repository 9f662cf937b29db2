"""``free_port``: the port every simulator launch, test server and dry run is given.

A port from ``bind(0)`` lies in the kernel's ephemeral range, which any outgoing connection on the
machine may be handed between the check and the server's own bind; a loaded CI saw a dry run's sweep
fail its launch so. These check that the ports come from outside that range and are free when returned."""

import socket

from eagletui.commands.demo import _ephemeral_range, free_port


def test_ports_lie_outside_the_ephemeral_range_and_are_free() -> None:
    lo, hi = _ephemeral_range()
    for _ in range(50):
        p = free_port()
        assert not lo <= p <= hi, (p, lo, hi)
        with socket.socket() as s:
            s.bind(("127.0.0.1", p))  # free now: the bind a server would make succeeds


def test_a_span_is_free_end_to_end() -> None:
    lo, hi = _ephemeral_range()
    base = free_port(4)
    socks = []
    try:
        for p in range(base, base + 4):
            assert not lo <= p <= hi
            s = socket.socket()
            socks.append(s)
            s.bind(("127.0.0.1", p))
    finally:
        for s in socks:
            s.close()


def test_a_port_in_use_is_never_given() -> None:
    held = []
    try:
        for _ in range(20):
            s = socket.socket()
            s.bind(("127.0.0.1", free_port()))
            s.listen()
            held.append(s)
        taken = {s.getsockname()[1] for s in held}
        for _ in range(200):
            assert free_port() not in taken
    finally:
        for s in held:
            s.close()


def test_no_port_is_handed_out_twice_while_its_claim_holds() -> None:
    """Two suites on one machine: a port one test drew and had not bound yet was drawn again by another
    and its simulator failed with "address already in use". 300 draws from the ~27,000 ports outside the
    ephemeral range collide with a probability of about 80 % without the claims."""
    got = [free_port() for _ in range(300)]
    assert len(set(got)) == len(got)
    spans = [free_port(4) for _ in range(50)]
    taken = [p for b in spans for p in range(b, b + 4)]
    assert len(set(taken)) == len(taken) and not set(taken) & set(got)
