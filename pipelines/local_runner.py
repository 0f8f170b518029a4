"""Runs the demo pipeline on LocalDagRunner with the embedded SQLite ML Metadata store.

    python -m pipelines.local_runner [--home DIR] [--verbose]

Writes the digits demo data, runs the pipeline, and prints a line as each component
starts and ends, then where the conversion report, the records, the MLMD store and the
pushed model are, the eval accuracy from Evaluator, and the command to try next on one's
own images. Everything TensorFlow, TFX, Beam and Keras print (their start-up chatter,
the trainer module's wheel build, the training epochs) goes to `<home>/demo.log`
instead of the console, unless --verbose.
"""
from __future__ import annotations

import argparse
import os
import sys
import warnings

from absl import logging as absl_logging

PIPELINE_NAME = 'tfrecorder_demo'


def evaluation_accuracy(evaluation_uri: str) -> float:
  """SparseCategoricalAccuracy on the eval split, from an Evaluator's evaluation."""
  import tensorflow_model_analysis as tfma  # pylint: disable=g-import-not-at-top
  for record in tfma.load_metrics(evaluation_uri):
    for key in record.metric_keys_and_values:
      if key.key.name == 'sparse_categorical_accuracy':
        return key.value.double_value.value
  raise LookupError(f'no accuracy in the evaluation at {evaluation_uri}')


def eval_accuracy(connection_config, pipeline_name: str) -> float:
  """SparseCategoricalAccuracy on the eval split, from Evaluator's newest evaluation."""
  from tfrecorder_component.adapters.component.mlmd import latest_output  # pylint: disable=g-import-not-at-top
  return evaluation_accuracy(
      latest_output(connection_config, pipeline_name, 'Evaluator', 'evaluation').uri)


def main(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--home', default=os.path.join(os.getcwd(), 'tfx_home'),
                      help='folder for demo data, pipeline root, MLMD and served models')
  parser.add_argument('--train-steps', type=int, default=400)
  parser.add_argument('--min-accuracy', type=float, default=0.9)
  parser.add_argument('--verbose', action='store_true',
                      help='print what TensorFlow, TFX and Beam print, not only to demo.log')
  args = parser.parse_args(argv)

  home = os.path.abspath(args.home)
  os.makedirs(home, exist_ok=True)
  log_path = os.path.join(home, 'demo.log')
  console = _Console(log_path, args.verbose)
  # TensorFlow's C++ start-up chatter (cuFFT/cuDNN factories, no CUDA drivers) and the
  # Google client libraries' Python-version notices say nothing about this run.
  os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')
  warnings.filterwarnings('ignore', category=FutureWarning)
  absl_logging.set_verbosity(absl_logging.INFO)  # to the log: the components' progress
  console.say(f'Running the demo pipeline (about a minute); its log: {log_path}')
  try:
    from tfx import v1 as tfx  # pylint: disable=g-import-not-at-top
    from pipelines import demo_data, pipeline  # pylint: disable=g-import-not-at-top
    from tfrecorder_component.adapters.component.mlmd import latest_output  # pylint: disable=g-import-not-at-top

    manifest = demo_data.write_digits(os.path.join(home, 'data', 'digits'))
    root = os.path.join(home, 'pipelines', PIPELINE_NAME)
    metadata_path = os.path.join(home, 'metadata', PIPELINE_NAME, 'metadata.db')
    serving = os.path.join(home, 'serving_model', PIPELINE_NAME)
    config = tfx.orchestration.metadata.sqlite_metadata_connection_config(metadata_path)
    demo = pipeline.create_pipeline(
        PIPELINE_NAME, root, manifest, serving, metadata_connection_config=config,
        train_steps=args.train_steps, min_accuracy=args.min_accuracy)
    console.components = len(demo.components)
    tfx.orchestration.LocalDagRunner().run(demo)

    examples = latest_output(config, PIPELINE_NAME, 'ImageExampleGen', 'examples')
    report = latest_output(config, PIPELINE_NAME, 'ImageExampleGen', 'report')
    blessing = latest_output(config, PIPELINE_NAME, 'Evaluator', 'blessing')
    accuracy = eval_accuracy(config, PIPELINE_NAME)
  except BaseException:
    console.failed()
    raise
  finally:
    console.close()
  counts = {k: int(v) for k, v in examples.get_json_value_custom_property('record_counts').items()}
  blessed = bool(blessing.get_int_custom_property('blessed'))
  ok = accuracy >= args.min_accuracy and blessed
  venv_bin = os.path.dirname(sys.executable)
  print(f"""
Converted {sum(counts.values()):,} images of {manifest}
  records:       {examples.uri} ({", ".join(f"{k} {v:,}" for k, v in sorted(counts.items()))})
  report:        {os.path.join(report.uri, 'report.html')}
Trained and evaluated on them:
  eval accuracy: {accuracy:.4f} (required >= {args.min_accuracy}: {"OK" if ok else "FAILED"})
  pushed model:  {serving if blessed else "(not pushed: the model was not blessed)"}
  ML Metadata:   {metadata_path} (pipeline root {root})
Next, your own images (a CSV of split,image_uri,label, or a folder of <label>/<image>):
  {os.path.join(venv_bin, 'tfrecorder-component')} convert my_images.csv my_records/""")
  return 0 if ok else 1


class _Console:
  """The demo's console: the process's own output (file descriptors 1 and 2, which
  TensorFlow's C++ logging, pip and Beam's workers write to as well) goes to the log
  file; what the demo says, and a line as each component starts and ends (LocalDagRunner's
  own log lines), go to the terminal. With `verbose`, the log is shown as well."""

  def __init__(self, log_path: str, verbose: bool):
    import logging  # pylint: disable=g-import-not-at-top
    import time  # pylint: disable=g-import-not-at-top
    self._time = time
    self.components = 0
    self._started = time.monotonic()
    self._done = 0
    self._log_path = log_path
    sys.stdout.flush()
    sys.stderr.flush()
    self._terminal = os.fdopen(os.dup(1), 'w', buffering=1)
    self._verbose = verbose
    if not verbose:
      self._log = open(log_path, 'w', buffering=1)  # pylint: disable=consider-using-with
      os.dup2(self._log.fileno(), 1)
      os.dup2(self._log.fileno(), 2)
    console = self

    class Progress(logging.Handler):
      def emit(self, record):
        message = record.getMessage()
        for suffix, word in ((' is running.', 'running'), (' is finished.', 'done')):
          if message.startswith('Component ') and message.endswith(suffix):
            console.component(message[len('Component '):-len(suffix)], word)

    logging.getLogger('absl').addHandler(Progress())

  def say(self, line: str) -> None:
    print(line, file=self._terminal)

  def component(self, name: str, word: str) -> None:
    if word == 'done':
      self._done += 1
    elapsed = self._time.monotonic() - self._started
    of = f'/{self.components}' if self.components else ''
    if word == 'done':
      self.say(f'  [{self._done}{of}] {name} done ({elapsed:.0f} s)')

  def failed(self) -> None:
    if self._verbose:
      return
    sys.stdout.flush()
    sys.stderr.flush()
    with open(self._log_path, encoding='utf-8', errors='replace') as f:
      tail = f.read().splitlines()[-20:]
    self.say('The demo failed; the end of its log (' + self._log_path + '):')
    for line in tail:
      self.say('  ' + line)

  def close(self) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    if not self._verbose:
      os.dup2(self._terminal.fileno(), 1)
      os.dup2(self._terminal.fileno(), 2)
      self._log.close()


if __name__ == '__main__':
  sys.exit(main())
