"""The ways a conversion runs, all on the same steps (`steps/`) and so writing the same
bytes: `run` chooses and prepares, `local/` runs on this machine's cores without Beam,
and `beam/` is the conversion as Beam transforms (any runner: Direct, Portable, Dataflow)."""
