"""Hand-started servers on the host: one offer, about the one that matters (the dry run of the real-server
script met a machine with several simulators of other runs on it and was asked about each in turn, so its
"no" never led to the launch)."""

from __future__ import annotations

from eagletui.core.profile.load import parse_profile
from eagletui.remote.control import ForeignServer
from eagletui.session.drivers import foreign_to_offer

PROFILE = parse_profile(
    'name = "t"\n[server]\ncommand = ["python3", "-m", "sglang.launch_server"]\nport = 30000\n'
    '[server.args]\nmodel-path = "/models/mine"\n',
    "t.toml",
)


def server(pid: int, port: int, model: str, log: str | None = "/tmp/x.log") -> ForeignServer:
    cmd = ["python3", "-m", "sglang.launch_server", "--model-path", model, "--port", str(port)]
    return ForeignServer(pid=pid, cmdline=cmd, log_path=log, port=port)


def test_the_server_on_the_profiles_port_is_offered_first_and_the_rest_counted() -> None:
    others = [server(1, 31000, "/models/theirs"), server(2, 31001, "/models/mine")]
    mine = server(3, 30000, "/models/other")
    chosen, more = foreign_to_offer([*others, mine], PROFILE)
    assert chosen is mine and more == 2


def test_then_the_one_serving_the_profiles_model() -> None:
    chosen, more = foreign_to_offer([server(1, 31000, "/models/theirs"), server(2, 31001, "/models/mine")], PROFILE)
    assert chosen.pid == 2 and more == 1


def test_a_server_whose_output_is_no_file_is_never_offered() -> None:
    assert foreign_to_offer([server(1, 30000, "/models/mine", log=None)], PROFILE) == (None, 0)
    chosen, more = foreign_to_offer([server(1, 30000, "/models/mine", log=None), server(2, 9, "m")], PROFILE)
    assert chosen.pid == 2 and more == 1
    assert foreign_to_offer([], PROFILE) == (None, 0)
