"""Labelbox's NDJSON export (Export v2, "Image" data rows) as detection rows.

One JSON object a line, as Labelbox documents it
(https://docs.labelbox.com/reference/export-image-annotations: the annotations;
https://docs.labelbox.com/reference/export-quick-reference: a whole row;
https://docs.labelbox.com/reference/export-glossary: every field):
`{"data_row": {"id", "row_data", "external_id", "global_key"}, "media_attributes":
{"height", "width", "mime_type"}, "projects": {"<project id>": {"name", "labels":
[{"label_kind", "annotations": {"objects": [{"name", "annotation_kind":
"ImageBoundingBox", "bounding_box": {"top", "left", "height", "width"}}, ...],
"classifications": [...], "relationships": [...]}}]}}}`. Rules:

- One row a line (its row number: the line's), one image a row; blank lines are
  skipped. A file is read as it is parsed (streamed), a line at a time.
- The image is `data_row.row_data`. A local path, or a `gs://`, `s3://` or `file://`
  URI, is read as it is; a relative path resolves against `image_root`, by default the
  export's folder. An `http(s)://` URL (Labelbox's own storage, a signed URL) is never
  downloaded: without `image_root` the row fails as `remote_url`, saying to download the
  images and give their folder as image_root; with it, the image is
  `<image_root>/<external_id>` (else `<image_root>/<global_key>`; a row with neither
  fails as `remote_url`). The record's source id, which hash splitting keys on, is
  `row_data` as written, but for a URL read from image_root that name (`external_id`
  or `global_key`): a signed URL changes with each export, and carries its signature.
- Which label: every label of every project in `projects`, less those marked skipped
  (`performance_details.skipped` true). A project export has one project, and a data
  row is labelled once unless consensus or benchmarks label it again
  (https://docs.labelbox.com/docs/consensus); a Catalog export may hold several projects
  (the glossary). Exactly one label is read. A row with several (two projects, or
  consensus / benchmark labels) fails as `several_labels`: which is the image's truth
  cannot be told from the export, and merging them would write every object twice. A
  row with none (`"projects": {}`, or only skipped labels) fails as `not_annotated`: an
  image not labelled yet is not known to be without objects.
- Objects: `annotations.objects` of `annotation_kind` "ImageBoundingBox" are boxes,
  labelled by `name` (else `value`), in pixels: `left`, `top`, `left + width`,
  `top + height`. Other kinds (ImagePolygon, ImagePolyline, ImagePoint,
  ImageSegmentationMask, ...) and the label's `classifications` and `relationships`
  are not read: they are counted, and logged once a file (logging.info). A label with
  none but those, or with `"objects": []`, is an image without objects.
- `media_attributes` width and height are the size Labelbox saw: when given they must be
  positive numbers, and they are not written: as for COCO and the TF Object Detection
  CSV, boxes are normalised by the stored image's real size, and a box a different
  declared size put outside it is clipped or dropped and listed in box_issues (a size
  that merely differs is not checked: the parser opens no image).
- Classes: the boxes' names, the export declaring no class list (ids: sorted, from 1).
  Splits: a file in a folder named train, valid, val, validation, eval or test gives
  its rows that split; else hash split.
- A line that fails (not JSON, not an object, no `data_row` or `row_data`, a box whose
  coordinates are not numbers or whose width or height is negative, an object without a
  label or `annotation_kind`) fails as its row only (`bad_row`, naming the file, the
  line, the image and the object); zero-sized and non-finite boxes are left to the box
  rule (dropped, in box_issues).
"""
from __future__ import annotations

import collections
import logging
import math
import re
from typing import Counter, Iterator, Mapping, Optional, Tuple, Union

from tfrecorder_component.errors import RowError
from tfrecorder_component.manifest.features import as_number
from tfrecorder_component.manifest.format_spec import FormatSample, ManifestFormat
from tfrecorder_component.manifest.json_lines import lf_lines, load_line, short_json
from tfrecorder_component.manifest.rows import (ManifestRow, ObjectBox, ParsedItem, resolve_uri,
                                                split_of_folder)

_LOG = logging.getLogger(__name__)

BOX_KIND = 'ImageBoundingBox'
_BOX_KEYS = ('top', 'left', 'height', 'width')
_REMOTE = re.compile(r'^https?://', re.IGNORECASE)
_IMAGE_ROOT = '--image-root (image_root=)'
# (RowError reason, message): why a row's label or objects cannot be read.
_Problem = Tuple[str, str]


def parse(path: str, text: object, *, image_root: Optional[str] = None,
          feature_types: Optional[Mapping[str, str]] = None, **unused) -> Iterator[ParsedItem]:
  """The data rows of a Labelbox NDJSON export (see the module), one ManifestRow or
  RowError a non-blank line, in file order; a row's number is its line.

  Args:
    path: the export's path: named in errors, the folder whose name gives the split,
      and the folder relative `row_data` paths resolve against when `image_root` is
      None.
    text: the file's whole text, or its lines as a text file opened with newline=''
      gives them (`json_lines.lf_lines`).
    image_root: the folder (local path or URI) relative `row_data` paths resolve
      against, and that holds the downloaded images of `http(s)://` rows, each named as
      its `external_id` (else `global_key`); None: the export's folder, and URL rows
      fail as `remote_url`.
    feature_types: ignored: the export's fields are not carried as features.
    unused: any other keyword a format's parser may be passed; ignored.
  """
  del feature_types, unused
  split = split_of_folder(path)
  unread: Counter[str] = collections.Counter()
  for number, line in enumerate(lf_lines(text), start=1):
    if line.strip():
      yield _row(path, number, line, split, image_root, unread)
  if unread:
    _LOG.info('%s: Labelbox annotations not read (only %s objects become boxes): %s', path,
              BOX_KIND, ', '.join(f'{count} {kind}' for kind, count in sorted(unread.items())))


def _row(path: str, number: int, line: str, split: Optional[str], image_root: Optional[str],
         unread: Counter[str]) -> ParsedItem:
  obj = load_line(path, number, line)
  if isinstance(obj, RowError):
    return obj
  where = {'source': path, 'row': number}
  if not isinstance(obj, dict):
    return RowError('bad_row', 'each line must be a JSON object, one Labelbox data row; got '
                    f'{short_json(obj)}', **where)
  data_row = obj.get('data_row')
  if not isinstance(data_row, dict):
    keys = ', '.join(f'"{k}"' for k in list(obj)[:8]) or 'none'
    return RowError('bad_row', 'no "data_row" object, which names the image of a Labelbox '
                    f'export row (the line has {keys})', **where)
  row_data = data_row.get('row_data')
  if not isinstance(row_data, str) or not row_data.strip():
    return RowError('bad_row', '"data_row" needs "row_data", the image\'s URL or path; got '
                    f'{short_json(row_data)}', **where)
  uri = row_data.strip()
  where['uri'] = uri
  image = _image(uri, data_row, path, image_root)
  if isinstance(image, str):
    return RowError('remote_url', image, **where)
  uri, resolved = image
  where['uri'] = uri
  size = _size_problem(obj.get('media_attributes'))
  if size:
    return RowError('bad_row', size, **where)
  label = _label(obj.get('projects'))
  if isinstance(label[1], str):
    return RowError(*label, **where)
  objects = _objects(label[1], unread)
  if isinstance(objects, str):
    return RowError('bad_row', f'{label[0]}: {objects}', **where)
  return ManifestRow(source=path, row=number, image_uri=uri, resolved_uri=resolved,
                     labels=tuple(dict.fromkeys(o.label for o in objects)), split=split,
                     objects=objects)


def _image(uri: str, data_row: dict, path: str, image_root: Optional[str]
           ) -> Union[Tuple[str, str], str]:
  """(the image's URI as the record names it, where it is read from) of a row (see the
  module), or why a URL cannot be read (a `remote_url` message)."""
  if not _REMOTE.match(uri):
    return uri, resolve_uri(uri, path, image_root)
  name = next((data_row[k].strip() for k in ('external_id', 'global_key')
               if isinstance(data_row.get(k), str) and data_row[k].strip()), None)
  if image_root and name:
    return name, resolve_uri(name, path, image_root)
  if image_root:
    return ('the image is a URL, which is not downloaded, and the data row has neither '
            '"external_id" nor "global_key", the name its downloaded file is looked for by '
            f'under {_IMAGE_ROOT}; give it one in Labelbox and export again')
  then = (f'this one is then <image_root>/{name}' if name else
          'this row has neither: give it one in Labelbox and export again')
  return ('the image is a URL, which is not downloaded: download the export\'s images into one '
          'folder, each file named as its data row\'s "external_id" (else "global_key"), and '
          f'give that folder as {_IMAGE_ROOT}; {then}')


def _size_problem(media: object) -> str:
  """What is wrong with `media_attributes`' width and height, or ''."""
  if media is None:
    return ''
  if not isinstance(media, dict):
    return f'"media_attributes" must be an object, got {short_json(media)}'
  for name in ('width', 'height'):
    value = media.get(name)
    number = None if isinstance(value, str) else as_number(value)
    if value is not None and (number is None or not math.isfinite(number) or not number > 0):
      return (f'"media_attributes.{name}" must be the image\'s {name} in pixels, got '
              f'{short_json(value)}')
  return ''


def _label(projects: object) -> Union[Tuple[str, dict], _Problem]:
  """(where, the label) of the row's one label (see the module), or why there is none."""
  if projects is None:
    projects = {}
  if not isinstance(projects, dict):
    return ('bad_row', '"projects" must be an object, {project id: {"name", "labels"}}; got '
            f'{short_json(projects)}')
  found = []
  for project_id, project in projects.items():
    name = f'project {project_id!r}'
    if not isinstance(project, dict):
      return 'bad_row', f'{name} must be an object with "labels", got {short_json(project)}'
    if isinstance(project.get('name'), str):
      name = f'project {project["name"]!r} ({project_id})'
    labels = project.get('labels')
    if labels is None:
      labels = []
    if not isinstance(labels, list):
      return 'bad_row', f'{name}: "labels" must be a list, got {short_json(labels)}'
    for index, label in enumerate(labels):
      if not isinstance(label, dict):
        return 'bad_row', f'{name}: labels[{index}] must be an object, got {short_json(label)}'
      details = label.get('performance_details')
      if not (isinstance(details, dict) and details.get('skipped') is True):
        found.append((f'{name}, labels[{index}]', label))
  if not found:
    return ('not_annotated', 'the data row has no label in the export (in any project; '
            'skipped labels are not read): label it in Labelbox, or export only labelled '
            'data rows')
  if len(found) > 1:
    listed = '; '.join(where for where, _ in found[:4]) + ('; ...' if len(found) > 4 else '')
    return ('several_labels', f'the data row has {len(found)} labels ({listed}), from several '
            'projects or from consensus or benchmark labelling; which one is the image\'s '
            'cannot be told from the export: export one project whose data rows are labelled '
            'once, or let these rows fail with --max-error-ratio')
  return found[0]


def _objects(label: dict, unread: Counter[str]) -> Union[Tuple[ObjectBox, ...], str]:
  """A label's boxes (other objects, classifications and relationships counted in
  `unread`), or what is wrong with them."""
  annotations = label.get('annotations')
  if not isinstance(annotations, dict):
    return ('the label needs "annotations", {"objects": [...], "classifications": [...]}; '
            f'got {short_json(annotations)}')
  objects = annotations.get('objects')
  if objects is None:
    objects = []
  if not isinstance(objects, list):
    return f'"annotations.objects" must be a list, got {short_json(objects)}'
  for key in ('classifications', 'relationships'):
    if isinstance(annotations.get(key), list) and annotations[key]:
      unread[key] += len(annotations[key])
  boxes = []
  for index, obj in enumerate(objects):
    where = f'objects[{index}]'
    if not isinstance(obj, dict):
      return f'{where} must be an object, got {short_json(obj)}'
    kind = obj.get('annotation_kind')
    if not isinstance(kind, str) or not kind.strip():
      return f'{where} needs "annotation_kind" ("{BOX_KIND}", ...); got {short_json(kind)}'
    if kind != BOX_KIND:
      unread[kind] += 1
      continue
    box = _box(obj)
    if isinstance(box, str):
      return f'{where} {box}'
    boxes.append(box)
  return tuple(boxes)


def _box(obj: dict) -> Union[ObjectBox, str]:
  """An ImageBoundingBox object as a box in pixels, or what is wrong with it."""
  label = next((obj[k].strip() for k in ('name', 'value')
                if isinstance(obj.get(k), str) and obj[k].strip()), None)
  if label is None:
    return (f'needs "name" (or "value"): the class, a non-empty string; got '
            f'{short_json(obj.get("name"))}')
  box = obj.get('bounding_box')
  if not isinstance(box, dict):
    return f'({label!r}) needs "bounding_box": {{"top", "left", "height", "width"}} in pixels'
  values = {k: as_number(box.get(k)) for k in _BOX_KEYS}
  bad = [f'{k}={short_json(box.get(k))}' for k, v in values.items() if v is None]
  if bad:
    return (f'({label!r}): "bounding_box" top, left, height and width must be numbers of '
            f'pixels; got {", ".join(bad)}')
  negative = [f'{k}={short_json(box[k])}' for k in ('height', 'width') if values[k] < 0]
  if negative:
    return (f'({label!r}): "bounding_box" height and width cannot be negative; got '
            f'{", ".join(negative)}')
  top, left = values['top'], values['left']
  return ObjectBox(label, left, top, left + values['width'], top + values['height'],
                   normalized=False)




_DATA_ROW = re.compile(r'"data_row"\s*:\s*\{')


def _sniff(head: str) -> bool:
  """Whether the first line is a Labelbox export row: an object with a "data_row"
  object and its "row_data" (a Vertex AI JSONL line holds no nested object but its
  annotations); the line may be cut short at the sniffed characters' end."""
  first = head.split('\n', 1)[0]
  return first.startswith('{') and bool(_DATA_ROW.search(first)) and '"row_data"' in first


# Before vertex_jsonl in the registry: a `.jsonl` (or `.json`) file whose first line is a
# Labelbox row is this format; `.ndjson` is claimed by this format alone.
FORMAT = ManifestFormat(
    'labelbox', ('.ndjson', '.jsonl', '.json'), sniff=_sniff, parse=parse,
    one_row_an_image=True, streamed=True,
    title='Labelbox NDJSON export',
    sample=FormatSample(
        'm.ndjson',
        '{"data_row": {"id": "c1", "row_data": "a.jpg"}, "projects": {"p1": {"name": "P", '
        '"labels": [{"annotations": {"objects": []}}]}}}\n'),
    # First: a .jsonl or .json file whose first line is a Labelbox export row is Labelbox's, not
    # Vertex AI JSONL's (which takes any line starting with `{`) nor COCO's.
    sniff_rank=10)
