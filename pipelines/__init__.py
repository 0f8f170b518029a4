"""The demo pipeline: definition shared by every runner, local runner, trainer module, data."""
