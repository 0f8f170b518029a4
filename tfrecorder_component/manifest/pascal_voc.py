"""Pascal VOC XML: one file annotates one image.

`<annotation><filename>` names the image (resolved against `image_root`, by default
the XML file's folder; a devkit root's `JPEGImages/`, `manifest.discover`); without a
`<filename>`, the image is `<the XML's name>.jpg`, as the VOC devkit names it
(`VOCopts.imgpath`, `JPEGImages/%s.jpg` of the annotation's id). Each `<object>` has a `<name>`, optional `<difficult>` and
`<truncated>` flags and a `<bndbox>` of `<xmin> <ymin> <xmax> <ymax>` in pixels.
"""
from __future__ import annotations

import posixpath
import xml.etree.ElementTree as ET
from typing import Iterator, List, Mapping, Optional

from tfrecorder_component.errors import RowError
from tfrecorder_component.manifest.format_spec import FormatSample, ManifestFormat
from tfrecorder_component.manifest.features import parse_number
from tfrecorder_component.manifest.rows import ManifestRow, ObjectBox, ParsedItem, resolve_uri

# What parsing an XML manifest's text can raise (ET.iterparse: as it is iterated).
XML_ERRORS = (ET.ParseError, ValueError, UnicodeError)


def xml_bytes(text: str) -> bytes:
  """A manifest's text (decoded from UTF-8 with 'surrogateescape' by the reader) as the
  bytes it was read from, for `ET.fromstring` or `ET.iterparse`: parsed as bytes, the
  XML declaration's encoding (such as ISO-8859-1) applies. Pascal VOC and CVAT XML.

  Args:
    text: the XML file's text as the reader decoded it; undecodable bytes, kept as lone
      surrogates, become those bytes again.
  """
  return text.encode('utf-8', 'surrogateescape')


_TRUE = ('1', 'true', 'yes')
_FALSE = ('', '0', 'false', 'no')


def parse(path: str, text: str, *, image_root: Optional[str] = None,
          feature_types: Optional[Mapping[str, str]] = None) -> Iterator[ParsedItem]:
  """The one row of a Pascal VOC XML file (see the module): its image with its objects'
  pixel boxes, or a `bad_row` RowError.

  Args:
    path: the XML file's path: named in errors, its name the image's (`<name>.jpg`)
      without a `<filename>`, and its folder the one the image resolves against when
      `image_root` is None.
    text: the file's whole text (`xml_bytes`).
    image_root: the folder (local path or URI) `<filename>` resolves against (a devkit
      root's `JPEGImages/`); None: the XML file's folder.
    feature_types: ignored: Pascal VOC has no extra columns.
  """
  del feature_types  # Pascal VOC has no extra columns
  yield _parse(path, text, image_root)


def _parse(path: str, text: str, image_root: Optional[str]) -> ParsedItem:
  try:
    root = ET.fromstring(xml_bytes(text))
  except XML_ERRORS as e:
    return RowError('bad_row', f'not a valid Pascal VOC XML file: {e}', source=path, row=1)
  filename = (root.findtext('filename') or '').strip()
  if not filename:
    filename = posixpath.splitext(posixpath.basename(path))[0] + '.jpg'
  objects: List[ObjectBox] = []
  for index, element in enumerate(root.findall('object')):
    box = _object(element)
    if isinstance(box, str):
      return RowError('bad_row', f'<object> {index + 1}: {box}', source=path, row=1,
                      uri=filename)
    objects.append(box)
  return ManifestRow(source=path, row=1, image_uri=filename,
                     resolved_uri=resolve_uri(filename, path, image_root),
                     labels=tuple(dict.fromkeys(o.label for o in objects)),
                     objects=tuple(objects))


def _object(element: ET.Element) -> ObjectBox | str:
  """One `<object>` as a pixel box, or what is wrong with it."""
  name = (element.findtext('name') or '').strip()
  if not name:
    return 'it has no <name>'
  flags = {}
  for flag in ('difficult', 'truncated'):
    value = (element.findtext(flag) or '').strip().lower()
    if value not in _TRUE + _FALSE:
      return f'<{flag}> of {name!r} must be 0 or 1, got {value!r}'
    flags[flag] = value in _TRUE
  bndbox = element.find('bndbox')
  if bndbox is None:
    return f'{name!r} has no <bndbox>'
  coordinates = []
  for tag in ('xmin', 'ymin', 'xmax', 'ymax'):
    text = bndbox.findtext(tag)
    number = parse_number(text) if text is not None else None
    if number is None:
      return f'<bndbox><{tag}> of {name!r} must be a number of pixels, got {text!r}'
    coordinates.append(number)
  return ObjectBox(name, *coordinates, normalized=False, **flags)


FORMAT = ManifestFormat(
    'pascal_voc', ('.xml',), sniff=lambda head: head.startswith('<'), parse=parse,
    one_row_an_image=True, rows=1,
    title='Pascal VOC XML',
    sample=FormatSample(
        'm.xml',
        '<annotation><filename>a.jpg</filename></annotation>'),
    # After CVAT: the .xml file CVAT does not take.
    sniff_rank=80)
