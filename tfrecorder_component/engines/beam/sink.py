"""Beam's file-based sink for gzipped TFRecord shards (`steps.shards` writes the bytes):
Beam's WriteToTFRecord compresses `.gz` output at zlib's default level and falls back
to a slow CRC32C without python-snappy."""
from __future__ import annotations

from apache_beam import coders
from apache_beam.io import filebasedsink
from apache_beam.io.filesystem import CompressionTypes

from tfrecorder_component.io.tfrecord import DEFAULT_COMPRESSION_LEVEL, GzipStream


class GzipTFRecordSink(filebasedsink.FileBasedSink):
  """Writes bytes records as gzipped TFRecord shards (`<prefix>-SSSSS-of-NNNNN.gz`).

  With `batched=True` each element is a sequence of records, written in order.

  Args:
    batched: Whether each element is a sequence of serialized records (a batch, written
      in order) rather than one record.
    compression_level: zlib's level for the gzip stream, 0 (stored, the default) to 9;
      another raises ValueError.
    file_path_prefix: The shards' path up to the shard numbers
      (`<split folder>/data_tfrecord`); Beam chooses how many shards.
  """

  def __init__(self, file_path_prefix: str, compression_level: int = DEFAULT_COMPRESSION_LEVEL,
               batched: bool = False):
    if not 0 <= compression_level <= 9:
      raise ValueError(f'compression_level must be 0..9, got {compression_level}')
    super().__init__(file_path_prefix=file_path_prefix, coder=coders.BytesCoder(),
                     file_name_suffix='.gz', num_shards=0, shard_name_template=None,
                     mime_type='application/octet-stream',
                     compression_type=CompressionTypes.UNCOMPRESSED)
    self._level = compression_level
    self._batched = batched

  def open(self, temp_path):
    """A GzipStream over the temporary file Beam opens for a bundle's shard.

    Args:
      temp_path: The temporary file's path, which Beam renames to the shard's name once
        the write is finalized.
    """
    return GzipStream(super().open(temp_path), self._level)

  def write_record(self, file_handle, value) -> None:
    """Writes `value` as TFRecord frames.

    Args:
      file_handle: The GzipStream `open` returned.
      value: A serialized record (bytes), or with `batched` a sequence of them.
    """
    file_handle.write_records(value if self._batched else [value])
