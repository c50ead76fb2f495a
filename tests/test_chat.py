"""`arag chat` driven through a pseudo-terminal, as a person types: follow-ups in context, /sources, /new,
Ctrl-C during an answer (the conversation goes on), Ctrl-D to leave, and the readline history file."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path

from arag.corpus.build import build_index
from conftest import FIXTURES, fake_settings
from support.scripted_server import ScriptedServer, completion, tool_call

_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[=>]|\r")


class Terminal:
    """A child process on a pseudo-terminal (its controlling terminal, so Ctrl-C is a SIGINT as typed)."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        pid, fd = pty.fork()
        if pid == 0:  # the child
            # Ctrl-C must reach it even when the tests run where SIGINT is ignored (a background job inherits that)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.execve(argv[0], argv, env)
        self.pid, self.fd, self.seen = pid, fd, ""

    def read_until(self, pattern: str, timeout: float = 60) -> str:
        """Everything printed until ``pattern`` (a regex) shows, escape sequences removed."""
        deadline = time.monotonic() + timeout
        while not re.search(pattern, self.seen):
            left = deadline - time.monotonic()
            assert left > 0, f"{pattern!r} never showed; the terminal shows:\n{self.seen[-2000:]}"
            ready, _, _ = select.select([self.fd], [], [], min(left, 0.5))
            if ready:
                try:
                    self.seen += _ESCAPES.sub("", os.read(self.fd, 65536).decode("utf-8", "replace"))
                except OSError:  # the child closed the terminal
                    break
        match = re.search(pattern, self.seen)
        assert match, f"{pattern!r} never showed; the terminal shows:\n{self.seen[-2000:]}"
        shown, self.seen = self.seen[: match.end()], self.seen[match.end() :]
        return shown

    def type(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def wait(self, timeout: float = 30) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                return os.waitstatus_to_exitcode(status)
            try:
                if select.select([self.fd], [], [], 0.2)[0]:
                    os.read(self.fd, 65536)
            except OSError:
                time.sleep(0.1)
        raise AssertionError("arag chat did not exit")

    def kill(self) -> None:
        try:
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


def wait_until(condition: Callable[[], bool], failure: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, failure
        time.sleep(0.05)


def test_chat_in_a_terminal(tmp_path: Path, server: ScriptedServer) -> None:
    index = tmp_path / "idx"
    build_index([FIXTURES / "hipporag_corpus.json"], index, fake_settings())
    server.replies = [
        completion(tool_calls=[tool_call("keyword_search", {"keywords": ["Lothair II"], "top_k": 3})]),
        completion(tool_calls=[tool_call("chunk_read", {"chunk_ids": ["Lothair II#0"]}, "c2")]),
        completion("Ermengarde of Tours [chunk Lothair II#0]."),
        completion(tool_calls=[tool_call("chunk_read", {"chunk_ids": ["Lothair II#0", "Ermengarde of Tours#0"]})]),
        completion("She died on 20 March 851 [chunk Ermengarde of Tours#0]."),
    ]
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "TERM": "xterm",
        "ARAG_BASE_URL": server.base_url,
        "ARAG_API_KEY": "k",
        "ARAG_MODEL": "gpt-4o-mini",
        "ARAG_CACHE_DIR": str(tmp_path / "cache"),
        "ARAG_AGENT__PROFILE": "paper",
    }
    terminal = Terminal([sys.executable, "-m", "arag", "chat", "--index", str(index)], env)
    try:
        terminal.read_until(r"you › ")
        terminal.type("Who was Lothair II's mother?\n")
        first = terminal.read_until(r"you › ")
        assert "→ keyword_search" in first and "→ chunk_read" in first  # the steps, as they happen
        assert "a-rag › Ermengarde of Tours [chunk Lothair II#0]." in first
        assert "[Lothair II#0] hipporag_corpus.json" in first  # the citation, resolved to its source
        terminal.type("And when did she die?\n")
        second = terminal.read_until(r"you › ")
        assert "already read earlier in this session" in second and "She died on 20 March 851" in second
        # the follow-up went to the model after the first turn
        assert any("Who was Lothair II's mother?" in str(m.get("content")) for m in server.requests[3]["messages"])
        terminal.type("/sources\n")
        sources = terminal.read_until(r"you › ")
        assert "Lothair II#0 — hipporag_corpus.json (cited for question 1)" in sources
        assert "Ermengarde of Tours#0 — hipporag_corpus.json (cited for question 2)" in sources
        # Ctrl-C while the model thinks: the answer stops, the conversation stays
        server.delay_s = 3.0
        server.replies = [completion(tool_calls=[tool_call("keyword_search", {"keywords": ["Hugh"]})])]
        asked = server.received
        terminal.type("Who was her father?\n")
        wait_until(lambda: server.received > asked, "the model call never arrived")
        terminal.type("\x03")
        stopped = terminal.read_until(r"you › ", timeout=60)
        assert "stopping after the current step" in stopped and "stopped; the conversation goes on" in stopped
        server.delay_s = 0.0
        terminal.type("/sources\n")
        assert "(cited for question 2)" in terminal.read_until(r"you › ")
        terminal.type("/new\n")
        assert "a new conversation" in terminal.read_until(r"you › ")
        terminal.type("/sources\n")
        assert "nothing read yet" in terminal.read_until(r"you › ")
        terminal.type("\x04")  # Ctrl-D
        assert terminal.wait() == 0
    finally:
        terminal.kill()
    history = (tmp_path / "cache" / "chat_history").read_text()
    assert "Who was Lothair II's mother?" in history and "And when did she die?" in history


def test_wrapped_lines_leave_nothing_behind(tmp_path: Path, server: ScriptedServer) -> None:
    """On a 40-column terminal a long question and a long answer wrap: the question's echo is readline's (the text,
    with only its own " \\r" where the line wraps), the answer and each step are printed whole, nothing added."""
    import fcntl
    import struct
    import termios

    index = tmp_path / "idx"
    build_index([FIXTURES / "hipporag_corpus.json"], index, fake_settings())
    answer = "Ermengarde of Tours, the wife of Emperor Lothair I, was his mother [chunk Lothair II#0]."
    server.replies = [
        completion(tool_calls=[tool_call("keyword_search", {"keywords": ["Lothair II"], "top_k": 3})]),
        completion(answer),
    ]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TERM": "xterm", "ARAG_BASE_URL": server.base_url,
           "ARAG_API_KEY": "k", "ARAG_MODEL": "m", "ARAG_CACHE_DIR": str(tmp_path / "cache"),
           "ARAG_AGENT__PROFILE": "paper"}  # fmt: skip
    pid, fd = pty.fork()
    if pid == 0:  # the child: a 40-column terminal before anything reads its size
        fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 40, 0, 0))
        os.execve(sys.executable, [sys.executable, "-m", "arag", "chat", "--index", str(index)], env)
    raw = b""

    def read_until(marker: bytes, timeout: float = 60) -> None:
        nonlocal raw
        deadline = time.monotonic() + timeout
        while raw.count(marker) < 1 + read_until.seen:  # type: ignore[attr-defined]
            assert time.monotonic() < deadline, raw[-2000:]
            if select.select([fd], [], [], 0.2)[0]:
                raw += os.read(fd, 65536)
        read_until.seen += 1  # type: ignore[attr-defined]

    read_until.seen = 0  # type: ignore[attr-defined]
    try:
        read_until("you › ".encode())
        question = "Who was the mother of Lothair II, king of Lotharingia?"
        for character in question:  # typed as a person types, one key at a time
            os.write(fd, character.encode())
            time.sleep(0.01)
        os.write(fd, b"\r")
        read_until("you › ".encode())
        os.write(fd, b"\x04")
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    text = raw.decode("utf-8")
    echoed = text.split("you › ", 1)[1].split("\r\n", 1)[0]
    cut = 40 - len("you › ")  # where the question reaches the terminal's edge
    # readline's own wrap where the keys came one by one (a space then a return, overwritten), none where they came
    # at once (a loaded machine): nothing else, either way
    assert echoed in (question[:cut] + " \r" + question[cut:], question)
    assert f"a-rag ›\x1b[0m {answer}\r\n" in text  # the answer whole: the terminal wraps it, nothing is inserted
    assert '→ keyword_search\x1b[0m {"keywords": ["Lothair II"], "top_k": 3}\r\n' in text
