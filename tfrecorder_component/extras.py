"""The package's optional parts (setup.py's extras), and the one line that names the
extra when a path needs one that is not installed.

`pip install tfrecorder-component` is the core: it converts, validates and inspects
local files on this machine's cores without Beam, pandas or pyarrow
(`engines.local`). The rest is in extras, which `[tfx]` pulls in:

    [beam]     Apache Beam: another runner, Beam arguments, the Beam transforms
               (`tfrecorder_component.engines.beam`)
    [gcp]      gs:// manifests, images and outputs; the DataflowRunner (Beam's GCS file
               system and pyarrow's GCS client)
    [aws]      s3:// (and S3-compatible) manifests, images and outputs (Beam's S3 file
               system, boto3, pyarrow's S3 client)
    [pandas]   DataFrames: the `df.tensorflow` accessor, `convert(df, ...)`
    [parquet]  the `parquet` output layout (pyarrow)
    [tfds], [array_record]  those output layouts' writers
    [tfx]      the TFX component, TensorFlow (`load_dataset`), and Beam with [gcp], pandas

Checks look modules up (`importlib.util.find_spec`) without importing them: Beam's
import takes seconds, and the check runs before every remote read.
"""
import importlib.util
import re
from typing import Dict, Tuple

# extra: the modules it brings that this package imports.
MODULES: Dict[str, Tuple[str, ...]] = {
    'beam': ('apache_beam',),
    'gcp': ('apache_beam', 'pyarrow', 'google.cloud.storage', 'google.auth'),
    'aws': ('apache_beam', 'pyarrow', 'boto3'),
    'pandas': ('pandas',),
    'parquet': ('pyarrow',),
    'tfds': ('tensorflow_datasets',),
    'array_record': ('array_record',),
    'tfx': ('tfx', 'tensorflow', 'apache_beam'),
}

# Which extra a module that failed to import belongs to (the first that brings it).
EXTRA_OF_MODULE = {
    'apache_beam': 'beam', 'pyarrow': 'parquet', 'google': 'gcp', 'boto3': 'aws',
    'pandas': 'pandas', 'tensorflow_datasets': 'tfds', 'array_record': 'array_record',
    'tfx': 'tfx', 'tensorflow': 'tfx',
}

# The extra a URI scheme's file system needs: gs:// and s3:// have their own; any other
# (hdfs://, ...) is reached through Beam's file systems.
EXTRA_OF_SCHEME = {'gs': 'gcp', 's3': 'aws'}


class MissingExtra(ImportError):
  """A path of the package needs an extra that is not installed; the message is one
  line naming it and the command that installs it."""


def install_command(extra: str) -> str:
  """The pip command that installs the package with an extra.

  Args:
    extra: the extra's name, a key of `MODULES` ('gcp', 'parquet', ...).
  """
  return f"pip install 'tfrecorder-component[{extra}]'"


def message(what: str, extra: str) -> str:
  """The one line saying that `what` needs `extra`, with the command that installs it.

  Args:
    what: what needs the extra, the line's start ('gs://bucket/manifest.csv', 'the
      parquet layout').
    extra: the extra's name, a key of `MODULES`.
  """
  return f'{what} needs the [{extra}] extra, which is not installed: {install_command(extra)}'


def _importable(module: str) -> bool:
  try:
    return importlib.util.find_spec(module) is not None
  except (ImportError, ValueError):  # a parent package missing, or a broken one
    return False


_present: Dict[str, bool] = {}


def installed(extra: str) -> bool:
  """Whether the modules `extra` brings can be imported here (looked up once).

  Args:
    extra: the extra's name, a key of `MODULES` (any other raises KeyError).
  """
  if extra not in _present:
    _present[extra] = all(_importable(m) for m in MODULES[extra])
  return _present[extra]


def require(extra: str, what: str) -> None:
  """Raises MissingExtra naming `extra` unless it is installed.

  Args:
    extra: the extra's name, a key of `MODULES`.
    what: what needs it, the message's start ('gs://bucket/manifest.csv', 'the
      DataflowRunner').
  """
  if not installed(extra):
    raise MissingExtra(message(what, extra))


def extra_for_uri(uri: str) -> str:
  """The extra a URI's file system needs: `EXTRA_OF_SCHEME`'s for gs:// and s3://, else
  'beam'.

  Args:
    uri: a remote URI; its scheme (before '://') is compared in lower case.
  """
  return EXTRA_OF_SCHEME.get(uri.split('://', 1)[0].lower(), 'beam')


def require_for_uri(uri: str) -> None:
  """Raises MissingExtra unless the extra of a remote URI's scheme is installed.

  Args:
    uri: a remote URI (a scheme other than file://), or a listing's pattern, which the
      message names without its trailing '/*' or '/**'.
  """
  if not installed(extra_for_uri(uri)):
    # A listing's pattern names the folder it lists (`gs://bucket/data/**`).
    shown = re.sub(r'/\*+$', '', uri)
    require(extra_for_uri(uri), shown)


def for_missing_module(error: ModuleNotFoundError, what: str) -> ImportError:
  """The MissingExtra for an import that failed because one of the extras' modules is
  not installed, else `error` itself.

  Args:
    error: the import's error; its `name` is the module that is missing, and its top-level
      package picks the extra (`EXTRA_OF_MODULE`).
    what: what failed to import, the message's start
      ('tfrecorder_component.engines.beam').
  """
  extra = EXTRA_OF_MODULE.get((error.name or '').split('.')[0])
  return MissingExtra(message(what, extra)) if extra else error


# What a public name of the package (`tfrecorder_component.ImageExampleGen`,
# `load_dataset`) needs when TFX or TensorFlow is missing: TensorFlow alone is no extra.
_PUBLIC_NAME_NEEDS = {
    'tfx': "the TFX component needs TFX: pip install 'tfrecorder-component[tfx]'",
    'tensorflow': "it needs TensorFlow: pip install tensorflow "
                  "(or 'tfrecorder-component[tfx]', which brings it)",
}


def for_public_name(error: ModuleNotFoundError, name: str) -> ImportError:
  """The ImportError, in one line, for public name `name` of the package whose module
  failed to import with `error`.

  Args:
    error: the import's error; its `name` is the module that is missing.
    name: the public name being imported, which the line starts with.
  """
  missing = (error.name or '').split('.')[0]
  if missing in _PUBLIC_NAME_NEEDS:
    return ImportError(f'{name}: {_PUBLIC_NAME_NEEDS[missing]}')
  return for_missing_module(error, name)
