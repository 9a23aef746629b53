"""`conformance serve` hands each protocol's own timers to its reference server."""

from __future__ import annotations

import pytest

from conformance import cli


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> dict:
    seen: dict = {}

    def fake_run_server(host, port, **options):
        seen.update(host=host, port=port, **options)

    import reference_impl.micromessage2.server as mm2_server
    import reference_impl.mtl.server as mtl_server
    monkeypatch.setattr(mtl_server, "run_server", fake_run_server)
    monkeypatch.setattr(mm2_server, "run_server", fake_run_server)
    return seen


def test_mtl_timers_reach_the_broker(served: dict) -> None:
    assert cli.main(["serve", "mtl", "--port", "0", "--redeliver", "0.25", "--anonymous", "--auth-ttl", "3",
                     "--data-port", "0", "--heartbeat-timeout", "7"]) == 0
    assert served["redeliver_after"] == 0.25 and served["anonymous"] is True and served["auth_ttl"] == 3
    assert served["heartbeat_timeout"] == 7 and served["data_port"] == 0


def test_mtl_defaults_are_the_brokers_own(served: dict) -> None:
    assert cli.main(["serve", "mtl"]) == 0
    assert "redeliver_after" not in served and "auth_ttl" not in served and served["anonymous"] is False


def test_micromessage2_read_timeout_reaches_the_connection(served: dict) -> None:
    assert cli.main(["serve", "micromessage2", "--read-timeout", "1.5"]) == 0
    assert served["read_timeout"] == 1.5


@pytest.mark.parametrize("argv, flag", [
    (["serve", "stmp", "--redeliver", "1"], "--redeliver"),
    (["serve", "rsio", "--read-timeout", "1"], "--read-timeout"),
    (["serve", "micromessage2", "--null"], "--null"),
])
def test_another_protocols_flag_is_refused(argv: list[str], flag: str, capsys: pytest.CaptureFixture) -> None:
    assert cli.main(argv) == 2
    assert flag in capsys.readouterr().err
