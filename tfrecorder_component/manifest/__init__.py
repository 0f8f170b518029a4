"""Image manifests: every supported format yields the same `ManifestRow`.

    rows.py        the row model (ManifestRow, ObjectBox, Task, ML_USE values)
    features.py    extra columns as typed features
    registry.py    the formats (FORMATS, in sniffing order), and how a file's format
                   is found
    reader.py      reading a file of any format, streamed
    one module a format, each declaring its `FORMAT` (format_spec.ManifestFormat: its
    name, extensions, sniff and parser), which registry.FORMATS lists

A manifest file is parsed sequentially (so each row keeps its position for error
reports); rows are then fanned out across Beam workers for image loading.
"""
from tfrecorder_component.manifest.features import (FEATURE_TYPES, as_number, check_feature_types,
                                                    parse_number, typed_items)
from tfrecorder_component.manifest.reader import (iter_manifest_file, parse_manifest_text,
                                                  read_manifest_file)
from tfrecorder_component.manifest.registry import (MANIFEST_EXTENSIONS, MANIFEST_FORMATS,
                                                    detect_format)
from tfrecorder_component.manifest.rows import (ML_USE_TO_SPLIT, ManifestRow, ObjectBox, ParsedItem,
                                                Task, resolve_uri, split_for_ml_use)

__all__ = ['FEATURE_TYPES', 'MANIFEST_EXTENSIONS', 'MANIFEST_FORMATS', 'ML_USE_TO_SPLIT',
           'ManifestRow', 'ObjectBox', 'ParsedItem', 'Task', 'as_number',
           'check_feature_types', 'detect_format', 'iter_manifest_file', 'parse_manifest_text',
           'parse_number', 'read_manifest_file', 'resolve_uri', 'split_for_ml_use',
           'typed_items']
