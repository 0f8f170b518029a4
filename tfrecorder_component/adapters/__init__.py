"""The ways in, each a thin layer over the engines: `convert()` and `validate()`
(`conversion`), the `tfrecorder-component` command (`cli`, `console`), the pandas
accessor (`accessor`) and the TFX component (`component/`)."""
