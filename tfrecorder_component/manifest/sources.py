"""What a `convert()` source stands for: a DataFrame (a manifest written for it, its
index kept for error reports), or a path, which `manifest.discover` recognises."""
from __future__ import annotations

import logging
import os
import posixpath
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

from tfrecorder_component.io import files
from tfrecorder_component.errors import ManifestError, UsageError
from tfrecorder_component.manifest import automl_csv, confine, discover
from tfrecorder_component.manifest.columns import Columns, as_text, named
# What the folder reading of earlier releases exposed here.
from tfrecorder_component.manifest.discover import IMAGE_EXTENSIONS, folder_manifest  # pylint: disable=unused-import


def dataframe_manifest(df, columns=()) -> str:
  """A DataFrame in AutoML columns (`split`, `image_uri`, `label` and any extra columns,
  which become typed features) as CSV text, URIs as written.

  Args:
    df: a pandas DataFrame with an image URI column (one of `automl_csv.URI_COLUMNS`,
      in any spelling `automl_csv.column_key` compares), or the one `columns` names,
      else ManifestError; a label column whose cells are lists (multi-label) is spread
      into one column per label position.
    columns: the run's `columns` option, as (role, column) pairs
      (`columns.parse_columns`): the reader takes the image column from it.
  """
  names = [str(c) for c in df.columns]
  known = {automl_csv.column_key(c) for c in automl_csv.URI_COLUMNS + automl_csv.ID_URI_COLUMNS}
  if not named(columns, 'image') and not any(automl_csv.column_key(c) in known
                                             for c in names):
    raise ManifestError(f'the DataFrame needs an image URI column (one of '
                        f'{", ".join(automl_csv.URI_COLUMNS)}, or the one columns names: '
                        f'columns={{"image": NAME}}); it has {names}')
  return _labels_spread(df, automl_csv.is_label_column).to_csv(index=False)


def _labels_spread(df, is_label_column):
  """A label column whose cells are lists (a multi-label DataFrame) becomes one column
  per label position, each a label column, so every label is read as one."""
  import pandas as pd  # pylint: disable=g-import-not-at-top
  listy = (list, tuple, set)
  for column in list(df.columns):
    name = str(column)
    if not is_label_column(name.strip().lower()):
      continue
    cells = df[column]
    if not cells.map(lambda v: isinstance(v, listy)).any():
      continue
    lists = cells.map(lambda v: sorted(v) if isinstance(v, set) else list(v)
                      if isinstance(v, listy) else ([] if pd.isna(v) else [v]))
    width = max(1, max(len(l) for l in lists))
    names = [name] + [f'{name}_{i}' if name.lower().startswith('label') else f'label_{name}_{i}'
                      for i in range(2, width + 1)]
    spread = pd.DataFrame([l + [None] * (width - len(l)) for l in lists], index=df.index,
                          columns=names)
    df = df.drop(columns=[column]).join(spread)
  return df


def columns_by_manifest(paths: List[str], scratch_dir: str, columns: Columns,
                        source: str) -> List[Columns]:
  """The `columns` option each manifest of a source takes: none for a manifest its
  reading wrote into `scratch_dir` (an image folder's, a layout's: its header is this
  package's own), the option for the others; a UsageError where the option is given
  and every manifest is one of those, so it would name no column of the user's.

  Args:
    paths: the source's manifest files (`manifests_for`, `discover.find`).
    scratch_dir: the folder manifests written for the source go to (the report folder).
    columns: the run's `columns` option, as (role, column) pairs; (): none.
    source: the source as given, named in the UsageError.
  """
  if not columns:
    return [() for _ in paths]
  inside = files.absolute(scratch_dir).rstrip('/') + '/'
  own = [not files.absolute(p).startswith(inside) for p in paths]
  if paths and not any(own):
    raise UsageError(f'columns ({as_text(columns)}) names the columns of a CSV manifest\'s '
                     f'header, but {source} is read through manifests written for it (an '
                     'image folder or a dataset layout), which have no columns of yours; '
                     'leave columns out, or convert your CSV itself')
  return [columns if o else () for o in own]


def dataframe_row_index(df) -> Tuple[Tuple[int, Any], ...]:
  """(row of `dataframe_manifest`'s CSV, index label) for each DataFrame row: the line
  where the row ends, as the CSV reader counts lines (a cell may hold line breaks).

  Args:
    df: the DataFrame `dataframe_manifest` wrote, in the same row order; index labels
      that are not ints or strs are given as their str (numpy scalars as their value).
  """
  line, out = 1, []  # line 1 is the header
  for label, values in zip(df.index, df.itertuples(index=False, name=None)):
    breaks = sum(v.count('\r') + v.count('\n') - v.count('\r\n')
                 for v in values if isinstance(v, str))
    line += 1 + breaks
    out.append((line, label.item() if hasattr(label, 'item') else
                label if isinstance(label, (int, str)) else str(label)))
  return tuple(out)


# Inputs `input_paths` names that the launching process reads itself (never a worker).
READ_BY_THE_LAUNCHER = ('label map', 'class map')


def input_paths(source, image_root=None, label_map=None,
                class_map=None) -> List[Tuple[str, str]]:
  """(what, path) of each input of a `convert()` that is a file or folder: the source
  (a manifest, or a folder of manifests or images; a DataFrame has none), the image
  root, a label map or class map given as a path. The output may not overlap any.

  Args:
    source: the `convert()` source: a DataFrame (no input path), or a path or URI (a
      local file is named 'manifest', a local folder 'input folder', a URI 'input').
    image_root: the run's image_root option; None or '': none.
    label_map: the run's label_map option; an input only when it is a path or an object
      with a `uri` (a TFX artifact), not a dict or list.
    class_map: the run's class_map option; an input only when it is a path, not a dict
      or JSON text.
  """
  found = []
  if not (hasattr(source, 'to_csv') and hasattr(source, 'columns')):
    path = os.fspath(source)
    found.append(('manifest' if '://' not in path and os.path.isfile(path) else
                  'input folder' if '://' not in path else 'input', path))
  if image_root:
    found.append(('image root', os.fspath(image_root)))
  if isinstance(label_map, (str, os.PathLike)) or hasattr(label_map, 'uri'):
    found.append(('label map', os.fspath(getattr(label_map, 'uri', label_map))))
  if isinstance(class_map, (str, os.PathLike)) and not str(class_map).lstrip().startswith(
      ('{', '[')):
    found.append(('class map', os.fspath(class_map)))
  return found


class Manifests(NamedTuple):
  """What a `convert()` source stands for (`manifests_for`).

  Attributes:
    paths: the manifest files to read (for a DataFrame or an image folder, the one
      written into the report folder).
    image_root: the folder every manifest's relative image URIs resolve against (a
      DataFrame's: the working directory); None: each manifest's own folder, or its
      entry in `image_roots`.
    row_index: a DataFrame's (manifest row, index label) pairs
      (`dataframe_row_index`), for error reports; () for a path.
    splits: {path: the TFX split every row of it takes}, from split folders or a
      dataset's split lists; None, as for a path not listed: the rows keep their own.
    image_roots: {path: the folder its relative image URIs resolve against}, where a
      layout says (VOC's JPEGImages/, COCO's images/<subset>/).
    formats: {path: its format name}, for manifests a layout writes or fixes.
  """
  paths: List[str]
  image_root: Optional[str]  # None: each manifest's own folder (or `image_roots`)
  row_index: Tuple[Tuple[int, Any], ...]  # a DataFrame's (row, index label) pairs
  # {path: the split every row of it takes (None: unassigned)}, from split folders or
  # a dataset's split lists
  splits: Dict[str, Optional[str]]
  # {path: the folder its relative image URIs resolve against}, where a layout says
  image_roots: Dict[str, str] = {}
  # {path: its format}, for manifests a layout writes
  formats: Dict[str, str] = {}


def manifests_for(source, report_dir: str, image_root: Optional[str] = None,
                  columns=(), confine_to: Sequence[str] = ()) -> Manifests:
  """The manifest files a source stands for, the folder its relative image URIs resolve
  against (None: each manifest's own folder), for a DataFrame its rows' index labels, and
  the split of each manifest where its layout gives one (`discover.find`: split folders,
  as Roboflow's exports lay out train/, valid/ and test/; Pascal VOC's split lists; COCO's
  subsets). For a DataFrame (URIs relative to the working directory, as a notebook means
  them) or an image folder, a manifest is written into `report_dir`.

  Args:
    source: a pandas DataFrame in AutoML columns, or a path or URI (str or
      os.PathLike) that `discover.find` reads.
    report_dir: the run's report folder, where implied manifests are written.
    image_root: the run's image_root option: passed to `discover.find` (for a COCO
      root without an images folder); the returned `image_root` does not carry it,
      the caller puts it first.
    columns: the run's `columns` option's (role, column) pairs: a DataFrame named its
      image column there needs none of the known names.
    confine_to: the run's roots (`confine`, `source` replaced): a link in a source
      folder leading out of them is neither listed nor read; (): none.
  """
  if hasattr(source, 'to_csv') and hasattr(source, 'columns'):
    path = posixpath.join(report_dir, 'input_manifest.csv')
    files.write_text(path, dataframe_manifest(source, columns))
    return Manifests([path], os.getcwd(), dataframe_row_index(source), {})
  found = discover.find(os.fspath(source), report_dir,
                        os.fspath(image_root) if image_root else None,
                        confine.confinement(tuple(confine_to)))
  if found.layout not in ('manifests',):
    logging.info('%s: read as %s (%d manifest files)', os.fspath(source), found.layout,
                 len(found.paths))
  return Manifests(found.paths, None, (), found.splits, found.image_roots, found.formats)
