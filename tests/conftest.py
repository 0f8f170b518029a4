"""Shared fixtures. TensorFlow is imported once per test process, at module level."""
import os
import sys

os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
sys.path.insert(0, os.path.dirname(__file__))
