"""ImageExampleGen: an image manifest becomes a split `Examples` artifact."""
import inspect
import re
import textwrap
import typing
from typing import Any, Optional, Tuple, Union

from tfx.components.example_gen import component as example_gen_component
from tfx.components.example_gen import utils as example_gen_utils
from tfx.dsl.components.base import base_beam_component, executor_spec
from tfx.orchestration import data_types
from tfx.proto import example_gen_pb2, range_config_pb2
from tfx.types import channel, standard_artifacts

from tfrecorder_component import option_table
from tfrecorder_component.adapters.conversion import check_names
from tfrecorder_component.images import transform as transform_lib
from tfrecorder_component.adapters.component import driver, executor, properties, spec, types
from tfrecorder_component.manifest import MANIFEST_FORMATS
from tfrecorder_component.options import check_options


def default_output_config() -> example_gen_pb2.Output:
  """Hash buckets for rows without ML_USE: train 8, eval 1, test 1 (AutoML's 80/10/10)."""
  return example_gen_pb2.Output(split_config=example_gen_pb2.SplitConfig(splits=[
      example_gen_pb2.SplitConfig.Split(name=name, hash_buckets=n)
      for name, n in option_table.DEFAULT_BUCKETS]))


class ImageExampleGen(base_beam_component.BaseBeamComponent):
  """Loads the images a manifest lists and writes them as split tf.train.Examples.

  Give the manifest either as `manifest` (a channel of `ImageManifest`, for example
  from `tfx.dsl.Importer`) or as `input_base` (a folder of manifests, matched by the
  split patterns of `input_config`, `{SPAN}` / `{VERSION}` resolved to the latest as
  FileBasedExampleGen does).

  Rows keep the split their ML_USE column names (TRAIN -> train, VALIDATION -> eval,
  TEST -> test). Unassigned rows are split by `output_config` hash buckets over the
  image's source id (default train:eval:test = 8:1:1). With several `input_config`
  splits, every row of a split's files takes that split.

  Outputs: `examples`, a standard Examples artifact (`Split-<name>/data_tfrecord-*.gz`
  plus `labels.txt`, `label_map.pbtxt` and `label_map.csv`; see
  `tfrecorder_component.read_label_map`),
  and `report`, a ConversionReport (summary, failed rows, duplicate images).

  Label ids stay put across runs when a `label_map` is given, or when the optional
  `label_map_examples` input brings the previous run's Examples (see
  `tfrecorder_component.record.labels`).
  """

  SPEC_CLASS = spec.ImageExampleGenSpec
  EXECUTOR_SPEC = executor_spec.BeamExecutorSpec(executor.Executor)
  DRIVER_CLASS = driver.ImageExampleGenDriver

  def __new__(cls, manifest=None, input_base=None, *args, **kwargs):  # pylint: disable=keyword-arg-before-vararg
    del manifest, args, kwargs  # __init__ reads them
    # With `input_base` the component is also a FileBasedExampleGen, the one kind of
    # node that KubeflowV2DagRunner gives the span driver hook (`preCacheCheck`).
    if cls is ImageExampleGen and input_base:
      cls = FileBasedImageExampleGen
    return super().__new__(cls)

  def __init__(self, manifest: Optional[channel.BaseChannel] = None,
               input_base: Optional[str] = None, input_config=None, output_config=None,
               range_config=None, label_map_examples: Optional[channel.BaseChannel] = None,
               **options):
    """Constructs an ImageExampleGen.

    `help()` and `inspect.signature` give every parameter, its default and what it
    means, made from `PIPELINE_PARAMETERS` and the option table (`_signature`,
    `_docstring`), as [the component guide](../guides/component.md#parameters) tables
    them.

    Args:
      manifest: A channel of `ImageManifest`.
      input_base: A folder of manifests, instead of `manifest`.
      input_config: Split patterns relative to `input_base`.
      output_config: Hash buckets for rows without a split.
      range_config: The span range, as for FileBasedExampleGen.
      label_map_examples: An earlier `Examples` whose label ids are kept.
      **options: The conversion's options, each a keyword (`option_table.OPTIONS`
        declares them, those taken by the COMPONENT).
    """
    if (manifest is None) == (not input_base):
      raise ValueError('ImageExampleGen needs exactly one of `manifest` (a channel of '
                       'ImageManifest) or `input_base` (a folder of manifests).')
    check_names(options, option_table.COMPONENT)  # TypeError, as Python's, naming the closest
    options = dict(option_table.defaults(option_table.COMPONENT), **options)
    # Each option checked as convert() checks it (`options.check_option`); a layout's
    # library need not be installed where the pipeline is compiled. The label map is
    # read where the component runs.
    checked = check_options(options, compiling=True)
    for name in ('image_transform', 'layouts', 'confine_to'):
      options[name] = checked[name]
    input_config = input_config or example_gen_utils.make_default_input_config()
    output_config = output_config or default_output_config()
    # Explicitly the Beam component's constructor: FileBasedImageExampleGen also
    # inherits FileBasedExampleGen, whose constructor builds another spec.
    base_beam_component.BaseBeamComponent.__init__(self, spec=spec.ImageExampleGenSpec(
        manifest=manifest,
        input_base=input_base,
        input_config=input_config,
        output_config=output_config,
        range_config=range_config,
        label_map_examples=label_map_examples,
        examples=channel.Channel(type=standard_artifacts.Examples),
        report=channel.Channel(type=types.ConversionReport),
        **properties.to_properties(options)))


# The component's parameters that are no conversion option: its inputs and the
# configuration TFX's ExampleGen takes, before the options (`option_table.OPTIONS` taken
# by the COMPONENT). (name, annotation, the component guide's default cell, what it is, in
# Markdown.) Every one defaults to None.
PIPELINE_PARAMETERS: Tuple[Tuple[str, Any, str, str], ...] = (
    ('manifest', Optional[channel.BaseChannel], '',
     'channel of `ImageManifest`: one manifest file, a folder of them, or a dataset folder '
     'read as `convert()` reads it (a Pascal VOC or COCO root, an image folder: see the '
     'formats guide\'s dataset folders)'),
    ('input_base', Optional[str], '', 'folder of manifests; the alternative to `manifest`'),
    ('input_config', Optional[Union[example_gen_pb2.Input, data_types.RuntimeParameter]],
     'one split, pattern `*`', 'split patterns relative to `input_base`; with several splits '
     'every row of a split\'s files takes that split'),
    ('output_config', Optional[Union[example_gen_pb2.Output, data_types.RuntimeParameter]],
     'hash buckets train 8 : eval 1 : test 1',
     'splits for rows whose ML_USE is `UNASSIGNED` or empty'),
    ('range_config', Optional[Union[range_config_pb2.RangeConfig,
                                    data_types.RuntimeParameter]],
     'latest span', 'as for FileBasedExampleGen'),
    ('label_map_examples', Optional[channel.BaseChannel], 'none',
     'optional channel of an earlier `Examples` (a resolver\'s latest, for continuous '
     'training): its ids are kept, new labels appended after them'),
)
_TYPES = dict(vars(typing), ImageTransform=transform_lib.ImageTransform)


def _signature() -> inspect.Signature:
  """ImageExampleGen's constructor's signature: self, `PIPELINE_PARAMETERS`, then each
  option the component takes, keyword only, with its annotation and default."""
  parameters = [inspect.Parameter('self', inspect.Parameter.POSITIONAL_OR_KEYWORD)]
  parameters += [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                   default=None, annotation=annotation)
                 for name, annotation, _, _ in PIPELINE_PARAMETERS]
  for o in option_table.taken_by(option_table.COMPONENT):
    annotation = (eval(o.annotation, _TYPES) if o.annotation  # pylint: disable=eval-used
                  else type(o.default))
    parameters.append(inspect.Parameter(o.name, inspect.Parameter.KEYWORD_ONLY,
                                        default=o.default, annotation=annotation))
  return inspect.Signature(parameters)


def _plain(markdown: str) -> str:
  """Markdown as a docstring says it: links as their text, table pipes unescaped."""
  return re.sub(r'\[([^\]]+)\]\([^)]+\)', r'\1', markdown).replace('\\|', '|')


def _docstring() -> str:
  """ImageExampleGen's constructor's docstring: an `Args:` entry for each parameter, from
  `PIPELINE_PARAMETERS` and the option table (`component_doc`, else `doc`)."""
  entries = [(name, default, text) for name, _, default, text in PIPELINE_PARAMETERS]
  entries += option_table.docs_texts(option_table.COMPONENT, MANIFEST_FORMATS)
  lines = ['Constructs an ImageExampleGen.', '', 'Args:']
  for name, default, text in entries:
    said = _plain(text[:1].upper() + text[1:]) + '.'
    if default and default != 'none':
      said += f' Default: {_plain(default)}.'
    lines += textwrap.wrap(f'{name}: {said}', 84, initial_indent='  ',
                           subsequent_indent='    ', break_on_hyphens=False)
  return '\n'.join(lines) + '\n'


def docs_table() -> str:
  """The component guide's table of parameters, in Markdown: `PIPELINE_PARAMETERS`, then
  the options (`option_table.docs_rows`)."""
  rows = ['| parameter | default | meaning |', '| --- | --- | --- |']
  rows += [f'| `{name}` | {default} | {text} |' for name, _, default, text in PIPELINE_PARAMETERS]
  rows += option_table.docs_rows(option_table.COMPONENT, MANIFEST_FORMATS)
  return '\n'.join(rows) + '\n'


ImageExampleGen.__init__.__signature__ = _signature()
ImageExampleGen.__init__.__doc__ = _docstring()


class FileBasedImageExampleGen(ImageExampleGen, example_gen_component.FileBasedExampleGen):
  """ImageExampleGen over `input_base`, as `ImageExampleGen(input_base=...)` builds it.

  The same spec, executor and driver; being a `FileBasedExampleGen` as well makes
  KubeflowV2DagRunner attach TFX's example-gen driver as the executor's
  `lifecycle.preCacheCheck` hook, so `{SPAN}`, `{VERSION}`, `range_config` and the
  input fingerprint resolve on Vertex AI before the cache check, as on LocalDagRunner.
  Its node id and type are ImageExampleGen's, so pipelines, caches and ML Metadata
  see one component whichever input it reads.
  """

  @classmethod
  def get_class_type(cls) -> str:
    return ImageExampleGen.get_class_type()

  @property
  def id(self) -> str:
    return self._id or ImageExampleGen.__name__

  @id.setter
  def id(self, value: str) -> None:
    self._id = value
