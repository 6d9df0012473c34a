"""Progress: a bar on a terminal, plain lines in a log, nothing when disabled."""
import datetime
import io

from tqdm.auto import tqdm

from segstruct.io import progress
from segstruct.io.progress import LogLines, progress_bar


class Terminal(io.StringIO):
    def isatty(self):
        return True


def dated(line):
    """The line less its date and time, which must be now's (to a minute)."""
    stamp, text = line[:19], line[20:]
    when = datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S")
    assert abs((datetime.datetime.now() - when).total_seconds()) < 60 and line[19] == " "
    return text


def test_a_log_gets_dated_lines_at_the_start_every_interval_and_the_end(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(progress.time, "perf_counter", lambda: now[0])
    stream = io.StringIO()
    bar = progress_bar(10, "work", stream=stream, interval=30.0)
    assert isinstance(bar, LogLines)
    now[0] = 110.0
    bar.update(2)                                   # 10 s after the last line: none
    now[0] = 130.0
    bar.update(2)                                   # 4 in 30 s, 6 to go: 45 s
    bar.set_postfix(gap="0.1")
    now[0] = 400.0
    bar.update(1)                                   # 5 in 300 s, 5 to go
    bar.close()
    bar.close()                                     # once only
    lines = [dated(line) for line in stream.getvalue().splitlines()]
    assert lines == ["work: 0/10 it (0 %), 0 s (started)",
                     "work: 4/10 it (40 %), 30 s, ETA 45 s",
                     "work: 5/10 it (50 %), 300 s, ETA 5 min, gap 0.1",
                     "work: 5/10 it (50 %), 300 s, gap 0.1 (done)"]


def test_the_time_left_counts_the_units_done_since_the_start(monkeypatch):
    """A resumed bar (4 done before) that does 2 in 20 s has 4 to go: 40 s.
    Without ``eta`` (a total that only bounds the work) no estimate."""
    now = [0.0]
    monkeypatch.setattr(progress.time, "perf_counter", lambda: now[0])
    for eta, expected in ((True, "work: 6/10 it (60 %), 20 s, ETA 40 s"),
                          (False, "work: 6/10 it (60 %), 20 s")):
        now[0] = 0.0
        stream = io.StringIO()
        bar = progress_bar(10, "work", stream=stream, initial=4, interval=1.0, eta=eta)
        now[0] = 20.0
        bar.update(2)
        assert dated(stream.getvalue().splitlines()[1]) == expected
    assert [progress._duration(s) for s in (119.4, 7199.0, 9000.0)] == ["119 s", "120 min",
                                                                         "2.5 h"]


def test_lines_wait_for_the_interval():
    stream = io.StringIO()
    with progress_bar(None, "scan", unit="image", stream=stream, interval=3600.0) as bar:
        for _ in range(100):
            bar.update()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2 and dated(lines[1]).startswith("scan: 100 image, ")


def test_a_terminal_gets_a_bar_and_disabled_progress_says_nothing():
    assert isinstance(progress_bar(5, "work", stream=Terminal()), tqdm)
    stream = io.StringIO()
    bar = progress_bar(5, "work", enabled=False, stream=stream)
    bar.update(5)
    bar.close()
    assert stream.getvalue() == ""


def test_a_note_is_dated_in_a_log_and_above_the_bars_on_a_terminal(monkeypatch):
    stream = io.StringIO()
    progress.note("training the car detector", stream=stream)
    assert dated(stream.getvalue().rstrip("\n")) == "training the car detector"
    written = []
    monkeypatch.setattr(progress.tqdm, "write", lambda text, file=None: written.append(text))
    terminal = Terminal()
    progress.note("training the car detector", stream=terminal)
    assert written == ["training the car detector"] and terminal.getvalue() == ""


def test_a_line_is_written_at_once():
    """Worker processes share stderr: a line and its newline in one write,
    so that two notes cannot run together on one line."""
    class Writes(io.StringIO):
        def __init__(self):
            super().__init__()
            self.writes = []

        def write(self, text):
            self.writes.append(text)
            return super().write(text)
    stream = Writes()
    progress.note("training the car detector", stream=stream)
    bar = progress_bar(2, "work", stream=stream, interval=0.0)
    bar.update(1)
    bar.close()
    assert len(stream.writes) == 4 and all(w.endswith("\n") and w.count("\n") == 1
                                           for w in stream.writes)
