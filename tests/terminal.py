"""Reads what a command shows on a pseudo-terminal, as the tests that run it there do."""
import os
import select
import time


def read_terminal(master: int, proc, timeout: float, on_output=None,
                  poll_s: float = 0.5) -> bytes:
  """Everything the terminal whose master side is `master` receives from `proc` until
  every writer closed it, `proc` ended with nothing left to read, or `timeout` seconds
  passed; `on_output(bytes so far)` is called before each wait (to type into it)."""
  out = b''
  deadline = time.monotonic() + timeout
  while time.monotonic() < deadline:
    if on_output is not None:
      on_output(out)
    readable, _, _ = select.select([master], [], [], poll_s)
    if not readable:
      if proc.poll() is not None:
        break
      continue
    try:
      data = os.read(master, 65536)
    except OSError:  # EIO: every writer closed the terminal
      break
    if not data:
      break
    out += data
  return out
