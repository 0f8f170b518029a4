"""Registers the `slow://` file system (tests/slowfs.py) in every Python process started
with this folder on PYTHONPATH: a command under test and its Beam worker processes.

The package is imported first, as the command imports it, so that in the command it
takes Ctrl-C and SIGTERM before Beam's import starts any thread (`interrupt`)."""
import os
import sys
import warnings

# Importing Beam here would print Google clients' notices the command itself silences.
warnings.filterwarnings('ignore', category=FutureWarning)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import tfrecorder_component  # noqa: E402,F401  pylint: disable=unused-import,wrong-import-position
import slowfs  # noqa: E402,F401  pylint: disable=unused-import,wrong-import-position
