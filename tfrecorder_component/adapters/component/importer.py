"""`examples_importer`: a finished output of `convert()` / `tfrecorder-component convert`
(or the folder of an ImageExampleGen `Examples` artifact) brought into a TFX pipeline
as an `Examples` artifact, through TFX's own Importer node, with the properties that
ExampleGen gives its output, so StatisticsGen, Transform, Trainer ... take it as it is.

The properties come from the folder's `examples.json`, read when the pipeline is
defined (through `files`: local, gs://, s3://), and are fixed in the Importer:

- `split_names`: the output's splits, in its order, as `artifact_utils.encode_split_names`
  writes them (`["train", "eval", "test"]`);
- `span`, `version`: 0 unless given, as ImageExampleGen sets them without `{SPAN}`;
- custom `payload_format` FORMAT_TF_EXAMPLE and `file_format` tfrecords_gzip, as ExampleGen
  sets them;
- custom `input_fingerprint`: per split, the shards' number, bytes and modification times
  (TFX's fingerprint form). The Importer reuses an earlier artifact only when its URI and
  every property match (`reimport=False`), so a folder converted again becomes a new
  artifact, and downstream components run again instead of reusing results cached
  for the old records.

Only a finished output is imported (`_SUCCESS`, see `output.paths.unfinished`): otherwise the
error names the folder and why. An output without examples.json (written before it
existed) is imported with `split_names` given, each split checked for shards.

Why at definition time, not in a component that reads examples.json when it runs: only
an Importer (a system node) registers an existing folder as an artifact. A component's
outputs get folders under the pipeline root from the orchestrator, so such a component
would have to copy every shard into its own output, or repoint its output at the user's
folder: Vertex AI and Kubeflow Pipelines assign output URIs themselves, and TFX's
launcher removes the output folders of a failed execution (here, the user's data).
Where the conversion runs in the pipeline, ImageExampleGen sets these properties at run
time. To define or compile a pipeline before the folder is written, give `split_names`
(the conversion's splits: train, eval, test by default): nothing is read while the
folder is unfinished, and they are checked once it is done.
"""
from __future__ import annotations

import os
from typing import Dict, List, Optional, Sequence, Union

from tfx import v1 as tfx
from tfx.components.example_gen import utils as example_gen_utils
from tfx.proto import example_gen_pb2
from tfx.types import artifact_utils

from tfrecorder_component.io import files
from tfrecorder_component.output import paths as output_paths
from tfrecorder_component.io import storage
from tfrecorder_component.adapters.component import executor
from tfrecorder_component.output import examples_json as index_lib

FILE_FORMAT = 'tfrecords_gzip'  # what the executor sets: every shard is GZIP TFRecord


def _fingerprint(output_dir: str, split_names: Sequence[str]) -> str:
  """TFX's fingerprint (files, bytes, modification times) of each split's shards."""
  return '\n'.join(
      executor.file_fingerprint(
          name, files.join(output_paths.split_dir(output_dir, name), '*'))
      for name in split_names)


def _splits_of(output_dir: str, given: Optional[Sequence[str]]) -> List[str]:
  """The split names of a finished output: its examples.json's, which `given` must equal;
  without examples.json (an output of an earlier version), `given`, each split with
  shards. ValueError naming the folder otherwise."""
  index_path = files.join(output_dir, index_lib.INDEX_FILE)
  if files.exists(index_path):
    found = index_lib.read_index(output_dir).get('split_names')
    if not found or not all(isinstance(n, str) and n for n in found):
      raise ValueError(f'cannot import {output_dir} as Examples: {index_path} names no '
                       f'splits ({found!r})')
    if given is not None and list(given) != list(found):
      raise ValueError(f'cannot import {output_dir} as Examples: it holds splits '
                       f'{list(found)}, not the split_names given ({list(given)})')
    return list(found)
  if given is None:
    raise ValueError(f'cannot import {output_dir} as Examples: it has no '
                     f'{index_lib.INDEX_FILE} (an output of an earlier version); convert '
                     'again, or give split_names')
  missing = [n for n in given
             if not files.match(files.join(output_paths.split_dir(output_dir, n), '*'))]
  if missing:
    raise ValueError(f'cannot import {output_dir} as Examples: no shards for split(s) '
                     f'{missing} ({output_paths.SPLIT_PREFIX}<split>/ is empty or missing)')
  return list(given)


def examples_importer(output_dir: str, *, reimport: bool = False, span: int = 0,
                      version: int = 0, split_names: Optional[Sequence[str]] = None,
                      custom_properties: Optional[Dict[str, Union[str, int]]] = None
                      ) -> tfx.dsl.Importer:
  """A `tfx.dsl.Importer` of `output_dir` as `Examples`, with ExampleGen's properties.

  Args:
    output_dir: a finished output folder of `convert()` / `tfrecorder-component convert`,
      or an ImageExampleGen Examples artifact's URI; a local path is made absolute.
    reimport: register a new artifact even where one with the same URI and properties
      exists (TFX's Importer option).
    span: the artifact's `span` property, for resolvers that pick spans (e.g. one
      output folder per day, imported with its span).
    version: the artifact's `version` property.
    split_names: the splits, where the pipeline is defined before the folder is written:
      used as given while the folder is unfinished (no `input_fingerprint` then), checked
      against examples.json once it is finished. Without it examples.json is read.
    custom_properties: more custom properties (str or int) for the artifact.

  Returns:
    The Importer; its output is `.outputs['result']`. Give it an id with `.with_id(...)`
    where a pipeline has more than one Importer.

  Raises:
    ValueError: the folder is not a finished output (the message says why), has no
      examples.json, does not hold the `split_names` given, or a custom property would
      replace one of ExampleGen's.
  """
  output_dir = output_dir.rstrip('/')
  if files.is_local(output_dir):
    output_dir = os.path.abspath(output_dir)
  if split_names is not None:
    if isinstance(split_names, str) or not split_names:
      raise ValueError(f'split_names: a list of split names, not {split_names!r}')
    split_names = list(split_names)
  storage.prepare_file_systems(output_dir)
  why = output_paths.unfinished(output_dir, files.exists)
  if why and split_names is None:
    raise ValueError(f'cannot import {output_dir} as Examples: {why}')
  if not why:
    split_names = _splits_of(output_dir, split_names)
  properties = {
      'split_names': artifact_utils.encode_split_names(split_names),
      'span': int(span),
      'version': int(version),
  }
  ours = {
      example_gen_utils.PAYLOAD_FORMAT_PROPERTY_NAME:
          example_gen_pb2.PayloadFormat.Name(example_gen_pb2.FORMAT_TF_EXAMPLE),
      example_gen_utils.FILE_FORMAT_PROPERTY_NAME: FILE_FORMAT,
  }
  if not why:
    ours[example_gen_utils.FINGERPRINT_PROPERTY_NAME] = _fingerprint(output_dir, split_names)
  clash = sorted(set(custom_properties or {}) & set(ours))
  if clash:
    raise ValueError(f'custom_properties may not replace {", ".join(clash)}: the importer '
                     'sets them from the output')
  return tfx.dsl.Importer(source_uri=output_dir,
                          artifact_type=tfx.types.standard_artifacts.Examples,
                          reimport=reimport, properties=properties,
                          custom_properties={**ours, **(custom_properties or {})})
