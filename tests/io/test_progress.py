"""Progress: a bar on a terminal, plain lines in a log, nothing when disabled."""
import io

from tqdm.auto import tqdm

from segstruct.io.progress import LogLines, progress_bar


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_a_log_gets_lines_at_the_start_every_interval_and_the_end():
    stream = io.StringIO()
    bar = progress_bar(10, "work", stream=stream, interval=0.0)
    assert isinstance(bar, LogLines)
    bar.update(3)
    bar.set_postfix(gap="0.1")
    bar.update(2)
    bar.close()
    bar.close()                                     # once only
    lines = stream.getvalue().splitlines()
    assert lines[0] == "work: 0/10 it (0 %), 0 s (started)"
    assert lines[1].startswith("work: 3/10 it (30 %), ")
    assert lines[2].startswith("work: 5/10 it (50 %), ") and lines[2].endswith(", gap 0.1")
    assert lines[3].endswith("(done)") and len(lines) == 4


def test_lines_wait_for_the_interval():
    stream = io.StringIO()
    with progress_bar(None, "scan", unit="image", stream=stream, interval=3600.0) as bar:
        for _ in range(100):
            bar.update()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2 and lines[1].startswith("scan: 100 image, ")


def test_a_terminal_gets_a_bar_and_disabled_progress_says_nothing():
    assert isinstance(progress_bar(5, "work", stream=Terminal()), tqdm)
    stream = io.StringIO()
    bar = progress_bar(5, "work", enabled=False, stream=stream)
    bar.update(5)
    bar.close()
    assert stream.getvalue() == ""
