"""WhileCounting: patches in place exactly while a measurement is open."""

import pytest

from torchscan_dispatch._while_counting import WhileCounting


class _Switch:
    """Records installs and uninstalls; can fail halfway through an install."""

    def __init__(self, fail_install: bool = False) -> None:
        self.fail_install = fail_install
        self.installed: list[str] = []
        self.events: list[str] = []

    def install(self) -> None:
        self.events.append("install")
        self.installed.append("first patch")
        if self.fail_install:
            raise RuntimeError("second patch failed")
        self.installed.append("second patch")

    def uninstall(self) -> None:
        self.events.append("uninstall")
        self.installed.clear()


def test_the_first_open_installs_and_the_last_close_uninstalls():
    switch = _Switch()
    patched = WhileCounting(switch.install, switch.uninstall)
    patched.opened(1)
    patched.opened(2)
    patched.closed(1)
    assert ["install"] == switch.events
    patched.closed(2)
    assert ["install", "uninstall"] == switch.events
    assert [] == switch.installed


def test_a_failed_install_is_undone_and_propagates():
    switch = _Switch(fail_install=True)
    patched = WhileCounting(switch.install, switch.uninstall)
    with pytest.raises(RuntimeError, match="second patch failed"):
        patched.opened(1)
    assert [] == switch.installed
    assert {} == patched.open


def test_close_hands_the_entry_to_finish_and_uninstalls_even_if_it_raises():
    switch = _Switch()
    patched = WhileCounting(switch.install, switch.uninstall)
    patched.opened(7, "entry of 7")
    seen = []

    def finish(entry):
        seen.append((entry, patched.lock.locked()))
        raise ValueError("finish failed")

    with pytest.raises(ValueError, match="finish failed"):
        patched.closed(7, finish)
    assert [("entry of 7", True)] == seen
    assert ["install", "uninstall"] == switch.events


def test_closing_an_unknown_handle_keeps_the_open_ones():
    switch = _Switch()
    patched = WhileCounting(switch.install, switch.uninstall)
    patched.opened(1)
    patched.closed(99, lambda entry: pytest.fail("no entry to finish"))
    assert ["install"] == switch.events
    assert {1: None} == patched.open
